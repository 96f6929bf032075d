"""Scoring a system's predictions on BESPOKE: the engine behind `bespoke score` and the metric.

predictions -> checked against the benchmark -> judge -> item results -> summary -> results dict.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import time
from typing import Any, Mapping, Sequence

import bespoke_dataset
from bespoke_dataset.atomic import atomic_write_text
from bespoke_dataset import DEFAULT_SOURCE, ResolvedSource, query_key, resolve_source
from bespoke_dataset.version import __version__

from .aggregation import summarize
from .judge import Judge, JudgeItem
from .results import ItemResult
from .engines import make_judge
from .predictions import PredictionsInput, check_readable, read_predictions
from .scheduler import run_sync


def load_benchmark(
    source: str | os.PathLike[str] | ResolvedSource = DEFAULT_SOURCE, revision: str | None = None
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The `benchmark` config as `{"user/query_id": row}`, and the `data` block of a results file."""
    resolved = source if isinstance(source, ResolvedSource) else resolve_source(source, revision)
    dataset = bespoke_dataset.load("benchmark", source=resolved)
    data = resolved.record()
    if resolved.synthetic:  # said beside every figure from it (bespoke_metric.caveats)
        data["synthetic"] = True
    return {query_key(row["user"], row["query_id"]): row for row in dataset}, data


def run_judge(
    judge: str | Judge,
    items: Sequence[JudgeItem],
    *,
    data: Mapping[str, Any],
    system: Mapping[str, Any] | None = None,
    **judge_options: Any,
) -> tuple[list[ItemResult], dict[str, Any]]:
    """Judge items with a judge spec (made here with `judge_options`, closed after) or a ready judge;
    returns the item results and the results dict."""
    judge_object = make_judge(judge, **{name: value for name, value in judge_options.items() if value is not None})
    try:
        start = time.perf_counter()
        judged = run_sync(judge_object.judge(list(items)))
        wall = time.perf_counter() - start
    finally:
        if isinstance(judge, str) and hasattr(judge_object, "close"):
            judge_object.close()
    return judged, build_results(judge_object, judged, data=data, wall_seconds=wall, system=system)


def build_results(
    judge: Judge,
    items: Sequence[ItemResult],
    *,
    data: Mapping[str, Any],
    wall_seconds: float,
    system: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    usage = getattr(judge, "usage", None)
    usage_block = {
        "calls": getattr(usage, "calls", 0),
        "cached": getattr(usage, "cached", 0),
        "failed": getattr(usage, "failed", 0),
        "input_tokens": getattr(usage, "input_tokens", 0),
        "output_tokens": getattr(usage, "output_tokens", 0),
        "wall_seconds": round(wall_seconds, 3),
        **getattr(usage, "extra", {}),  # what a judge without LLM calls did (the embed judge: texts_encoded)
    }
    results: dict[str, Any] = {
        "summary": summarize(list(items)),
        "items": [item.to_dict() for item in items],
        "judge": judge.describe(),
        "data": dict(data),
        "usage": usage_block,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "bespoke_eval_version": __version__,
    }
    if system is not None:
        results["system"] = dict(system)
    return results


def score(
    predictions: PredictionsInput,
    judge: str | Judge,
    *,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    revision: str | None = None,
    limit: int | None = None,
    system: Mapping[str, Any] | None = None,
    **judge_options: Any,
) -> dict[str, Any]:
    """Score predictions (a JSONL path or records `{"user", "query_id", "response"}`) with a judge.

    `judge` is a spec such as `"openai:gpt-5"`, `"hf:Qwen/Qwen3-8B"`, `"vllm:..."`, `"embed:..."` or a
    ready `Judge`; `judge_options` go to it (`base_url`, `concurrency`, `cache`, `max_shots`, `recall`, ...).
    Bad predictions raise `PredictionError` before any judge call (a missing file before the data loads)."""
    check_readable(predictions)
    benchmark, data = load_benchmark(source, revision)
    checked = read_predictions(predictions, benchmark)
    if limit is not None:
        checked = checked[:limit]
    items = [JudgeItem(benchmark[prediction.key], prediction.response) for prediction in checked]
    return run_judge(judge, items, data=data, system=system, **judge_options)[1]


def failure_count(results: Mapping[str, Any]) -> int:
    return sum(results["summary"]["failures"].values())


def write_results(results: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write a results file atomically: a crash never leaves half of one."""
    atomic_write_text(path, json.dumps(results, indent=2, ensure_ascii=False) + "\n")

