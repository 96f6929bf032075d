"""Scoring a system's predictions on BESPOKE: the engine behind `bespoke score` and the metric.

predictions -> checked against the benchmark -> judge -> item results -> summary -> `Results`.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Mapping, Sequence

from bespoke_dataset.atomic import atomic_write_text
from bespoke_dataset import DEFAULT_SOURCE, ResolvedSource, query_key, resolve_source
from bespoke_dataset.rows import load_rows

from bespoke_metric.results.aggregation import summarize
from bespoke_metric.backends.base import Usage
from bespoke_metric.results.figure_stats import figure_stats
from bespoke_metric.judging.judge import Judge, JudgeItem
from bespoke_metric.results import ItemResult, Results
from .engines import make_judge
from bespoke_metric.judging.guarded_judge import GuardedJudge, guard_counts
from .predictions import PredictionsInput, check_readable, read_predictions
from bespoke_metric.calls.scheduler import run_sync


def load_benchmark(
    source: str | os.PathLike[str] | ResolvedSource = DEFAULT_SOURCE, revision: str | None = None
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The `benchmark` config as `{"user/query_id": row}`, and the `data` block of a results file.

    Read with `load_rows` (the same rows as `bespoke_dataset.load`), not through `datasets`, whose import
    alone (pandas with it) would double the start-up of a run against an API judge."""
    resolved = source if isinstance(source, ResolvedSource) else resolve_source(source, revision)
    rows = load_rows("benchmark", resolved)
    data = resolved.record()
    if resolved.synthetic:  # said beside every figure from it (bespoke_metric.results.caveats)
        data["synthetic"] = True
    return {query_key(row["user"], row["query_id"]): row for row in rows}, data


def run_judge(
    judge: str | Judge,
    items: Sequence[JudgeItem],
    *,
    data: Mapping[str, Any],
    system: Mapping[str, Any] | None = None,
    guards: bool = True,
    **judge_options: Any,
) -> Results:
    """Judge items with a judge spec (made here with `judge_options`, closed after) or a ready judge,
    behind the response guards unless `guards=False`."""
    [results] = run_judge_many(judge, [items], data=data, systems=[system], guards=guards, **judge_options)
    return results


def run_judge_many(
    judge: str | Judge,
    groups: Sequence[Sequence[JudgeItem]],
    *,
    data: Mapping[str, Any],
    systems: Sequence[Mapping[str, Any] | None],
    guards: bool = True,
    **judge_options: Any,
) -> list[Results]:
    """Judge several systems' items in one run (one judge, one scheduler run: the backend sees every
    request at once), behind the response guards unless `guards=False`; one `Results` per group. The
    `usage` block of each is the whole run's, with `systems` saying how many shared it."""
    judge_object = make_judge(judge, **{name: value for name, value in judge_options.items() if value is not None})
    checked = GuardedJudge(judge_object, enabled=guards)
    try:
        start = time.perf_counter()
        judged = run_sync(checked.judge([item for group in groups for item in group]))
        wall = time.perf_counter() - start
    finally:
        if isinstance(judge, str) and hasattr(judge_object, "close"):
            judge_object.close()
    outputs = []
    start_index = 0
    for group, system in zip(groups, systems):
        part = judged[start_index : start_index + len(group)]
        start_index += len(group)
        results = build_results(checked, part, data=data, wall_seconds=wall, system=system)
        results.guarded = guard_counts(part)
        if len(groups) > 1:
            results.usage["systems"] = len(groups)
        outputs.append(results)
    return outputs


def build_results(
    judge: Judge,
    items: Sequence[ItemResult],
    *,
    data: Mapping[str, Any],
    wall_seconds: float,
    system: Mapping[str, Any] | None = None,
) -> Results:
    usage: Usage = getattr(judge, "usage", None) or Usage()  # a judge of one's own may count nothing
    usage_block = {**usage.counts(), "wall_seconds": round(wall_seconds, 3)}
    return Results(summary=summarize(list(items)), **figure_stats(items), items=list(items), judge=judge.describe(),
                   data=dict(data), usage=usage_block, system=dict(system) if system is not None else None,
                   model_name=model_name(system) if system is not None else None)


def model_name(system: Mapping[str, Any]) -> str | None:
    """The system under test as lm-eval names it (its settings stay in `system`): the model's spec
    (`bespoke run` records the model as `{"spec", "backend"}`), else the system's name."""
    model = system.get("model")
    if isinstance(model, Mapping):
        model = model.get("spec")
    name = model or system.get("name")
    return None if name is None else str(name)


def score(
    predictions: PredictionsInput,
    judge: str | Judge,
    *,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    revision: str | None = None,
    limit: int | None = None,
    system: Mapping[str, Any] | None = None,
    allow_repeats: bool = False,
    guards: bool = True,
    **judge_options: Any,
) -> Results:
    """Score predictions (a JSONL path or records `{"user", "query_id", "response"}`, as `bespoke generate`
    writes them: a `search` block is kept in its results item) with a judge.

    `judge` is a spec such as `"openai:gpt-5"`, `"hf:Qwen/Qwen3-8B"`, `"vllm:..."`, `"embed:..."` or a
    ready `Judge`; `judge_options` go to it (`base_url`, `concurrency`, `cache`, `max_shots`, `recall`,
    `executor="ray"` with `replicas`, ...). `guards=False` sends every response to the judge (see
    `bespoke_metric.judging.guards`). Bad predictions raise `PredictionError` before any judge call;
    `allow_repeats` scores several predictions of one query (the metric's path) instead of refusing them."""
    return score_many([predictions], judge, source=source, revision=revision, limit=limit, systems=[system],
                      allow_repeats=allow_repeats, guards=guards, **judge_options)[0]


def score_many(
    predictions: Sequence[PredictionsInput],
    judge: str | Judge,
    *,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    revision: str | None = None,
    limit: int | None = None,
    systems: Sequence[Mapping[str, Any] | None] | None = None,
    allow_repeats: bool = False,
    guards: bool = True,
    **judge_options: Any,
) -> list[Results]:
    """Score several systems' predictions with one judge, loaded once; one `Results` per predictions
    input, in order. Every system's calls go through one scheduler run, so a judge on Ray or vLLM sees
    them all at once. Every input is checked before any judge call (a `PredictionError` names the file; a
    missing file is named before the data loads)."""
    for given in predictions:
        check_readable(given)
    benchmark, data = load_benchmark(source, revision)
    systems = list(systems) if systems is not None else [None] * len(predictions)
    if len(systems) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions inputs but {len(systems)} systems")
    checked = []
    for given in predictions:
        read = read_predictions(given, benchmark, allow_repeats=allow_repeats)
        checked.append(read[:limit] if limit is not None else read)
    groups = [[JudgeItem(benchmark[prediction.key], prediction.response) for prediction in group] for group in checked]
    outputs = run_judge_many(judge, groups, data=data, systems=systems, guards=guards, **judge_options)
    for results, group in zip(outputs, checked):  # each item keeps what its system searched
        for item, prediction in zip(results.items, group):
            item.search = prediction.search
    return outputs


def failure_count(results: Results) -> int:
    return sum(results.summary["failures"].values())


def write_results(results: Results, path: str | os.PathLike[str]) -> None:
    """Write a results file atomically: a crash never leaves half of one."""
    atomic_write_text(path, json.dumps(results.to_json(), indent=2, ensure_ascii=False) + "\n")

