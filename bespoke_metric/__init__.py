"""The BESPOKE judge on the Hugging Face stack: score predictions, meta-evaluate a judge, rank systems.

>>> from bespoke_metric import score
>>> results = score("preds.jsonl", "openai:gpt-5", source="yonsei-dli/BESPOKE")  # doctest: +SKIP

The names below are the public surface (what the README uses); everything else is reachable through
its module. `Bespoke` (the `evaluate.Metric`) is imported on first use, so this package works without
`evaluate`.
"""

from typing import Any

from bespoke_dataset.version import __version__
from bespoke_dataset.vocabulary import DIMENSIONS

from .engines import make_judge, register_judge
from .judge import Judge, JudgeItem
from .leaderboard import build_leaderboard, compare, load_results
from .meta_eval import meta_evaluate
from .metrics import METRIC_NAMES, METRICS
from .model_files import ModelNotFoundError
from .pipeline import score, score_many, write_results
from .predictions import PredictionError
from .results import ItemResult
from .reward import make_reward_fn
from .generation import GenerationSettings, generate

__all__ = [
    "Bespoke", "DIMENSIONS", "GenerationSettings", "ItemResult", "Judge", "JudgeItem", "METRICS", "METRIC_NAMES",
    "ModelNotFoundError", "PredictionError", "__version__", "build_leaderboard", "compare", "generate",
    "load_results", "make_judge", "make_reward_fn", "meta_evaluate", "register_judge", "score", "score_many",
    "write_results",
]


def __getattr__(name: str) -> Any:
    if name == "Bespoke":  # needs `evaluate`, an optional dependency
        from .evaluate_metric import Bespoke

        return Bespoke
    raise AttributeError(f"module 'bespoke_metric' has no attribute {name!r}")
