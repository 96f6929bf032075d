"""The `!function` hooks of the lm-eval task folder: lm-eval loads this file by its path, anew for each hook,
so the hooks live in `bespoke_metric.frameworks.lm_eval_harness` (one module, imported once), named here."""

from bespoke_metric.frameworks.lm_eval_harness import average, dataset, judge_answers, process_results

__all__ = ["average", "dataset", "judge_answers", "process_results"]
