"""Headless Chromium for tests that look at a page as a user sees it, and Gradio apps served to it.

Debian's `chromium` is driven directly (`dump_dom`, `screenshot`) or through Playwright
(`executable_path`), since Playwright's own browser download cannot run offline. Each browser gets a
fresh profile and none of Chromium's background traffic (this machine refuses it).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run")


def chromium_path() -> str:
    """The Chromium executable; `RuntimeError` saying how to install it when there is none."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise RuntimeError("headless Chromium is required: apt-get install -y chromium")
    return path


def _run(url: str, *flags: str, timeout: float) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [chromium_path(), "--headless", *CHROMIUM_ARGS, f"--user-data-dir={profile}", *flags, url]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def dump_dom(url: str, *, budget_ms: int = 5000, timeout: float = 120) -> str:
    """The page's DOM after scripts ran for `budget_ms` of virtual time."""
    done = _run(url, "--dump-dom", f"--virtual-time-budget={budget_ms}", timeout=timeout)
    if done.returncode != 0 or "<html" not in done.stdout.lower():
        raise RuntimeError(f"chromium could not render {url} (exit {done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def screenshot(url: str, out: Path, *, width: int = 1200, height: int = 1600, timeout: float = 120) -> Path:
    """A PNG of the page at `width` x `height`."""
    done = _run(url, f"--screenshot={out}", f"--window-size={width},{height}", timeout=timeout)
    if not out.exists():
        raise RuntimeError(f"chromium wrote no screenshot of {url} (exit {done.returncode}): {done.stderr[-2000:]}")
    return out


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
