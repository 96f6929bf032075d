"""The judge's meta-evaluation as inspect components, for the maintenance task `bespoke_metric/bespoke_meta_eval`:
the release's human-judged responses (`meta_test`) scored by the judge, and the judge's agreement with the humans
as `bespoke meta-eval` reports it (Pearson, Spearman, exact and within-one agreement per dimension and pooled over
the four, `analysis.meta_eval.agreement_table`) with Krippendorff's alpha beside them.

Each response is judged as `bespoke meta-eval` judges it: as given (not cleaned: it is no system's answer), behind
the response guards, an LLM judge without the claim calls (`recall: none`; agreement is on the four dimensions),
the embed proxy calibrated on the queries of every meta-test response (as `meta-eval` without `--limit` fits it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.analysis.meta_eval import agreement_table, meta_items
from bespoke_metric.judging.judge import JudgeItem
from bespoke_metric.judging.judges import as_judge_spec
from bespoke_metric.results import stats

from .importing import ITEM_KEY, JUDGE_KEY
from .inspect_arguments import ArgumentError, parameters_of, refuse_unknown, registered, said_for
from .inspect_judge import FAILED, JUDGE_NEEDED, ScorerJudge, explanation, judge_config, sample_source

SCORER_NAME = registered("bespoke_meta_judge")
HUMAN_KEY = "human"
"""Where a meta-test sample's metadata keeps the people's 1-5 score per dimension."""
POOLED = "pooled"
"""The four dimensions' pairs taken together, as the paper's figures are."""
HEADLINE = f"{POOLED}_pearson"
"""The paper's figure of a judge (0.847 for GPT-5, full protocol)."""
STATISTICS = ("pearson", "spearman", "exact", "within_one")
"""What `bespoke meta-eval` reports of each dimension and of the pool (`stats.agreement`)."""
ALPHA = "alpha"


def sample_id(user: str, query_id: str, index: int) -> str:
    """A meta-test response's id: its query's `user/query_id`, then its index among that query's responses."""
    return f"{user}/{query_id}/{index}"


class MetaTest:
    """The meta-test responses of a source as judge items by sample id, and the rows the judge is calibrated on
    (the benchmark rows of their queries, in order, as `meta_evaluate` fits the proxy on a whole run)."""

    def __init__(self) -> None:
        self._read: dict[tuple[str, str | None], dict[str, JudgeItem]] = {}

    def __call__(self, source: str, revision: str | None) -> dict[str, JudgeItem]:
        if (source, revision) not in self._read:
            items, rows, _ = meta_items(source, revision)
            self._read[source, revision] = {sample_id(row["user"], row["query_id"], row["index"]): item
                                            for item, row in zip(items, rows, strict=True)}
        return self._read[source, revision]

    def rows(self, source: str, revision: str | None) -> list[Mapping[str, Any]]:
        rows = {id(item.row): item.row for item in self(source, revision).values()}
        return list(rows.values())


@solver(name=registered("bespoke_meta_response"))
def bespoke_meta_response() -> Solver:
    """The human-judged response as the sample's output: no model is asked (`--model none`)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.output = ModelOutput.from_content(model="meta_test", content=str(state.metadata["response"]))
        return state

    return solve


@metric(name=registered("bespoke_agreement"))
def bespoke_agreement() -> Metric:
    """The judge's agreement with the people, as `bespoke meta-eval` computes it (`agreement_table`), per dimension
    and pooled (`pooled_pearson` the headline, with its interval), Krippendorff's alpha (interval) beside it, and
    the judgments that failed (left out of the pairs)."""

    def compute(scores: list[SampleScore]) -> dict[str, float | None]:
        if not scores:
            return {}
        judged = [{dimension: _score(score.score.value, dimension) for dimension in DIMENSIONS} for score in scores]
        human = [{dimension: {"score": (score.sample_metadata or {})[HUMAN_KEY][dimension]} for dimension in DIMENSIONS}
                 for score in scores]
        table = agreement_table(judged, human)
        out: dict[str, float | None] = {HEADLINE: table[POOLED]["pearson"]}
        groups = {**table["dimensions"], POOLED: table[POOLED]}
        for group, agreement in groups.items():
            out.update({f"{group}_{name}": agreement[name] for name in STATISTICS})
            pairs = _pairs(judged, human, [group] if group in DIMENSIONS else list(DIMENSIONS))
            out[f"{group}_{ALPHA}"] = stats.krippendorff_alpha(*pairs)
        for name in ("pearson", "spearman"):
            interval = table[POOLED][f"{name}_ci"]
            out.update({f"{POOLED}_{name}_ci_low": interval[0], f"{POOLED}_{name}_ci_high": interval[1]} if interval else {})
        out[FAILED] = float(sum(table["failures"].values()))
        return out

    return compute


def _score(value: Any, dimension: str) -> float | None:
    number = float(value.get(dimension, np.nan)) if isinstance(value, Mapping) else np.nan
    return None if np.isnan(number) else number


def _pairs(judged: Sequence[Mapping[str, float | None]], human: Sequence[Mapping[str, Any]],
           dimensions: Sequence[str]) -> tuple[list[float], list[float]]:
    """The (judge, people) score pairs of `dimensions`, a failed judgment left out, as `agreement_table` pairs them."""
    pairs = [(j[dimension], h[dimension]["score"]) for dimension in dimensions
             for j, h in zip(judged, human, strict=True) if j[dimension] is not None]
    return [float(pair[0]) for pair in pairs], [float(pair[1]) for pair in pairs]


@scorer(metrics=[bespoke_agreement()], name=SCORER_NAME)
def bespoke_meta_judge(judge: str | None = None, source: str | None = None, revision: str | None = None,
                       judge_cache: str | None = None, judge_options: Mapping[str, Any] | None = None,
                       **unknown: Any) -> Scorer:
    """The human-judged response judged by `judge` (any judge spec of ours, or `inspect:ROLE`) as `bespoke
    meta-eval` judges it: the judge's 1-5 score per dimension (NaN where its judgment failed), its feedback as
    explanation, and the item and the judge's block as metadata. `source` (at `revision`) is the release; None:
    the data each sample names."""
    parameters = parameters_of(bespoke_meta_judge)
    refuse_unknown(SCORER_NAME, unknown, parameters, "-S")
    if judge is None:
        raise ArgumentError(SCORER_NAME, JUDGE_NEEDED.replace("judge=", "-S judge="))
    with said_for(SCORER_NAME, parameters, "-S"):
        config = judge_config(judge, judge_cache, {**meta_options(judge), **(judge_options or {})})
    meta_test = MetaTest()
    opened = ScorerJudge(SCORER_NAME, config, meta_test.rows, source, revision, parameters)

    async def score(state: TaskState, target: Target) -> Score:
        session = await opened.session(state.metadata)
        item = meta_test(*sample_source(state.metadata, source, revision))[str(state.sample_id)]
        [result] = await session.judge_batch([item])
        value = {dimension: float(result.scores[dimension]) if result.scores.get(dimension) is not None else np.nan
                 for dimension in DIMENSIONS}
        return Score(value=value, answer=item.response, explanation=explanation(result),
                     metadata={ITEM_KEY: result.to_json(), JUDGE_KEY: session.describe()})

    return opened.closed_with(score)


def meta_options(judge: str) -> dict[str, Any]:
    """What `meta_evaluate` gives a judge unless told otherwise: an LLM judge makes no claim calls."""
    with said_for(SCORER_NAME, ()):
        llm = as_judge_spec(judge).engine.llm
    return {"recall": "none"} if llm else {}
