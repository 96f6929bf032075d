"""A persistent answer cache: one embedded SQLite file, safe for concurrent writers.

Every completed call is stored under a key derived from everything that determines its answer (the
backend identity, the messages, the token limit, the JSON schema, the protocol version), so a rerun with a
warm cache makes no calls and a killed run resumes paying only for the calls that had not finished.
Nothing secret goes into a key or a row: backend identities are secret-free by contract.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import Completion, Request

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    truncated INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    extras TEXT
)
"""
"""`extras`: `Completion.extras()` as JSON (tool calls, native search, token details), NULL when none."""


def key_for(identity: Mapping[str, Any], request: Request, extra: Mapping[str, Any] | None = None) -> str:
    """The cache key of one call: sha256 of the canonical JSON of what determines its answer."""
    payload = {
        "identity": identity,
        "messages": [dict(m) for m in request.messages],
        "max_tokens": request.max_tokens,
        "json_schema": request.json_schema,
        "extra": extra or {},
    }
    # Only where set, so that the keys of every call made before these fields existed stay the same.
    if request.tools:
        payload["tools"] = list(request.tools)
    if request.native_search:
        payload["native_search"] = True
    if request.reasoning_effort is not None:
        payload["reasoning_effort"] = request.reasoning_effort
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class CacheError(UserError):
    """An answer cache whose file cannot be created or opened (`--cache PATH`)."""


class Cache:
    """Completions by key in a SQLite file (WAL mode, so readers never block the writer and several
    processes may write at once). One connection per instance, guarded by a lock, so it can be used from
    asyncio callbacks and worker threads alike."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 60.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Autocommit (isolation_level=None): every put is its own short transaction, so a killed run
            # loses at most the call in flight.
            self._db = sqlite3.connect(
                str(self.path), timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.OperationalError) as error:  # a wrong --cache is the user's to fix, not a bug
            why = f"{error.strerror}: {error.filename}" if isinstance(error, OSError) and error.filename else str(error)
            raise CacheError(f"--cache {self.path}: the answer cache cannot be created there ({why})") from None
        self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        self._retry_locked(lambda: self._db.execute("PRAGMA journal_mode=WAL"))
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._retry_locked(lambda: self._db.execute(_SCHEMA))
        self._retry_locked(self._add_extras_column)

    @staticmethod
    def _retry_locked(action: Any, attempts: int = 50) -> Any:
        # Switching to WAL needs a moment of exclusive access, which busy_timeout does not cover when
        # several processes open a fresh file at the same instant.
        for attempt in range(attempts):
            try:
                return action()
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or attempt == attempts - 1:
                    raise
                time.sleep(0.05)

    @classmethod
    def in_memory(cls) -> "Cache":
        """A cache that lives as long as the object, in memory (SQLite's ``:memory:``): what keeps the answers of
        a judge used many times in one process (the `evaluate` metric's computes) when no file is given."""
        cache = cls.__new__(cls)
        cache.path, cache._lock = Path(":memory:"), threading.Lock()
        cache._db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        cache._db.execute(_SCHEMA)
        return cache

    @classmethod
    def read_only(cls, path: str | os.PathLike[str]) -> "Cache | None":
        """The cache at `path` opened for reading only, with nothing written to it (not even the set-up a
        writer does), or None when there is no such file: what a dry run reads."""
        path = Path(path)
        if not path.is_file():
            return None
        cache = cls.__new__(cls)
        cache.path, cache._lock = path, threading.Lock()
        cache._db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        return cache

    def _add_extras_column(self) -> None:
        """A cache written before `extras` existed gains the column; its rows keep NULL (no extras)."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(completions)")}
        if "extras" not in columns:
            self._db.execute("ALTER TABLE completions ADD COLUMN extras TEXT")

    def get(self, key: str) -> Completion | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, Completion]:
        """The cached completions among `keys`, by key (missing keys are absent)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, Completion] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):  # SQLite caps the number of bound parameters
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, text, input_tokens, output_tokens, truncated, extras FROM completions WHERE key IN ({marks})",
                    chunk,
                ).fetchall()
                for key, text, input_tokens, output_tokens, truncated, extras in rows:
                    found[key] = Completion.from_parts(text, input_tokens, output_tokens, bool(truncated),
                                                       json.loads(extras) if extras else None)
        return found

    def put(self, key: str, completion: Completion) -> None:
        extras = completion.extras()
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO completions (key, text, input_tokens, output_tokens, truncated, created, extras)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, completion.text, completion.input_tokens, completion.output_tokens, int(completion.truncated),
                 time.time(), json.dumps(extras, ensure_ascii=False) if extras else None),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM completions").fetchone()[0]

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> "Cache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def count_answers(path: str | os.PathLike[str]) -> int:
    """How many answers the cache file at `path` holds (0 when there is no such file), read without
    writing: a rerun with this cache pays for none of them."""
    if not Path(path).is_file():
        return 0
    db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    try:
        return int(db.execute("SELECT COUNT(*) FROM completions").fetchone()[0])
    except sqlite3.DatabaseError:  # not a cache file (yet): no table, or not SQLite at all
        return 0
    finally:
        db.close()
