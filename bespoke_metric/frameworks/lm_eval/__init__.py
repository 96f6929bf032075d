"""The lm-evaluation-harness task folder, shipped as package data: `bespoke tasks-path lm-eval` prints it for
`--include_path`. Its tasks (`bespoke_none`, `bespoke_history`, `bespoke_selected_history`, `bespoke_oracle`,
the group `bespoke`) call `hooks`, which names `bespoke_metric.frameworks.lm_eval_harness`'s functions."""

from pathlib import Path

TASK_FOLDER = Path(__file__).parent
"""The folder to give lm-eval's `--include_path`."""
