"""Scoring a system's predictions on BESPOKE: the engine behind `bespoke score` and the metric.

predictions -> checked against the benchmark -> judge -> item results -> summary -> `Results`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections import Counter
from typing import Any, Mapping, NamedTuple, Sequence

from bespoke_dataset import DEFAULT_SOURCE, ResolvedSource, query_key, resolve_source
from bespoke_dataset.atomic import atomic_write_text
from bespoke_dataset.errors import UserError
from bespoke_dataset.rows import load_rows
from bespoke_metric.backends.base import Usage
from bespoke_metric.backends.registry import Spec, model_label
from bespoke_metric.calls.plan import Planned
from bespoke_metric.calls.pricing import ModelUse, PriceTable, backend_use, usage_models
from bespoke_metric.calls.scheduler import run_sync
from bespoke_metric.judging.config import JudgeConfig
from bespoke_metric.judging.factory import make_judge, plan_judge
from bespoke_metric.judging.guarded_judge import GuardedJudge, guard_counts
from bespoke_metric.judging.judge import Judge, JudgeItem
from bespoke_metric.results import ItemResult, Results
from bespoke_metric.results.aggregation import summarize
from bespoke_metric.results.figure_stats import figure_stats
from bespoke_metric.results.incomplete import Incomplete, Rerun, lost_judgments
from bespoke_metric.results.served import answered_by, count_served, latest_status, mark_served

from .predictions import Prediction, PredictionsInput, check_readable, read_predictions
from .rescore import recorded_predictions


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
    judge: str | Spec | JudgeConfig | Judge,
    items: Sequence[JudgeItem],
    *,
    data: Mapping[str, Any],
    system: Mapping[str, Any] | None = None,
    guards: bool = True,
    benchmark_queries: int | None = None,
    calibration_rows: Sequence[Mapping[str, Any]] | None = None,
    **judge_options: Any,
) -> Results:
    """Judge items with a judge spec (made here with `judge_options`, closed after) or a ready judge,
    behind the response guards unless `guards=False`; `calibration_rows` as for `run_judge_many`."""
    [results] = run_judge_many(judge, [items], data=data, systems=[system], guards=guards,
                               benchmark_queries=benchmark_queries, calibration_rows=calibration_rows, **judge_options)
    return results


def run_judge_many(
    judge: str | Spec | JudgeConfig | Judge,
    groups: Sequence[Sequence[JudgeItem]],
    *,
    data: Mapping[str, Any],
    systems: Sequence[Mapping[str, Any] | None],
    guards: bool = True,
    prices: PriceTable | None = None,
    uses: Sequence[ModelUse] = (),
    group_uses: Sequence[Sequence[ModelUse]] | None = None,
    benchmark_queries: int | None = None,
    calibration_rows: Sequence[Mapping[str, Any]] | None = None,
    **judge_options: Any,
) -> list[Results]:
    """Judge several systems' items in one run (one judge, one scheduler run: the backend sees every
    request at once), behind the response guards unless `guards=False`; one `Results` per group. The
    `usage` block of each is its own items' (a request several groups share is counted on the first);
    for a judge that does not say what each item cost, the whole run's, with `systems` saying how many
    shared it. Its `models` are the judge's and those of `uses` (the calls of the run's other models),
    priced by `prices`, with `group_uses[i]` those of group `i` alone (the model that wrote its
    responses); `benchmark_queries` (the benchmark's size) goes into each summary. `calibration_rows`: the
    whole benchmark's rows, which a judge that fits a calibration (the embed proxy) is fitted on before
    judging, so an item's scores never depend on which other items are judged with it. A `JudgeConfig` is
    built as it is (its guards on unless it or `guards` says otherwise); `judge_options` then hold at most the
    command's `spending` limit and objects already loaded."""
    judge_object = make_judge(judge, **{name: value for name, value in judge_options.items() if value is not None})
    checked = GuardedJudge(judge_object, enabled=guards and (judge.guards if isinstance(judge, JudgeConfig) else True))
    try:
        start = time.perf_counter()
        if calibration_rows is not None:
            checked.calibrate(list(calibration_rows))
        pending = checked.judge([item for group in groups for item in group])
        judged = run_sync(pending)
        wall = time.perf_counter() - start
    finally:
        if isinstance(judge, (str, Spec, JudgeConfig)):  # made here: closed here (a ready judge is its owner's to close)
            judge_object.close()
    itemised = any(item.usage is not None for item in judged)  # guarded items cost nothing: no usage
    run_usage = checked.usage
    outputs = []
    start_index = 0
    for index, (group, system) in enumerate(zip(groups, systems, strict=True)):
        part = judged[start_index : start_index + len(group)]
        start_index += len(group)
        usage = Usage.total(item.usage for item in part if item.usage is not None) if itemised else run_usage
        results = build_results(checked, part, asked=group, data=data, usage=usage, wall_seconds=wall, system=system,
                                prices=prices, uses=[*uses, *(group_uses[index] if group_uses else ())],
                                benchmark_queries=benchmark_queries)
        results.guarded = guard_counts(part)
        if len(groups) > 1 and not itemised:
            results.usage["systems"] = len(groups)
        outputs.append(results)
    return outputs


def build_results(
    judge: Judge,
    items: Sequence[ItemResult],
    *,
    asked: Sequence[JudgeItem],
    data: Mapping[str, Any],
    usage: Usage,
    wall_seconds: float,
    system: Mapping[str, Any] | None = None,
    prices: PriceTable | None = None,
    uses: Sequence[ModelUse] = (),
    benchmark_queries: int | None = None,
) -> Results:
    """The `Results` of judged items that cost `usage` (the judge's calls for them), its models priced by
    `prices`; `benchmark_queries` (the benchmark's size, when the items answer its queries) goes into the
    summary, so a partial run says how much of the benchmark it covers. `asked`: the judge items `items`
    answer, in order; where they judge predictions, each item keeps what its system searched and whether
    its answer was cut off, and the `system` block counts who served them (`system_predictions`)."""
    predictions = [item.prediction for item in asked if item.prediction is not None]
    for result, item in zip(items, asked, strict=True):
        if item.prediction is not None:
            keep_prediction(result, item.prediction)
    usage_block = {**usage.counts(), "wall_seconds": round(wall_seconds, 3),
                   **usage_models([*judge_uses(judge, own=usage), *uses], prices or PriceTable())}
    summary = results_summary(items, benchmark_queries=benchmark_queries, judge_truncated=usage.truncated)
    results = Results(summary=summary, **figure_stats(items), items=list(items),
                      judge={**judge.describe(), **answered_by(usage)},
                      data=dict(data), usage=usage_block, system=dict(system) if system is not None else None,
                      model_name=model_name(system) if system is not None else None)
    if predictions:
        system_predictions(results, predictions)
    else:
        mark_served(results)
    results.incomplete = run_lost(results)
    return results


def run_lost(results: Results) -> Incomplete | None:
    """The `incomplete` mark of `results`: its failed judgments, and the queries its system left unanswered
    (`system.generation_failures`, as `bespoke run` records them)."""
    return lost_judgments(results.items, (results.system or {}).get("generation_failures") or [])


def results_summary(items: Sequence[ItemResult], *, benchmark_queries: int | None, judge_truncated: int) -> dict[str, Any]:
    """A results file's `summary` of `items`: the figures (`summarize`), how many of the benchmark's queries
    there are, how many answers the output limit cut off, and how many of the judge's answers it cut off."""
    summary = summarize(list(items))
    summary["benchmark_queries"] = benchmark_queries
    summary["truncated"] = sum(1 for item in items if item.truncated)
    summary["judge_truncated"] = judge_truncated
    return summary


def keep_prediction(item: ItemResult, prediction: Prediction) -> None:
    """What a results item keeps of the prediction it judged: what its system searched, and whether its
    answer was cut off at the output limit (scored as given, and counted)."""
    item.search = prediction.search
    if prediction.truncated:
        item.truncated, item.truncation_reason = True, prediction.truncation_reason or None


def system_predictions(results: Results, predictions: Sequence[Prediction]) -> None:
    """What the `system` block says of the predictions judged: the models that served them, how the
    provider said its model stands, how many a stand-in wrote (`mark_served`), and how many were answered
    without their profile or rewrite (`degenerate`)."""
    mark_served(results, count_served(prediction.served_model for prediction in predictions),
                latest_status(prediction.model_status for prediction in predictions),
                sum(prediction.stand_in for prediction in predictions))
    degenerate = Counter(part for prediction in predictions for part in prediction.degenerate)
    if degenerate:  # answered without their profile (or rewrite): the system's label no longer holds for them
        results.system = {**(results.system or {}), "degenerate": dict(sorted(degenerate.items()))}


def judge_uses(judge: Judge, *more: Usage, own: Usage | None = None) -> list[ModelUse]:
    """The calls of an LLM judge's backend (its own, or `own` where only part of them count, and `more` made
    through the same backend, such as feedback grading's) for the `models` of a usage block; none for a
    judge without an LLM."""
    if judge.backend is None:
        return []
    roles = ["judge", *(["grader"] if more else [])]
    return [backend_use(judge.backend, judge.spec, roles, [own if own is not None else judge.usage, *more])]


def model_name(system: Mapping[str, Any]) -> str | None:
    """The system under test as lm-eval names it (its settings stay in `system`): the name given to its
    model (`--model-name`, recorded as `model_name`), else the model's spec (`bespoke run` records the model
    as `{"spec", "backend"}`), a local file or folder by its own name (`model_label`), else the system's name."""
    model = system.get("model_name") or system.get("model")
    if isinstance(model, Mapping):
        model = model.get("spec")
    if model:
        return model_label(str(model))
    return None if system.get("name") is None else str(system["name"])


def score(
    predictions: PredictionsInput,
    judge: str | Spec | JudgeConfig | Judge,
    *,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    revision: str | None = None,
    limit: int | None = None,
    system: Mapping[str, Any] | None = None,
    allow_repeats: bool = False,
    guards: bool = True,
    prices: PriceTable | None = None,
    uses: Sequence[ModelUse] = (),
    **judge_options: Any,
) -> Results:
    """Score predictions (a JSONL path or records `{"user", "query_id", "response"}`, as `bespoke generate`
    writes them: a `search` block is kept in its results item) with a judge.

    `judge` is a spec such as `"openai:gpt-5"`, `"hf:Qwen/Qwen3-8B"`, `"vllm:..."`, `"embed:..."`, a whole
    `JudgeConfig` or a ready `Judge`; `judge_options` go to it (`base_url`, `concurrency`, `cache`, `max_shots`, `recall`,
    `executor="ray"` with `replicas`, ...). `guards=False` sends every response to the judge (see
    `bespoke_metric.judging.guards`). Bad predictions raise `PredictionError` before any judge call;
    `allow_repeats` scores several predictions of one query (the metric's path) instead of refusing them.
    The `usage` block records every model's tokens and cost, the judge's and those of `uses` (the
    system model's, for `bespoke run`), at `prices` (default: the built-in table)."""
    return score_many([predictions], judge, source=source, revision=revision, limit=limit, systems=[system],
                      allow_repeats=allow_repeats, guards=guards, prices=prices, uses=uses, **judge_options)[0]


def score_many(
    predictions: Sequence[PredictionsInput],
    judge: str | Spec | JudgeConfig | Judge,
    *,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    revision: str | None = None,
    limit: int | None = None,
    systems: Sequence[Mapping[str, Any] | None] | None = None,
    allow_repeats: bool = False,
    guards: bool = True,
    prices: PriceTable | None = None,
    uses: Sequence[ModelUse] = (),
    group_uses: Sequence[Sequence[ModelUse]] | None = None,
    **judge_options: Any,
) -> list[Results]:
    """Score several systems' predictions with one judge, loaded once; one `Results` per predictions
    input, in order. Every system's calls go through one scheduler run, so a judge on Ray or vLLM sees
    them all at once. Every input is checked before any judge call (a `PredictionError` names the file; a
    missing file is named before the data loads)."""
    if limit is not None and limit < 1:
        raise UserError(f"limit must be at least 1 (it keeps the first N predictions), got {limit}")
    systems = list(systems) if systems is not None else [None] * len(predictions)
    if len(systems) != len(predictions):
        raise UserError(f"{len(predictions)} predictions inputs but {len(systems)} systems")
    judging = judge_groups(predictions, source=source, revision=revision, limit=limit, allow_repeats=allow_repeats)
    return run_judge_many(judge, judging.groups, data=judging.data, systems=systems, guards=guards, prices=prices,
                          uses=uses, group_uses=group_uses, benchmark_queries=len(judging.rows),
                          calibration_rows=judging.rows, **judge_options)


def judge_groups(
    predictions: Sequence[PredictionsInput],
    *,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    revision: str | None = None,
    limit: int | None = None,
    allow_repeats: bool = False,
) -> "JudgeGroups":
    """The judge items of each predictions input (checked against the benchmark, the first `limit` of
    each; each item carries its prediction), the `data` block and the benchmark's rows. Every input is
    checked readable before the data loads."""
    for given in predictions:
        check_readable(given)
    benchmark, data = load_benchmark(source, revision)
    groups = []
    for given in predictions:
        checked = read_predictions(given, benchmark, allow_repeats=allow_repeats)[:limit]
        groups.append([JudgeItem.of(benchmark[prediction.key], prediction) for prediction in checked])
    return JudgeGroups(groups, data, list(benchmark.values()))


class JudgeGroups(NamedTuple):
    """What `judge_groups` reads: each input's judge items, the `data` block, the benchmark's rows (every
    query, whatever `limit` kept: what the embed proxy is calibrated on)."""

    groups: list[list[JudgeItem]]
    data: dict[str, Any]
    rows: list[dict[str, Any]]


def plan_judging(judge: JudgeConfig, groups: Sequence[Sequence[JudgeItem]], *, response_bound: bool = False) -> list[Planned]:
    """A dry run of judging `groups` with the judge `judge` configures (see `bespoke_metric.calls.plan`): the
    calls it would make after the guards and its cache, none sent, nothing written; empty for a judge that
    makes no model calls (`embed:`). `response_bound`: some responses are stand-ins (not yet generated)."""
    planning = plan_judge(judge)
    if planning is None:
        return []
    checked = GuardedJudge(planning.judge, enabled=judge.guards)
    try:
        pending = checked.judge([item for group in groups for item in group])
        run_sync(pending)
    finally:
        planning.judge.close()
    return [Planned(judge.spec, "judge", planning.backend.requests, planning.cache.served, batch=planning.backend.batch,
                    response_bound=response_bound, served_output_tokens=planning.cache.served_output_tokens)]


def write_results(results: Results, path: str | os.PathLike[str], *, rerun: Rerun | None = None) -> None:
    """Write a results file atomically: a crash never leaves half of one. Where its predictions are
    (`system.predictions`) is recorded relative to the file's folder (`rescore.recorded_predictions`). A run
    that lost judgments or answers is marked `incomplete` (whoever built its `Results`: `bespoke import` builds
    its own), with `rerun`, the command that fills the gaps, where a command wrote it."""
    lost = results.incomplete or run_lost(results)
    if lost is not None:
        results.incomplete = dataclasses.replace(lost, rerun=rerun or lost.rerun)
    content = results.to_json()
    system = content.get("system")
    if isinstance(system, dict) and system.get("predictions"):
        content["system"] = {**system, "predictions": recorded_predictions(system["predictions"], path)}
    atomic_write_text(path, json.dumps(content, indent=2, ensure_ascii=False) + "\n")

