"""Agreement statistics and resampling, checked against values computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from bespoke_metric.results import stats


def test_correlations_and_agreement_by_hand():
    # deviations (-2,-1,0,1,2) and (-1,-2,1,0,2): sum of products 8, sums of squares 10 and 10 -> 0.8
    x, y = [1, 2, 3, 4, 5], [2, 1, 4, 3, 5]
    assert stats.pearson(x, y) == pytest.approx(0.8)
    assert stats.spearman(x, y) == pytest.approx(0.8)
    assert stats.exact_agreement(x, y) == pytest.approx(0.2)
    assert stats.within_one(x, y) == pytest.approx(1.0)
    assert stats.within_one([1, 5], [3, 5]) == pytest.approx(0.5)


def test_spearman_uses_average_ranks_for_ties():
    # ranks (1, 2.5, 2.5, 4) and (1, 3.5, 2, 3.5): products 3.75 over squares 4.5 and 4.5
    assert stats.spearman([1, 2, 2, 3], [1, 3, 2, 3]) == pytest.approx(3.75 / 4.5)


def test_undefined_correlations_are_none():
    assert stats.pearson([3, 3, 3], [1, 2, 3]) is None
    assert stats.spearman([1], [2]) is None
    assert stats.exact_agreement([], []) is None
    with pytest.raises(ValueError, match="same length"):
        stats.pearson([1, 2], [1, 2, 3])


def test_rowwise_statistics_match_scipy_row_by_row():
    rng = np.random.default_rng(1)
    a = rng.integers(1, 6, size=(20, 15)).astype(float)
    b = np.clip(a + rng.integers(-1, 2, size=a.shape), 1, 5)
    pear = stats.rowwise_pearson(a, b)
    spear = stats.rowwise_spearman(a, b)
    for i in range(len(a)):
        assert pear[i] == pytest.approx(stats.pearson(a[i], b[i]))
        assert spear[i] == pytest.approx(stats.spearman(a[i], b[i]))


def test_bootstrap_ci_of_a_two_point_mean_by_hand():
    # mean of two draws from {0, 1} is 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4
    assert stats.bootstrap_ci(stats.rowwise_mean, [0.0, 1.0], n_resamples=4000) == (0.0, 1.0)
    # a 40% interval cuts at the 30th and 70th percentiles, both inside the 0.5 mass
    assert stats.bootstrap_ci(stats.rowwise_mean, [0.0, 1.0], n_resamples=4000, confidence=0.4) == (0.5, 0.5)
    assert stats.bootstrap_ci(stats.rowwise_mean, [3.0]) == (3.0, 3.0)
    assert stats.bootstrap_ci(stats.rowwise_mean, []) is None


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    values = np.random.default_rng(0).normal(2.0, 1.0, size=200)
    first = stats.bootstrap_ci(stats.rowwise_mean, values, seed=7)
    assert first == stats.bootstrap_ci(stats.rowwise_mean, values, seed=7)
    assert first != stats.bootstrap_ci(stats.rowwise_mean, values, seed=8)
    low, high = first
    assert low < values.mean() < high
    # the standard error of a mean of 200 unit normals is ~0.07: a 95% interval is ~0.28 wide
    assert 0.2 < high - low < 0.36


def test_agreement_reports_every_number_with_an_interval():
    judge = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]
    human = [2, 1, 4, 3, 5, 2, 1, 4, 3, 5]
    out = stats.agreement(judge, human, n_resamples=500)
    assert out["n"] == 10
    assert out["pearson"] == pytest.approx(0.8)
    assert out["exact"] == pytest.approx(0.2)
    assert out["within_one"] == pytest.approx(1.0)
    assert out["within_one_ci"] == [1.0, 1.0]
    low, high = out["pearson_ci"]
    assert low < 0.8 < high <= 1.0
    empty = stats.agreement([], [])
    assert empty["n"] == 0
    assert empty["pearson"] is None
    assert empty["pearson_ci"] is None


def test_exact_permutation_p_values_by_hand():
    # 8 sign patterns of (1, 1, 1); only all-plus and all-minus reach |mean| >= 1
    test = stats.paired_permutation([2, 2, 2], [1, 1, 1])
    assert test.p_value == pytest.approx(2 / 8)
    assert test.difference == pytest.approx(1.0)
    # (1, 2, 3, 4): |mean| >= 2.5 needs every sign equal: 2 of 16
    assert stats.paired_permutation([1, 2, 3, 4], [0, 0, 0, 0]).p_value == pytest.approx(2 / 16)


def test_paired_tests_find_a_real_gap_and_not_a_missing_one():
    rng = np.random.default_rng(3)
    base = rng.integers(1, 6, size=150).astype(float)
    better = np.clip(base + (rng.random(150) < 0.4), 1, 5)  # +1 on ~40% of queries
    noise = base.copy()
    swap = rng.permutation(150)[:60]
    noise[swap[:30]] = np.clip(noise[swap[:30]] + 1, 1, 5)
    noise[swap[30:]] = np.clip(noise[swap[30:]] - 1, 1, 5)
    for test in (stats.paired_bootstrap, stats.paired_permutation):
        gap = test(better, base)
        assert gap.p_value < 0.05
        assert gap.difference > 0
        assert gap.ci[0] > 0
        same = test(base, base)
        assert same.p_value == 1.0
        assert same.difference == 0.0
    assert stats.paired_permutation(noise, base).p_value > 0.05


def test_constant_difference_gets_the_smallest_bootstrap_p_value():
    test = stats.paired_bootstrap([3, 4, 5], [2, 3, 4], n_resamples=999)
    assert test.p_value == pytest.approx(1 / 1000)
    assert test.ci == (1.0, 1.0)


def test_too_few_responses_get_no_interval_or_p_value():
    """On 3 responses a bootstrap interval sits on its own estimate's edge (`0.123 [0.00, 0.12]`): none is
    given, nor a p-value; the estimate is."""
    judge, human = [1, 3, 5], [2, 2, 5]
    few = stats.agreement(judge, human, n_resamples=200)
    assert few["pearson"] is not None and few["pearson_ci"] is None and few["exact_ci"] is None
    assert stats.agreement(judge * 4, human * 4, n_resamples=200, per_response=4)["pearson_ci"] is None  # 3 responses, pooled
    assert stats.agreement(judge * 4, human * 4, n_resamples=200)["pearson_ci"] is not None  # 12 responses
    assert stats.estimate(stats.rowwise_pearson, judge, human)["ci"] is None
    test = stats.paired_statistic_test(stats.rowwise_pearson, [judge, human], [human, human], n_resamples=200)
    assert test.ci is None and np.isnan(test.p_value) and test.difference < 0
    assert stats.too_few(stats.MIN_INTERVAL_N - 1) and not stats.too_few(stats.MIN_INTERVAL_N)
