"""What a judge is: a small async callable from (benchmark row, response) items to item results, with
what it costs (`usage`) and what it holds (`close`).

An LLM judge (`bespoke_metric.judging.llm_judge`) is the protocol plus a backend; the embedding proxy judge
(`embed:`) needs no LLM. Both are `Judge`s, return `ItemResult`s, and every score keeps its explanation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from bespoke_dataset.keys import query_key
from bespoke_metric.backends.base import Backend, Usage
from bespoke_metric.calls.progress import ProgressHook
from bespoke_metric.results import ItemResult

from .guards import GuardHit

if TYPE_CHECKING:  # annotations only: a judge that keeps no answers never loads the caches' modules
    from bespoke_metric.calls.cache import Cache
    from bespoke_metric.calls.plan import ReadOnlyCache


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


class Judge(ABC):
    """What every judge is. Subclass it: `describe` and `judge` are the judge's own; the rest has the
    defaults of a judge that calls no LLM and keeps nothing (an LLM judge sets `backend` and `cache`, the
    `embed:` proxy fits a calibration), so code that judges asks any judge the same questions."""

    spec: str
    """How the user named it, e.g. `openai:gpt-5`, `embed:sentence-transformers/all-MiniLM-L6-v2`."""
    proxy: bool = False
    """True for judges that must never reach the leaderboard (the embedding proxy)."""
    usage: Usage
    """What its judgments cost so far: an LLM judge's calls and tokens, the proxy's texts encoded
    (`extra`); a judge that counts nothing leaves it empty."""
    backend: Backend | None = None
    """The LLM it calls (its calls priced in a results file's `usage.models`; feedback grading asks it
    too); None for a judge that calls none."""
    cache: Cache | ReadOnlyCache | None = None
    """Where its answers are kept (feedback grading keeps its answers there too); None without one."""

    def __init__(self, spec: str, *, proxy: bool = False, usage: Usage | None = None) -> None:
        self.spec = spec
        self.proxy = proxy
        self.usage = usage if usage is not None else Usage()

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """The `judge` block of a results file: backend, model, settings, protocol version. No secret."""

    @abstractmethod
    async def judge(self, items: list[JudgeItem], progress: ProgressHook | None = None) -> list[ItemResult]:
        """Judge every item; one result per item, in order. Never raises for a single bad answer:
        failures go into `ItemResult.errors`."""

    @property
    def judges_recall(self) -> bool:
        """Whether it judges claim recall (an LLM judge told `recall="none"` does not): a guarded item then
        gets recall 0 like the others, never alone."""
        return True

    def calibrate(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Fit what it fits on the benchmark (`rows`, its rows) before judging batches of it alike; nothing
        for a judge that fits nothing."""

    def calibration_check(self, *, n_resamples: int, seed: int = 0) -> dict[str, Any] | None:
        """How well its calibration agrees with the humans on the examples it was fitted on (meta-evaluation
        reports it); None for a judge that fits nothing."""
        return None

    def close(self) -> None:
        """Release what it holds (its backend, its cache); nothing for a judge that holds nothing."""
