"""Reading and checking a system's predictions before any judge call is made.

A predictions file is JSONL, one `{"user", "query_id", "response"}` object a line. Every problem is
reported at once, each naming its line, so a user fixes the file in one pass instead of paying for a
partial run that dies on line 140.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterable, Mapping, Sequence, Union

from bespoke_dataset.errors import BespokeDataWarning, UserError, did_you_mean
from bespoke_dataset.keys import normalise_query_id, parse_query_key
from bespoke_metric.judging.guards import GUARD_NAMES, GuardHit
from bespoke_metric.judging.judge import Prediction
from bespoke_metric.judging.session import PreparedResponse
from bespoke_metric.results.file_kinds import is_results, results_note, whole_json


class PredictionError(UserError):
    """Bad predictions; `problems` lists one message per offending line."""

    def __init__(self, origin: str, problems: Sequence[str], message: str | None = None):
        self.origin = origin
        self.problems = list(problems)
        super().__init__(message or _describe(origin, self.problems))


def _describe(origin: str, problems: list[str]) -> str:
    if len(problems) == 1:  # one problem, one line
        return f"predictions {origin}: {problems[0]}"
    shown = "\n  ".join(problems[:20])
    more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
    return f"{len(problems)} problem(s) in predictions {origin}:\n  {shown}{more}"


@dataclass(frozen=True)
class PredictionRecords:
    """Prediction records held in memory that a file also holds (`GenerationReport.predictions`, those of
    `generate`'s output): read as they are, without reading the file again, and named by `origin` in errors."""

    origin: str
    records: Sequence[Mapping[str, Any]]


def prediction_record(user: str, query_id: str, raw: str, prepared: PreparedResponse, context: str | None, *,
                      given: Mapping[str, Any] | None = None, served: Mapping[str, Any] | None = None,
                      truncation_reason: str | None = None, degenerate: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One line of a predictions file as `bespoke generate` writes it and `bespoke import` writes a framework's
    answer: the answer as judged (`prepared`) beside the `raw` text, the `context` kind and what it `given`
    (`context_tokens`, `session_ids`, `search`), who answered (`served`: `served_model` and what the provider
    says of it; None where a stand-in wrote it), `truncated` where the output limit cut it off (and why), the
    `degenerate` parts of its making, and the echo `guard` that caught it (the context is not kept: the
    judge's guards learn of the echo from here)."""
    record: dict[str, Any] = {"user": user, "query_id": query_id, "response": prepared.response, "response_raw": raw,
                              "context": context, **(given or {})}
    if served is None:
        record["stand_in"] = True
    else:
        record.update(served)
    if truncation_reason is not None:
        record["truncated"], record["truncation_reason"] = True, truncation_reason
    if degenerate:
        record["degenerate"] = dict(degenerate)
    if prepared.guard is not None:
        record["guard"] = prepared.guard.to_dict()
    return record


PredictionsInput = Union[str, "os.PathLike[str]", PredictionRecords, Iterable[Mapping[str, Any]]]


def _decode(number: int, raw: bytes) -> Any:
    """A line's JSON value, or the whole reason it is not JSON (with the column) as a problem string."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"line {number}: not UTF-8 text (byte {error.start + 1} of the line)"
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        near = f" ({text[error.pos]!r})" if error.pos < len(text.rstrip("\r\n")) else ""
        return f"line {number}: not valid JSON: {error.msg.removesuffix(' at')} at column {error.colno}{near}"


def check_readable(predictions: PredictionsInput) -> None:
    """Raise `PredictionError` when `predictions` names a file that cannot be opened, so that a mistyped
    path is reported before any data is loaded."""
    if isinstance(predictions, (str, os.PathLike)):
        _open(os.fspath(predictions)).close()


def _open(origin: str) -> BinaryIO:
    try:
        return open(origin, "rb")
    except FileNotFoundError:
        raise PredictionError(origin, ["file not found"], f"predictions file not found: {origin}") from None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise PredictionError(origin, [reason], f"cannot read predictions file {origin}: {reason}") from None


def _records(predictions: PredictionsInput) -> tuple[str, list[tuple[int, Any]]]:
    """(origin, [(line, decoded object or an error string)])."""
    if isinstance(predictions, (str, os.PathLike)):
        origin = os.fspath(predictions)
        with _open(origin) as handle:
            return origin, [(number, _decode(number, raw)) for number, raw in enumerate(handle, start=1) if raw.strip()]
    if isinstance(predictions, PredictionRecords):
        return predictions.origin, list(enumerate(predictions.records, start=1))
    return "(in memory)", [(number, record) for number, record in enumerate(predictions, start=1)]


def reference_records(responses: Sequence[str], references: Sequence[str]) -> list[dict[str, str]]:
    """Responses and the queries they answer, written "user/query_id" (the `evaluate` metric's input), as
    prediction records. Raises `PredictionError` naming every malformed reference by its 1-based position,
    as `read_predictions` names every unknown one."""
    records: list[dict[str, str]] = []
    problems: list[str] = []
    for number, (response, reference) in enumerate(zip(responses, references, strict=True), start=1):
        try:
            user, query_id = parse_query_key(reference)
        except ValueError as error:
            problems.append(f"line {number}: {error}")
            continue
        records.append({"user": user, "query_id": query_id, "response": response})
    if problems:
        raise PredictionError("(in memory)", problems)
    return records


def read_predictions(
    predictions: PredictionsInput, known_keys: Iterable[str], *, allow_repeats: bool = False
) -> list[Prediction]:
    """Decode and check predictions against the benchmark's query keys.

    Raises `PredictionError` naming every malformed line, unknown `user/query_id` and duplicate. An empty
    response is kept: the response guards score it, lowest and counted, as everywhere. `allow_repeats` accepts several predictions for one query (the metric scores each: several
    samples per prompt, a bootstrap resample); a predictions file keeps one per query."""
    known = set(known_keys)
    origin, records = _records(predictions)
    problems: list[str] = []
    seen: dict[str, int] = {}
    result: list[Prediction] = []
    numbers: list[int] = []  # lines whose query_id is a JSON number, read as its digits
    for number, record in records:
        if isinstance(record, str):
            problems.append(record)
            continue
        if not isinstance(record, Mapping):
            problems.append(f"line {number}: expected a JSON object, got {type(record).__name__}")
            continue
        missing = [name for name in ("user", "query_id", "response") if name not in record]
        if missing:
            problems.append(f"line {number}: missing field(s) {', '.join(missing)}")
            continue
        response = record["response"]
        if not isinstance(response, str):
            problems.append(f"line {number}: 'response' must be a string, got {type(response).__name__}")
            continue
        try:
            query_id = normalise_query_id(record["query_id"])
        except (TypeError, ValueError) as error:
            problems.append(f"line {number}: bad query_id {record['query_id']!r} ({error})")
            continue
        if not isinstance(record["query_id"], str):
            numbers.append(number)
        search = record.get("search")
        if search is not None and not isinstance(search, Mapping):
            problems.append(f"line {number}: 'search' must be an object, got {type(search).__name__}")
            continue
        if not isinstance(record.get("truncated", False), bool):
            problems.append(f"line {number}: 'truncated' must be true or false, got {record['truncated']!r}")
            continue
        degenerate = record.get("degenerate") or {}
        if not isinstance(degenerate, Mapping):
            problems.append(f"line {number}: 'degenerate' must be an object of part: guard, got {degenerate!r}")
            continue
        guard = record.get("guard")
        if guard is not None and not (isinstance(guard, Mapping) and guard.get("guard") in GUARD_NAMES
                                      and isinstance(guard.get("reason"), str)):
            problems.append(f"line {number}: 'guard' must be {{\"guard\": one of {', '.join(GUARD_NAMES)}, \"reason\": text}}, "
                            f"got {guard!r}")
            continue
        prediction = Prediction(str(record["user"]), query_id, response, number, dict(search) if search is not None else None,
                                served_model=str(record.get("served_model") or ""), truncated=record.get("truncated", False),
                                truncation_reason=str(record.get("truncation_reason") or ""),
                                model_status=dict(record["model_status"]) if isinstance(record.get("model_status"), Mapping) else None,
                                stand_in=record.get("stand_in") is True, degenerate=tuple(sorted(degenerate)),
                                guard=GuardHit(guard["guard"], guard["reason"]) if guard is not None else None)
        if prediction.key not in known:
            problems.append(f"line {number}: unknown query {prediction.key!r} (not in the benchmark)"
                            + did_you_mean(prediction.key, known, cutoff=0.8))
        elif prediction.key in seen and not allow_repeats:
            problems.append(f"line {number}: duplicate prediction for {prediction.key!r} (first on line {seen[prediction.key]})")
        else:  # an empty response is a prediction too: the guards score it (`empty`), as the reward does
            seen.setdefault(prediction.key, number)
            result.append(prediction)
    if problems and not isinstance(predictions, (str, os.PathLike)):
        raise PredictionError(origin, problems)
    if problems:
        if is_results(whole_json(origin)):  # a results file given as predictions: one line, not one per line of it
            raise PredictionError(origin, [results_note(origin)])
        raise PredictionError(origin, problems)
    if not result:
        raise PredictionError(origin, ["no predictions found"])
    if numbers:  # read, and said: a query id is text (`"6"`), as `bespoke generate` writes it
        shown = ", ".join(map(str, numbers[:5])) + (", ..." if len(numbers) > 5 else "")
        warnings.warn(f"{origin}: {len(numbers)} line(s) give query_id as a JSON number (line {shown}), read as its "
                      "digits; write it as a string (\"6\"), as `bespoke generate` does", BespokeDataWarning, stacklevel=2)
    return result
