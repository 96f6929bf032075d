"""`bespoke sweep`: a grid of systems under test (models x user contexts x any `bespoke run` setting given
several values), each cell generated and then every cell judged in one run, in one process, into one table.

The flags are `bespoke run`'s own, read off its parser (`run.add_arguments`: `generate`'s and `score`'s
definitions and the engines' option classes behind them), so a flag added to `run` is a flag of the sweep
with nothing to change here. A flag that takes one value in `run` takes one or more here, and several
values make an axis; the judge's, the data's and the executor's flags (those of `add_judge_arguments`)
take one value for the whole sweep, which loads one judge and the data once. `--model` and `--context`
are spelled `--models` and `--contexts` (the singular works too). `--config FILE` gives the same flags
as a YAML mapping; flags on the command line override it.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bespoke_dataset.errors import UserError
from bespoke_metric.calls.plan import estimate as estimate_calls
from bespoke_metric.calls.pricing import PriceTable
from bespoke_metric.calls.progress import on_terminal
from bespoke_metric.experiments import Axis, CellEstimate, CellPlan, SweepConfigError, SweepPlan, cells, config_words, dry_run, flag_keys, run_sweep
from bespoke_metric.experiments.outputs import SweepFolder
from bespoke_metric.systems.runfiles import canonical_sha256

from bespoke_cli.cost import add_cost_arguments, check_cost_flags, counted_prompt_tokens, price_table, spending_limit, stopped_by_limit
from bespoke_cli.executor import check_executor_flags
from bespoke_cli.judging.score import add_judge_arguments, judge_options
from . import run as run_command
from .generate import MODEL_ENGINE_FLAGS, engine_flags, options_taken_by, settings_from

HELP = "run a grid of systems (models x user contexts x any run setting given several values), judged in one run, into one table"

RENAMED: dict[str, str] = {"model": "--models", "context": "--contexts"}
"""The two axes of every sweep, named in the plural; they come first in the grid, in this order."""
RUN_OUTPUTS = frozenset({"output", "predictions"})
"""`run`'s own files; a sweep names each cell's in its --out folder."""
OWN = ("config", "out", "dry_run")
"""The sweep's own settings (a flag of `run` spelled like one of them is left to the sweep)."""


@dataclass(frozen=True)
class RunFlag:
    """One flag of `bespoke run`, as the sweep takes it."""

    action: argparse.Action
    options: tuple[str, ...]
    axis: bool
    """Takes several values (an axis) instead of one."""

    @property
    def dest(self) -> str:
        return self.action.dest


@functools.cache
def run_flags() -> tuple[RunFlag, ...]:
    """`bespoke run`'s flags, the two axes of every sweep first: each value flag may be an axis, unless it
    configures the judge, the data or where engines run."""
    template = argparse.ArgumentParser(add_help=False)
    run_command.add_arguments(template)
    judge_template = argparse.ArgumentParser(add_help=False)
    add_judge_arguments(judge_template)
    add_cost_arguments(judge_template, dry_run=False)  # one batch mode, price table and spending limit per sweep
    shared = {action.dest for action in judge_template._actions}
    flags = []
    for action in template._actions:
        if action.dest in RUN_OUTPUTS or not action.option_strings:
            continue
        options = tuple(dict.fromkeys(([RENAMED[action.dest]] if action.dest in RENAMED else []) + action.option_strings))
        one_value = isinstance(action, argparse._StoreAction) and action.nargs is None
        flags.append(RunFlag(action, options, axis=one_value and action.dest not in shared))
    order = list(RENAMED)
    return tuple(sorted(flags, key=lambda flag: order.index(flag.dest) if flag.dest in order else len(order)))


GIVEN = "_given"
"""Where a parsed namespace keeps the flags given (destinations): a config file's values stand under them."""


@functools.cache
def _noting(action_class: type[argparse.Action]) -> type[argparse.Action]:
    """`action_class` that also notes, in the namespace, that its flag was given; its default stays `run`'s."""

    class Noted(action_class):  # type: ignore[valid-type, misc]
        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
            super().__call__(parser, namespace, values, option_string)
            setattr(namespace, GIVEN, getattr(namespace, GIVEN, frozenset()) | {self.dest})

    return Noted


def add_arguments(parser: argparse.ArgumentParser) -> None:
    own = parser.add_argument_group("the sweep")
    own.add_argument("--config", help="YAML file of the same flags (keys without the dashes: models, contexts, top-k or top_k, ...); "
                                      "flags given on the command line override it")
    own.add_argument("--out", action=_noting(argparse._StoreAction),
                     help="the sweep's folder: each cell's files, sweep.json, table.md, table.csv (required)")
    own.add_argument("--dry-run", action=_noting(argparse._StoreTrueAction),
                     help="print the cells, the model and judge calls each needs and what the caches hold; call nothing")
    cell_flags = parser.add_argument_group("every cell (bespoke run's flags; several values make an axis)")
    shared_flags = parser.add_argument_group("the judge, the data and where engines run (one for the whole sweep)")
    taken = {option for action in parser._actions for option in action.option_strings}
    for flag in run_flags():
        if taken.intersection(flag.options):
            continue
        _copy(cell_flags if flag.axis else shared_flags, flag)


def _copy(group: argparse._ArgumentGroup, flag: RunFlag) -> None:
    """`flag` as `run` defines it (its action, type, choices, default, help), taking one or more values if an axis."""
    action = flag.action
    accepted = inspect.signature(type(action)).parameters
    kwargs = {name: getattr(action, name) for name in ("type", "choices", "const", "default", "help", "metavar", "nargs")
              if name in accepted}
    if flag.axis:
        kwargs["nargs"] = "+"
        if action.choices and action.metavar is None:  # the usage line would repeat every choice per value
            kwargs["metavar"] = action.dest.upper()
            kwargs["help"] = f"{action.help}; one or more of {', '.join(map(str, action.choices))}"
    group.add_argument(*flag.options, action=_noting(type(action)), dest=action.dest, **kwargs)


class _ConfigParser(argparse.ArgumentParser):
    """The sweep's parser for the words of a config file: a mistake is a `SweepConfigError` naming the file."""

    def __init__(self, path: str) -> None:
        super().__init__(prog="bespoke sweep", add_help=False)
        self.path = path
        add_arguments(self)

    def error(self, message: str) -> Any:  # argparse's hook; it would print the usage and exit
        raise SweepConfigError(f"{self.path}: {message}")


def _config_keys() -> dict[str, tuple[str, bool]]:
    """Each config key -> (its flag, whether it takes values)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    keys: dict[str, tuple[str, bool]] = {}
    for action in parser._actions:
        for option in action.option_strings:
            if option.startswith("--") and action.dest != "config":
                keys.update(dict.fromkeys(flag_keys(option), (option, action.nargs != 0)))
    return keys


def sweep_values(args: argparse.Namespace) -> dict[str, Any]:
    """Every setting of the sweep: `run`'s defaults, under the config file's values, under the flags given."""
    dests = [flag.dest for flag in run_flags()] + list(OWN)
    defaults = {**{flag.dest: flag.action.default for flag in run_flags()}, "out": None, "dry_run": False}
    from_config: dict[str, Any] = {}
    if getattr(args, "config", None):
        parsed = _ConfigParser(args.config).parse_args(config_words(args.config, _config_keys()))
        from_config = {dest: getattr(parsed, dest) for dest in getattr(parsed, GIVEN, ())}
    given = {dest: getattr(args, dest) for dest in getattr(args, GIVEN, ()) if dest in dests}
    return {**defaults, **from_config, **given}


def plan_from(values: dict[str, Any]) -> SweepPlan:
    """The grid and every cell's settings, checked before anything runs: a mistake is a `SweepConfigError`."""
    for dest, flag in (("model", "--models"), ("judge", "--judge"), ("out", "--out")):
        if not values.get(dest):
            raise SweepConfigError(f"{flag} is required (on the command line or in --config)")
    try:
        axes = tuple(_axes(values))
        grid = cells(axes)
    except UserError as error:
        raise SweepConfigError(str(error)) from None
    single = {flag.dest: values[flag.dest][0] if flag.axis and isinstance(values[flag.dest], list) else values[flag.dest]
              for flag in run_flags()}
    first = argparse.Namespace(**single)
    folder = SweepFolder(Path(values["out"]))
    try:
        prices = price_table(first)
        spending = spending_limit(first, prices, [first.generation_cache or str(folder.generation_cache),
                                                  first.cache or str(folder.judge_cache)])
    except UserError as error:
        raise SweepConfigError(str(error)) from None
    plans = []
    taken: set[str] = set()
    for cell in grid:
        cell_args = argparse.Namespace(**{**single, **cell.values})
        try:
            check_executor_flags(cell_args, [cell_args.model, cell_args.profiler, cell_args.judge])
            check_cost_flags(cell_args, [cell_args.model, cell_args.profiler, cell_args.judge])
            # each model takes the engine flags its engine has (--model-base-url the openai: ones, --batch-size hf:)
            settings = dataclasses.replace(settings_from(cell_args, spending),
                                           model_options=options_taken_by(cell_args.model, cell_args, spending))
        except UserError as error:
            where = f"cell {cell.name}: " if len(grid) > 1 else ""
            raise SweepConfigError(f"{where}{error}") from None
        taken.update(settings.model_options)
        plans.append(CellPlan(cell, cell_args.model, settings, _fingerprint(cell_args)))
    unused = [MODEL_ENGINE_FLAGS.get(name, name) for name in engine_flags(first) if name not in taken]
    if unused:
        options = {flag.dest: flag.options[0] for flag in run_flags()}
        models = ", ".join(dict.fromkeys(cp.model for cp in plans))
        raise SweepConfigError(f"{', '.join(options[dest] for dest in unused)} applies to none of the sweep's models ({models})")
    return SweepPlan(axes, tuple(plans), first.judge, judge_options(first, spending), Path(values["out"]), first.source,
                     first.revision, prices=prices, spending=spending)


def _axes(values: dict[str, Any]) -> list[Axis]:
    """Model and context always (one value or more), any other setting given several values."""
    axes = []
    for flag in run_flags():
        value = values[flag.dest]
        several = flag.axis and isinstance(value, list)
        if flag.dest in RENAMED or (several and len(value) > 1):
            axes.append(Axis(flag.dest, flag.options[0], tuple(value) if several else (value,)))
    return axes


def _fingerprint(cell_args: argparse.Namespace) -> str:
    """Every setting of a cell and its judge; keys left out (never written, not even hashed; a new key
    gives the same answers)."""
    settings = {flag.dest: getattr(cell_args, flag.dest) for flag in run_flags() if "api_key" not in flag.dest}
    return canonical_sha256(settings)


def answer_caches(args: argparse.Namespace) -> list[str]:
    """The caches every cell's answers go to (see `bespoke_cli.interrupt`)."""
    try:
        values = sweep_values(args)
    except SweepConfigError:  # said once the command runs
        return []
    if not values.get("out"):
        return []
    folder = SweepFolder(Path(values["out"]))
    return [values.get("generation_cache") or str(folder.generation_cache), values.get("cache") or str(folder.judge_cache)]


def run(args: argparse.Namespace) -> int:
    values = sweep_values(args)
    plan = plan_from(values)
    if values["dry_run"]:
        problems = [estimate for estimate in print_estimates(plan) if estimate.problem]
        if problems:
            print(f"error: {len(problems)} of {len(plan.cells)} cells would fail: {problems[0].name} ({problems[0].problem})",
                  file=sys.stderr)
        return 1 if problems else 0
    outcome = run_sweep(plan, progress=on_terminal(), say=print)
    if stopped_by_limit(plan.spending, answer_caches(args)):  # the sweep's limit: a local judge holds none
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
    failures = sum(row.failures for row in outcome.rows)
    if failures and values.get("strict"):
        print(f"error: {failures} judgment(s) failed (--strict)", file=sys.stderr)
        return 1
    return 0


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
    unknown = sorted({part.spec for part, figures in zip(parts, found) if figures.cost is None})
    cost = "unknown (no price for " + ", ".join(unknown) + ": --prices FILE)" if unknown else f"${sum(f.cost or 0.0 for f in found):.4f}"
    print(f"at most {sum(f.input_tokens for f in found)} input tokens (prompts built on answers not written yet are counted at "
          f"those answers' caps), ~{sum(f.output_tokens for f in found)} output tokens; estimated cost {cost}")
    return estimates


def _calls(calls: int, cached: int) -> str:
    return f"{calls} ({cached})"
