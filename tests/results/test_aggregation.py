"""Aggregation arithmetic against the paper's reference numbers, failures, counts and the registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.results import ItemResult
from bespoke_metric.results.aggregation import by_user, recall_from_verdicts, summarize
from bespoke_metric.results.metrics import METRIC_NAMES, METRICS, REGISTRY


def _spread(total: int, n: int) -> list[int]:
    """n integer scores (all within one of each other) that sum to `total`."""
    base, extra = divmod(total, n)
    return [base + 1] * extra + [base] * (n - extra)


def _items(totals: dict[str, int], recalls: list[float], users: int = 30) -> list[ItemResult]:
    n = len(recalls)
    columns = {dim: _spread(total, n) for dim, total in totals.items()}
    return [
        ItemResult(f"user{i % users + 1}", str(i // users + 1),
                   scores={dim: columns[dim][i] for dim in DIMENSIONS}, recall=recalls[i])
        for i in range(n)
    ]


def test_paper_o3_search_row():
    # o3-search, best user context: 59.07 / 63.73 / 85.20 / 73.87 / recall 30.53 / average 62.48.
    # Each dimension is an integer total over 150 queries x 20; e.g. need alignment 443/150/5*100.
    totals = {"need_alignment": 443, "content_depth": 478, "tone": 639, "explanation_style": 554}
    recalls = [matched / 10 for matched in _spread(458, 150)]  # 10 claims a query, 458 matched in all
    summary = summarize(_items(totals, recalls))
    assert summary["need_alignment"] == pytest.approx(443 / 150 / 5 * 100)
    assert round(summary["need_alignment"], 2) == 59.07
    assert round(summary["content_depth"], 2) == 63.73
    assert round(summary["tone"], 2) == 85.20
    assert round(summary["explanation_style"], 2) == 73.87
    assert round(summary["recall"], 2) == 30.53
    assert round(summary["average"], 2) == 62.48
    # the average is of the unrounded five
    five = [summary[m] for m in METRIC_NAMES]
    assert summary["average"] == pytest.approx(sum(five) / 5)
    assert summary["items"] == 150
    assert summary["scored"] == {m: 150 for m in METRIC_NAMES}
    assert summary["failures"] == {m: 0 for m in METRIC_NAMES}


def test_paper_no_personalization_row():
    # o3-search without user context: 51.60 / 57.47 / 78.53 / 70.00 / 22.05 / 55.93
    totals = {"need_alignment": 387, "content_depth": 431, "tone": 589, "explanation_style": 525}
    recalls = [0.25] * 132 + [3 / 40] + [0.0] * 17  # mean 0.2205
    summary = summarize(_items(totals, recalls))
    assert [round(summary[m], 2) for m in METRIC_NAMES] == [51.60, 57.47, 78.53, 70.00, 22.05]
    assert round(summary["average"], 2) == 55.93


def test_nothing_is_rounded():
    items = [ItemResult("user1", "1", scores={d: 1 for d in DIMENSIONS}, recall=1 / 3),
             ItemResult("user1", "2", scores={d: 2 for d in DIMENSIONS}, recall=0.0),
             ItemResult("user1", "3", scores={d: 2 for d in DIMENSIONS}, recall=0.0)]
    summary = summarize(items)
    assert summary["tone"] == pytest.approx(5 / 3 / 5 * 100, abs=1e-12)
    assert summary["recall"] == pytest.approx(100 / 9, abs=1e-12)
    assert summary["tone"] != round(summary["tone"], 2)


def test_failures_are_left_out_and_counted_never_zero():
    good = [ItemResult("user1", str(i), scores={d: 4 for d in DIMENSIONS}, recall=0.5) for i in range(3)]
    failed = ItemResult("user1", "9", recall=None,
                        errors=[{"metric": d, "reason": "unparseable"} for d in DIMENSIONS]
                        + [{"metric": "recall", "reason": "claim 1: timeout"},
                           {"metric": "recall", "reason": "claim 2: timeout"}])
    partly = ItemResult("user2", "1", scores={**{d: 2 for d in DIMENSIONS}, "tone": None}, recall=1.0,
                        errors=[{"metric": "tone", "reason": "Tone Score 4.5 is not an integer"}])
    summary = summarize(good + [failed, partly])
    assert summary["need_alignment"] == pytest.approx((4 * 3 + 2) / 4 / 5 * 100)
    assert summary["tone"] == pytest.approx(80.0)  # only the three good items
    assert summary["recall"] == pytest.approx((0.5 * 3 + 1.0) / 4 * 100)
    assert summary["items"] == 5
    assert summary["scored"] == {"need_alignment": 4, "content_depth": 4, "tone": 3, "explanation_style": 4,
                                 "recall": 4}
    # the item with two failed claims counts once
    assert summary["failures"] == {"need_alignment": 1, "content_depth": 1, "tone": 2, "explanation_style": 1,
                                   "recall": 1}


def test_average_needs_all_five():
    items = [ItemResult("user1", "1", scores={d: 5 for d in DIMENSIONS}, recall=None)]
    summary = summarize(items)
    assert summary["tone"] == 100.0
    assert summary["recall"] is None
    assert summary["average"] is None
    # an item not asked for recall is neither scored nor failed
    assert summary["scored"]["recall"] == 0
    assert summary["failures"]["recall"] == 0


def test_empty():
    summary = summarize([])
    assert all(summary[m] is None for m in METRIC_NAMES)
    assert summary["average"] is None
    assert summary["items"] == 0


@pytest.mark.parametrize("item, message", [
    (ItemResult("user7", "3", scores={**{d: 3 for d in DIMENSIONS}, "tone": 6}), "user7/3: tone = 6"),
    (ItemResult("user7", "3", scores={**{d: 3 for d in DIMENSIONS}, "tone": 0}), "user7/3: tone = 0"),
    (ItemResult("user7", "3", scores={d: 3 for d in DIMENSIONS}, recall=1.5), "user7/3: recall = 1.5"),
    (ItemResult("user7", "3", scores={d: 3 for d in DIMENSIONS}, errors=[{"metric": "all", "reason": "x"}]),
     "user7/3: error names unknown metric 'all'"),
])
def test_bad_items_are_named(item, message):
    with pytest.raises(ValueError, match=message):
        summarize([item])


def test_recall_from_verdicts():
    assert recall_from_verdicts([True, False, True, True]) == 0.75
    assert recall_from_verdicts([False, False]) == 0.0
    assert recall_from_verdicts([True]) == 1.0
    assert recall_from_verdicts([True, None, True]) is None  # unknown, never a silent False
    assert recall_from_verdicts([]) is None  # no claims: cannot be scored, not 0


def test_by_user():
    items = [ItemResult(user, str(q), scores={d: s for d in DIMENSIONS}, recall=s / 5)
             for user, q, s in (("user10", 1, 5), ("user2", 1, 1), ("user2", 2, 3), ("user1", 1, 4))]
    table = by_user(items)
    assert list(table) == ["user1", "user2", "user10"]
    assert table["user2"]["need_alignment"] == pytest.approx(40.0)
    assert table["user2"]["items"] == 2
    assert table["user10"]["average"] == pytest.approx(100.0)


def test_registry_lists_every_metric_once():
    assert tuple(metric.name for metric in METRICS) == METRIC_NAMES
    assert METRIC_NAMES[:4] == DIMENSIONS
    assert REGISTRY["tone"].high == 5
    assert REGISTRY["recall"].high == 1
    item = ItemResult("user1", "1", scores={**{d: 4 for d in DIMENSIONS}, "tone": None}, recall=0.25)
    assert [m.sample(item) for m in METRICS] == [4, 4, None, 4, 0.25]
    assert REGISTRY["content_depth"].corpus([5, 4]) == pytest.approx(90.0)
    assert REGISTRY["recall"].corpus([0.25, 0.5]) == pytest.approx(37.5)
    assert REGISTRY["recall"].corpus([]) is None


def test_one_name_for_the_metrics_and_one_for_their_names_everywhere():
    # `METRICS` are the Metric objects and `METRIC_NAMES` their names: no module calls the names `METRICS`
    root = Path(__file__).resolve().parents[2]
    aliased = [str(path.relative_to(root)) for folder in ("bespoke_metric", "bespoke_dataset", "scripts")
               for path in (root / folder).rglob("*.py") if "METRIC_NAMES as " in path.read_text(encoding="utf-8")]
    assert aliased == []
    assert [metric.name for metric in METRICS] == list(METRIC_NAMES)
