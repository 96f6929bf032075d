"""Statistics for judges and systems: agreement with humans, bootstrap intervals, paired tests.

Every function takes plain sequences of numbers with missing values already removed (callers decide
what "missing" means: a failed judgment is left out, never turned into a 0). Resampling is seeded and
vectorised: one `(n_resamples, n)` index matrix, one numpy reduction.

Undefined statistics (a correlation of a constant series, anything of fewer than two pairs) are
`None`, not NaN, so that they survive JSON and are visibly absent in a table. The judge-vs-human statistics
(`agreement`, `estimate`, `paired_statistic_test`) give no interval or p-value on fewer than
`MIN_INTERVAL_N` observations: on so few the resamples repeat a handful of values and the percentile
interval sits on the estimate's own edge (3 responses gave `0.123 [0.00, 0.12]`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

DEFAULT_RESAMPLES = 2000
"""Bootstrap resamples of every interval (results files, `leaderboard`, `meta-eval`, the leaderboard Space)."""
PAIRED_RESAMPLES = 10_000
"""Resamples (or sign flips) of a paired test between two systems (`compare`): a p-value needs more than an interval."""
CONFIDENCE = 0.95
MIN_INTERVAL_N = 10
"""Fewest responses an agreement interval or a paired test is given on (`too_few`)."""
TOO_FEW = "too few for an interval"
"""What a table says in place of an interval on fewer than `MIN_INTERVAL_N` responses."""


def too_few(n: int, per_response: int = 1) -> bool:
    """Whether `n` observations, `per_response` to a response (4 for pooled dimensions), are fewer than
    `MIN_INTERVAL_N` responses."""
    return n < MIN_INTERVAL_N * per_response

Statistic = Callable[..., np.ndarray]
"""`stat(*arrays)` where every array is `(n_resamples, n)`; returns `(n_resamples,)`."""


def _pairs(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"expected two 1-D sequences of the same length, got shapes {a.shape} and {b.shape}")
    return a, b


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _constant(a: np.ndarray) -> bool:
    return bool(np.all(a == a[0]))


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r (SciPy); None when fewer than two pairs or either series is constant."""
    a, b = _pairs(x, y)
    if len(a) < 2 or _constant(a) or _constant(b):
        return None
    from scipy import stats as sps  # imported on use: scipy.stats costs seconds at start-up

    return _finite(sps.pearsonr(a, b).statistic)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (SciPy, average ranks for ties); None when undefined."""
    a, b = _pairs(x, y)
    if len(a) < 2 or _constant(a) or _constant(b):
        return None
    from scipy import stats as sps

    return _finite(sps.spearmanr(a, b).statistic)


def exact_agreement(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Fraction of pairs with equal scores."""
    a, b = _pairs(x, y)
    return float(np.mean(a == b)) if len(a) else None


def within_one(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Fraction of pairs whose scores differ by at most one point."""
    a, b = _pairs(x, y)
    return float(np.mean(np.abs(a - b) <= 1)) if len(a) else None


def krippendorff_alpha(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Krippendorff's alpha of two raters who both rated every unit, on an interval scale (squared differences):
    1 - observed / expected disagreement, the expected one over every pair of the pooled values. None when
    undefined: fewer than two units, or every value the same."""
    a, b = _pairs(x, y)
    if len(a) < 2:
        return None
    values = np.concatenate([a, b])
    n = len(values)
    observed = 2 * float(np.sum((a - b) ** 2)) / n  # each unit: its two ordered pairs, m_u - 1 = 1
    expected = (2 * n * float(np.sum(values**2)) - 2 * float(np.sum(values)) ** 2) / (n * (n - 1))
    return None if expected == 0 else 1 - observed / expected


# Vectorised statistics over rows of resampled matrices (shape (B, n) -> (B,)).

def rowwise_mean(a: np.ndarray) -> np.ndarray:
    return a.mean(axis=1)


def rowwise_nanmean(a: np.ndarray) -> np.ndarray:
    """Mean per row ignoring NaN (missing values); NaN for a row with no value at all."""
    present = ~np.isnan(a)
    counts = present.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(present, a, 0.0).sum(axis=1) / np.where(counts > 0, counts, np.nan)


def rowwise_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson's r per row; NaN for rows where either side is constant."""
    da = a - a.mean(axis=1, keepdims=True)
    db = b - b.mean(axis=1, keepdims=True)
    denom = np.sqrt((da * da).sum(axis=1) * (db * db).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (da * db).sum(axis=1) / denom
    return np.where(denom > 0, r, np.nan)


def rowwise_spearman(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman's rho per row: Pearson's r of average ranks, as SciPy computes it."""
    from scipy import stats as sps

    return rowwise_pearson(sps.rankdata(a, axis=1), sps.rankdata(b, axis=1))


def rowwise_exact(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a == b).mean(axis=1)


def rowwise_within_one(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (np.abs(a - b) <= 1).mean(axis=1)


def resample_indices(n: int, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> np.ndarray:
    """`(n_resamples, n)` indices drawn with replacement; the same seed gives the same matrix."""
    return np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))


def percentile_ci(samples: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Percentile interval of bootstrap replicates, ignoring undefined (NaN) replicates."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return None
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)


def bootstrap_ci(
    statistic: Statistic,
    *arrays: Sequence[float],
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of `statistic` over paired observations.

    All arrays are resampled with the same indices (pairs stay pairs). `statistic` is one of the
    `rowwise_*` functions or any function of `(B, n)` matrices returning `(B,)`. None when there are
    no observations or every replicate is undefined.
    """
    replicates = bootstrap_replicates(statistic, *arrays, n_resamples=n_resamples, seed=seed)
    return None if replicates is None else percentile_ci(replicates, confidence)


def bootstrap_replicates(
    statistic: Statistic, *arrays: Sequence[float], n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> np.ndarray | None:
    """`statistic` over `n_resamples` resamples of the paired observations (one index matrix for all
    arrays: pairs stay pairs); None when there are no observations."""
    columns = [np.asarray(a, dtype=float) for a in arrays]
    n = len(columns[0])
    if any(len(c) != n for c in columns):
        raise ValueError("bootstrap: all arrays must have the same length")
    if n == 0:
        return None
    idx = resample_indices(n, n_resamples, seed)
    return statistic(*(c[idx] for c in columns))


def bootstrap_se(
    statistic: Statistic,
    *arrays: Sequence[float],
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> float | None:
    """Bootstrap standard error of `statistic` (the standard deviation of its replicates), resampling
    like `bootstrap_ci`; None when there are no observations or fewer than two defined replicates."""
    replicates = bootstrap_replicates(statistic, *arrays, n_resamples=n_resamples, seed=seed)
    if replicates is None:
        return None
    finite = replicates[np.isfinite(replicates)]
    return float(np.std(finite, ddof=1)) if finite.size > 1 else None


def agreement(
    judge_scores: Sequence[float],
    human_scores: Sequence[float],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    per_response: int = 1,
) -> dict[str, object]:
    """Judge-vs-human agreement on paired scores: n, Pearson, Spearman, exact and within-one agreement,
    each with a bootstrap interval (`<name>_ci`, `[low, high]`, or None: undefined, or `too_few` pairs at
    `per_response` pairs to a response). All intervals share one set of resampled indices."""
    a, b = _pairs(judge_scores, human_scores)
    out: dict[str, object] = {
        "n": int(len(a)),
        "pearson": pearson(a, b),
        "spearman": spearman(a, b),
        "exact": exact_agreement(a, b),
        "within_one": within_one(a, b),
    }
    rowwise = {"pearson": rowwise_pearson, "spearman": rowwise_spearman, "exact": rowwise_exact, "within_one": rowwise_within_one}
    for name, fn in rowwise.items():
        # the same seed draws the same indices: every interval comes from the same resamples
        ci = None if too_few(len(a), per_response) else bootstrap_ci(fn, a, b, n_resamples=n_resamples, seed=seed,
                                                                      confidence=confidence)
        out[f"{name}_ci"] = list(ci) if ci else None
    return out


@dataclass(frozen=True)
class PairedTest:
    """Result of a paired test of `mean(a - b) == 0`."""

    n: int
    difference: float
    """mean(a) - mean(b) over the pairs."""
    ci: tuple[float, float] | None
    """Bootstrap percentile interval of the mean difference."""
    p_value: float
    method: str

    def to_dict(self) -> dict[str, object]:
        return {"n": self.n, "difference": self.difference, "ci": list(self.ci) if self.ci else None,
                "p_value": self.p_value, "method": self.method}


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_resamples: int = PAIRED_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> PairedTest:
    """Paired bootstrap test of the mean difference.

    The two-sided p-value is the share of bootstrap mean differences, re-centred on zero (the null),
    at least as far from zero as the observed one (Efron & Tibshirani, ch. 16), with the usual +1
    correction so it is never exactly 0.
    """
    x, y = _pairs(a, b)
    if len(x) == 0:
        raise ValueError("paired_bootstrap: no pairs")
    d = x - y
    observed = float(d.mean())
    boot = d[resample_indices(len(d), n_resamples, seed)].mean(axis=1)
    extreme = np.sum(np.abs(boot - observed) >= abs(observed) - 1e-12)
    p = float((extreme + 1) / (n_resamples + 1))
    return PairedTest(len(d), observed, percentile_ci(boot, confidence), min(p, 1.0), "bootstrap")


def paired_permutation(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_resamples: int = PAIRED_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> PairedTest:
    """Paired permutation (sign-flip) test of the mean difference, two-sided.

    Under the null each pair's difference is as likely to have either sign. With 2**n <= n_resamples
    every sign pattern is enumerated (the exact p-value); otherwise signs are drawn at random and the
    p-value carries the +1 correction. The interval is the paired bootstrap's.
    """
    x, y = _pairs(a, b)
    n = len(x)
    if n == 0:
        raise ValueError("paired_permutation: no pairs")
    d = x - y
    observed = float(d.mean())
    if 2**n <= n_resamples:
        # Row k holds the bits of k: every sign pattern exactly once.
        bits = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
        means = ((1 - 2 * bits) * d).mean(axis=1)
        p = float(np.mean(np.abs(means) >= abs(observed) - 1e-12))
    else:
        signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(n_resamples, n))
        means = (signs * d).mean(axis=1)
        p = float((np.sum(np.abs(means) >= abs(observed) - 1e-12) + 1) / (n_resamples + 1))
    boot = d[resample_indices(n, n_resamples, seed)].mean(axis=1)
    return PairedTest(n, observed, percentile_ci(boot, confidence), p, "permutation")


PAIRED_TESTS: dict[str, Callable[..., PairedTest]] = {"bootstrap": paired_bootstrap, "permutation": paired_permutation}


def estimate(
    statistic: Statistic,
    *arrays: Sequence[float],
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> dict[str, object]:
    """`{"value", "ci"}` of a rowwise `statistic` over paired observations (one to a response): its value on
    the observations as they are, and its percentile bootstrap interval (`bootstrap_ci`); None where
    undefined, and no interval on `too_few`."""
    columns = [np.asarray(a, dtype=float) for a in arrays]
    if not len(columns[0]):
        return {"value": None, "ci": None}
    value = float(statistic(*(column[None, :] for column in columns))[0])
    ci = None if too_few(len(columns[0])) else bootstrap_ci(statistic, *columns, n_resamples=n_resamples, seed=seed,
                                                            confidence=confidence)
    return {"value": _finite(value), "ci": list(ci) if ci else None}


def paired_statistic_test(
    statistic: Statistic,
    first: Sequence[Sequence[float]],
    second: Sequence[Sequence[float]],
    *,
    n_resamples: int = PAIRED_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> PairedTest:
    """Paired bootstrap test of `statistic(*first) - statistic(*second)` over the same items: both sides
    are resampled with the same indices (a statistic of several items, such as a correlation, is compared,
    not a mean of per-item differences). The p-value is `paired_bootstrap`'s: the share of re-centred
    replicate differences at least as far from zero as the observed one, +1 corrected; on `too_few` items
    there is none (NaN) and no interval."""
    columns = [np.asarray(a, dtype=float) for a in (*first, *second)]
    n = len(columns[0])
    if n == 0 or any(len(c) != n for c in columns):
        raise ValueError("paired_statistic_test: no items, or arrays of different lengths")
    split = len(first)

    def difference(*matrices: np.ndarray) -> np.ndarray:
        return statistic(*matrices[:split]) - statistic(*matrices[split:])

    observed = float(difference(*(c[None, :] for c in columns))[0])
    if too_few(n):
        return PairedTest(n, observed, None, float("nan"), "bootstrap")
    idx = resample_indices(n, n_resamples, seed)
    boot = difference(*(c[idx] for c in columns))
    finite = boot[np.isfinite(boot)]
    if not math.isfinite(observed) or finite.size == 0:
        return PairedTest(n, float("nan"), None, 1.0, "bootstrap")
    extreme = np.sum(np.abs(finite - observed) >= abs(observed) - 1e-12)
    p = float((extreme + 1) / (finite.size + 1))
    return PairedTest(n, observed, percentile_ci(finite, confidence), min(p, 1.0), "bootstrap")
