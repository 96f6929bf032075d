"""BESPOKE inside the evaluation frameworks researchers already run, each over the public building blocks
(`systems.messages.Prompter`, `judging.session.JudgeSession`, `results.figure_stats.item_figures`), so
their figures are `bespoke generate` + `bespoke score`'s.

| module | framework |
|---|---|
| `inspect_task` | inspect_ai: the task `bespoke_metric/bespoke` (`inspect eval bespoke_metric/bespoke --model ...`), found through the `inspect_ai` entry point; needs the `inspect` extra |

Importing this wing imports no framework: each module is imported by its framework (an entry point, a
task path), never from here.
"""

__all__: list[str] = []
