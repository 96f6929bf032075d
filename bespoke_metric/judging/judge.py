"""What a judge is: a small async callable from (benchmark row, response) items to item results.

An LLM judge (`bespoke_metric.judging.llm_judge`) is the protocol plus a backend; the embedding proxy judge
(`embed:`) needs no LLM. Both return `ItemResult`s, and every score keeps its explanation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from bespoke_dataset.keys import query_key
from bespoke_metric.calls.progress import ProgressHook
from bespoke_metric.results import ItemResult

from .guards import GuardHit


@dataclass(frozen=True)
class Prediction:
    """A system's answer to one query, as a predictions file (or `bespoke generate`, in memory) gives it:
    read and checked by `bespoke_metric.scoring.predictions.read_predictions`."""

    user: str
    query_id: str
    response: str
    line: int
    """1-based line in the file, or 1-based position in a list."""
    search: dict[str, Any] | None = None
    """What the system searched for it (`bespoke generate` records it), kept in its results item."""
    served_model: str = ""
    """The model that wrote it (`bespoke generate` records it), counted in `system.served_models`."""
    truncated: bool = False
    """The output limit cut the answer off (`bespoke generate` records it): scored as given, and counted."""
    truncation_reason: str = ""
    model_status: dict[str, str] | None = None
    """How the provider said its model stands when it wrote it (`bespoke generate` records Gemini's), kept
    as `system.model_status`."""
    stand_in: bool = False
    """A stand-in wrote it, not a model (`bespoke generate` records it): counted in `system.stand_in`."""
    degenerate: tuple[str, ...] = ()
    """The parts of its context found degenerate where it was written (`bespoke generate` records them:
    `profile`, `rewrite`): it was answered without them. Counted in `system.degenerate`."""
    guard: GuardHit | None = None
    """A guard that fired where it was written, against the context its system was given (`bespoke generate`
    records it: `guards.check_context_echo`); its item is guarded as any other."""

    @property
    def key(self) -> str:
        return query_key(self.user, self.query_id)


@dataclass(frozen=True)
class JudgeItem:
    """A response to judge, with the benchmark row of its query (a `benchmark` config record)."""

    row: Mapping[str, Any]
    response: str
    guard: GuardHit | None = None
    """A guard that fired where the response was made, against what only that place knew: the context the
    system was given (`guards.check_context_echo`, which `bespoke generate` records in the prediction and the
    reward runs on its prompts). Honoured as any guard that fires here (not with guards off)."""
    prediction: Prediction | None = None
    """The prediction it judges, where it is one (`score`, `run`): what the results say of it besides its
    scores (its search, its truncation, the model that served it) is read from here, in `build_results`."""

    @classmethod
    def of(cls, row: Mapping[str, Any], prediction: Prediction) -> "JudgeItem":
        """The item judging `prediction`, the answer to the query of benchmark row `row`."""
        return cls(row, prediction.response, guard=prediction.guard, prediction=prediction)


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
