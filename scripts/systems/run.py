"""`bespoke run`: generate predictions with a system model, then score them, into one results file."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from bespoke_cli.context import command_context
from bespoke_cli.cost import add_cost_arguments, print_plan
from bespoke_cli.incomplete import finish, rerun_of
from bespoke_cli.judging.score import STRICT_HELP, add_judge_arguments, publish
from bespoke_dataset.errors import UserError
from bespoke_metric.backends.registry import as_spec
from bespoke_metric.calls.pricing import PriceTable
from bespoke_metric.judging.config import JudgeConfig
from bespoke_metric.scoring.pipeline import judge_groups, plan_judging
from bespoke_metric.systems.dry_run import plan_generation
from bespoke_metric.systems.runs import run as run_system

from .generate import add_generation_arguments, generation_cache, print_local_note, print_report, system_config

HELP = "generate with a system model and score with a judge: one results file recording both"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_generation_arguments(parser, endpoint_prefix="model-")
    add_judge_arguments(parser, system=True)
    parser.add_argument("--output", default="results.json", help="results file (default results.json); what else the "
                        "run keeps (predictions, run file, caches) goes into a folder named after it, results/NAME.json -> results/NAME/")
    parser.add_argument("--predictions", help="predictions JSONL, resumed if it exists (default: OUTPUT's folder, "
                        "results/NAME/predictions.jsonl)")
    parser.add_argument("--strict", action="store_true", help=STRICT_HELP)
    add_cost_arguments(parser)


def dry_run(args: argparse.Namespace, predictions: str, judge: JudgeConfig, prices: PriceTable) -> int:
    """Print the calls the run would make (generation, then judging what it would write), make none."""
    config = system_config(args)
    plan = plan_generation(config.engine, predictions, config.settings, source=args.source, revision=args.revision)
    groups = judge_groups([plan.predictions], source=args.source, revision=args.revision, limit=args.limit).groups
    if plan.stand_ins:  # a stand-in response would trip the guards: count every response as judged
        judge = dataclasses.replace(judge, guards=False)
    print_plan(plan.planned + plan_judging(judge, groups, response_bound=plan.stand_ins > 0), prices)
    return 0


def companion_folder(output: str) -> Path:
    """Where a run keeps what is not its results file: `results/tiny.json` -> `results/tiny/`, beside the
    results and never among them, so `bespoke leaderboard results/*.json` reads results files only."""
    path = Path(output)
    return path.with_name(path.stem if path.suffix else f"{path.name}-files")


def predictions_path(args: argparse.Namespace) -> str:
    """`--predictions`, else `predictions.jsonl` in the companion folder (beside it, the run file and the
    generation cache). Predictions an earlier version kept beside the results (`results/tiny.predictions.jsonl`)
    are still found, so the same command resumes them."""
    if args.predictions:
        return args.predictions
    output = Path(args.output)
    earlier = output.with_name(output.stem + ".predictions.jsonl")
    current = companion_folder(args.output) / "predictions.jsonl"
    return str(earlier if earlier.exists() and not current.exists() else current)


def answer_caches(args: argparse.Namespace) -> list[str]:
    """The system model's cache and the judge's, if given (see `bespoke_cli.interrupt`)."""
    return [generation_cache(args, predictions_path(args))] + ([args.cache] if args.cache else [])


def run(args: argparse.Namespace) -> int:
    predictions = predictions_path(args)
    if Path(args.output).is_dir():  # before any work: a folder cannot take the results file
        raise UserError(f"--output {args.output} is a folder; name the results file, e.g. {Path(args.output) / 'NAME.json'}")
    caches = answer_caches(args)
    judge = JudgeConfig.from_cli(args)  # the judge as the flags configure it, made and checked once
    args.model = as_spec(args.model)  # where the flags enter: parsed once, the `Spec` what every layer gets
    args.profiler = as_spec(args.profiler) if args.profiler else None
    # the system model's cache is always there: --max-cost needs the judge's
    context = command_context(args, [args.model, args.profiler, judge.spec], caches=caches, kept=[args.cache])
    if args.dry_run:
        return dry_run(args, predictions, judge, context.prices)
    config = system_config(args)
    # a bar on a terminal, a line now and then into a log (`calls.progress`); the report before judging starts
    outcome = run_system(config.engine, predictions, judge, config.settings, source=args.source, revision=args.revision,
                         progress=True, strict=args.strict, model_name=args.model_name, prices=context.prices,
                         spending=context.spending, on_generated=print_report)
    print_local_note(config)
    if context.stopped() or outcome.results is None:
        return 1
    # queries without a prediction (`system.generation_failures`) are lost as judgments are: said by `finish`
    rerun = rerun_of(args, args.cache)
    return finish([outcome.results], rerun, publish(outcome.results, args.output, strict=args.strict, rerun=rerun))
