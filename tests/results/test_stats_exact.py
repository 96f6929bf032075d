"""The statistics of `results.stats` and `results.figure_stats` to the digit, each against its definition written out
here in plain Python over the same seeded resamples (`resample_indices`, the one random draw they share): every
field of a paired test, every key of a block, the edges where a statistic is undefined (None or NaN, never a
warning on the console), the messages of the errors, and the seed 0 every default resamples with (a results
file's intervals are reproducible from one version to the next)."""

from __future__ import annotations

import itertools
import math
import statistics
import warnings

import numpy as np
import pytest

from bespoke_metric.results import stats
from bespoke_metric.results.figure_stats import HEADLINE, average_figure, matrix_figures, matrix_stderr
from bespoke_metric.results.metrics import METRIC_NAMES

B = 400
"""Resamples of the tests that compare against their definitions (few, so their values differ from run to run)."""


def replicates_of(statistic, *columns: list[float], n_resamples: int = B, seed: int = 0) -> list[float]:
    """`statistic` (a function of plain lists) on each resample, the resamples drawn by `resample_indices`."""
    indices = stats.resample_indices(len(columns[0]), n_resamples, seed)
    return [statistic(*([column[i] for i in row] for column in columns)) for row in indices.tolist()]


def percentile(values: list[float], share: float) -> float:
    """numpy's default percentile (linear interpolation between the order statistics)."""
    ordered = sorted(values)
    position = share * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def interval(values: list[float], confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2
    return percentile(values, tail), percentile(values, 1 - tail)


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


# -- paired tests -----------------------------------------------------------------------------------------------

A = [4.0, 3.0, 5.0, 2.0, 4.0, 5.0, 3.0, 4.0, 1.0, 5.0, 4.0, 2.0]
C = [3.0, 3.0, 4.0, 2.0, 5.0, 3.0, 3.0, 2.0, 2.0, 4.0, 3.0, 2.0]


@pytest.mark.parametrize("confidence", [0.95, 0.5])
def test_the_paired_bootstrap_by_its_definition(confidence: float) -> None:
    d = [x - y for x, y in zip(A, C, strict=True)]
    observed = mean(d)
    boot = replicates_of(mean, d, seed=3)
    extreme = sum(abs(value - observed) >= abs(observed) - 1e-12 for value in boot)
    test = stats.paired_bootstrap(A, C, n_resamples=B, seed=3, confidence=confidence)
    assert test.n == len(A) and test.method == "bootstrap"
    assert test.difference == pytest.approx(observed, abs=1e-12)
    assert test.ci == pytest.approx(interval(boot, confidence), abs=1e-12)
    assert test.p_value == pytest.approx((extreme + 1) / (B + 1), abs=1e-12)
    assert 0.05 < test.p_value < 1.0  # neither bound decides it


def test_a_replicate_exactly_as_far_as_the_estimate_counts_as_extreme() -> None:
    # differences 2 and 0: the replicates are 0, 1 or 2, and 0 and 2 lie exactly |1| from the estimate 1
    boot = replicates_of(mean, [2.0, 0.0], seed=0)
    at_distance = sum(value in (0.0, 2.0) for value in boot)
    assert 0 < at_distance < B
    assert stats.paired_bootstrap([3.0, 1.0], [1.0, 1.0], n_resamples=B).p_value == pytest.approx((at_distance + 1) / (B + 1))


def test_the_exact_permutation_test_counts_every_sign_pattern() -> None:
    # 2**3 = 8 patterns: enumerated when 8 resamples are allowed, drawn at random below that
    d = [3.0, 1.0, 1.0]
    means = [mean([s * v for s, v in zip(signs, d, strict=True)]) for signs in itertools.product((1, -1), repeat=3)]
    exact = sum(abs(m) >= abs(mean(d)) - 1e-12 for m in means) / 8
    assert exact == 2 / 8  # only all signs alike reach |5/3|
    enumerated = stats.paired_permutation([4.0, 2.0, 2.0], [1.0, 1.0, 1.0], n_resamples=8)
    assert enumerated.p_value == exact and enumerated.method == "permutation" and enumerated.n == 3
    drawn = stats.paired_permutation([4.0, 2.0, 2.0], [1.0, 1.0, 1.0], n_resamples=7, seed=2)
    signs = np.random.default_rng(2).choice([-1.0, 1.0], size=(7, 3)).tolist()
    count = sum(abs(mean([s * v for s, v in zip(row, d, strict=True)])) >= abs(mean(d)) - 1e-12 for row in signs)
    assert drawn.p_value == pytest.approx((count + 1) / 8)


def test_the_random_permutation_test_by_its_definition() -> None:
    d = [x - y for x, y in zip(A, C, strict=True)]  # 12 pairs: 4096 patterns, more than the resamples
    signs = np.random.default_rng(5).choice([-1.0, 1.0], size=(B, len(d))).tolist()
    count = sum(abs(mean([s * v for s, v in zip(row, d, strict=True)])) >= abs(mean(d)) - 1e-12 for row in signs)
    test = stats.paired_permutation(A, C, n_resamples=B, seed=5, confidence=0.8)
    assert test.p_value == pytest.approx((count + 1) / (B + 1), abs=1e-12) and 0.01 < test.p_value < 1
    assert test.ci == pytest.approx(interval(replicates_of(mean, d, seed=5), 0.8), abs=1e-12)
    assert (test.n, test.difference, test.method) == (len(A), pytest.approx(mean(d)), "permutation")


def test_a_permutation_test_s_interval_is_the_paired_bootstrap_s_at_its_seed() -> None:
    # continuous differences, so that each seed's interval is its own
    draw = np.random.default_rng(11)
    x, y = draw.normal(size=30).tolist(), draw.normal(size=30).tolist()
    for seed in (0, 5):
        test = stats.paired_permutation(x, y, n_resamples=B, seed=seed)
        assert test.ci == stats.paired_bootstrap(x, y, n_resamples=B, seed=seed).ci
    assert stats.paired_permutation(x, y, n_resamples=B, seed=5).ci != stats.paired_permutation(x, y, n_resamples=B).ci


def test_a_statistic_of_several_items_compared_by_its_definition() -> None:
    def correlation(x: list[float], y: list[float]) -> float:
        mx, my = mean(x), mean(y)
        cov = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
        spread = math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))
        return cov / spread if spread > 0 else math.nan

    other = [5.0, 1.0, 4.0, 2.0, 4.0, 3.0, 5.0, 1.0, 2.0, 4.0, 3.0, 2.0]
    observed = correlation(A, C) - correlation(other, C)
    boot = [value for value in replicates_of(lambda x, y, z: correlation(x, z) - correlation(y, z), A, other, C, seed=1)
            if not math.isnan(value)]
    extreme = sum(abs(value - observed) >= abs(observed) - 1e-12 for value in boot)
    test = stats.paired_statistic_test(stats.rowwise_pearson, [A, C], [other, C], n_resamples=B, seed=1, confidence=0.9)
    assert (test.n, test.method) == (len(A), "bootstrap")
    assert test.difference == pytest.approx(observed, abs=1e-12)
    assert test.p_value == pytest.approx((extreme + 1) / (len(boot) + 1), abs=1e-12) and test.p_value < 1
    assert test.ci == pytest.approx(interval(boot, 0.9), abs=1e-12)


def test_undefined_replicates_are_left_out_of_the_paired_statistic_test() -> None:
    # a resample that misses the one item apart has a constant column: no correlation (NaN)
    x = [1.0] * 9 + [5.0]
    y = [2.0] * 9 + [4.0]
    z = [4.0] * 9 + [2.0]
    boot = replicates_of(lambda a: 0.0 if len(set(a)) > 1 else math.nan, x, seed=0)
    defined = sum(not math.isnan(value) for value in boot)
    assert 0 < defined < B
    test = stats.paired_statistic_test(stats.rowwise_pearson, [x, y], [x, z], n_resamples=B)
    assert test.difference == pytest.approx(2.0) and test.ci == (pytest.approx(2.0), pytest.approx(2.0))
    assert test.p_value == pytest.approx(1 / (defined + 1))


def test_a_comparison_of_one_side_with_itself_has_p_value_one() -> None:
    assert stats.paired_statistic_test(stats.rowwise_mean, [A], [A], n_resamples=B).p_value == 1.0


def test_a_comparison_undefined_on_the_items_or_on_every_resample_has_no_interval_and_p_value_one() -> None:
    # undefined on the items as they are, defined on the resamples that miss the largest value
    largest_undefined = lambda a: np.where(a.max(axis=1) == 5.0, np.nan, a.mean(axis=1))  # noqa: E731
    test = stats.paired_statistic_test(largest_undefined, [A], [C], n_resamples=B)
    assert (test.ci, test.p_value) == (None, 1.0) and math.isnan(test.difference)
    # defined on the items, undefined on every resample
    items_only = lambda a: a.mean(axis=1) if len(a) == 1 else np.full(len(a), np.nan)  # noqa: E731
    test = stats.paired_statistic_test(items_only, [A], [C], n_resamples=B)
    assert (test.ci, test.p_value) == (None, 1.0) and math.isnan(test.difference)


def test_an_undefined_comparison_has_no_interval_and_p_value_one() -> None:
    constant = [3.0] * 12
    test = stats.paired_statistic_test(stats.rowwise_pearson, [A, constant], [A, C], n_resamples=B)
    assert (test.n, test.ci, test.p_value, test.method) == (12, None, 1.0, "bootstrap") and math.isnan(test.difference)


@pytest.mark.parametrize("n", [1, 9])
def test_too_few_items_give_the_estimate_alone(n: int) -> None:
    test = stats.paired_statistic_test(stats.rowwise_mean, [A[:n]], [C[:n]], n_resamples=B)
    assert (test.n, test.ci, test.method) == (n, None, "bootstrap") and math.isnan(test.p_value)
    assert test.difference == pytest.approx(mean(A[:n]) - mean(C[:n]))


@pytest.mark.parametrize(("run", "message"), [
    (lambda: stats.paired_bootstrap([], []), "paired_bootstrap: no pairs"),
    (lambda: stats.paired_permutation([], []), "paired_permutation: no pairs"),
    (lambda: stats.paired_statistic_test(stats.rowwise_mean, [[]], [[]]), "paired_statistic_test: no items, or arrays of different lengths"),
    (lambda: stats.paired_statistic_test(stats.rowwise_mean, [A], [C[:5]]), "paired_statistic_test: no items, or arrays of different lengths"),
    (lambda: stats.bootstrap_replicates(stats.rowwise_mean, A, C[:5]), "bootstrap: all arrays must have the same length"),
    (lambda: stats.pearson([1, 2], [1, 2, 3]), r"expected two 1-D sequences of the same length, got shapes \(2,\) and \(3,\)"),
    (lambda: stats.pearson([[1, 2]], [[1, 2]]), r"expected two 1-D sequences of the same length, got shapes \(1, 2\) and \(1, 2\)"),
])
def test_a_misuse_is_named(run, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        run()


def test_one_pair_is_tested() -> None:
    assert stats.paired_bootstrap([3.0], [1.0], n_resamples=9).p_value == pytest.approx(1 / 10)
    assert stats.paired_permutation([3.0], [1.0]).p_value == 1.0  # +2 and -2 both reach |2|


def test_a_paired_test_as_a_block() -> None:
    test = stats.PairedTest(n=3, difference=0.5, ci=(0.1, 0.9), p_value=0.04, method="bootstrap")
    assert test.to_dict() == {"n": 3, "difference": 0.5, "ci": [0.1, 0.9], "p_value": 0.04, "method": "bootstrap"}
    assert stats.PairedTest(3, 0.5, None, 0.04, "permutation").to_dict()["ci"] is None


def test_every_default_resamples_with_seed_zero() -> None:
    assert stats.paired_bootstrap(A, C) == stats.paired_bootstrap(A, C, seed=0, n_resamples=stats.PAIRED_RESAMPLES)
    assert stats.paired_permutation(A, C) == stats.paired_permutation(A, C, seed=0, n_resamples=stats.PAIRED_RESAMPLES)
    assert stats.paired_statistic_test(stats.rowwise_mean, [A], [C]) == stats.paired_statistic_test(
        stats.rowwise_mean, [A], [C], seed=0, n_resamples=stats.PAIRED_RESAMPLES)
    spread = np.random.default_rng(9).normal(size=40).tolist()  # continuous: each seed's interval its own
    assert stats.bootstrap_ci(stats.rowwise_mean, spread) == stats.bootstrap_ci(stats.rowwise_mean, spread, seed=0,
                                                                                 n_resamples=stats.DEFAULT_RESAMPLES)
    assert stats.bootstrap_ci(stats.rowwise_mean, spread) != stats.bootstrap_ci(stats.rowwise_mean, spread, seed=1)
    assert stats.estimate(stats.rowwise_pearson, A, C) == stats.estimate(stats.rowwise_pearson, A, C, seed=0)
    assert stats.agreement(A, C) == stats.agreement(A, C, seed=0, n_resamples=stats.DEFAULT_RESAMPLES)
    assert np.array_equal(stats.resample_indices(4), stats.resample_indices(4, stats.DEFAULT_RESAMPLES, 0))
    assert np.array_equal(stats.bootstrap_replicates(stats.rowwise_mean, A), stats.bootstrap_replicates(stats.rowwise_mean, A, seed=0))


def test_resampled_indices_cover_every_item_and_only_those() -> None:
    drawn = stats.resample_indices(3, 500, seed=4)
    assert drawn.shape == (500, 3) and set(drawn.ravel().tolist()) == {0, 1, 2}


# -- estimates and agreement ------------------------------------------------------------------------------------


def test_an_estimate_by_its_definition() -> None:
    found = stats.estimate(stats.rowwise_mean, A, n_resamples=B, seed=2, confidence=0.8)
    assert set(found) == {"value", "ci"} and found["value"] == pytest.approx(mean(A))
    assert found["ci"] == pytest.approx(list(interval(replicates_of(mean, A, seed=2), 0.8)), abs=1e-12)
    assert isinstance(found["ci"], list)
    assert stats.estimate(stats.rowwise_mean, []) == {"value": None, "ci": None}
    assert stats.estimate(stats.rowwise_pearson, A, [3.0] * 12) == {"value": None, "ci": None}  # undefined, no interval
    assert stats.estimate(stats.rowwise_mean, A[:9]) == {"value": pytest.approx(mean(A[:9])), "ci": None}


def test_agreement_by_its_definition() -> None:
    judge = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 2, 4]
    human = [2, 1, 4, 3, 5, 2, 3, 3, 5, 4, 1, 4]
    found = stats.agreement(judge, human, n_resamples=B, seed=6, confidence=0.8)
    assert list(found) == ["n", "pearson", "spearman", "exact", "within_one", "pearson_ci", "spearman_ci", "exact_ci",
                           "within_one_ci"]
    from scipy import stats as sps

    assert found["spearman"] == pytest.approx(sps.spearmanr(judge, human).statistic)
    exact = replicates_of(lambda x, y: mean([a == b for a, b in zip(x, y, strict=True)]), judge, human, seed=6)
    near = replicates_of(lambda x, y: mean([abs(a - b) <= 1 for a, b in zip(x, y, strict=True)]), judge, human, seed=6)
    assert found["exact_ci"] == pytest.approx(list(interval(exact, 0.8)))
    assert found["within_one_ci"] == pytest.approx(list(interval(near, 0.8)))
    ranked = stats.bootstrap_ci(stats.rowwise_spearman, judge, human, n_resamples=B, seed=6, confidence=0.8)
    assert found["spearman_ci"] == pytest.approx(list(ranked)) and found["spearman_ci"][0] < found["spearman_ci"][1]


def test_correlations_need_two_pairs_and_spread_on_both_sides() -> None:
    assert stats.pearson([1, 2], [2, 1]) == pytest.approx(-1.0) and stats.spearman([1, 2], [1, 2]) == pytest.approx(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # undefined is None, said before SciPy warns of a constant input
        for correlation in (stats.pearson, stats.spearman):
            assert correlation([1, 2, 3], [4, 4, 4]) is None and correlation([4, 4, 4], [1, 2, 3]) is None
            assert correlation([3, 4, 4], [4, 4, 4]) is None and correlation([4, 4, 4], [4, 4, 3]) is None
            assert correlation([4], [4]) is None and correlation([], []) is None
    assert stats.within_one([], []) is None and stats.within_one([1, 3], [3, 3]) == 0.5
    assert stats.exact_agreement([1, 2], [1, 3]) == 0.5


def test_rowwise_agreement_per_row() -> None:
    a = np.array([[1.0, 2.0, 3.0, 5.0], [4.0, 4.0, 4.0, 4.0]])
    b = np.array([[1.0, 4.0, 3.0, 2.0], [4.0, 3.0, 4.0, 4.0]])
    assert stats.rowwise_exact(a, b).tolist() == [0.5, 0.75]
    assert stats.rowwise_within_one(a, b).tolist() == [0.5, 1.0]
    pearson = stats.rowwise_pearson(a, b)
    assert pearson[0] == pytest.approx(stats.pearson(a[0], b[0])) and math.isnan(pearson[1])  # a constant row
    assert math.isnan(stats.rowwise_pearson(np.array([[0.1, 0.2, 0.3]]), np.array([[0.2, 0.4, 0.6]]))[0]) is False


def test_undefined_rows_are_nan_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(stats.rowwise_nanmean(np.array([[np.nan, np.nan], [1.0, np.nan]]))[0])
        assert stats.rowwise_nanmean(np.array([[1.0, np.nan]]))[0] == 1.0
        assert math.isnan(stats.rowwise_pearson(np.array([[2.0, 2.0]]), np.array([[1.0, 3.0]]))[0])
        assert math.isnan(stats.rowwise_pearson(np.array([[2.0, 2.0]]), np.array([[3.0, 3.0]]))[0])


def test_a_small_spread_is_a_correlation_still() -> None:
    # a spread whose product is below 1: correlated all the same
    assert stats.rowwise_pearson(np.array([[0.1, 0.2, 0.4]]), np.array([[0.2, 0.1, 0.5]]))[0] == pytest.approx(
        stats.pearson([0.1, 0.2, 0.4], [0.2, 0.1, 0.5]))


def test_a_percentile_interval_by_its_definition() -> None:
    values = [0.0, 1.0, 2.0, 3.0, 4.0, 10.0]
    assert stats.percentile_ci(np.array(values), 0.5) == pytest.approx(interval(values, 0.5))
    assert stats.percentile_ci(np.array([np.nan, 2.0, np.inf]), 0.9) == (2.0, 2.0)
    assert stats.percentile_ci(np.array([7.0])) == (7.0, 7.0)
    assert stats.percentile_ci(np.array([np.nan])) is None and stats.percentile_ci(np.array([])) is None


def test_an_interval_with_confidence_and_resamples_given() -> None:
    assert stats.bootstrap_ci(stats.rowwise_mean, A, n_resamples=B, seed=1, confidence=0.6) == pytest.approx(
        interval(replicates_of(mean, A, seed=1), 0.6), abs=1e-12)


def test_inf_is_no_value() -> None:
    assert stats.estimate(lambda a: np.full(len(a), np.inf), [1.0, 2.0])["value"] is None


# -- Krippendorff's alpha -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("x", "y"), [([1, 2, 3], [1, 2, 4]), ([1, 5, 2, 4], [2, 5, 1, 3]), ([3, 3, 1], [3, 3, 5])])
def test_krippendorff_s_alpha_by_its_definition(x: list[float], y: list[float]) -> None:
    # interval metric, two raters on every unit: 1 - D_o / D_e over every ordered pair of values
    pooled = [*x, *y]
    n = len(pooled)
    observed = sum(2 * (a - b) ** 2 for a, b in zip(x, y, strict=True)) / n
    expected = sum((a - b) ** 2 for i, a in enumerate(pooled) for j, b in enumerate(pooled) if i != j) / (n * (n - 1))
    assert stats.krippendorff_alpha(x, y) == pytest.approx(1 - observed / expected, abs=1e-12)


def test_krippendorff_s_alpha_where_undefined() -> None:
    assert stats.krippendorff_alpha([2], [3]) is None
    assert stats.krippendorff_alpha([2, 2], [2, 2]) is None
    assert stats.krippendorff_alpha([1, 3], [1, 3]) == 1.0


# -- the figures of a matrix ----------------------------------------------------------------------------------------


def test_the_figures_of_a_matrix_leave_out_what_was_not_judged() -> None:
    matrix = np.array([[80.0, 60.0, 100.0, 40.0, 50.0], [40.0, np.nan, 60.0, 80.0, 25.0], [np.nan, 20.0, 20.0, 60.0, np.nan]])
    figures = matrix_figures(matrix)
    assert list(figures) == [*METRIC_NAMES, HEADLINE]
    expected = {"need_alignment": 60.0, "content_depth": 40.0, "tone": 60.0, "explanation_style": 60.0, "recall": 37.5}
    assert figures == pytest.approx({**expected, HEADLINE: mean(list(expected.values()))})
    unjudged = matrix_figures(np.array([[80.0, 60.0, 100.0, 40.0, np.nan]]))
    assert unjudged["recall"] is None and unjudged[HEADLINE] is None and unjudged["tone"] == 100.0


def test_the_average_needs_all_five_figures() -> None:
    five = dict(zip(METRIC_NAMES, [10.0, 20.0, 30.0, 40.0, 50.0], strict=True))
    assert average_figure(five) == 30.0
    assert math.isnan(average_figure({**five, "tone": None})) and math.isnan(average_figure({**five, "recall": math.nan}))
    assert math.isnan(average_figure({name: value for name, value in five.items() if name != "tone"}))


def test_a_matrix_s_standard_errors_by_their_definition() -> None:
    rows = [[80.0, 60.0, 100.0, 40.0, 50.0], [40.0, 20.0, 60.0, 80.0, 25.0], [60.0, 20.0, 20.0, 60.0, 75.0],
            [100.0, 80.0, 40.0, 20.0, 0.0]]
    stderr = matrix_stderr(np.array(rows), n_resamples=B, seed=7)
    columns = [[row[col] for row in rows] for col in range(5)]
    for col, name in enumerate(METRIC_NAMES):
        assert stderr[name] == pytest.approx(statistics.stdev(replicates_of(mean, columns[col], seed=7)), abs=1e-9)
    averaged = replicates_of(lambda *cs: mean([mean(c) for c in cs]), *columns, seed=7)
    assert stderr[HEADLINE] == pytest.approx(statistics.stdev(averaged), abs=1e-9)
    assert matrix_stderr(np.array(rows)) == matrix_stderr(np.array(rows), seed=0, n_resamples=stats.DEFAULT_RESAMPLES)
    empty = matrix_stderr(np.empty((0, 5)))
    assert all(value is None for value in empty.values()) and list(empty) == [*METRIC_NAMES, HEADLINE]
    with pytest.raises(ValueError):
        matrix_stderr(np.array(rows)[:, :4])  # a matrix that lacks a figure is refused, not read short
