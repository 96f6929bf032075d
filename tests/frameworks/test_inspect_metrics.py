"""The inspect tasks' metrics as an eval runs them, through inspect's own epoch reducer (`metric_epochs`):
`bespoke_figures` (the benchmark's figures, the average first, the failed judgments and the marks counted) and
`bespoke_agreement` (the meta-evaluation's agreement, with Krippendorff's alpha); a reducer that would break their
scale is refused before the eval starts."""

from __future__ import annotations

import math

import pytest
from metric_epochs import assert_agreeing_epochs_change_nothing, run_metrics

from bespoke_metric.frameworks.inspect_judge import FAILED, MARKS_KEY, bespoke_figures
from bespoke_metric.frameworks.inspect_meta_eval import HUMAN_KEY, bespoke_agreement
from bespoke_metric.results import stats
from bespoke_metric.results.caveats import PROXY_MARK
from bespoke_metric.results.metrics import METRIC_NAMES

FIGURES = [{"need_alignment": 80.0, "content_depth": 60.0, "tone": 100.0, "explanation_style": 40.0, "recall": 50.0},
           {"need_alignment": 40.0, "content_depth": 100.0, "tone": 60.0, "explanation_style": 80.0, "recall": math.nan},
           {"need_alignment": 100.0, "content_depth": 20.0, "tone": 80.0, "explanation_style": 60.0, "recall": 25.0}]


@pytest.mark.slow
def test_bespoke_figures_agreeing_epochs_change_nothing() -> None:
    assert_agreeing_epochs_change_nothing([bespoke_figures()], FIGURES)


@pytest.mark.slow
def test_bespoke_figures_through_the_mean_reducer_average_each_query_first() -> None:
    # two epochs of one query that disagree: its value is their mean, then the queries' mean
    figures = run_metrics([bespoke_figures()], [[FIGURES[0], FIGURES[2]], [FIGURES[1], FIGURES[1]]])
    assert figures["need_alignment"] == pytest.approx(((80 + 100) / 2 + 40) / 2)
    assert figures["recall"] == pytest.approx((50 + 25) / 2)  # the second query never judged on recall: left out
    assert list(figures)[0] == "average" and figures[FAILED] == 1  # the headline first; one figure unjudged


def test_bespoke_figures_count_failed_judgments_and_marks_in_inspect_s_table() -> None:
    from inspect_ai.scorer import SampleScore, Score

    scores = [SampleScore(score=Score(value=value, metadata={MARKS_KEY: [PROXY_MARK]}), sample_id=str(index))
              for index, value in enumerate(FIGURES)]
    figures = bespoke_figures()(scores)
    assert figures[FAILED] == 1 and figures[PROXY_MARK] == 3
    # a judge that failed every judgment: no figure, but the table still says so
    failed = bespoke_figures()([SampleScore(score=Score(value=dict.fromkeys(METRIC_NAMES, math.nan)), sample_id="1")])
    assert failed[FAILED] == len(METRIC_NAMES) and failed["average"] is None


HUMAN = [{"need_alignment": 4, "content_depth": 3, "tone": 5, "explanation_style": 2},
         {"need_alignment": 2, "content_depth": 2, "tone": 4, "explanation_style": 3},
         {"need_alignment": 5, "content_depth": 4, "tone": 3, "explanation_style": 4},
         {"need_alignment": 1, "content_depth": 1, "tone": 2, "explanation_style": 1}]
JUDGED = [{"need_alignment": 4.0, "content_depth": 2.0, "tone": 5.0, "explanation_style": 2.0},
          {"need_alignment": 3.0, "content_depth": 2.0, "tone": 4.0, "explanation_style": 3.0},
          {"need_alignment": 5.0, "content_depth": 5.0, "tone": math.nan, "explanation_style": 4.0},
          {"need_alignment": 1.0, "content_depth": 2.0, "tone": 1.0, "explanation_style": 2.0}]


@pytest.mark.slow
def test_bespoke_agreement_agreeing_epochs_change_nothing() -> None:
    assert_agreeing_epochs_change_nothing([bespoke_agreement()], JUDGED, metadata=[{HUMAN_KEY: human} for human in HUMAN])


def test_bespoke_agreement_is_meta_eval_s_table_with_krippendorff_s_alpha() -> None:
    from inspect_ai.scorer import SampleScore, Score

    from bespoke_metric.analysis.meta_eval import agreement_table

    scores = [SampleScore(score=Score(value=value), sample_id=str(index), sample_metadata={HUMAN_KEY: human})
              for index, (value, human) in enumerate(zip(JUDGED, HUMAN, strict=True))]
    agreement = bespoke_agreement()(scores)
    judged = [{name: None if math.isnan(value) else value for name, value in row.items()} for row in JUDGED]
    table = agreement_table(judged, [{name: {"score": value} for name, value in row.items()} for row in HUMAN])
    assert agreement["pooled_pearson"] == table["pooled"]["pearson"]
    assert agreement["need_alignment_exact"] == table["dimensions"]["need_alignment"]["exact"] == 0.75
    assert agreement[FAILED] == 1  # the tone the judge failed: out of the pairs, counted
    pairs = [(row[name], HUMAN[index][name]) for name in HUMAN[0] for index, row in enumerate(judged) if row[name] is not None]
    assert agreement["pooled_alpha"] == stats.krippendorff_alpha(*zip(*pairs, strict=True))


def test_krippendorff_s_alpha_is_the_reference_implementation_s() -> None:
    # values of the `krippendorff` package (0.9.0, level_of_measurement="interval") on the same ratings
    assert stats.krippendorff_alpha([1, 2, 3, 3, 2, 1, 4, 1, 2], [1, 2, 3, 3, 2, 2, 4, 1, 2]) == pytest.approx(0.9427609427609428)
    assert stats.krippendorff_alpha([5, 4, 3, 2, 1, 3, 4], [4, 4, 2, 2, 2, 3, 5]) == pytest.approx(0.8115942028985508)
    assert stats.krippendorff_alpha([3, 3], [3, 3]) is None and stats.krippendorff_alpha([2], [5]) is None
