"""Calibration of the `embed:` proxy on the human-scored R-J examples, and its honest measurement.

The proxy's raw value for a response is a similarity-weighted mean of its nearest examples' human scores
(`knn_vote`). A mean pulls toward the middle: left raw, it rarely says 1 or 5. Calibration maps it onto
the humans' own scale with a quantile map (equipercentile linking): a raw value at the q-th quantile of
the raw values of the examples becomes the q-th quantile of their human scores, so the calibrated proxy
uses the whole 1-5 range as often as the humans do, and keeps its order.

The examples' raw values come from leave-one-out: each example is voted on by the *other* examples of its
query, as a new response would be (`example_pairs`). How good the calibrated proxy is gets measured by
leave-one-query-out (`leave_one_query_out`): each query's examples are scored with a map fitted on all
other queries' examples only, then compared with their human scores (Pearson, Spearman, exact and
within-one agreement, with bootstrap intervals over the pairs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from bespoke_dataset.keys import query_key
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.results import stats

CALIBRATION_METHOD = "quantile-map, leave-one-out raw values of the R-J examples"


@dataclass(frozen=True)
class Vote:
    """The raw proxy value of one dimension and the examples that produced it."""

    value: float
    neighbours: list[tuple[int, float, float, int]]
    """(example index, cosine, weight, human score) of each voting example."""


def knn_vote(similarity: np.ndarray, scores: Sequence[int | None], k: int, temperature: float) -> Vote | None:
    """Softmax(cosine / temperature)-weighted mean of the human scores of the k most similar examples
    that have one; None when no example has a score."""
    scored = [i for i, score in enumerate(scores) if score is not None]
    if not scored:
        return None
    nearest = sorted(scored, key=lambda i: -similarity[i])[:k]
    logits = np.array([similarity[i] for i in nearest]) / temperature
    weights = np.exp(logits - logits.max())
    weights /= weights.sum()
    value = float(sum(w * scores[i] for w, i in zip(weights, nearest, strict=True)))  # type: ignore[operator]
    neighbours = [(i, float(similarity[i]), float(w), int(scores[i])) for w, i in zip(weights, nearest, strict=True)]  # type: ignore[arg-type]
    return Vote(value, neighbours)


def to_score(value: float) -> int:
    """A 1-5 integer score, rounding half up (not to even)."""
    return min(5, max(1, math.floor(value + 0.5)))


@dataclass(frozen=True)
class QuantileMap:
    """Monotone map from raw proxy values to the human score scale (fitted on paired examples)."""

    raw: np.ndarray
    """Sorted raw values of the examples."""
    human: np.ndarray
    """Sorted human scores of the same examples."""

    @classmethod
    def fit(cls, raw: Sequence[float], human: Sequence[float]) -> "QuantileMap":
        if len(raw) != len(human) or not raw:
            raise ValueError(f"a quantile map needs paired values, got {len(raw)} raw and {len(human)} human")
        return cls(np.sort(np.asarray(raw, dtype=float)), np.sort(np.asarray(human, dtype=float)))

    def __call__(self, value: float) -> float:
        # the value's position among the raw values (0 at the lowest, 1 at the highest; tied values share
        # the middle of their positions), read off the human scores at the same position
        below = np.searchsorted(self.raw, value, side="left")
        upto = np.searchsorted(self.raw, value, side="right")
        if len(self.raw) == 1:
            return float(self.human[0])
        position = min(1.0, max(0.0, (below + upto - 1) / 2 / (len(self.raw) - 1)))
        return float(np.quantile(self.human, position))


@dataclass(frozen=True)
class Pair:
    """One R-J example: its query, dimension, leave-one-out raw value and human score."""

    query: str
    dimension: str
    raw: float
    human: int


def example_pairs(rows: Sequence[Mapping[str, Any]], vectors: Mapping[str, np.ndarray], *, k: int,
                  temperature: float, max_shots: int) -> list[Pair]:
    """Leave-one-out raw values of every scored example of `rows` (a query needs two examples)."""
    pairs: list[Pair] = []
    for row in rows:
        shots = list(row["shots"][:max_shots])
        if len(shots) < 2:
            continue
        matrix = np.array([vectors[shot["response"]] for shot in shots])
        similarity = matrix @ matrix.T
        for i, shot in enumerate(shots):
            others = [j for j in range(len(shots)) if j != i]
            for dimension in DIMENSIONS:
                human = shot[dimension]["score"]
                vote = knn_vote(similarity[i, others], [shots[j][dimension]["score"] for j in others], k, temperature)
                if human is not None and vote is not None:
                    pairs.append(Pair(query_key(row["user"], row["query_id"]), dimension, vote.value, int(human)))
    return pairs


def fit_maps(pairs: Sequence[Pair]) -> dict[str, QuantileMap]:
    """One quantile map per dimension that has examples."""
    maps = {}
    for dimension in DIMENSIONS:
        chosen = [p for p in pairs if p.dimension == dimension]
        if chosen:
            maps[dimension] = QuantileMap.fit([p.raw for p in chosen], [p.human for p in chosen])
    return maps


def leave_one_query_out(pairs: Sequence[Pair], *, n_resamples: int = stats.DEFAULT_RESAMPLES,
                        seed: int = 0) -> dict[str, Any]:
    """Agreement with the humans of the calibrated proxy (maps fitted without the query) and of the raw
    one (rounded), pooled over the four dimensions, on the R-J examples: `{"calibrated", "raw"}` each a
    `stats.agreement` table, plus `queries` and `method`."""
    queries = sorted({p.query for p in pairs})
    calibrated: list[float] = []
    raw: list[float] = []
    human: list[float] = []
    for query in queries:
        maps = fit_maps([p for p in pairs if p.query != query])
        for pair in (p for p in pairs if p.query == query):
            if pair.dimension not in maps:
                continue
            calibrated.append(to_score(maps[pair.dimension](pair.raw)))
            raw.append(to_score(pair.raw))
            human.append(pair.human)
    return {
        "method": "leave-one-query-out on the R-J examples (each voted on by the other examples of its query)",
        "queries": len(queries),
        "calibrated": stats.agreement(calibrated, human, n_resamples=n_resamples, seed=seed),
        "raw": stats.agreement(raw, human, n_resamples=n_resamples, seed=seed),
    }
