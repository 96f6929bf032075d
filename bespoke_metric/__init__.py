"""The BESPOKE judge on the Hugging Face stack: score predictions, meta-evaluate a judge, rank systems.

>>> from bespoke_metric import score
>>> results = score("preds.jsonl", "openai:gpt-5", source="yonsei-dli/BESPOKE")  # doctest: +SKIP

The names below are the public surface (what the README uses); everything else is reachable through
its module. Each is imported on first use: `Bespoke` (the `evaluate.Metric`) needs `evaluate`, which this
package works without, and a run with an API judge never loads the heavy parts (torch, pandas, ...).
"""

from bespoke_dataset.lazy import lazy_attributes
from bespoke_dataset.version import __version__
from bespoke_dataset.vocabulary import DIMENSIONS

from .metrics import METRIC_NAMES, METRICS

# The rest is imported on first use, so `import bespoke_metric` (and `bespoke score` with an API judge)
# loads no torch, transformers, pandas or matplotlib: name -> the module that defines it.
_LAZY: dict[str, str] = {
    "Bespoke": ".evaluate_metric",  # needs `evaluate`, an optional dependency
    "ENGINES": ".engines",
    "Engine": ".engines",
    "GenerationSettings": ".systems",
    "ItemResult": ".results",
    "Judge": ".judge",
    "JudgeItem": ".judge",
    "ModelNotFoundError": ".model_files",
    "PredictionError": ".predictions",
    "build_leaderboard": ".leaderboard",
    "compare": ".leaderboard",
    "generate": ".systems",
    "load_results": ".leaderboard",
    "make_backend": ".engines",
    "make_judge": ".engines",
    "make_reward_fn": ".reward",
    "meta_evaluate": ".meta_eval",
    "register_engine": ".engines",
    "score": ".pipeline",
    "score_many": ".pipeline",
    "write_results": ".pipeline",
}

__all__ = [
    "Bespoke", "DIMENSIONS", "ENGINES", "Engine", "GenerationSettings", "ItemResult", "Judge", "JudgeItem", "METRICS", "METRIC_NAMES",
    "ModelNotFoundError", "PredictionError", "__version__", "build_leaderboard", "compare", "generate",
    "load_results", "make_backend", "make_judge", "make_reward_fn", "meta_evaluate", "register_engine", "score", "score_many", "write_results",
]

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
