"""`bespoke run`: generate predictions with a system model, then score them, into one results file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bespoke_cli.executor import check_executor_flags
from .generate import add_generation_arguments, generate_from, generation_cache, print_report
from bespoke_cli.judging.score import add_judge_arguments, judge_options, publish

from bespoke_metric.experiments.runner import results_system
from bespoke_metric.systems import GenerationError
from bespoke_metric.scoring.pipeline import score

HELP = "generate with a system model and score with a judge: one results file recording both"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_generation_arguments(parser, endpoint_flags=("--model-base-url", "--model-api-key"))
    add_judge_arguments(parser)
    parser.add_argument("--output", default="results.json", help="results file (default results.json)")
    parser.add_argument("--predictions", help="predictions JSONL, resumed if it exists (default: OUTPUT with .predictions.jsonl)")
    parser.add_argument("--strict", action="store_true", help="exit non-zero if any judgment failed")


def predictions_path(args: argparse.Namespace) -> str:
    """`--predictions`, else `OUTPUT` with `.predictions.jsonl`."""
    output = Path(args.output)
    return args.predictions or str(output.with_name(output.stem + ".predictions.jsonl"))


def answer_caches(args: argparse.Namespace) -> list[str]:
    """The system model's cache and the judge's, if given (see `bespoke_cli.interrupt`)."""
    return [generation_cache(args, predictions_path(args))] + ([args.cache] if args.cache else [])


def run(args: argparse.Namespace) -> int:
    predictions = predictions_path(args)
    try:
        check_executor_flags(args, [args.model, args.profiler, args.judge])
        report = generate_from(args, predictions)
    except (GenerationError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print_report(report)
    try:
        results = score(predictions, args.judge, source=args.source, revision=args.revision, limit=args.limit,
                        system=results_system(report, predictions), **judge_options(args))
    except ValueError as error:  # bad predictions or judge options: a message, not a traceback
        print(f"error: {error}", file=sys.stderr)
        return 2
    status = publish(results, args.output, strict=args.strict)
    if report.failed:
        print(f"error: {len(report.failed)} quer(ies) have no prediction; rerun to retry them", file=sys.stderr)
        return 1
    return status
