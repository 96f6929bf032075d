"""Which of bespoke's files a file is, told by its content: a predictions file (JSON Lines, one response a
line: `scoring.predictions`), a results file (one JSON object with `summary` and `items`: `records`), a
judge's meta-evaluation, a run's settings file, a sweep's summary.

A command given a file of another kind than it takes says so in one line that names the file and the
command that takes it, instead of reporting every line of it as malformed JSON.
"""

from __future__ import annotations

import json
import os
from typing import Any

from bespoke_dataset.errors import UserError


def is_prediction(record: Any) -> bool:
    """Whether `record` is a line of a predictions file (`scoring.predictions`)."""
    return isinstance(record, dict) and {"query_id", "response"} <= set(record)


def is_results(content: Any) -> bool:
    """Whether a JSON value is a results file's (what `score`, `run` and `meta-eval` write)."""
    return isinstance(content, dict) and {"summary", "items"} <= set(content)


def predictions_note(path: str) -> str:
    """What to say of a predictions file given where a results file is wanted."""
    return ("a predictions file (a system's responses), not a results file: score it first, "
            f"`bespoke score --predictions {path} --judge ENGINE:MODEL --output results/NAME.json`, "
            "then rank results/NAME.json")


def results_note(path: str) -> str:
    """What to say of a results file given where predictions are wanted."""
    return (f"a results file (what score, run or meta-eval write), not predictions: rank it with `bespoke leaderboard "
            f"{path}`, or judge its predictions again with `bespoke rescore {path} --judge ENGINE:MODEL --out DIR`")


def not_results(content: Any, path: str) -> str | None:
    """Why a JSON file is evidently not a system's results file (a predictions file of one line, a run's
    settings file, a sweep's summary, a judge's meta-evaluation), or None when it is meant to be one (the
    reader then checks it whole)."""
    if is_prediction(content):
        return predictions_note(path)
    if not isinstance(content, dict):
        return f"a JSON {type(content).__name__}, not a results file"
    if "meta_eval" in content:
        return "a meta-evaluation of a judge, not a system's results"
    if "summary" in content or "items" in content:
        return None
    if {"model", "settings"} <= set(content):
        return "the run file of a generation (the system's settings), not a results file"
    if os.path.basename(path) == "sweep.json":
        return "a sweep's summary, not a results file"
    return "not a results file (it has no summary and no items)"


def whole_json(path: str) -> Any:
    """The file's content read as one JSON value; None when it is no JSON value, or cannot be read."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def read_json(path: str, error: type[UserError]) -> Any:
    """The content of a file meant as one JSON value (a results file); `error` naming the file, in one line,
    when it is missing or unreadable, a predictions file (JSON Lines), or no JSON."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: a folder, where a file was expected") from None
    except OSError as failure:
        raise error(f"{path}: cannot be read ({failure.strerror or type(failure).__name__})") from None
    except UnicodeDecodeError:
        raise error(f"{path}: not a text file, so neither a results nor a predictions file") from None
    except json.JSONDecodeError as failure:
        if is_prediction(_first_line(path)):
            raise error(f"{path}: {predictions_note(path)}") from None
        raise error(f"{path}: not valid JSON (line {failure.lineno}: {failure.msg})") from None


def _first_line(path: str) -> Any:
    """The first line of a file, read as JSON; None where it is no JSON."""
    with open(path, encoding="utf-8") as handle:
        try:
            return json.loads(handle.readline())
        except json.JSONDecodeError:
            return None
