"""From per-item judge results to the benchmark's numbers (pure functions, no rounding).

`summarize` is the `summary` block of a results file: per metric the 0-100 number over the items that
were judged on it, the headline `average` of the five (None unless all five exist), and counts. A
failed judgment never enters a mean as a 0: it is left out and counted under `failures`.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from bespoke_dataset.keys import natural_key

from .figure_stats import average_figure
from .metrics import METRICS, REGISTRY
from .records import ItemResult


def recall_from_verdicts(verdicts: Sequence[bool | None]) -> float | None:
    """Fraction of gold claims judged conveyed, or None when it cannot be known: when any claim could
    not be judged (a partial recall would be biased) and when the query has no gold claims at all
    (calling that 0 or 1 would silently move the benchmark number). The caller records why in the
    item's errors, so a None recall is always counted as a failure, never averaged as a 0."""
    if not verdicts or any(verdict is None for verdict in verdicts):
        return None
    return sum(1 for verdict in verdicts if verdict) / len(verdicts)


def _failed_metrics(item: ItemResult) -> set[str]:
    failed = set()
    for error in item.errors:
        metric = error.get("metric")
        if metric not in REGISTRY:
            raise ValueError(f"{item.key}: error names unknown metric {metric!r}")
        failed.add(metric)
    return failed


def summarize(items: Sequence[ItemResult]) -> dict[str, Any]:
    """The `summary` block: `need_alignment`, `content_depth`, `tone`, `explanation_style`, `recall`
    (0-100 floats, None when no item was judged on it), `average` (mean of those five, None unless all
    five exist), `items` (count), `queries` (the distinct queries they answer), and per metric `scored`
    (items judged), `guarded` (of those, items a response guard caught: lowest scores, no judge call) and
    `failures` (items with an error on it). An item neither scored nor failed on a metric was not asked
    for it."""
    summary: dict[str, Any] = {}
    scored: dict[str, int] = {}
    guarded: dict[str, int] = {}
    for metric in METRICS:
        values = [(metric.sample(item), item.guard is not None) for item in items]
        judged = [value for value, _ in values if value is not None]
        summary[metric.name] = metric.corpus(judged)
        scored[metric.name] = len(judged)
        guarded[metric.name] = sum(1 for value, caught in values if value is not None and caught)
    average = average_figure(summary)
    summary["average"] = None if math.isnan(average) else average
    failed = [_failed_metrics(item) for item in items]
    summary["items"] = len(items)
    summary["queries"] = len({item.key for item in items})
    summary["scored"] = scored
    summary["guarded"] = guarded
    summary["failures"] = {metric.name: sum(metric.name in f for f in failed) for metric in METRICS}
    return summary


def by_user(items: Sequence[ItemResult]) -> dict[str, dict[str, Any]]:
    """`summarize` per user, users in natural order (`user2` before `user10`)."""
    groups: dict[str, list[ItemResult]] = {}
    for item in items:
        groups.setdefault(item.user, []).append(item)
    return {user: summarize(groups[user]) for user in sorted(groups, key=natural_key)}
