"""The import paths of 0.1 (one flat package) keep working for one release, with a `DeprecationWarning`.

`import bespoke_metric.pipeline` is served by `bespoke_metric.scoring.pipeline`, the same module object,
so what a user patched or imported before still works; the warning names the new path. Remove in 0.4.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

MOVED: dict[str, str] = {
    "model_files": "backends.model_files", "encoders": "backends.encoders",
    "scheduler": "calls.scheduler", "cache": "calls.cache", "progress": "calls.progress",
    "metrics": "results.metrics", "aggregation": "results.aggregation", "stats": "results.stats",
    "figure_stats": "results.figure_stats", "caveats": "results.caveats",
    "protocol": "judging.protocol", "prompts": "judging.prompts", "parsing": "judging.parsing",
    "judge": "judging.judge", "llm_judge": "judging.llm_judge", "embed_judge": "judging.embed_judge",
    "embed_calibration": "judging.embed_calibration", "guards": "judging.guards",
    "guarded_judge": "judging.guarded_judge",
    "engines": "scoring.engines", "predictions": "scoring.predictions", "pipeline": "scoring.pipeline",
    "meta_eval": "analysis.meta_eval", "feedback_accuracy": "analysis.feedback_accuracy",
    "leaderboard": "analysis.leaderboard", "report": "analysis.report", "report_html": "analysis.report_html",
    "evaluate_metric": "hub.evaluate_metric", "metric_app": "hub.metric_app",
    "leaderboard_app": "hub.leaderboard_app", "spaces": "hub.spaces", "eval_results": "hub.eval_results",
    "submission": "hub.submission",
}
"""Old module of `bespoke_metric` (0.1) -> where it lives now. (`bespoke_metric.results` is a wing now and
re-exports `ItemResult` and `Results` itself.)"""

PACKAGE = "bespoke_metric"


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.target}; the old path goes in 0.4", DeprecationWarning, stacklevel=2)
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """The target module ran already."""


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        package, _, old = name.partition(".")
        if package != PACKAGE or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(name, _Alias(f"{PACKAGE}.{MOVED[old]}"))


def install() -> None:
    """Serve the old paths (once per interpreter)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
