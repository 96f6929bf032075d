"""Judging a leaderboard again with a new judge: the predictions behind each results file, scored anew.

A results file keeps where its predictions are (`system.predictions`: `bespoke run` and `bespoke score`
record it); a run keeps them in its companion folder (`results/NAME/predictions.jsonl` beside
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


def predictions_candidates(results_path: str, content: Mapping[str, Any]) -> list[Path]:
    """Where the predictions of a results file may be, in order: the path it records (as written, then
    relative to the results file's folder), then the run's companion folder (`NAME/predictions.jsonl`), then
    the layout of 0.2 (`NAME.predictions.jsonl` beside it)."""
    path = Path(results_path)
    recorded = (content.get("system") or {}).get("predictions")
    candidates = [Path(str(recorded)), path.parent / str(recorded)] if recorded else []
    return candidates + [path.with_name(path.stem) / "predictions.jsonl", path.with_name(f"{path.stem}.predictions.jsonl")]


def rescore_plan(paths: Sequence[str], out: str | os.PathLike[str]) -> list[Rescore]:
    """Every results file's predictions and new results path (`OUT/NAME.json`), found before any call;
    `RescoreError` names the first file that cannot be judged again."""
    plans: list[Rescore] = []
    outputs: dict[str, str] = {}
    for given in paths:
        content = read_json(given, RescoreError)
        reason = not_results(content, given)
        if reason is not None or "items" not in content or "judge" not in content:
            raise RescoreError(f"{given}: {reason or 'not a system results file'} (rescore takes what score or run wrote)")
        candidates = predictions_candidates(given, content)
        found = next((candidate for candidate in candidates if candidate.is_file()), None)
        if found is None:
            looked = ", ".join(dict.fromkeys(str(candidate) for candidate in candidates))
            raise RescoreError(f"{given}: its predictions are gone (looked for {looked}); rescoring judges the "
                               "predictions again, so they must be kept beside the results")
        output = str(Path(out) / Path(given).name)
        if output in outputs:
            raise RescoreError(f"{outputs[output]} and {given} would both be rescored to {output}: rename one")
        outputs[output] = given
        data = content.get("data") or {}
        system = dict(content.get("system") or {})
        system["predictions"] = str(found)
        system["rescored_from"] = {"results": given, "judge": (content.get("judge") or {}).get("spec")}
        if content.get("model_name") and not system.get("model") and not system.get("name"):
            system["name"] = content["model_name"]
        plans.append(Rescore(given, str(found), system, data.get("source"), data.get("revision"), output))
    return plans
