"""The batches a run submitted to a Batch API, kept in a SQLite file beside its cache.

A batch runs on the provider's side for up to a day, whatever happens to the process that submitted it.
Each is recorded here before the call that creates it is sent, with the custom id of every request in it,
so that one created by a process killed at that instant is still found: under the id of its uploaded
input file (OpenAI's Batch API), or of the submission itself (Anthropic's Message Batches, which take
their requests in the creating call). A rerun asks this ledger first: a request already in a batch that has not been collected waits for
that batch instead of being paid for again. When a batch ends, its answers are stored here in the same
transaction that marks it collected, and each is removed once delivered to the run: an answer to a
request the rerun did not ask for (a smaller `--limit`) stays until a run asks for it.

Nothing secret is kept: endpoints are stored scrubbed, request bodies not at all (only their hashes).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from bespoke_dataset.source import default_cache_dir

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS batches (
        input_file TEXT PRIMARY KEY,
        batch TEXT,
        endpoint TEXT NOT NULL,
        base_url TEXT NOT NULL,
        status TEXT NOT NULL,
        requests INTEGER NOT NULL,
        submitted REAL NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS batch_requests (
        custom_id TEXT NOT NULL,
        input_file TEXT NOT NULL,
        PRIMARY KEY (custom_id, input_file)
    )""",
    """CREATE TABLE IF NOT EXISTS batch_answers (
        custom_id TEXT NOT NULL,
        base_url TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (custom_id, base_url)
    )""",
)
"""`batches.input_file` is the input file's id, or a submission's own key; `batches.batch` is NULL until the
batch's creation is answered; `status` is `uploaded`, the provider's status while the batch runs, then
`collected`. `batch_answers.body` is an output line's
`response.body` (JSON), not yet delivered to a run."""

COLLECTED = "collected"
_CHUNK = 500  # SQLite caps the number of bound parameters


@dataclass(frozen=True)
class LedgerBatch:
    """One batch as the ledger knows it."""

    input_file: str
    """The uploaded input file's id, or the submission's own key (`BatchLedger.uploaded`)."""
    batch: str | None
    endpoint: str
    status: str
    custom_ids: frozenset[str]
    submitted: float
    """When it was recorded (`time.time()`), before its creation was sent."""


def default_ledger() -> Path:
    """The ledger of runs that keep no cache: in the project's cache folder."""
    return default_cache_dir() / "batches.sqlite"


def ledger_path(cache: str | os.PathLike[str]) -> Path:
    """Where the ledger of a cache file lives: beside it, `NAME.batches.sqlite`."""
    cache = Path(cache)
    return cache.with_name(f"{cache.stem}.batches.sqlite")


class BatchLedger:
    """The batches of one ledger file (WAL mode, autocommit: several processes may share it)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA busy_timeout=60000")
        self._db.execute("PRAGMA journal_mode=WAL")
        for statement in _SCHEMA:
            self._db.execute(statement)

    def uploaded(self, input_file: str, endpoint: str, base_url: str, custom_ids: Sequence[str]) -> None:
        """Record a batch about to be created and the requests in it: an uploaded input file, or the key of a
        submission whose creating call holds the requests."""
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("INSERT OR REPLACE INTO batches VALUES (?, NULL, ?, ?, 'uploaded', ?, ?)",
                             (input_file, endpoint, base_url, len(custom_ids), time.time()))
            self._db.executemany("INSERT OR IGNORE INTO batch_requests VALUES (?, ?)",
                                 [(custom_id, input_file) for custom_id in custom_ids])

    def forget(self, input_file: str) -> None:
        """Drop a submission the provider refused outright (no batch was made of it)."""
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("DELETE FROM batch_requests WHERE input_file = ?", (input_file,))
            self._db.execute("DELETE FROM batches WHERE input_file = ?", (input_file,))

    def created(self, input_file: str, batch: str, status: str) -> None:
        self._execute("UPDATE batches SET batch = ?, status = ? WHERE input_file = ?", (batch, status, input_file))

    def status(self, input_file: str, status: str) -> None:
        self._execute("UPDATE batches SET status = ? WHERE input_file = ?", (status, input_file))

    def collected(self, input_file: str, base_url: str, answers: dict[str, str]) -> None:
        """Store a finished batch's answers (custom id -> response body JSON) and mark it collected, at once."""
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT OR REPLACE INTO batch_answers VALUES (?, ?, ?)",
                                 [(custom_id, base_url, body) for custom_id, body in answers.items()])
            self._db.execute("UPDATE batches SET status = ? WHERE input_file = ?", (COLLECTED, input_file))

    def answers(self, custom_ids: Iterable[str], base_url: str) -> dict[str, str]:
        """The stored answers among `custom_ids` (custom id -> response body JSON)."""
        found: dict[str, str] = {}
        for chunk in _chunks(custom_ids):
            marks = ",".join("?" * len(chunk))
            with self._lock:
                rows = self._db.execute(f"SELECT custom_id, body FROM batch_answers WHERE base_url = ? AND custom_id IN ({marks})",
                                        [base_url, *chunk]).fetchall()
            found.update(rows)
        return found

    def delivered(self, custom_ids: Iterable[str], base_url: str) -> None:
        """Forget answers a run has taken (its cache holds them now)."""
        for chunk in _chunks(custom_ids):
            marks = ",".join("?" * len(chunk))
            self._execute(f"DELETE FROM batch_answers WHERE base_url = ? AND custom_id IN ({marks})", [base_url, *chunk])

    def open_batches(self, custom_ids: Iterable[str], base_url: str) -> list[LedgerBatch]:
        """The batches not yet collected that hold any of `custom_ids`, each with all of its requests."""
        files: set[str] = set()
        for chunk in _chunks(custom_ids):
            marks = ",".join("?" * len(chunk))
            with self._lock:
                rows = self._db.execute(
                    f"SELECT DISTINCT b.input_file FROM batches b JOIN batch_requests r ON r.input_file = b.input_file "
                    f"WHERE b.base_url = ? AND b.status != ? AND r.custom_id IN ({marks})", [base_url, COLLECTED, *chunk]).fetchall()
            files.update(row[0] for row in rows)
        return [self._batch(input_file) for input_file in sorted(files)]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _batch(self, input_file: str) -> LedgerBatch:
        with self._lock:
            batch, endpoint, status, submitted = self._db.execute(
                "SELECT batch, endpoint, status, submitted FROM batches WHERE input_file = ?", (input_file,)).fetchone()
            ids = frozenset(row[0] for row in self._db.execute(
                "SELECT custom_id FROM batch_requests WHERE input_file = ?", (input_file,)))
        return LedgerBatch(input_file, batch, endpoint, status, ids, submitted)

    def _execute(self, sql: str, parameters: Sequence[object]) -> None:
        with self._lock:
            self._db.execute(sql, parameters)


def running_batches(path: str | os.PathLike[str], since: float = 0.0) -> list[str]:
    """The ids of the batches not yet collected in the ledger at `path` (submitted at `since` or later;
    none when there is no such file), read without writing."""
    if not Path(path).is_file():
        return []
    db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    try:
        rows = db.execute("SELECT COALESCE(batch, input_file) FROM batches WHERE status != ? AND submitted >= ? "
                          "ORDER BY submitted", (COLLECTED, since)).fetchall()
    except sqlite3.DatabaseError:
        return []
    finally:
        db.close()
    return [row[0] for row in rows]


def _chunks(values: Iterable[str]) -> list[list[str]]:
    values = list(dict.fromkeys(values))
    return [values[start : start + _CHUNK] for start in range(0, len(values), _CHUNK)]
