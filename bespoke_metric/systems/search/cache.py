"""Every search call of a run, kept in SQLite: a rerun, a replay and a frozen corpus come from it.

A search is stored under the SHA-256 of its engine's identity (engine, endpoint, `k`) and its query,
with the query and the raw results beside the key, so `bespoke search freeze` can write them out. The
table lives in the same kind of file as the model calls' cache (`calls.cache.Cache`, whose connection
handling it shares), so one file can hold a whole run: by default the generation cache beside the
predictions. No key is stored: identities are secret-free.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from bespoke_dataset.errors import UserError
from bespoke_metric.calls.cache import Cache

from .providers import SearchResult

_SEARCH_SCHEMA = """
CREATE TABLE IF NOT EXISTS searches (
    key TEXT PRIMARY KEY,
    engine TEXT NOT NULL,
    query TEXT NOT NULL,
    results TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class SearchCacheError(UserError):
    """A search cache file that cannot be read as one."""


def search_key(identity: Mapping[str, Any], query: str) -> str:
    canonical = json.dumps({"identity": identity, "query": query}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class SearchCache(Cache):
    """Search results by key, in the `searches` table of a cache file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self._retry_locked(lambda: self._db.execute(_SEARCH_SCHEMA))

    def get_results(self, keys: Iterable[str]) -> dict[str, list[SearchResult]]:
        """The cached results among `keys`, by key."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, list[SearchResult]] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):  # SQLite caps the number of bound parameters
                chunk = wanted[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, results FROM searches WHERE key IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                found.update((key, json.loads(results)) for key, results in rows)
        return found

    def put_results(self, key: str, engine: str, query: str, results: list[SearchResult]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO searches (key, engine, query, results, created) VALUES (?, ?, ?, ?, ?)",
                (key, engine, query, json.dumps(results, ensure_ascii=False), time.time()),
            )


def cached_searches(path: str | os.PathLike[str]) -> Iterator[tuple[str, str, list[SearchResult]]]:
    """`(engine, query, results)` of every search in the cache file at `path`, oldest first, read without
    writing. A file that is not a cache, or holds no searches, yields nothing."""
    if not Path(path).is_file():
        raise SearchCacheError(f"search cache {path} does not exist")
    db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    try:
        rows = db.execute("SELECT engine, query, results FROM searches ORDER BY created, key").fetchall()
    except sqlite3.DatabaseError:  # no searches table, or not SQLite at all
        rows = []
    finally:
        db.close()
    for engine, query, results in rows:
        yield engine, query, json.loads(results)
