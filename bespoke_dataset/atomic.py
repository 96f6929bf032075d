"""Writing folders atomically: build in a temporary sibling, then move into place."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_dir(out: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary folder beside `out`; on success it replaces `out`, on failure it is removed,
    so `out` is never left half-written."""
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _replace(tmp, target)


def _replace(source: Path, target: Path) -> None:
    """Move `source` to `target`, replacing what is there (a file or a folder) with no half-written state."""
    if target.is_dir() and not target.is_symlink():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
        os.replace(source, target)
        shutil.rmtree(old)
    else:
        os.replace(source, target)


@contextmanager
def atomic_entries(out: str | os.PathLike[str]) -> Iterator[Path]:
    """Like `atomic_dir`, but on success only the top-level entries written to the temporary folder replace
    their namesakes in `out`, each atomically; everything else in `out` (``.git``, ``.gitattributes``, other
    files) is kept. On failure nothing in `out` changes."""
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(f"{target} exists and is not a folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield tmp
        target.mkdir(exist_ok=True)
        for entry in sorted(tmp.iterdir()):
            _replace(entry, target / entry.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write a text file through a temporary sibling, so a crash never leaves half a file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, target)
    except BaseException:
        os.unlink(temp)
        raise
