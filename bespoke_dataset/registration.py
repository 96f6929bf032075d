"""What BESPOKE is on the Hub: how to cite it and where its release lives (for dataset cards, Space cards
and the builder alike), and the benchmark registration of an exported dataset repo: `eval.yaml` at its
root, as the Hub's documentation on eval results specifies it (`name`, `description`,
`evaluation_framework`, `tasks[]` of `id` with optional `config` and `split`).

Each task is one leaderboard on the dataset's page, fed by the `.eval_results/*.yaml` files of model
repos that name it (`dataset.task_id`); `bespoke submit` writes those, one entry per task here.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from .vocabulary import DIMENSION_LABELS, DIMENSIONS, SPLIT

CITATION = """@misc{kim2025bespokebenchmarksearchaugmentedlarge,
  title={BESPOKE: Benchmark for Search-Augmented Large Language Model Personalization via Diagnostic Feedback},
  author={Hyunseo Kim and Sangam Lee and Kwangwook Seo and Dongha Lee},
  year={2025},
  eprint={2509.21106},
  archivePrefix={arXiv},
  primaryClass={cs.CL},
  url={https://arxiv.org/abs/2509.21106}
}"""
"""The paper, as every card cites it."""
HOMEPAGE = "https://huggingface.co/datasets/yonsei-dli/BESPOKE"
"""Where the public release lives."""

REGISTRATION_FILE = "eval.yaml"
"""Where the registration lives: the dataset repo's root."""

BENCHMARK_CONFIG = "benchmark"
"""The exported config a system is scored on (one row per query)."""


@dataclass(frozen=True)
class BenchmarkTask:
    id: str
    """The task id, the name of the results-file figure it ranks."""
    description: str


BENCHMARK_TASKS: tuple[BenchmarkTask, ...] = (
    BenchmarkTask("average", "Mean of the four dimensions and claim recall, 0-100 (the headline figure)."),
    *(BenchmarkTask(dimension, f"{DIMENSION_LABELS[dimension]}: the judge's 1-5 scores, mean / 5 x 100.")
      for dimension in DIMENSIONS),
    BenchmarkTask("recall", "Claim recall: the mean share of gold atomic claims a response conveys, x 100."),
)
"""The leaderboards a BESPOKE dataset repo registers, headline first; every value is 0-100, higher is better."""

NAME = "BESPOKE"
DESCRIPTION = (
    "BESPOKE measures personalization in search-augmented LLMs: 150 queries written by 30 real users, each "
    "with a gold information need, a personalized rubric, gold atomic claims and human-judged example "
    "responses. A judge model scores a response 1-5 on Need Alignment, Content Depth, Tone and Explanation "
    "Style (each reported as mean / 5 x 100) and checks which gold claims it conveys (recall x 100); the "
    "average is the mean of the five. Scores are comparable only under the same judge, prompt protocol and "
    "data revision, which each result's notes name."
)

_FRAMEWORK_NOTE = (
    "# evaluation_framework is left out: the Hub accepts only identifiers from its maintained list, which\n"
    "# does not name bespoke-eval yet (results are made with `bespoke score` / `bespoke run`).\n"
)


def registration() -> dict[str, object]:
    """The content of `eval.yaml`."""
    return {
        "name": NAME,
        "description": DESCRIPTION,
        "tasks": [{"id": task.id, "config": BENCHMARK_CONFIG, "split": SPLIT} for task in BENCHMARK_TASKS],
    }


def render_registration() -> str:
    """`eval.yaml` as written beside the dataset card."""
    return _FRAMEWORK_NOTE + yaml.safe_dump(registration(), sort_keys=False, allow_unicode=True, width=100)
