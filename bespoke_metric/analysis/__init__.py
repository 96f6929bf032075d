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

from .bridge import bridge
from .judges_table import compare_judges
from .leaderboard import build_leaderboard, compare, load_results
from .meta_eval import meta_evaluate

__all__ = [
    "bridge", "build_leaderboard", "compare", "compare_judges", "load_results", "meta_evaluate",
]
