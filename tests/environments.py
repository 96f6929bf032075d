"""Environments of their own for the tests that install this checkout's wheel as a user does, made from whichever
Python runs the suite: the machine's own, or a virtual environment's (where most users run the README's test line).

`python -m venv --system-site-packages` cannot be used for that: from inside a virtual environment the new one
sees the *base* interpreter's packages, not those of the environment running the suite (no inspect_ai there)."""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

SEES_THIS = "_sees_the_suite_s_packages.pth"
"""The file that shows the new environment the suite's packages."""


def suite_site_folders() -> list[str]:
    """The folders the suite's own interpreter takes packages from (its environment's, and the user's where on)."""
    return [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]


def environment_beside(folder: Path) -> Path:
    """A fresh virtual environment at `folder` whose own packages come first and the suite's after them (what
    `--system-site-packages` gives from the machine's own Python, from any Python): its `python`. It has no pip of
    its own (whose bundled setuptools would hide the suite's from pip's resolver): install with `pip_into`."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=300)
    python = folder / "bin" / "python"
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True,
                         text=True, check=True, timeout=120).stdout.strip()
    # site.addsitedir, not a bare path: the .pth files of those folders run too (an editable install's among them)
    Path(own, SEES_THIS).write_text("".join(f"import site; site.addsitedir({path!r})\n" for path in suite_site_folders()),
                                    encoding="utf-8")
    return python


def pip_into(python: Path, *args: str, **run: object) -> subprocess.CompletedProcess[str]:
    """The suite's pip run for the environment of `python` (`pip --python`), its output captured."""
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *args], capture_output=True, text=True,
                          timeout=600, **run)  # type: ignore[call-overload]
