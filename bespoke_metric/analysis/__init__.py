"""Reading results: agreement with human judges, feedback accuracy, the leaderboard, paired comparisons, reports.

| module | concern |
|---|---|
| `meta_eval` | `meta_evaluate`: a judge against the human meta-test scores |
| `judges_table` | `compare_judges`: several judges in one table (length bias, self-consistency, paired difference) |
| `feedback_accuracy` | whether the judge's feedback agrees with the user's |
| `leaderboard` | `build_leaderboard`, `compare`, `load_results`: ranking results that may be ranked together |
| `bridge` | `bridge`: how a leaderboard's ranking moved under a new judge (Kendall's tau, shifts, flips) |
| `report`, `report_html` | the leaderboard as text, Markdown or HTML with charts |
"""

from bespoke_dataset.lazy import lazy_attributes

# name -> the module that defines it, imported on first use: a wing costs nothing until a name is used
_LAZY: dict[str, str] = {
    "bridge": ".bridge",
    "build_leaderboard": ".leaderboard",
    "compare": ".leaderboard",
    "compare_judges": ".judges_table",
    "load_results": ".leaderboard",
    "meta_evaluate": ".meta_eval",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
