"""A standard error is the *sample* standard deviation of the bootstrap replicates (n - 1 in the denominator), to
the digit: on few replicates the two spreads differ by much (with two, by a factor of sqrt 2), and every standard
error of a results file, inspect's table and the leaderboard comes from it."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.results import ItemResult, stats
from bespoke_metric.results.figure_stats import figure_stats, matrix_stderr

VALUES = [1.0, 2.0, 4.0, 8.0, 16.0, 3.0]


@pytest.mark.parametrize("n_resamples", [2, 3, 10, 2000])
@pytest.mark.parametrize("seed", [0, 5])
def test_the_standard_error_is_the_sample_standard_deviation_of_the_replicates(n_resamples: int, seed: int) -> None:
    replicates = stats.bootstrap_replicates(stats.rowwise_mean, VALUES, n_resamples=n_resamples, seed=seed)
    assert replicates is not None and len(set(replicates.tolist())) > 1
    assert stats.bootstrap_se(stats.rowwise_mean, VALUES, n_resamples=n_resamples, seed=seed) == pytest.approx(
        statistics.stdev(replicates.tolist()), rel=1e-12)


def test_two_replicates_by_hand() -> None:
    indices = stats.resample_indices(len(VALUES), 2, seed=0)
    means = [float(np.mean([VALUES[i] for i in row])) for row in indices]
    assert means[0] != means[1]
    assert stats.bootstrap_se(stats.rowwise_mean, VALUES, n_resamples=2) == pytest.approx(abs(means[0] - means[1]) / math.sqrt(2))


def test_undefined_replicates_are_left_out_and_too_few_give_none() -> None:
    # a column judged on one item: most resamples miss it (NaN), the rest are that one value
    column = [np.nan] * 5 + [80.0]
    assert stats.bootstrap_se(stats.rowwise_nanmean, column, n_resamples=50) == 0.0
    assert stats.bootstrap_se(stats.rowwise_nanmean, [np.nan, np.nan], n_resamples=50) is None
    assert stats.bootstrap_se(stats.rowwise_mean, [], n_resamples=50) is None
    assert stats.bootstrap_se(stats.rowwise_mean, [3.0, 5.0], n_resamples=1) is None  # one replicate: no spread


def test_a_results_file_s_standard_errors_are_the_sample_spread_of_each_figure() -> None:
    scores = [1, 5, 2, 4, 3, 5, 1]
    recalls = [0.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.75]
    items = [ItemResult(f"user{index}", "1", scores=dict.fromkeys(DIMENSIONS, score), recall=recall)
             for index, (score, recall) in enumerate(zip(scores, recalls, strict=True))]
    indices = stats.resample_indices(len(items), 3, seed=0)
    dimension = [statistics.fmean(scores[i] / 5 * 100 for i in row) for row in indices]
    recall = [statistics.fmean(recalls[i] * 100 for i in row) for row in indices]
    average = [(4 * d + r) / 5 for d, r in zip(dimension, recall, strict=True)]
    stderr = figure_stats(items, n_resamples=3)["stderr"]
    assert stderr == pytest.approx({**dict.fromkeys(DIMENSIONS, statistics.stdev(dimension)), "recall": statistics.stdev(recall),
                                    "average": statistics.stdev(average)}, rel=1e-12)
    matrix = np.array([[s / 5 * 100] * 4 + [r * 100] for s, r in zip(scores, recalls, strict=True)])
    assert matrix_stderr(matrix, n_resamples=3) == stderr
    # another seed, other resamples: the seed given is the one used
    reseeded = figure_stats(items, n_resamples=3, seed=4)["stderr"]
    assert reseeded == matrix_stderr(matrix, n_resamples=3, seed=4) and reseeded != stderr
