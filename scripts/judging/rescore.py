"""`bespoke rescore RESULTS... --judge SPEC --out DIR`: judge the predictions behind results files again."""

from __future__ import annotations

import argparse
from itertools import groupby
from pathlib import Path

from bespoke_cli.context import command_context
from bespoke_cli.cost import add_cost_arguments, print_plan
from bespoke_cli.incomplete import finish, rerun_of
from bespoke_cli.judging.score import STRICT_HELP, add_judge_arguments, answer_caches, publish
from bespoke_dataset import DEFAULT_SOURCE
from bespoke_dataset.errors import UserError
from bespoke_metric.judging.config import JudgeConfig
from bespoke_metric.scoring.pipeline import judge_groups, plan_judging, score_many
from bespoke_metric.scoring.rescore import Rescore, rescore_plan

HELP = "judge the predictions behind results files again with another judge: one new results file each"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", help="results files (or folders of them) written by score, run or sweep; "
                        "each one's predictions must still be there")
    add_judge_arguments(parser, default=None, default_help="default: the data each results file was scored on")
    parser.add_argument("--out", required=True, help="folder for the new results files, named as the old ones")
    parser.add_argument("--strict", action="store_true", help=STRICT_HELP)
    add_cost_arguments(parser)


def expand(paths: list[str]) -> list[str]:
    """Results files as given, a folder standing for the `*.json` files in it (a `UserError` for a folder
    without any)."""
    out: list[str] = []
    for given in paths:
        path = Path(given)
        if not path.is_dir():
            out.append(given)
            continue
        found = sorted(str(p) for p in path.glob("*.json"))
        if not found:
            raise UserError(f"{given} is a folder without results files (*.json)")
        out += found
    return out


def run(args: argparse.Namespace) -> int:
    plans = rescore_plan(expand(args.results), args.out, source=args.source)
    judge = JudgeConfig.from_cli(args)  # the judge as the flags configure it, made and checked once
    context = command_context(args, [judge.spec], caches=answer_caches(args), kept=answer_caches(args))

    def data_of(plan: Rescore) -> tuple[str, str]:
        return (args.source or plan.source or DEFAULT_SOURCE, args.revision or plan.revision or "")

    batches = [(data, list(group)) for data, group in groupby(sorted(plans, key=data_of), key=data_of)]
    if args.dry_run:
        groups = [group for (source, revision), batch in batches for group in
                  judge_groups([plan.predictions for plan in batch], source=source, revision=revision or None).groups]
        print_plan(plan_judging(judge, groups), context.prices)
        return 0
    scored = []
    for (source, revision), batch in batches:
        results = score_many([plan.predictions for plan in batch], judge, source=source, revision=revision or None,
                             systems=[plan.system for plan in batch], prices=context.prices, spending=context.spending)
        scored += list(zip(batch, results, strict=True))
    if context.stopped():
        return 1
    rerun = rerun_of(args, args.cache)
    statuses = []
    for plan, results in sorted(scored, key=lambda pair: plans.index(pair[0])):
        print(f"\n{plan.results} -> {plan.output}")
        statuses.append(publish(results, plan.output, strict=args.strict, rerun=rerun))
    return finish([results for _, results in scored], rerun, max(statuses))
