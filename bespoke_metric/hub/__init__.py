"""BESPOKE on the Hugging Face Hub: the `evaluate` metric, the Spaces and their apps, Eval Results submissions.

| module | concern |
|---|---|
| `evaluate_metric` | `Bespoke`, the `evaluate.Metric` (needs `evaluate`) |
| `spaces`, `space_files/` | writing the metric and leaderboard Spaces from package templates |
| `metric_app`, `leaderboard_app` | the Spaces' Gradio apps |
| `eval_results`, `submission` | Eval Results files for a model repo, and what a submission must pass |
"""

from bespoke_dataset.lazy import lazy_attributes

# name -> the module that defines it, imported on first use: a wing costs nothing until a name is used
_LAZY: dict[str, str] = {
    "Bespoke": ".evaluate_metric",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
