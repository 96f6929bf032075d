"""What a judgment is and what a run reports: the typed results, the metric registry, the figures.

| module | concern |
|---|---|
| `records` | `ItemResult` (one query's scores, feedback, verdicts, errors) and `Results` (a results file) |
| `metrics` | the registry: each metric's sample-level and corpus-level function, in one place |
| `aggregation` | the summary of a results file from the registry |
| `figure_stats`, `stats` | per-item figures (`item_figures`, `average_figure`), standard errors and intervals of the figures; the statistics behind them |
| `caveats` | the notes printed beside figures from a proxy judge or synthetic data |
| `incomplete` | a run that lost judgments (or answers): the `incomplete` field of its results file, the rerun that fills the gaps |
| `file_kinds` | which of bespoke's files a file is (predictions, results, ...), for one-line errors |
| `labels` | how results name their system in tables and legends |
"""

from .aggregation import summarize
from .figure_stats import figure_matrix, figure_stats
from .metrics import METRIC_NAMES, METRICS, REGISTRY
from .records import ItemResult, Results

__all__ = [
    "ItemResult", "METRICS", "METRIC_NAMES", "REGISTRY", "Results", "figure_matrix", "figure_stats", "summarize",
]
