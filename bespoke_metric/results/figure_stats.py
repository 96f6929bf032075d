"""What a reader of lm-eval's results looks for beside each figure: its standard error, how many
samples were given and scored, and which direction is better (pure functions, no rounding).

The standard error is a bootstrap over queries, as the leaderboard's intervals are: items are resampled
with replacement and each figure is recomputed over the items judged on it (a failed judgment stays
out, as in `aggregation.summarize`); the headline average's replicate is the mean of the five.
"""

from __future__ import annotations

import math
from statistics import fmean
from typing import Any, Mapping, Sequence

import numpy as np

from . import stats
from .metrics import METRICS
from .records import ItemResult

HEADLINE = "average"
"""The mean of the five figures, reported beside them."""


def item_figures(item: ItemResult) -> dict[str, float]:
    """One item's values on the figures' 0-100 scale, by metric (the four dimensions, then `recall`), NaN
    where it was not judged: the mean of each over the items judged on it (NaN left out) is its figure."""
    figures = {}
    for metric in METRICS:
        value = metric.sample(item)
        figures[metric.name] = math.nan if value is None else metric.figure(value)
    return figures


def average_figure(figures: Mapping[str, float | None]) -> float:
    """The headline average: the mean of the five figures, NaN unless all five exist."""
    values = [figures.get(metric.name) for metric in METRICS]
    if any(value is None or math.isnan(value) for value in values):
        return math.nan
    return fmean(values)  # type: ignore[arg-type]


def figure_matrix(items: Sequence[ItemResult]) -> np.ndarray:
    """`(n_items, 5)` on the benchmark's 0-100 scale, NaN where an item was not judged on a metric
    (`item_figures`, a row each)."""
    matrix = np.full((len(items), len(METRICS)), np.nan)
    for row, item in enumerate(items):
        matrix[row] = list(item_figures(item).values())
    return matrix


def mean_of_figures(*columns: np.ndarray) -> np.ndarray:
    # NaN propagates: no average unless all five figures exist in the replicate, as in the summary
    return np.mean([stats.rowwise_nanmean(column) for column in columns], axis=0)


def figure_stats(
    items: Sequence[ItemResult], *, n_resamples: int = stats.DEFAULT_RESAMPLES, seed: int = 0
) -> dict[str, Any]:
    """`stderr` (per figure and the average, None when undefined), `n_samples` (`given`: items,
    `scored`: items judged per figure) and `higher_is_better` (per figure and the average)."""
    matrix = figure_matrix(items)
    stderr = matrix_stderr(matrix, n_resamples=n_resamples, seed=seed)
    scored = {metric.name: int(np.isfinite(matrix[:, col]).sum()) for col, metric in enumerate(METRICS)}
    return {
        "stderr": stderr,
        "n_samples": {"given": len(items), "scored": scored},
        "higher_is_better": dict.fromkeys(stderr, True),
    }


def matrix_stderr(matrix: np.ndarray, *, n_resamples: int = stats.DEFAULT_RESAMPLES, seed: int = 0) -> dict[str, float | None]:
    """The standard error of each figure and of the average (None when undefined), from a `figure_matrix`."""
    columns = [matrix[:, col] for col in range(matrix.shape[1])]
    stderr: dict[str, float | None] = {
        metric.name: stats.bootstrap_se(stats.rowwise_nanmean, column, n_resamples=n_resamples, seed=seed)
        for metric, column in zip(METRICS, columns, strict=True)
    }
    complete = all(np.isfinite(column).any() for column in columns)
    stderr[HEADLINE] = (stats.bootstrap_se(mean_of_figures, *columns, n_resamples=n_resamples, seed=seed)
                        if complete and len(matrix) else None)
    return stderr


def matrix_figures(matrix: np.ndarray) -> dict[str, float | None]:
    """Each figure (the mean of its column's judged values, as `aggregation.summarize` computes it; None when
    none was judged) and the average (None unless all five exist), from a `figure_matrix`."""
    figures: dict[str, float | None] = {}
    for col, metric in enumerate(METRICS):
        judged = [float(value) for value in matrix[:, col] if not math.isnan(value)]
        figures[metric.name] = fmean(judged) if judged else None
    average = average_figure(figures)
    figures[HEADLINE] = None if math.isnan(average) else average
    return figures
