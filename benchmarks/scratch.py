"""A scratch copy of this checkout's last commit, imported in place of the installed package, for the scripts that
change the code on purpose (`plants.py`, `mutation.py`): nothing is ever changed in the checkout itself.

The copy is `git archive HEAD` (the committed tree: neither a colleague's uncommitted work nor build output). Its
tests run with the copy first on the path: `bespoke_metric` and `bespoke_dataset` from the copy, and `bespoke_cli`
(setup.cfg's `package_dir` maps it to `scripts/`) from a shim folder linking the copy's `scripts/`, ahead of any
editable install's finder."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIM = ".shim"
PACKAGES = ("bespoke_metric", "bespoke_dataset", "bespoke_cli")


def export_tree(destination: Path, commit: str = "HEAD") -> Path:
    """The tree of `commit` written to `destination` (which must not exist), with its `bespoke_cli` shim."""
    archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, check=True, capture_output=True).stdout
    destination.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(destination, filter="data")
    (destination / SHIM).mkdir()
    (destination / SHIM / "bespoke_cli").symlink_to(destination / "scripts", target_is_directory=True)
    return destination


def environment(tree: Path) -> dict[str, str]:
    """The environment a test run of `tree` gets: its packages first on the path, offline."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(tree / SHIM)]), "HF_HUB_OFFLINE": "1"}


def check_imports(tree: Path) -> None:
    """Fail unless each package is imported from `tree` under `environment(tree)`."""
    code = "import importlib; print('\\n'.join(importlib.import_module(name).__file__ for name in {!r}))".format(PACKAGES)
    found = subprocess.run([sys.executable, "-c", code], cwd=tree, env=environment(tree), check=True, capture_output=True,
                           text=True).stdout.split()
    outside = [path for path in found if not Path(path).resolve().is_relative_to(tree.resolve())]
    if outside:
        raise RuntimeError(f"imported from outside the scratch copy {tree}: {outside}")


def pytest_command(*args: str) -> list[str]:
    """`python -m pytest -q` with `args`, as a scratch copy's tests are run."""
    return [sys.executable, "-m", "pytest", "-q", *args]
