"""Test doubles around real parts: they record what passes through and can die part-way, like a killed run.

They wrap a real backend or judge (never replace it), so a test sees the real code path plus what it
needs to assert on.
"""

from __future__ import annotations

import gc
import logging
import signal
from typing import Any, Sequence

from bespoke_metric.backends.base import Backend, BackendWrapper, OnDone, Outcome, Request
from bespoke_metric.judging.judge import Judge, JudgeItem
from bespoke_metric.calls.progress import ProgressHook
from bespoke_metric.results import ItemResult


class RecordingBackend(BackendWrapper):
    """Wraps a backend: records each request as its outcome lands and, with `crash_after=k`, crashes right
    after the k-th landed (its answer already reported), reporting nothing more, as a killed process would.

    The default crash is a Ctrl-C, delivered as a user's is: SIGINT, on which `asyncio.run` cancels the
    run, lets every task end, and raises KeyboardInterrupt. Raising KeyboardInterrupt inside one of the
    backend's tasks instead would stop the event loop with that task's exception never retrieved (asyncio
    then logs it, long after the test). Another `crash` type is raised where the answer landed."""

    def __init__(self, inner: Backend, crash_after: int | None = None, crash: type[BaseException] = KeyboardInterrupt):
        super().__init__(inner)
        self.inner = inner
        self.crash_after = crash_after
        self.crash = crash
        self.crashed = False
        self.requests: list[Request] = []

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        def done(index: int, outcome: Outcome) -> None:
            if self.crashed:  # a dead process reports nothing
                return
            self.requests.append(requests[index])
            on_done(index, outcome)
            if self.crash_after is not None and len(self.requests) >= self.crash_after:
                self.crashed = True
                if self.crash is KeyboardInterrupt:
                    signal.raise_signal(signal.SIGINT)
                else:
                    raise self.crash("simulated crash")

        await self.inner.complete(requests, done)

    def close(self) -> None:
        """The wrapped backend belongs to the test, which closes it."""


class RecordingJudge:
    """Wraps a judge and records the size of every batch it is given."""

    def __init__(self, inner: Judge):
        self.inner = inner
        self.spec = inner.spec
        self.proxy = inner.proxy
        self.batches: list[int] = []

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    async def judge(self, items: list[JudgeItem], progress: ProgressHook | None = None) -> list[ItemResult]:
        self.batches.append(len(items))
        return await self.inner.judge(items, progress)


def unretrieved_task_errors(records: Sequence[logging.LogRecord]) -> list[str]:
    """asyncio's "Task exception was never retrieved" lines among log `records` (pytest's `caplog.records`),
    after a garbage collection: asyncio logs them when such a task is collected, which is otherwise at
    some later time, after the test."""
    gc.collect()
    return [record.getMessage() for record in records
            if record.name == "asyncio" and "never retrieved" in record.getMessage()]
