"""Reading and checking a system's predictions before any judge call is made.

A predictions file is JSONL, one `{"user", "query_id", "response"}` object a line. Every problem is
reported at once, each naming its line, so a user fixes the file in one pass instead of paying for a
partial run that dies on line 140.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence, Union

from bespoke_dataset.keys import normalise_query_id, query_key


@dataclass(frozen=True)
class Prediction:
    user: str
    query_id: str
    response: str
    line: int
    """1-based line in the file, or 1-based position in a list."""

    @property
    def key(self) -> str:
        return query_key(self.user, self.query_id)


class PredictionError(ValueError):
    """Bad predictions; `problems` lists one message per offending line."""

    def __init__(self, origin: str, problems: Sequence[str]):
        self.origin = origin
        self.problems = list(problems)
        shown = "\n  ".join(self.problems[:20])
        more = f"\n  ... and {len(self.problems) - 20} more" if len(self.problems) > 20 else ""
        super().__init__(f"{len(self.problems)} problem(s) in predictions {origin}:\n  {shown}{more}")


PredictionsInput = Union[str, "os.PathLike[str]", Iterable[Mapping[str, Any]]]


def _records(predictions: PredictionsInput) -> tuple[str, list[tuple[int, Any]]]:
    """(origin, [(line, decoded object or an error string)])."""
    if isinstance(predictions, (str, os.PathLike)):
        origin = os.fspath(predictions)
        records: list[tuple[int, Any]] = []
        with open(origin, encoding="utf-8") as handle:
            for number, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                try:
                    records.append((number, json.loads(text)))
                except json.JSONDecodeError as error:
                    records.append((number, f"line {number}: not valid JSON ({error.msg})"))
        return origin, records
    return "(in memory)", [(number, record) for number, record in enumerate(predictions, start=1)]


def read_predictions(
    predictions: PredictionsInput, known_keys: Iterable[str], *, allow_repeats: bool = False
) -> list[Prediction]:
    """Decode and check predictions against the benchmark's query keys.

    Raises `PredictionError` naming every malformed line, unknown `user/query_id`, duplicate and empty
    response. `allow_repeats` accepts several predictions for one query (the metric scores each: several
    samples per prompt, a bootstrap resample); a predictions file keeps one per query."""
    known = set(known_keys)
    origin, records = _records(predictions)
    problems: list[str] = []
    seen: dict[str, int] = {}
    result: list[Prediction] = []
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
        prediction = Prediction(str(record["user"]), query_id, response, number)
        if prediction.key not in known:
            problems.append(f"line {number}: unknown query {prediction.key!r} (not in the benchmark)")
        elif prediction.key in seen and not allow_repeats:
            problems.append(f"line {number}: duplicate prediction for {prediction.key!r} (first on line {seen[prediction.key]})")
        elif not response.strip():
            problems.append(f"line {number}: empty response for {prediction.key!r}")
        else:
            seen.setdefault(prediction.key, number)
            result.append(prediction)
    if problems:
        raise PredictionError(origin, problems)
    if not result:
        raise PredictionError(origin, ["no predictions found"])
    return result
