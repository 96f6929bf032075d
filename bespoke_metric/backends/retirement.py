"""Models that providers no longer serve, and those they are about to shut down. Pure functions.

A retired or unknown model fails every call the same way, so a backend turns such an answer into one
`ModelUnavailableError` (the run stops, nothing is written) instead of a failure per call. What counts as
one is decided here, once, for every provider:

- OpenAI: a 404 with `code: "model_not_found"` ("The model `gpt-4-32k` has been deprecated, ...", "The
  model `x` does not exist or you do not have access to it.");
- Perplexity: a 400 with `type: "invalid_model"` ("Invalid model 'sonar-reasoning'. ...");
- Gemini: a 404 `NOT_FOUND`, "models/gemini-1.0-pro is not found for API version v1beta, or is not
  supported for generateContent.";
- Anthropic: a 404 whose error type is `not_found_error` and whose message names the model ("model:
  claude-3-opus-20240229"); the same type for another object (a batch) is not the model;
- any provider: a 400/404/410 whose message speaks of the model as deprecated, shut down, retired or not
  existing, in that order ("The model `x` has been deprecated"; not "`temperature` is deprecated for this
  model", which is about a parameter).

Where a provider publishes a shutdown date (OpenAI's `GET /v1/models/{model}`: `shutdown_date`,
`"2026-12-11"`; else its deprecations page, `SHUTDOWNS`), `shutdown_notice` says when it is near. Where it
says in every answer how its model stands (Gemini's `model_status{model_stage, retirement_time}`),
`status_notice` says when that is worth a line, and a `RETIRED` one is the retirement error.
"""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

UNAVAILABLE_CODES = frozenset({"model_not_found", "invalid_model"})
"""Error codes or types that say the model itself is not served (OpenAI's, Perplexity's)."""
NOT_FOUND_TYPE = "not_found_error"
"""Anthropic's error type of a 404 (`anthropic/types/shared/not_found_error_object.py`): the model when its
message names one, else whatever else was not found."""
NOTICE_DAYS = 90
"""A shutdown this many days away, or fewer, is worth a notice."""

_GONE_STATUS = frozenset({400, 404, 410})
_MODEL = re.compile(r"\bmodels?\b", re.IGNORECASE)
_GONE_WORDS = re.compile(r"deprecated|shut ?down|retired|decommissioned|does not exist|no longer (?:available|supported|served)"
                         r"|not found", re.IGNORECASE)
_MODEL_GONE = re.compile(_MODEL.pattern + r".*?(?:" + _GONE_WORDS.pattern + ")", re.IGNORECASE | re.DOTALL)
"""The model named, then said to be gone."""


RETIRED_STAGES = frozenset({"RETIRED"})
"""Gemini's `ModelStage`s (google-genai `types.ModelStage`) of a model that is no longer served."""
NOTICED_STAGES = frozenset({"DEPRECATED"})
"""Gemini's `ModelStage`s worth a notice whatever the retirement time ("These models cannot be used")."""


@dataclass(frozen=True)
class Shutdown:
    """A model's shutdown date as its provider announced it, and where."""

    date: str
    source: str


_OPENAI_DEPRECATIONS = "OpenAI's deprecations page (platform.openai.com/docs/deprecations, as read 2026-12-01)"

SHUTDOWNS: dict[str, Shutdown] = {
    "openai:gpt-5": Shutdown("2026-12-11", _OPENAI_DEPRECATIONS + "; OpenAI's e-mail to users says 2026-12-10"),
    "openai:o3": Shutdown("2026-12-11", _OPENAI_DEPRECATIONS + "; OpenAI's e-mail to users says 2026-12-10"),
    "openai:gpt-4o-search-preview": Shutdown("2026-07-23", _OPENAI_DEPRECATIONS),
    "openai:o4-mini": Shutdown("2026-10-23", _OPENAI_DEPRECATIONS),
    "openai:gpt-4o": Shutdown("2027-01-14", _OPENAI_DEPRECATIONS),
    "openai:gpt-4.1": Shutdown("2027-01-14", _OPENAI_DEPRECATIONS),
}
"""Announced shutdowns by `engine:model`: what `known_shutdown` gives where the provider's API publishes
no date (a model's dated snapshots, `gpt-5-2025-08-07`, shut down with it)."""

_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def known_shutdown(engine: str, model: str) -> Shutdown | None:
    """The announced shutdown of `engine:model` (`SHUTDOWNS`), its provider prefix (`openai/`) and snapshot
    date left out; None for a model with none announced."""
    name = _SNAPSHOT.sub("", model.rpartition("/")[2].lower())
    return SHUTDOWNS.get(f"{engine}:{name}")


class ModelNotice(UserWarning):
    """A model the provider will shut down soon (the command line prints it as one `notice:` line)."""


def unavailable_reason(status: int, body: bytes | str | Mapping[str, Any] | None) -> str | None:
    """The provider's words when an error answer (`status`, its body or message) says the model asked for
    is retired or unknown; None for any other error (a missing route, a bad parameter, a rate limit)."""
    error = _error_of(body)
    message = str(error.get("message") or "").strip()
    codes = {str(error.get(name) or "") for name in ("code", "type", "status")}
    if codes & UNAVAILABLE_CODES:
        return message or next(iter(codes & UNAVAILABLE_CODES))
    if NOT_FOUND_TYPE in codes and _MODEL.search(message):
        return message
    if status in _GONE_STATUS and _MODEL_GONE.search(message):
        return message
    return None


def shutdown_notice(model: str, shutdown_date: str | None, today: datetime.date, source: str = "its provider") -> str | None:
    """The notice for a model whose `shutdown_date` (ISO, `2026-12-11`, or a time, `2027-01-15T00:00:00Z`) is
    at most `NOTICE_DAYS` away (or past), as `source` says, else None (no date, a date far off, or one that
    is not a date)."""
    date = _date(shutdown_date)
    if date is None or (date - today).days > NOTICE_DAYS:
        return None
    return f"{model} shuts down on {date.isoformat()} ({_when(date, today)}, as {source} says); {SUCCESSORS}"


def status_notice(model: str, status: Mapping[str, str], today: datetime.date) -> str | None:
    """The notice for a model whose `status` (`{"stage", "retirement_time"}`, as `judge.model_status` records
    Gemini's `model_status`) is `DEPRECATED`, or whose retirement is at most `NOTICE_DAYS` away; None
    otherwise (a `RETIRED` one is no notice but the retirement error: `is_retired`)."""
    stage = str(status.get("stage") or "")
    date = _date(status.get("retirement_time"))
    near = date is not None and (date - today).days <= NOTICE_DAYS
    if stage not in NOTICED_STAGES and not near:
        return None
    retiring = f", retiring on {date.isoformat()} ({_when(date, today)})" if date is not None else ""
    return f"{model} is {stage or 'served'}{retiring}, as its provider says in every answer (model_status); {SUCCESSORS}"


def is_retired(status: Mapping[str, str]) -> bool:
    """Whether a model `status` (`{"stage", ...}`) says the model is retired (`RETIRED_STAGES`)."""
    return str(status.get("stage") or "") in RETIRED_STAGES


SUCCESSORS = "docs/choosing-a-judge.md compares successors against the human labels"


def _date(value: Any) -> datetime.date | None:
    try:
        return datetime.date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def _when(date: datetime.date, today: datetime.date) -> str:
    days = (date - today).days
    return "today" if days == 0 else f"in {days} days" if days > 0 else f"{-days} days ago"


def _error_of(body: bytes | str | Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The `error` object of an error body (`{"error": {...}}`, or the object itself), or `{"message": text}`
    for a body that is not JSON."""
    if isinstance(body, (bytes, str)):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            body = json.loads(text)
        except ValueError:
            return {"message": text}
    if isinstance(body, list) and body:  # Gemini's REST errors may come as a one-element list
        body = body[0]
    if not isinstance(body, Mapping):
        return {}
    error = body.get("error", body)
    return error if isinstance(error, Mapping) else {"message": str(error)}
