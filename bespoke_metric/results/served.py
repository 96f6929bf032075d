"""Which model really answered, and which answers were cut off: what a run must never let pass silently.

Providers say in every response which model served it (`Completion.served_model`). A served model that is
the one asked for, or a dated snapshot of it (`gpt-5` -> `gpt-5-2025-08-07`), is the model asked for; any
other (`gemini-2.5-pro` -> `gemini-3.8-flash`, `gpt-5` -> `gpt-5-mini`) means the provider routed the call
elsewhere: a `warning:` line, `served_mismatch: true` in the results, a leaderboard row of its own, and
`--strict` refuses it. An answer a stand-in made (a rule, the `bespoke stand-in` server:
`Completion.stand_in`) was served by no model: it is counted as `stand_in`, and the figures of a judge so
answered are marked. An answer the output limit cut off is kept and scored as given (as the official
evaluator would) but counted wherever figures are shown, and `--strict` refuses it too.

No I/O here: the commands print and refuse.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from bespoke_metric.backends.base import Usage
from bespoke_metric.backends.registry import split_spec

if TYPE_CHECKING:
    from bespoke_metric.results import Results

SNAPSHOT_WORDS = frozenset({"preview", "latest", "exp", "experimental"})
"""Words that may follow a model's name in one of its snapshots' names (`gemini-2.5-pro-preview-06-05`),
besides numbers (dates, versions: `-2025-08-07`, `-001`, `-0613`)."""

_NUMBER = re.compile(r"\d{2,}")


class StrictError(RuntimeError):
    """What `--strict` refuses: an answer cut off at the output limit, or calls served by another model
    than asked for. Raised before the file that would hold them is written; the commands exit 1."""


def model_name(name: str) -> str:
    """A model's name without its provider's prefix (`openai/gpt-5`, `models/gemini-2.5-pro`), lower case."""
    return name.strip().rpartition("/")[2].lower()


def is_same_model(asked: str, served: str) -> bool:
    """Whether `served` is the model `asked` for: the same name, or a dated snapshot or version of it.

    `gpt-5` -> `gpt-5-2025-08-07`, `gpt-4o` -> `gpt-4o-2024-08-06`, `models/gemini-2.5-pro` ->
    `gemini-2.5-pro-001` or `-preview-06-05` are; `gemini-2.5-pro` -> `gemini-3.8-flash`, `gpt-5` ->
    `gpt-5-mini` are not. An empty `served` (the engine did not say) is taken as the model asked for."""
    if not served.strip():
        return True
    asked, served = model_name(asked), model_name(served)
    if served == asked:
        return True
    if not served.startswith(asked + "-"):
        return False
    return all(_NUMBER.fullmatch(word) or word in SNAPSHOT_WORDS for word in served[len(asked) + 1 :].split("-"))


def count_served(names: Iterable[str]) -> dict[str, int]:
    """`{served model: count}` of the names given, those the engine did not say (empty) left out."""
    return dict(Counter(name for name in names if name))


SESSION_KEY = "session"
"""Where the judge block of a `JudgeSession` (inspect's scorer, lm-eval's filter) names that session: a random id
minted when it opens, so that the blocks one session wrote (each as its counts stood then) are told from another's
when the counts of several are added up (`bespoke import` of a run split over files, an inspect log retried)."""
ANSWERED_KEYS = ("served_models", "model_status", "stand_in")
"""The keys of a judge block that count who answered its calls so far (`answered_by`): they grow as it judges."""


def judge_identity(block: Mapping[str, Any]) -> dict[str, Any]:
    """Which judge a judge block describes: the block without who answered its calls (`ANSWERED_KEYS`) and without
    the session that made them (`SESSION_KEY`). The one definition of the same judge: the leaderboard compares
    results under it, `bespoke import` joins files under it."""
    return {key: value for key, value in block.items() if key not in (*ANSWERED_KEYS, SESSION_KEY)}


def answered_by(usage: Usage) -> dict[str, Any]:
    """What a judge block records of who answered its calls: `served_models`, how the provider said the model
    stands (`model_status`) where it said, and how many answers a stand-in made (`stand_in`) where it made
    any, so its figures are marked wherever they are shown."""
    return {"served_models": dict(usage.served_models),
            **({"model_status": dict(usage.model_status)} if usage.model_status else {}),
            **({"stand_in": usage.stand_in} if usage.stand_in else {})}


def mismatched(asked: str | None, served_models: Mapping[str, int]) -> dict[str, int]:
    """The served models (with their counts) that are not the model `asked` for; none when it is unknown."""
    if not asked:
        return {}
    return {name: count for name, count in served_models.items() if not is_same_model(asked, name)}


def mismatch_warning(role: str, asked: str, served_models: Mapping[str, int]) -> str | None:
    """The one `warning:` line of a `role` (`judge`, `system`) whose calls were served by another model
    than `asked`, naming both and the count; None when every call was served by it."""
    other = mismatched(asked, served_models)
    if not other:
        return None
    total = sum(served_models.values())
    named = ", ".join(f"{name} ({count} of {total} calls)" for name, count in sorted(other.items()))
    return (f"warning: the {role} asked for {asked} was served by {named}: the provider routed the calls to "
            "another model (retired or rerouted?); the results are marked served_mismatch (--strict refuses them)")


def asked_model(block: Mapping[str, Any] | None) -> str | None:
    """The model the calls asked for, from a results file's `judge` block or `system` block: the backend's
    (`bespoke run` records the system model as `{"spec", "backend"}`), else the model of a spec given by
    `--model-name` (`openai:gpt-5` -> `gpt-5`). None where nothing names one: `score` without
    `--model-name` or with a name that is not a spec (`"my system"`), or a model the provider picks
    (Perplexity's presets)."""
    if not block:
        return None
    model = block.get("model")
    if isinstance(model, Mapping):  # `bespoke run`'s system block
        return _identity_model(model.get("backend") or {})
    if not model:
        return None
    if "engine" in block:  # a judge block: the backend's identity, engine and model apart
        return _identity_model(block)
    engine, rest = split_spec(str(model))
    return rest if rest and re.fullmatch(r"[a-z][a-z0-9_-]*", engine) else None


def _identity_model(identity: Mapping[str, Any]) -> str | None:
    """The model a backend's `identity()` sends: its `model`, or the Agent API slug it runs as (a retired
    Sonar name's substitute); None for a preset, whose model the provider picks."""
    settings = identity.get("settings") or {}
    if settings.get("preset"):
        return None
    return str(settings.get("agent_model") or identity.get("model") or "") or None


def truncated_line(truncated: int, answers: int) -> str | None:
    """`3 of 150 answers were cut off ...`, or None when none was."""
    if not truncated:
        return None
    return (f"{truncated} of {answers} answers were cut off at the output limit (truncated: true in their "
            "predictions); scored as given (--strict refuses them)")


def judge_truncated_line(judge_truncated: int, calls: int) -> str | None:
    """`4 of the judge's 80 answers ran on to the output limit ...`, or None when none did."""
    if not judge_truncated:
        return None
    return (f"{judge_truncated} of the judge's {calls} answers ran on to the output limit (summary.judge_truncated): "
            "never read, each re-asked once")


def latest_status(statuses: Iterable[Mapping[str, str] | None]) -> dict[str, str] | None:
    """The last model status given (`{"stage", "retirement_time"}`, as the provider said it in an answer),
    or None where none was."""
    given = [dict(status) for status in statuses if status]
    return given[-1] if given else None


def mark_served(results: Results, system_served: Mapping[str, int] | None = None,
                system_status: Mapping[str, str] | None = None, system_stand_in: int = 0) -> None:
    """Record `system_served` (`{model: predictions}`, as the predictions say) as `system.served_models`,
    `system_status` (how the provider said the system's model stands) as `system.model_status`, and
    `system_stand_in` (predictions a stand-in wrote) as `system.stand_in`; mark the results `served_mismatch`
    when a call of the judge or the system was served by another model than the one asked for."""
    if system_served is not None:
        results.system = {**(results.system or {}), "served_models": dict(system_served)}
    if system_status:
        results.system = {**(results.system or {}), "model_status": dict(system_status)}
    if system_stand_in:
        results.system = {**(results.system or {}), "stand_in": system_stand_in}
    other = [mismatched(asked_model(block), (block or {}).get("served_models") or {}) for block in (results.judge, results.system)]
    results.served_mismatch = any(other)


def served_warnings(results: Results) -> list[str]:
    """One `warning:` line for the judge and one for the system, where its calls were served by another model."""
    lines = [mismatch_warning(role, asked_model(block) or "", (block or {}).get("served_models") or {})
             for role, block in (("judge", results.judge), ("system", results.system)) if asked_model(block)]
    return [line for line in lines if line]
