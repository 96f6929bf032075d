"""The payload cells of a release (JSON or text) in every form they plausibly come in.

* Shot and meta-test payloads: ``{"query", "gold_information_need", "response_list": [...]}`` (one row per
  query, or a `response_list` of one per row), or the response object itself (``{"contents",
  "need_alignment": {...}, ...}``; its text may be under ``response`` instead). A score is an int, a digit string or a whole float; anything else drops
  that example (recorded as a fallback), as does a judgment that is not an object; missing or non-text
  feedback keeps the example with empty feedback (a fallback too).
* Gold information: ``{"gold_information": [claim, ...]}``, a JSON list of claims, or text with one claim a
  line (list markers such as ``-`` or ``1.`` removed).
* A rubric: text, or JSON (a string, a list, an object) rendered as text, one item a line.

What cannot be read unambiguously (malformed JSON, a payload of another shape, a response without
``contents``) raises BespokeDataError naming the row and the field.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import BespokeDataError
from ..vocabulary import DIMENSIONS, SCORE_RANGE
from .notes import Notes
from .raw import RawRow

Record = dict[str, Any]
_MISSING: Any = object()
_TEXT_KEYS = ("contents", "response")
"""Where a judged response's text is: `contents` as released, or `response` (a row per response may say so)."""
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LIST_MARKER = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")


def text_field(row: RawRow, column: str) -> str:
    value = row.fields.get(column)
    if not isinstance(value, str):
        raise BespokeDataError(row.where, f"expected text, got {type(value).__name__}", field=column)
    return value


def json_field(row: RawRow, column: str) -> Any:
    try:
        return json.loads(text_field(row, column))
    except json.JSONDecodeError as error:
        raise BespokeDataError(row.where, f"malformed JSON payload ({error})", field=column) from error


def _json_if_structured(text: str, openers: str) -> tuple[bool, Any]:
    """`(True, value)` when `text` is JSON opening with one of `openers`; `(False, None)` when it does not
    open with one; malformed JSON that does is `(True, _MISSING)`."""
    stripped = text.strip()
    if not stripped or stripped[0] not in openers:
        return False, None
    try:
        return True, json.loads(stripped)
    except json.JSONDecodeError:
        return True, _MISSING


# ---------------------------------------------------------------- judged responses

def response_items(row: RawRow, column: str, notes: Notes) -> list[Any]:
    """The response objects of a shot/meta-test row: its `response_list`, or the payload itself when it is
    one response (``contents`` at the top)."""
    payload = json_field(row, column)
    if isinstance(payload, dict) and isinstance(payload.get("response_list"), list):
        notes.form(row.table, "response_list payload", row.where)
        return payload["response_list"]
    if isinstance(payload, dict) and ("contents" in payload or "response" in payload) and "response_list" not in payload:
        notes.form(row.table, "one response object", row.where)
        return [payload]
    raise BespokeDataError(row.where, "expected a JSON object with a 'response_list' list, or one response "
                           "object with 'contents'", field=f"{column}.response_list")


def _score(value: Any) -> tuple[int | None, str | None]:
    """An integer score in range and how it was written (None: an int), or `(None, None)`."""
    written = None
    if isinstance(value, bool):
        return None, None
    if isinstance(value, str):
        written = "scores written as text"
        try:
            value = float(value.strip())
        except ValueError:
            return None, None
    if isinstance(value, float):
        if not value.is_integer():
            return None, None
        written = written or "scores written as whole floats"
        value = int(value)
    if isinstance(value, int) and SCORE_RANGE[0] <= value <= SCORE_RANGE[1]:
        return value, written
    return None, None


def _member(judgment: dict[str, Any], name: str) -> Any:
    """`judgment[name]`, else the value of a key equal to `name` but for case (``Feedback``), else _MISSING."""
    if name in judgment:
        return judgment[name]
    return next((v for k, v in judgment.items() if isinstance(k, str) and k.strip().lower() == name), _MISSING)


def judged_response(row: RawRow, path: str, item: Any, notes: Notes) -> Record | None:
    """``{"response", dim: {"score", "feedback"}, ...}`` from one response object at JSON path `path`, or
    None when the example is dropped (recorded in `notes`)."""
    text = next((item[key] for key in _TEXT_KEYS if isinstance(item.get(key), str)), None) if isinstance(item, dict) else None
    if text is None:
        raise BespokeDataError(row.where, "expected an object with a 'contents' string", field=f"{path}.contents")
    record: Record = {"response": text}
    for dim in DIMENSIONS:
        judgment = item.get(dim)
        if not isinstance(judgment, dict):
            notes.fallback(row.table, "example dropped, judgment not an object with a score", row.where,
                           f"{path}.{dim}", repr(judgment))
            return None
        raw_score = _member(judgment, "score")
        score, written = _score(raw_score)
        if score is None:
            notes.fallback(row.table, f"example dropped, score not an integer {SCORE_RANGE[0]}-{SCORE_RANGE[1]}",
                           row.where, f"{path}.{dim}.score", "missing" if raw_score is _MISSING else repr(raw_score))
            return None
        if written:
            notes.count(row.table, written, f"{row.where}, field {path}.{dim}.score")
        feedback = _member(judgment, "feedback")
        if not isinstance(feedback, str):
            notes.fallback(row.table, "feedback missing or not text, example kept with empty feedback", row.where,
                           f"{path}.{dim}.feedback", "missing" if feedback is _MISSING else repr(feedback))
            feedback = ""
        record[dim] = {"score": score, "feedback": feedback}
    return record


# ---------------------------------------------------------------- gold claims

def claim_lines(text: str) -> list[str]:
    """Claims written one a line: list markers (``-``, ``*``, ``1.``, ``2)``) and blank lines removed."""
    lines = (_LIST_MARKER.sub("", line).strip() for line in _LINE_BREAK.split(text))
    return [line for line in lines if line]


def claims(row: RawRow, column: str, notes: Notes) -> list[str]:
    """The gold claims of a row, from any of the three forms (see the module docstring)."""
    text = text_field(row, column)
    structured, payload = _json_if_structured(text, "[{")
    if payload is _MISSING:
        json_field(row, column)  # raises, naming the JSON error
    if not structured:
        notes.form(row.table, "text, one claim a line", row.where)
        return claim_lines(text)
    if isinstance(payload, dict):
        notes.form(row.table, "JSON object", row.where)
        found = payload.get("gold_information")
    else:
        notes.form(row.table, "JSON list", row.where)
        found = payload
    if not isinstance(found, list) or not all(isinstance(c, str) for c in found):
        raise BespokeDataError(row.where, "expected a JSON object with a 'gold_information' list of strings, a JSON "
                               "list of strings, or text with one claim a line", field=f"{column}.gold_information")
    return found


# ---------------------------------------------------------------- rubrics

def normalise_rubric(text: str) -> str:
    """A rubric as the same string from either layout (a parquet cell or a .txt file, CRLF or LF, with or
    without a final newline): lines joined with LF, trailing whitespace stripped from each line and the end."""
    return "\n".join(line.rstrip() for line in _LINE_BREAK.split(text)).rstrip()


def render(value: Any, depth: int = 0) -> str:
    """JSON as text: a string as it is, a list one item a line, an object one ``key: value`` a line; what
    is nested goes under its key, indented by two spaces."""
    pad = "  " * depth
    if isinstance(value, dict):
        lines = [f"{pad}{key}:\n{render(item, depth + 1)}" if isinstance(item, (dict, list))
                 else f"{pad}{key}: {render(item).strip()}" for key, item in value.items()]
        return "\n".join(lines)
    if isinstance(value, list):
        return "\n".join(render(item, depth) for item in value)
    text = value if isinstance(value, str) else json.dumps(value)
    return "\n".join(pad + line for line in _LINE_BREAK.split(text))


_RUBRIC_FORMS = {str: "JSON string", list: "JSON list", dict: "JSON object"}


def rubric(row: RawRow, column: str, notes: Notes) -> str:
    """A rubric as text: the cell as it is, or JSON rendered (`render`); normalised (`normalise_rubric`)."""
    text = text_field(row, column)
    structured, payload = _json_if_structured(text, '[{"')
    form = _RUBRIC_FORMS.get(type(payload)) if structured else None
    notes.form(row.table, form or "text", row.where)
    return normalise_rubric(render(payload) if form else text)
