"""BESPOKE inside the evaluation frameworks researchers already run, each over the public building blocks
(`systems.messages.Prompter`, `judging.session.JudgeSession`, `results.figure_stats.item_figures`), so
their figures are `bespoke generate` + `bespoke score`'s; and their runs read back as results files.

| module | framework |
|---|---|
| `inspect_task` | inspect_ai: the tasks `bespoke_metric/bespoke` (`inspect eval bespoke_metric/bespoke --model ...`) and `bespoke_metric/bespoke_meta_eval` (the judge's meta-evaluation, a maintenance task), found through the `inspect_ai` entry point; needs the `inspect` extra; `eval.yaml` beside it is their inspect_evals register entry |
| `inspect_judge`, `inspect_meta_eval` | their scorers and metrics: `bespoke_metric/bespoke_judge` re-scores an archived log (`inspect score`) |
| `inspect_arguments`, `arguments` | their registered names, and a wrong argument said as each framework's user gives it |
| `lm_eval` | lm-evaluation-harness: the task folder (`bespoke tasks-path lm-eval`), `bespoke_none` ... and the group `bespoke`; its hooks are `lm_eval_harness`'s; needs the `lm-eval` extra |
| `importing` | `bespoke import`: an inspect log or lm-eval's samples as a results file, its predictions beside it |

Importing this wing imports no framework: each module is imported by its framework (an entry point, a task
path) or by `bespoke import`; the inspect tasks exported here are imported when first asked for.
"""

from pathlib import Path
from typing import Any

__all__ = ["bespoke", "bespoke_meta_eval"]

INSPECT_FOLDER = Path(__file__).parent
"""The folder of the inspect tasks' file (`inspect_task.py`): `inspect list tasks` takes a path relative to where
it runs, never an absolute one, so `bespoke tasks-path inspect` prints it to run it from."""


def __getattr__(name: str) -> Any:
    """The inspect tasks, imported on first use (`from bespoke_metric.frameworks import bespoke`): importing the
    wing, as `bespoke import` does, needs no inspect_ai."""
    if name in __all__:
        from . import inspect_task

        return getattr(inspect_task, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
