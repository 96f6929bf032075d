"""Where keys go and where they must not: the calls a server received with a given key, and every byte a
run left on disk, SQLite's side files included.

SQLite in WAL mode keeps recent writes in `NAME-wal` (and its index in `NAME-shm`) until a checkpoint
copies them into the database file; a killed run leaves them there. A scan of the database file alone
would miss a key written a moment before."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def stored_bytes(*paths: str | os.PathLike[str]) -> bytes:
    """The bytes of each file (each must exist: a scan of nothing proves nothing) and of its SQLite side
    files where they exist; a folder stands for every file under it."""
    chunks = []
    for given in map(Path, paths):
        assert given.exists(), f"nothing to scan at {given}"
        files = sorted(p for p in given.rglob("*") if p.is_file()) if given.is_dir() else [given]
        for file in files:
            chunks.append(file.read_bytes())
            if not given.is_dir():  # a folder's listing already holds the side files
                chunks += [side.read_bytes() for suffix in SQLITE_SIDE_FILES
                           if (side := file.with_name(file.name + suffix)).is_file()]
    return b"".join(chunks)


def calls_with_key(server: Any, key: str) -> int:
    """The completion calls a `TestServer` received with `Authorization: Bearer KEY`: which client made
    them, whenever they landed."""
    return sum({name.lower(): value for name, value in call.headers.items()}.get("authorization") == f"Bearer {key}"
               for call in server.calls)
