"""What a run produces, typed: one `ItemResult` per judged response, and the `Results` of a whole run.

Every score keeps its explanation (the judge's feedback), and everything that could not be judged is
named in `errors`, never hidden as a 0. `Results.to_json` is the results file; `Results.from_json`
reads one back (files of older versions included) without losing a field.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Mapping

from bespoke_dataset.keys import query_key
from bespoke_dataset.version import __version__
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.backends.base import Usage

from .incomplete import Incomplete

_OPTIONAL_ITEM_FIELDS = ("claim_matches", "index", "human", "search", "truncated", "truncation_reason")


@dataclass
class ItemResult:
    """The judgment of one response."""

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
    claim_matches: list[dict[str, Any]] | None = None
    """The `embed:` judge's evidence per claim: best sentence, similarity, threshold."""
    index: int | None = None
    """Meta-evaluation: the response's index among its query's meta-test responses."""
    human: dict[str, int] | None = None
    """Meta-evaluation: the human scores of the response."""
    guard: dict[str, str] | None = None
    """Set when a response guard (`bespoke_metric.judging.guards`) caught the response before any judge call:
    `{"guard", "reason", "version"}`; its scores are then the lowest and it conveys no claim."""
    usage: Usage | None = field(default=None, compare=False, repr=False)
    """What judging this item cost in this run (calls, cache hits, tokens, texts encoded), when the judge
    says; not written to the results file, whose `usage` block sums it over the file's items."""
    search: dict[str, Any] | None = None
    """What the system searched for this response, as its prediction recorded it (engine, policy, queries,
    results, cited URLs): where a system scored low, what it found. None when it did not search."""
    truncated: bool | None = None
    """True when the output limit cut the response off (its prediction says so): judged as given."""
    truncation_reason: str | None = None
    """Why, in the engine's words (`length`, `max_output_tokens`, `MAX_TOKENS`)."""

    @property
    def key(self) -> str:
        """`user/query_id`."""
        return query_key(self.user, self.query_id)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
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
        out.update({name: getattr(self, name) for name in _OPTIONAL_ITEM_FIELDS if getattr(self, name) is not None})
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> "ItemResult":
        return cls(
            user=str(raw["user"]),
            query_id=str(raw["query_id"]),
            scores={**{d: None for d in DIMENSIONS}, **dict(raw["scores"])},
            feedback={**{d: None for d in DIMENSIONS}, **dict(raw.get("feedback") or {})},
            recall=raw.get("recall"),
            matched_claims=list(raw.get("matched_claims") or []),
            claim_verdicts=list(raw.get("claim_verdicts") or []),
            errors=[dict(error) for error in raw.get("errors") or []],
            guard=dict(raw["guard"]) if raw.get("guard") is not None else None,
            **{name: raw[name] for name in _OPTIONAL_ITEM_FIELDS if raw.get(name) is not None},
        )


_KNOWN = ("summary", "incomplete", "served_mismatch", "stderr", "n_samples", "higher_is_better", "guarded", "items", "judge", "data", "usage",
          "created", "bespoke_eval_version", "system", "model_name", "meta_eval")


@dataclass
class Results:
    """A run: its items, the summary figures, and what produced them (judge, data, usage, system)."""

    summary: dict[str, Any]
    """Per metric the 0-100 figure, `average`, counts (`aggregation.summarize`)."""
    items: list[ItemResult]
    judge: dict[str, Any]
    """The judge's `describe()`: engine, model, settings, protocol version. Never a secret."""
    data: dict[str, Any]
    """Where the benchmark came from: source, revision, content fingerprint."""
    usage: dict[str, Any] = field(default_factory=dict)
    """Calls made and from the cache, failures, tokens, wall seconds."""
    stderr: dict[str, float | None] | None = None
    """Per figure and the average: bootstrap standard error over queries (`figure_stats`); None in old files."""
    n_samples: dict[str, Any] | None = None
    """`given` (items) and `scored` (items judged per figure), as lm-eval readers look for it."""
    higher_is_better: dict[str, bool] | None = None
    guarded: dict[str, int] | None = None
    """How many responses each guard caught before any judge call (`bespoke_metric.judging.guards`)."""
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    bespoke_eval_version: str = __version__
    system: dict[str, Any] | None = None
    """The system under test, when the run knows it (`bespoke run`)."""
    model_name: str | None = None
    """The system under test as lm-eval names it: its model spec, or the name given (`score --model-name`)."""
    meta_eval: dict[str, Any] | None = None
    """Agreement with the human scores, for a meta-evaluation run."""
    served_mismatch: bool | None = None
    """Whether a call of the judge or of the system was served by another model than the one asked for
    (`judge.served_models`, `system.served_models`; `bespoke_metric.results.served`); None in old files."""
    incomplete: Incomplete | None = None
    """What the run lost (failed judgments, unanswered queries) and the command that fills the gaps
    (`bespoke_metric.results.incomplete`); None for a complete run, and for a file without the field."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Top-level fields this version does not know (a newer writer's), kept as they are."""

    @property
    def proxy(self) -> bool:
        return bool(self.judge.get("proxy", False))

    @property
    def scored(self) -> int:
        """Items scored on at least one metric."""
        return sum(1 for item in self.items if any(v is not None for v in item.scores.values()) or item.recall is not None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"summary": self.summary}
        if self.incomplete is not None:  # beside the figures, where no reader of them misses it
            out["incomplete"] = self.incomplete.to_json()
        if self.served_mismatch is not None:
            out["served_mismatch"] = self.served_mismatch
        for name in ("stderr", "n_samples", "higher_is_better", "guarded"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        out.update({
            "items": [item.to_json() for item in self.items],
            "judge": self.judge,
            "data": self.data,
            "usage": self.usage,
            "created": self.created,
            "bespoke_eval_version": self.bespoke_eval_version,
        })
        if self.system is not None:
            out["system"] = self.system
        if self.model_name is not None:
            out["model_name"] = self.model_name
        if self.meta_eval is not None:
            out["meta_eval"] = self.meta_eval
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> "Results":
        """A results file's content; `KeyError`/`TypeError`/`ValueError` when it is not one (callers name the file)."""
        return cls(
            summary=dict(raw["summary"]),
            items=[ItemResult.from_json(item) for item in raw["items"]],
            stderr=raw.get("stderr"),
            n_samples=raw.get("n_samples"),
            higher_is_better=raw.get("higher_is_better"),
            guarded=raw.get("guarded"),
            judge=dict(raw["judge"]),
            data=dict(raw["data"]),
            usage=dict(raw.get("usage") or {}),
            created=str(raw.get("created") or ""),
            bespoke_eval_version=str(raw.get("bespoke_eval_version") or "unknown"),
            system=dict(raw["system"]) if raw.get("system") is not None else None,
            model_name=raw.get("model_name"),
            meta_eval=dict(raw["meta_eval"]) if raw.get("meta_eval") is not None else None,
            served_mismatch=raw.get("served_mismatch"),
            incomplete=Incomplete.from_json(raw["incomplete"]) if raw.get("incomplete") else None,
            extra={key: value for key, value in raw.items() if key not in _KNOWN},
        )
