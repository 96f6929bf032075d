"""What a judge is: a small async callable from (benchmark row, response) items to item results.

An LLM judge (`bespoke_metric.judging.llm_judge`) is the protocol plus a backend; the embedding proxy judge
(`embed:`) needs no LLM. Both return `ItemResult`s, and every score keeps its explanation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from bespoke_metric.calls.progress import ProgressHook
from bespoke_metric.results import ItemResult

from .guards import GuardHit


@dataclass(frozen=True)
class JudgeItem:
    """A response to judge, with the benchmark row of its query (a `benchmark` config record)."""

    row: Mapping[str, Any]
    response: str
    guard: GuardHit | None = None
    """A guard that fired where the response was made, against what only that place knew: the context the
    system was given (`guards.check_context_echo`, which `bespoke generate` records in the prediction and the
    reward runs on its prompts). Honoured as any guard that fires here (not with guards off)."""


class Judge(Protocol):
    spec: str
    """How the user named it, e.g. `openai:gpt-5`, `embed:sentence-transformers/all-MiniLM-L6-v2`."""
    proxy: bool
    """True for judges that must never reach the leaderboard (the embedding proxy)."""

    def describe(self) -> dict[str, Any]:
        """The `judge` block of a results file: backend, model, settings, protocol version. No secret."""
        ...

    async def judge(self, items: list[JudgeItem], progress: ProgressHook | None = None) -> list[ItemResult]:
        """Judge every item; one result per item, in order. Never raises for a single bad answer:
        failures go into `ItemResult.errors`."""
        ...
