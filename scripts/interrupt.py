"""What a user sees after Ctrl-C: one line saying what is kept and how to go on, never a traceback.

A command that keeps answers in SQLite caches names them (`answer_caches(args)` in its module); the line
counts what they hold, as the cache itself reports it, and how much of that this run added.
"""

from __future__ import annotations

import argparse
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from bespoke_metric.backends.providers.batch_ledger import default_ledger, ledger_path, running_batches
from bespoke_metric.calls.cache import count_answers

EXIT_INTERRUPTED = 130
"""The shell's code for a command ended by SIGINT."""


def answer_caches(module: ModuleType, args: argparse.Namespace) -> list[str] | None:
    """The cache files the command keeps answers in; None for a command that keeps none."""
    caches = getattr(module, "answer_caches", None)
    return None if caches is None else [str(path) for path in caches(args)]


def saved_answers(caches: list[str] | None) -> int:
    return sum(count_answers(path) for path in caches or [])


def interrupted_line(caches: list[str] | None, before: int, started: float = 0.0) -> str:
    """The line printed when the command was interrupted; `before` is `saved_answers` at its start,
    `started` its time (the batches it submitted without a cache are those of the shared ledger since)."""
    if caches is None:
        return "interrupted: nothing was written; rerun the same command to start again"
    batches = running(caches, started)
    if batches:
        names = ", ".join(batches[:5]) + (f" and {len(batches) - 5} more" if len(batches) > 5 else "")
        still = (f"; {len(batches)} batch(es) still running at the provider ({names}): rerun the same command to "
                 "collect them, without paying for them again")
    else:
        still = ""
    if not caches:
        return f"interrupted: no answer was saved (no --cache was given){still or '; rerun the same command to start again'}"
    saved = saved_answers(caches)
    return (f"interrupted: {saved} answer(s) saved in {' and '.join(caches)} ({max(saved - before, 0)} by this run)"
            f"{still or '; rerun the same command to resume'}")


def running(caches: list[str], started: float) -> list[str]:
    """The batches not yet collected: in the ledgers beside the caches, and those submitted since
    `started` to the shared ledger of runs without a cache."""
    found = [batch for cache in caches for batch in running_batches(ledger_path(cache))]
    return list(dict.fromkeys(found + running_batches(default_ledger(), since=started)))


@contextmanager
def ctrl_c_seen() -> Iterator[list[int]]:
    """Notes a Ctrl-C that a library catches itself (a Gradio server stops quietly on one, as if closed):
    the list yielded holds the signal afterwards if one came. Ctrl-C still raises KeyboardInterrupt."""
    seen: list[int] = []

    def note(signum: int, frame: object) -> None:
        seen.append(signum)
        signal.default_int_handler(signum, frame)

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)
