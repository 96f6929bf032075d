"""The BESPOKE judge on the Hugging Face stack: score predictions, meta-evaluate a judge, rank systems.

>>> from bespoke_metric import run, score
>>> results = score("preds.jsonl", "openai:gpt-5", source="yonsei-dli/BESPOKE")  # doctest: +SKIP
>>> outcome = run("hf:Qwen/Qwen3-8B", "preds.jsonl", "openai:gpt-5")  # doctest: +SKIP

`run` generates predictions with a system model, then scores them (`bespoke run`).

The package is laid out in wings, each a folder with a curated `__init__`, imports running down only:

| wing | what it holds |
|---|---|
| `backends/` | one model call: the engine registry, the engines' backends (OpenAI-compatible, transformers, vLLM, Ray), model files |
| `calls/` | many calls: the scheduler (concurrency, cache, repairs), the answer cache, progress, prices, spending limits, dry runs |
| `results/` | the results format, the metric registry, the figures and their statistics |
| `judging/` | the protocol, its prompts and parser, the LLM judge, the `embed:` proxy, the response guards |
| `scoring/` | predictions, `score` / `score_many` |
| `systems/` | the systems under test: generation, user contexts, retrieval, search |
| `analysis/` | meta-evaluation, feedback accuracy, the leaderboard, reports |
| `hub/` | the `evaluate` metric, the Spaces, Eval Results and submissions |
| `frameworks/` | BESPOKE inside other evaluation frameworks: the inspect_ai task |
| `reward.py`, `testing/` | the training reward; local servers and tiny models for offline tests |

The names below are the public surface (what the README uses); everything else is reachable through
its wing. Each is imported on first use: `Bespoke` (the `evaluate.Metric`) needs `evaluate`, which this
package works without, and a run with an API judge never loads the heavy parts (torch, pandas, ...).
"""

from bespoke_dataset.lazy import lazy_attributes
from bespoke_dataset.version import __version__
from bespoke_dataset.vocabulary import DIMENSIONS

from .results.metrics import METRIC_NAMES, METRICS

# The rest is imported on first use, so `import bespoke_metric` (and `bespoke score` with an API judge)
# loads no torch, transformers, pandas or matplotlib: name -> the module that defines it.
_LAZY: dict[str, str] = {
    "Bespoke": ".hub.evaluate_metric",  # needs `evaluate`, an optional dependency
    "ENGINES": ".backends.registry",
    "Engine": ".backends.registry",
    "GenerationSettings": ".systems",
    "ItemResult": ".results.records",
    "Judge": ".judging.judge",
    "JudgeItem": ".judging.judge",
    "JudgeSession": ".judging.session",
    "ModelNotFoundError": ".backends.local.model_files",
    "PredictionError": ".scoring.predictions",
    "Prompter": ".systems.messages",
    "QueryMessages": ".systems.messages",
    "average_figure": ".results.figure_stats",
    "build_leaderboard": ".analysis.leaderboard",
    "caveats": ".results.caveats",
    "compare": ".analysis.leaderboard",
    "generate": ".systems",
    "item_figures": ".results.figure_stats",
    "load_results": ".analysis.leaderboard",
    "make_backend": ".backends.registry",
    "make_judge": ".judging.factory",
    "make_reward_fn": ".reward",
    "meta_evaluate": ".analysis.meta_eval",
    "prepare_response": ".judging.session",
    "register_engine": ".backends.registry",
    "run": ".systems.runs",
    "score": ".scoring.pipeline",
    "score_many": ".scoring.pipeline",
    "write_results": ".scoring.pipeline",
}

__all__ = [
    "Bespoke", "DIMENSIONS", "ENGINES", "Engine", "GenerationSettings", "ItemResult", "Judge", "JudgeItem", "JudgeSession",
    "METRICS", "METRIC_NAMES", "ModelNotFoundError", "PredictionError", "Prompter", "QueryMessages", "__version__",
    "average_figure", "build_leaderboard", "caveats", "compare", "generate", "item_figures", "load_results", "make_backend",
    "make_judge", "make_reward_fn", "meta_evaluate", "prepare_response", "register_engine", "run", "score", "score_many",
    "write_results",
]

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
