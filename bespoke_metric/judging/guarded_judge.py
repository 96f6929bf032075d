"""The one place response guards meet judges: `GuardedJudge` wraps any judge.

Items whose response a guard catches (`bespoke_metric.judging.guards`) never reach the wrapped judge: they get the
lowest score on every dimension, no claim conveyed, and the guard's name and reason in `ItemResult.guard`.
The rest are judged by the wrapped judge in one batch, and results come back in the items' order.
`pipeline.run_judge` (so `score`, `run`, `meta-eval` and the `evaluate` metric) and the reward both judge
through it, so what a policy is trained on is what evaluation measures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.backends.base import Backend, Usage
from bespoke_metric.calls.progress import ProgressHook
from bespoke_metric.results import ItemResult

from .guards import GUARDS_VERSION, GuardHit, check_response
from .judge import Judge, JudgeItem

if TYPE_CHECKING:
    from bespoke_metric.calls.cache import Cache
    from bespoke_metric.calls.plan import ReadOnlyCache

LOWEST_SCORE = 1


def guarded_result(item: JudgeItem, hit: GuardHit, *, with_recall: bool = True) -> ItemResult:
    """The result of a guarded response: 1 on every dimension, recall 0 (when recall is judged at all)."""
    result = ItemResult(str(item.row["user"]), str(item.row["query_id"]), guard=hit.to_dict())
    note = f"Guarded ({hit.guard}), not sent to the judge: {hit.reason}."
    for dimension in DIMENSIONS:
        result.scores[dimension] = LOWEST_SCORE
        result.feedback[dimension] = note
    claims = list(item.row["claims"])
    if not with_recall:
        return result
    if not claims:  # as the judges record it: recall unknown, never a silent 0
        result.errors.append({"metric": "recall", "reason": "the query has no gold claims"})
        return result
    result.claim_verdicts = [False] * len(claims)
    result.recall = 0.0
    return result


class GuardedJudge(Judge):
    """A judge that checks every response with the guards first (`enabled=False`: a pass-through that
    still records `"guards": None` in the judge block, so guarded and unguarded runs are never ranked
    together). What it costs, calls and holds is the wrapped judge's."""

    def __init__(self, inner: Judge, *, enabled: bool = True) -> None:
        # not `Judge.__init__`: its `usage` is the wrapped judge's, read as it is counted
        self.inner = inner
        self.enabled = enabled
        self.spec = inner.spec
        self.proxy = inner.proxy

    @property
    def usage(self) -> Usage:
        return self.inner.usage

    @property
    def backend(self) -> Backend | None:
        return self.inner.backend

    @property
    def cache(self) -> Cache | ReadOnlyCache | None:
        return self.inner.cache

    @property
    def judges_recall(self) -> bool:
        return self.inner.judges_recall

    def calibrate(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self.inner.calibrate(rows)

    def calibration_check(self, *, n_resamples: int, seed: int = 0) -> dict[str, Any] | None:
        return self.inner.calibration_check(n_resamples=n_resamples, seed=seed)

    def close(self) -> None:
        self.inner.close()

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "guards": GUARDS_VERSION if self.enabled else None}

    def check(self, items: list[JudgeItem]) -> list[GuardHit | None]:
        if not self.enabled:
            return [None] * len(items)
        return [item.guard or check_response(item.response, str(item.row["query"])) for item in items]

    async def judge(self, items: list[JudgeItem], progress: ProgressHook | None = None) -> list[ItemResult]:
        hits = self.check(items)
        passed = [item for item, hit in zip(items, hits, strict=True) if hit is None]
        judged = iter(await self.inner.judge(passed, progress) if passed else [])
        # an LLM judge asked for no recall leaves it unset: a guarded item must not be the only one with a 0
        return [next(judged) if hit is None else guarded_result(item, hit, with_recall=self.inner.judges_recall)
                for item, hit in zip(items, hits, strict=True)]


def guard_counts(items: list[ItemResult]) -> dict[str, int]:
    """How many items each guard caught (guards that caught none left out)."""
    counts: dict[str, int] = {}
    for item in items:
        if item.guard is not None:
            counts[item.guard["guard"]] = counts.get(item.guard["guard"], 0) + 1
    return counts
