"""What a judgment produces: one `ItemResult` per judged response (later, the whole results file).

Every score keeps its explanation (the judge's feedback), and everything that could not be judged is
named in `errors`, never hidden as a 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bespoke_dataset.vocabulary import DIMENSIONS


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
    guard: dict[str, str] | None = None
    """Set when a response guard (`bespoke_metric.guards`) caught the response before any judge call:
    `{"guard", "reason", "version"}`; its scores are then the lowest and it conveys no claim."""

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
            "guard": self.guard,
        }
