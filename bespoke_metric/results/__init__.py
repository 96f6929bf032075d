"""What a judgment is and what a run reports: the typed results, the metric registry, the figures.

| module | concern |
|---|---|
| `records` | `ItemResult` (one query's scores, feedback, verdicts, errors) and `Results` (a results file) |
| `metrics` | the registry: each metric's sample-level and corpus-level function, in one place |
| `aggregation` | the summary of a results file from the registry |
| `figure_stats`, `stats` | per-item figures (`item_figures`, `average_figure`), standard errors and intervals of the figures; the statistics behind them |
| `caveats` | the notes printed beside figures from a proxy judge or synthetic data |
| `file_kinds` | which of bespoke's files a file is (predictions, results, ...), for one-line errors |
| `labels` | how results name their system in tables and legends |
"""

from bespoke_dataset.lazy import lazy_attributes

# name -> the module that defines it, imported on first use: a wing costs nothing until a name is used
_LAZY: dict[str, str] = {
    "ItemResult": ".records",
    "METRICS": ".metrics",
    "METRIC_NAMES": ".metrics",
    "REGISTRY": ".metrics",
    "Results": ".records",
    "figure_matrix": ".figure_stats",
    "figure_stats": ".figure_stats",
    "average_figure": ".figure_stats",
    "item_figures": ".figure_stats",
    "summarize": ".aggregation",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
