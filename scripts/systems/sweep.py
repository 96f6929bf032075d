"""`bespoke sweep`: a grid of systems under test (models x user contexts x any `bespoke run` setting given
several values), each cell generated and then every cell judged in one run, in one process, into one table.

The flags are generated from the configs behind `bespoke run` (`systems.config.SystemConfig`'s settings,
each taking one or more values here: several values make an axis; `judging.config.JudgeConfig`'s, one for
the whole sweep, which loads one judge and the data once). `--model` and `--context` are spelled
`--models` and `--contexts` (the singular works too). `--config FILE` gives the same settings as a YAML
mapping; flags on the command line override it. The command maps them to one `SweepConfig` and calls
`bespoke_metric.experiments.sweep`'s pieces (`plan_sweep`, `run_sweep`, or `dry_run`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bespoke_cli.cost import add_cost_arguments, stopped_by_limit
from bespoke_cli.incomplete import finish, rerun_of
from bespoke_cli.judging.score import add_judge_arguments
from bespoke_dataset.errors import UserError
from bespoke_metric.calls.plan import estimate as estimate_calls
from bespoke_metric.calls.pricing import PriceTable
from bespoke_metric.experiments import CellEstimate, SweepConfig, SweepPlan, dry_run, plan_sweep, run_sweep
from bespoke_metric.experiments.outputs import SweepFolder
from bespoke_metric.systems.tokens import counted_prompt_tokens

from .generate import add_generation_arguments

HELP = "run a grid of systems (models x user contexts x any run setting given several values), judged in one run, into one table"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The sweep's own flags, `run`'s system flags each taking one or more values (an axis), and the judge's,
    the data's and the cost's flags, one for the whole sweep: generated from the same configs."""
    own = parser.add_argument_group("the sweep")
    own.add_argument("--config", help="YAML file of the same flags (keys without the dashes: models, contexts, top-k or top_k, ...); "
                                      "flags given on the command line override it")
    own.add_argument("--out", help="the sweep's folder: each cell's files, sweep.json, table.md, table.csv (required)")
    own.add_argument("--dry-run", action="store_true",
                     help="print the cells, the model and judge calls each needs and what the caches hold; call nothing")
    add_generation_arguments(parser, endpoint_prefix="model-", several=True)
    add_judge_arguments(parser, required=False, system=True)
    add_cost_arguments(parser, dry_run=False)  # one batch mode, price table and spending limit per sweep
    parser.add_argument("--strict", action="store_true", help="exit 1 if any judgment failed (without it: exit 3, the "
                        "cells that lost judgments marked incomplete and judged again by the same command)")
    # a flag left out leaves the config file's value, else the config's default
    parser.set_defaults(source=None, no_guards=None, strict=None)


def sweep_config(args: argparse.Namespace) -> SweepConfig:
    """The sweep the flags describe, over `--config`'s file: read once per command (kept with the flags, for
    `answer_caches` asks for it before the command runs)."""
    config = getattr(args, "_sweep_config", None)
    if config is None:
        config = args._sweep_config = SweepConfig.from_cli(args, config=args.config)
    return config


def answer_caches(args: argparse.Namespace) -> list[str]:
    """The caches every cell's answers go to (see `bespoke_cli.interrupt`)."""
    try:
        return config_caches(sweep_config(args))
    except UserError:  # said once the command runs
        return []


def config_caches(config: SweepConfig) -> list[str]:
    """The generation cache of every cell and the judge's: in the sweep's folder unless given."""
    folder = SweepFolder(Path(config.out))
    return [config.settings.get("generation_cache") or str(folder.generation_cache), str(config.judge.cache or folder.judge_cache)]


def run(args: argparse.Namespace) -> int:
    config = sweep_config(args)
    plan = plan_sweep(config)
    if args.dry_run:
        problems = [estimate for estimate in print_estimates(plan) if estimate.problem]
        if problems:
            print(f"error: {len(problems)} of {len(plan.cells)} cells would fail: {problems[0].name} ({problems[0].problem})",
                  file=sys.stderr)
        return 1 if problems else 0
    caches = config_caches(config)
    rerun = rerun_of(args, caches[1])  # the judge's cache: a cell that lost judgments is judged again from it
    outcome = run_sweep(plan, progress=True, say=print, rerun=rerun)  # a bar on a terminal, a line now and then into a log
    if stopped_by_limit(plan.spending, caches):  # the sweep's limit: a local judge holds none
        return 1
    print()
    print(plan.folder.table_md.read_text(encoding="utf-8"))
    print(f"sweep written to {plan.out}: sweep.json, table.md, table.csv, and each cell's files in cells/")
    if outcome.failed:
        first = outcome.failed[0]
        more = f" and {len(outcome.failed) - 1} more (reasons above and in sweep.json)" if len(outcome.failed) > 1 else ""
        print(f"error: {len(outcome.failed)} of {len(plan.cells)} cells failed: {first} ({outcome.cells[first].reason}){more}; "
              "rerun the same command to retry them", file=sys.stderr)
        return 1
    # the cells that lost judgments are marked incomplete (`sweep.json` too), not finished: the rerun judges them again
    cells = [entry.results for entry in outcome.entries.values()]
    failures = sum(results.incomplete.judgments_failed for results in cells if results.incomplete is not None)
    status = 0
    if failures and config.strict:
        print(f"error: {failures} judgment(s) failed (--strict)", file=sys.stderr)
        status = 1
    return finish(cells, rerun, status)


def print_estimates(plan: SweepPlan) -> list[CellEstimate]:
    """The dry run's table: per cell what is predicted, and the calls to make beside those the caches hold."""
    estimates = dry_run(plan)
    finished = sum(estimate.finished for estimate in estimates)
    print(f"dry run: {len(estimates)} cells, {finished} finished before; nothing was called")
    width = max(len(estimate.name) for estimate in estimates)
    print(f"{'cell':<{width}}  {'queries':>7}  {'predicted':>9}  {'model calls (cached)':>20}  {'judge calls (cached)':>20}")
    for estimate in estimates:
        if estimate.finished:
            status = "finished"
        elif estimate.problem:
            status = f"would fail: {estimate.problem}"
        else:
            status = (f"{estimate.queries:>7}  {estimate.predicted:>9}  {_calls(estimate.model_calls, estimate.model_cached):>20}  "
                      f"{_calls(estimate.judge_calls, estimate.judge_cached):>20}")
        print(f"{estimate.name:<{width}}  {status}")
    model = sum(e.model_calls for e in estimates), sum(e.model_cached for e in estimates)
    judge = sum(e.judge_calls for e in estimates), sum(e.judge_cached for e in estimates)
    print(f"total: {model[0]} model call(s) and {judge[0]} judge call(s) to make; the caches answer {model[1]} and {judge[1]}")
    parts = [part for e in estimates for part in e.planned]
    found = [estimate_calls(part, counted_prompt_tokens, plan.prices or PriceTable()) for part in parts]
    unknown = sorted({str(part.spec) for part, figures in zip(parts, found, strict=True) if figures.cost is None})
    cost = "unknown (no price for " + ", ".join(unknown) + ": --prices FILE)" if unknown else f"${sum(f.cost or 0.0 for f in found):.4f}"
    print(f"at most {sum(f.input_tokens for f in found)} input tokens (prompts built on answers not written yet are counted at "
          f"those answers' caps), ~{sum(f.output_tokens for f in found)} output tokens; estimated cost {cost}")
    return estimates


def _calls(calls: int, cached: int) -> str:
    return f"{calls} ({cached})"
