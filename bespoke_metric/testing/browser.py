"""A Gradio app served on 127.0.0.1 and a headless Chromium to open it, for testing apps as a user sees them.

Playwright drives Debian's `chromium` (`executable_path`): Playwright's own browser download cannot run
offline. Each browser gets a fresh profile and none of Chromium's background traffic.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run")


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise RuntimeError("headless Chromium is needed to test the apps: apt-get install -y chromium")
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def served(app: Any) -> Iterator[str]:
    """Serve a Gradio app on 127.0.0.1 in this process; yields its URL, closes it after."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        app.close()


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium under Playwright with a fresh profile; yields its browser context (`new_page()`)."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=chromium_path(), headless=True, args=list(CHROMIUM_ARGS))
        try:
            yield context
        finally:
            context.close()
