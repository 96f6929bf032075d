"""What a user sees after Ctrl-C: one line saying what is kept and how to go on, never a traceback.

A command that keeps answers in SQLite caches names them (`answer_caches(args)` in its module); the line
counts what they hold, as the cache itself reports it, and how much of that this run added.
"""

from __future__ import annotations

import argparse
from types import ModuleType

from bespoke_metric.calls.cache import count_answers

EXIT_INTERRUPTED = 130
"""The shell's code for a command ended by SIGINT."""


def answer_caches(module: ModuleType, args: argparse.Namespace) -> list[str] | None:
    """The cache files the command keeps answers in; None for a command that keeps none."""
    caches = getattr(module, "answer_caches", None)
    return None if caches is None else [str(path) for path in caches(args)]


def saved_answers(caches: list[str] | None) -> int:
    return sum(count_answers(path) for path in caches or [])


def interrupted_line(caches: list[str] | None, before: int) -> str:
    """The line printed when the command was interrupted; `before` is `saved_answers` at its start."""
    if caches is None:
        return "interrupted: nothing was written; rerun the same command to start again"
    if not caches:
        return "interrupted: no answer was saved (no --cache was given); rerun the same command to start again"
    saved = saved_answers(caches)
    return (f"interrupted: {saved} answer(s) saved in {' and '.join(caches)} ({max(saved - before, 0)} by this run); "
            "rerun the same command to resume")
