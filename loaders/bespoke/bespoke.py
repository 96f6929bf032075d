"""BESPOKE metric for `evaluate.load("loaders/bespoke", judge=..., source=...)` (and a Hub Space holding
this folder). All logic lives in the installed `bespoke_metric` package (`pip install bespoke-eval`)."""

import evaluate
from bespoke_metric.evaluate_metric import Bespoke

__all__ = ["Bespoke", "evaluate"]
