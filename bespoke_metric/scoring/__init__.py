"""Scoring a system: predictions in, a results file out, judged by a judge of `bespoke_metric.judging`.

| module | concern |
|---|---|
| `predictions` | reading and checking a predictions file, by line, before any call |
| `pipeline` | `score`, `score_many`, `write_results` |
| `rescore` | `rescore_plan`: the predictions behind results files, found before a new judge scores them again |
"""

from bespoke_dataset.lazy import lazy_attributes

# name -> the module that defines it, imported on first use: a wing costs nothing until a name is used
_LAZY: dict[str, str] = {
    "PredictionError": ".predictions",
    "load_benchmark": ".pipeline",
    "read_predictions": ".predictions",
    "rescore_plan": ".rescore",
    "score": ".pipeline",
    "score_many": ".pipeline",
    "write_results": ".pipeline",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
