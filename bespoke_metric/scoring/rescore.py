"""Judging a leaderboard again with a new judge: the predictions behind each results file, scored anew.

A results file keeps where its predictions are (`system.predictions`: `bespoke run` and `bespoke score`
record it, relative to the results file's own folder, so it resolves from any directory and still holds
when the folder is copied with its predictions); a run keeps them in its companion folder (`results/NAME/predictions.jsonl` beside
`results/NAME.json`). `rescore_plan` finds them for every results file before any judge call, and the new
results keep the old `system` block, with `rescored_from` naming the file and judge they replace, so
`bespoke bridge` pairs each system's two results.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from bespoke_dataset.errors import UserError
from bespoke_dataset.source import source_kind
from bespoke_metric.results.file_kinds import not_results, read_json


class RescoreError(UserError):
    """A results file that cannot be judged again: not a results file, or its predictions are gone."""


@dataclass(frozen=True)
class Rescore:
    """One results file to judge again: where it is, its predictions, its system block, and where the new
    results go."""

    results: str
    predictions: str
    system: dict[str, Any]
    source: str | None
    revision: str | None
    output: str


def recorded_predictions(predictions: str | os.PathLike[str], results_path: str | os.PathLike[str]) -> str:
    """How the results file at `results_path` records where its predictions are: relative to its own folder
    (`../runs/a.jsonl`, with `/`), so it resolves wherever a command runs and moves with a folder copied
    whole; absolute where no relative path leads there (another drive)."""
    target = os.path.abspath(predictions)
    try:
        return Path(os.path.relpath(target, os.path.dirname(os.path.abspath(results_path)))).as_posix()
    except ValueError:  # Windows: another drive
        return target


def predictions_candidates(results_path: str | os.PathLike[str], content: Mapping[str, Any]) -> list[Path]:
    """Where the predictions of a results file may be, in order: the path it records, relative to the
    results file's folder (as it is written), then as given (files of 0.4.1 and before recorded it as the
    command was given, relative to where it ran), then the run's companion folder (`NAME/predictions.jsonl`),
    then the layout of 0.2 (`NAME.predictions.jsonl` beside it)."""
    path = Path(results_path)
    recorded = (content.get("system") or {}).get("predictions")
    candidates = [path.parent / str(recorded), Path(str(recorded))] if recorded else []
    return candidates + [path.with_name(path.stem) / "predictions.jsonl", path.with_name(f"{path.stem}.predictions.jsonl")]


def find_predictions(results_path: str | os.PathLike[str], content: Mapping[str, Any]) -> Path | None:
    """The predictions file of a results file: the first of `predictions_candidates` that is a file."""
    return next((candidate for candidate in predictions_candidates(results_path, content) if candidate.is_file()), None)


def rescore_plan(paths: Sequence[str], out: str | os.PathLike[str], source: str | None = None) -> list[Rescore]:
    """Every results file's predictions and new results path (`OUT/NAME.json`), found before any call;
    `RescoreError` names the first file that cannot be judged again. `source` is the data given for every
    file (`--source`); without it each file's own (`data.source`) is used, and one that is not found from here
    is refused."""
    plans: list[Rescore] = []
    outputs: dict[str, str] = {}
    for given in paths:
        content = read_json(given, RescoreError)
        reason = not_results(content, given)
        if reason is not None or "items" not in content or "judge" not in content:
            raise RescoreError(f"{given}: {reason or 'not a system results file'} (rescore takes what score or run wrote)")
        found = find_predictions(given, content)
        if found is None:
            looked = ", ".join(dict.fromkeys(str(candidate) for candidate in predictions_candidates(given, content)))
            raise RescoreError(f"{given}: its predictions are gone (looked for {looked}); rescoring judges the "
                               "predictions again, so they must be kept beside the results")
        output = str(Path(out) / Path(given).name)
        if output in outputs:
            raise RescoreError(f"{outputs[output]} and {given} would both be rescored to {output}: rename one")
        outputs[output] = given
        data = content.get("data") or {}
        if source is None:
            check_recorded_source(given, data.get("source"))
        system = dict(content.get("system") or {})
        system["predictions"] = str(found)
        system["rescored_from"] = {"results": given, "judge": (content.get("judge") or {}).get("spec")}
        if content.get("model_name") and not system.get("model") and not system.get("name"):
            system["name"] = content["model_name"]
        plans.append(Rescore(given, str(found), system, data.get("source"), data.get("revision"), output))
    return plans


def check_recorded_source(results_path: str, source: str | None) -> None:
    """A `RescoreError` when the data a results file was scored on is a local folder not found from here: it is
    recorded as `score` was given it (relative to where that ran), so from another directory it takes `--source`."""
    if source is None or source_kind(source) is not None:
        return
    raise RescoreError(f"{results_path}: its data, the local folder {source!r}, is not found from here (recorded as "
                       "score was given it, relative to where that ran): give --source with that folder")
