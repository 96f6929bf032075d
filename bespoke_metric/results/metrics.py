"""The metric registry: the one place that lists every BESPOKE metric.

As in lighteval's registry, each metric has a sample-level function (`Metric.sample`: one
`ItemResult` -> a number on the metric's own scale, or None when the item was not judged on it) and a
corpus-level function (`Metric.corpus`: those numbers -> the benchmark's 0-100 figure).
`bespoke_metric.results.aggregation` builds the summary of a results file from `METRICS` and nothing else.

Scale (docs/protocol.md, inferred from the paper's published cells): a dimension's figure is the mean of its 1-5 scores ÷ 5 × 100; recall's is the mean
per-query recall (0-1) × 100. Both are "mean ÷ top of scale × 100". The headline average of the five
figures is computed in `aggregation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean
from typing import Callable, Sequence

from .records import ItemResult


@dataclass(frozen=True)
class Metric:
    name: str
    description: str
    read: Callable[[ItemResult], float | None]
    """The raw per-item value (None when not judged)."""
    low: float
    high: float
    """The per-item scale; `high` maps to 100."""

    def sample(self, item: ItemResult) -> float | None:
        """The item's value on the metric's scale, None when not judged. Raises ValueError naming the
        item for a value off the scale."""
        value = self.read(item)
        if value is not None and (isinstance(value, bool) or not self.low <= value <= self.high):
            raise ValueError(f"{item.key}: {self.name} = {value!r} is outside "
                             f"{self.low:g}-{self.high:g}")
        return value

    def figure(self, value: float) -> float:
        """An item's value on the figures' 0-100 scale: ÷ top of scale × 100."""
        return value / self.high * 100

    def corpus(self, values: Sequence[float]) -> float | None:
        """The mean of the judged items' values on the 0-100 scale (`figure`), unrounded; None for no values."""
        return fmean(self.figure(value) for value in values) if values else None


def _dimension(name: str, description: str) -> Metric:
    return Metric(name, description, lambda item: item.scores.get(name), low=1, high=5)


METRICS: tuple[Metric, ...] = (
    _dimension("need_alignment", "Does the response meet this user's actual information need (1-5)."),
    _dimension("content_depth", "Is the content specific and substantial enough for this user (1-5)."),
    _dimension("tone", "Does the register suit this user (1-5)."),
    _dimension("explanation_style", "Is it explained the way this user prefers (1-5)."),
    Metric("recall", "Fraction of the query's gold claims the response conveys (0-1).",
           lambda item: item.recall, low=0, high=1),
)
"""Every metric, in results-file order: the four dimensions (as `judge.DIMENSIONS`), then recall."""

REGISTRY: dict[str, Metric] = {metric.name: metric for metric in METRICS}
"""`METRICS` by name."""

METRIC_NAMES: tuple[str, ...] = tuple(REGISTRY)
"""The metrics' names in results-file order; the headline `average` is the mean of these five figures."""
