"""Writing files and folders atomically, as the umask says, without destroying what a user owns.

A file or folder is built in a private temporary sibling, then moved into place: a crash never leaves
half of one. Just before the move it gets the modes any tool's output gets (0644/0755 under umask 022).
A folder-writing command names what it writes (`FolderOwner`): a non-empty folder that does not hold
that is refused (`FolderNotOursError`, nothing touched) unless forced.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .errors import UserError


class FolderNotOursError(UserError):
    """A command was asked to write into a non-empty folder it did not write; nothing was changed."""


@dataclass(frozen=True)
class FolderOwner:
    """What a folder-writing command writes, and how it recognises a folder it wrote before."""

    holds: str
    """What such a folder holds, for messages (e.g. "a synthetic release (SYNTHETIC.md)")."""
    recognises: Callable[[Path], bool]
    """True for a folder this command wrote (its marker file or its own layout)."""


def check_folder(out: str | os.PathLike[str], owner: FolderOwner, *, force: bool, effect: str) -> None:
    """Refuse (`FolderNotOursError`) to write into `out` when it exists and is not a folder, or is a
    non-empty folder that `owner` does not recognise and not `force`. `effect` says what forcing does."""
    target = Path(out)
    if not target.exists():
        return
    if not target.is_dir():
        raise FolderNotOursError(f"{target} exists and is not a folder; nothing was changed")
    if force or not any(target.iterdir()) or owner.recognises(target):
        return
    raise FolderNotOursError(
        f"{target} is not empty and does not hold {owner.holds}; nothing was changed. "
        f"Write to a new or empty folder, or pass --force to {effect}"
    )


def _umask() -> int:
    # The only portable way to read the umask is to set it and put it back.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def publish_mode(path: Path) -> None:
    """Give a temporary file or folder (private: 0600/0700) the mode the umask gives new ones."""
    os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~_umask())


@contextmanager
def atomic_dir(out: str | os.PathLike[str], owner: FolderOwner, *, force: bool = False) -> Iterator[Path]:
    """Yield a temporary folder beside `out`; on success it replaces `out`, on failure it is removed,
    so `out` is never left half-written. A non-empty `out` that `owner` does not recognise is refused
    unless `force` (see `check_folder`)."""
    check_folder(out, owner, force=force, effect="replace it and everything in it")
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    publish_mode(tmp)
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
def atomic_entries(out: str | os.PathLike[str], owner: FolderOwner, *, force: bool = False) -> Iterator[Path]:
    """Like `atomic_dir`, but on success only the top-level entries written to the temporary folder replace
    their namesakes in `out`, each atomically; everything else in `out` (``.git``, ``.gitattributes``, other
    files) is kept. On failure nothing in `out` changes."""
    check_folder(out, owner, force=force, effect="write into it (the entries written are replaced, other files kept)")
    target = Path(out)
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
        publish_mode(Path(temp))
        os.replace(temp, target)
    except BaseException:
        os.unlink(temp)
        raise
