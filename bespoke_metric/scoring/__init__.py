"""Scoring a system: predictions in, a results file out, through the engine registry (`bespoke_metric.backends.registry`).

| module | concern |
|---|---|
| `predictions` | reading and checking a predictions file, by line, before any call |
| `pipeline` | `score`, `score_many`, `write_results` |
| `rescore` | `rescore_plan`: the predictions behind results files, found before a new judge scores them again |
"""

from bespoke_dataset.lazy import lazy_attributes

# name -> the module that defines it, imported on first use: a wing costs nothing until a name is used
_LAZY: dict[str, str] = {
    "ENGINES": "..backends.registry",
    "Engine": "..backends.registry",
    "PredictionError": ".predictions",
    "load_benchmark": ".pipeline",
    "make_backend": "..backends.registry",
    "make_judge": "..judging.factory",
    "parse_spec": "..backends.registry",
    "read_predictions": ".predictions",
    "register_engine": "..backends.registry",
    "rescore_plan": ".rescore",
    "score": ".pipeline",
    "score_many": ".pipeline",
    "write_results": ".pipeline",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
