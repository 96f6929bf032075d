"""Headless Chromium for tests that look at a page as a user sees it (Debian's `chromium`; browsers
cannot be downloaded here, so Playwright's own download is not an option)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

# Without the background-networking flags Chromium keeps dialling out, and this machine refuses it.
_QUIET = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str:
    """The Chromium executable; `RuntimeError` saying how to install it when there is none."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise RuntimeError("headless Chromium is required: apt-get install -y chromium")
    return path


def _run(url: str, *flags: str, timeout: float) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [chromium(), *_QUIET, f"--user-data-dir={profile}", *flags, url]
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
