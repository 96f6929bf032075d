"""A system's run: its predictions generated, then judged in memory, into the `Results` of one results file.

    outcome = run("openai:gpt-4o-mini", "preds.jsonl", "openai:gpt-5", GenerationSettings(context="oracle"))
    write_results(outcome.results, "results.json")

`bespoke run` is `run`; a sweep generates each of its cells and judges them all in one judge run with
`score_generated`, the same judging. What is judged is what generation holds in memory
(`GenerationReport.predictions`, the predictions file's records): each judged item carries its prediction,
so what its system searched, a cut-off answer and the model that served it reach the results from there
(`scoring.pipeline.build_results`), and the file is not read back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_metric.backends.base import Backend
from bespoke_metric.backends.registry import EngineConfig, Spec
from bespoke_metric.calls.pricing import PriceTable
from bespoke_metric.calls.spending import SpendingLimit
from bespoke_metric.judging.config import JudgeConfig
from bespoke_metric.judging.judge import Judge
from bespoke_metric.results import Results
from bespoke_metric.results.labels import system_label
from bespoke_metric.scoring.pipeline import score_many
from bespoke_metric.scoring.predictions import PredictionRecords

from .generation import GenerationReport, generate
from .settings import GenerationSettings


def results_system(report: GenerationReport) -> dict[str, Any]:
    """The `system` block of a results file of generated predictions: the run's record (with the name given
    to its model, `model_name`, if any), where the predictions are, which queries have none, and a display
    name."""
    system = {**report.system, "predictions": str(report.output), "generation_failures": report.failed}
    system["name"] = system_label(system)  # a string for tables and legends: "hf:Qwen3-8B (history)"
    return system


def score_generated(
    reports: Sequence[GenerationReport],
    judge: str | Spec | JudgeConfig | Judge,
    *,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    revision: str | None = None,
    limit: int | None = None,
    guards: bool = True,
    prices: PriceTable | None = None,
    **judge_options: Any,
) -> list[Results]:
    """Judge the predictions `generate` made and holds in memory (each report's `predictions`, the first
    `limit` of each), one `Results` per report, in one judge run (`score_many`): each with the `system`
    block of `results_system`, and in its `usage.models` the calls of its report's models beside the judge's."""
    return score_many([PredictionRecords(str(report.output), report.predictions) for report in reports], judge,
                      source=source, revision=revision, limit=limit, systems=[results_system(report) for report in reports],
                      guards=guards, prices=prices, group_uses=[report.uses for report in reports], **judge_options)


@dataclass(frozen=True)
class RunOutcome:
    """What `run` did: the generation's report and the judged results."""

    report: GenerationReport
    """Generated, already there, failed (`report.failed`: queries without a prediction), calls, time."""
    results: Results | None
    """The judged predictions, for `write_results`; None when generation reached the spending limit."""


def run(
    model: str | Spec | EngineConfig | Backend,
    predictions: str | os.PathLike[str],
    judge: str | Spec | JudgeConfig | Judge,
    settings: GenerationSettings | None = None,
    *,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    revision: str | None = None,
    progress: bool = True,
    strict: bool = False,
    model_name: str | None = None,
    guards: bool = True,
    prices: PriceTable | None = None,
    spending: SpendingLimit | None = None,
    on_generated: Callable[[GenerationReport], None] | None = None,
    **judge_options: Any,
) -> RunOutcome:
    """Generate predictions for every query with `model` into `predictions` (resumed if it exists, as
    `generate` does), then judge them with `judge` (as `score` does, `judge_options` going to the judge):
    what `bespoke run` does.

    `settings.limit` bounds both; `strict` refuses cut-off answers and calls served by another model while
    generating; `prices` price the `usage` block's models (the judge's, the system model's, a profiler's).
    `spending` is the limit every model of the run shares (`--max-cost`: system model, profiler, judge): when generation reached it, nothing is
    judged (`results` is None). `on_generated` is called once generation ends, before any judge call
    (`bespoke run` prints the report there). The results equal `score`'s of the predictions file, with the
    `system` block of `results_system`."""
    settings = settings or GenerationSettings()
    report = generate(model, predictions, settings, source=source, revision=revision, progress=progress, strict=strict,
                      model_name=model_name, spending=spending)
    if on_generated is not None:
        on_generated(report)
    if spending is not None and spending.stopped:
        return RunOutcome(report, None)
    if spending is not None and not isinstance(judge, Judge):  # the judge shares it where its engine has a price
        judge_options = {"spending": spending, **judge_options}
    [results] = score_generated([report], judge, source=source, revision=revision, limit=settings.limit, guards=guards,
                                prices=prices, **judge_options)
    return RunOutcome(report, results)
