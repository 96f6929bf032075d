"""What a judge is: a small async callable from (benchmark row, response) items to item results.

An LLM judge (`bespoke_metric.llm_judge`) is the protocol plus a backend; the embedding proxy judge
(`embed:`) needs no LLM. Both return `ItemResult`s, and every score keeps its explanation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

DIMENSIONS: tuple[str, ...] = ("need_alignment", "content_depth", "tone", "explanation_style")
"""The four personalization dimensions, in the official order."""

METRICS: tuple[str, ...] = DIMENSIONS + ("recall",)
"""Every per-item metric; the headline `average` is the mean of these five on the 0-100 scale."""


@dataclass(frozen=True)
class JudgeItem:
    """A response to judge, with the benchmark row of its query (a `benchmark` config record)."""

    row: Mapping[str, Any]
    response: str

    @property
    def key(self) -> str:
        return f"{self.row['user']}/{self.row['query_id']}"


@dataclass
class ItemResult:
    user: str
    query_id: str
    scores: dict[str, int | None] = field(default_factory=lambda: {d: None for d in DIMENSIONS})
    feedback: dict[str, str | None] = field(default_factory=lambda: {d: None for d in DIMENSIONS})
    recall: float | None = None
    """Fraction of gold claims conveyed, 0-1; None when any claim could not be judged."""
    matched_claims: list[str] = field(default_factory=list)
    claim_verdicts: list[bool | None] = field(default_factory=list)
    """One verdict per gold claim, in order; None where the judge failed on that claim."""
    errors: list[dict[str, str]] = field(default_factory=list)
    """`{"metric": <dimension or "recall">, "reason": ...}` for each thing that could not be judged."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "query_id": self.query_id,
            "scores": dict(self.scores),
            "feedback": dict(self.feedback),
            "recall": self.recall,
            "matched_claims": list(self.matched_claims),
            "claim_verdicts": list(self.claim_verdicts),
            "errors": list(self.errors),
        }


ProgressHook = Callable[[str, int], None]
"""`hook(kind, n)`: `kind` is `"done"`, `"cached"` or `"failed"`; called as calls finish."""


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
