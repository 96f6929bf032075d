"""Test doubles: around real parts, recording what passes through (and dying part-way, like a killed
run), and one in-process backend for what no local engine does yet.

`RecordingBackend` and `RecordingJudge` wrap a real backend or judge (never replace it), so a test sees
the real code path plus what it needs to assert on. `ScriptedBackend` answers from a function and
implements the whole backend contract, tool calls and native search included: the code that offers a
model tools or asks it to search by itself runs for real up to the backend's boundary.
"""

from __future__ import annotations

import gc
import logging
import signal
from typing import Any, Callable, Sequence

from bespoke_metric.backends.base import Backend, BackendWrapper, Completion, OnDone, Outcome, Request
from bespoke_metric.calls.progress import ProgressHook
from bespoke_metric.judging.judge import Judge, JudgeItem
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


class ScriptedBackend:
    """An in-process backend whose answer to each request is `answer(request)`: a `Completion` (with tool
    calls, with a native search record) or a text. It implements the whole backend contract, tools and
    native search included (`takes_tools`, `searches`), so a system's use of them runs its real code
    path; it records every request and the size of every batch it is given.

    `name`/`model` are what a run counts tokens with: the default `openai:gpt-4o` is counted offline in
    OpenAI's encoding."""

    one_batch = False
    constraint = None

    def __init__(self, answer: Callable[[Request], Completion | str], *, takes_tools: bool = False, searches: bool = False,
                 name: str = "openai", model: str = "gpt-4o") -> None:
        self.answer = answer
        self.takes_tools = takes_tools
        self.searches = searches
        self.name = name
        self.model = model
        self.requests: list[Request] = []
        self.batches: list[int] = []

    def identity(self) -> dict[str, Any]:
        return {"engine": "scripted", "model": self.model, "takes_tools": self.takes_tools, "searches": self.searches}

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        self.batches.append(len(requests))
        for index, request in enumerate(requests):
            if request.native_search and not self.searches:
                raise ValueError("native search was asked of a backend that cannot search")
            self.requests.append(request)
            answer = self.answer(request)
            on_done(index, answer if isinstance(answer, Completion) else Completion(answer))

    def close(self) -> None:
        pass


class RecordingJudge(Judge):
    """Wraps a judge and records the size of every batch it is given (what it costs and holds is the
    wrapped judge's; it calibrates nothing: a reward given it does not calibrate the wrapped judge)."""

    def __init__(self, inner: Judge):
        super().__init__(inner.spec, proxy=inner.proxy, usage=inner.usage)
        self.inner = inner
        self.batches: list[int] = []

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def close(self) -> None:
        self.inner.close()

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
