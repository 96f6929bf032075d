"""BESPOKE inside the evaluation frameworks researchers already run, each over the public building blocks
(`systems.messages.Prompter`, `judging.session.JudgeSession`, `results.figure_stats.item_figures`), so
their figures are `bespoke generate` + `bespoke score`'s; and their runs read back as results files.

| module | framework |
|---|---|
| `inspect_task` | inspect_ai: the task `bespoke_metric/bespoke` (`inspect eval bespoke_metric/bespoke --model ...`), found through the `inspect_ai` entry point; needs the `inspect` extra |
| `lm_eval` | lm-evaluation-harness: the task folder (`bespoke tasks-path lm-eval`), `bespoke_none` ... and the group `bespoke`; its hooks are `lm_eval_harness`'s; needs the `lm-eval` extra |
| `importing` | `bespoke import`: an inspect log or lm-eval's samples as a results file, its predictions beside it |

Importing this wing imports no framework: each module is imported by its framework (an entry point, a
task path) or by `bespoke import`, never from here.
"""

__all__: list[str] = []
