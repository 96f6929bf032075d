"""Scoring a system: predictions in, a results file out, judged by a judge of `bespoke_metric.judging`.

| module | concern |
|---|---|
| `predictions` | reading and checking a predictions file, by line, before any call |
| `pipeline` | `score`, `score_many`, `write_results` |
| `rescore` | `rescore_plan`: the predictions behind results files, found before a new judge scores them again |
"""

from .pipeline import load_benchmark, score, score_many, write_results
from .predictions import PredictionError, read_predictions
from .rescore import rescore_plan

__all__ = [
    "PredictionError", "load_benchmark", "read_predictions", "rescore_plan", "score", "score_many", "write_results",
]
