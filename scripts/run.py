"""`bespoke run`: generate predictions with a system model, then score them, into one results file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bespoke_cli.generate import add_generation_arguments, generate_from, print_report
from bespoke_cli.executor import check_executor_flags
from bespoke_cli.score import add_judge_arguments, judge_options, publish

from bespoke_metric.systems import GenerationError
from bespoke_metric.pipeline import score

HELP = "generate with a system model and score with a judge: one results file recording both"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_generation_arguments(parser, endpoint_flags=("--model-base-url", "--model-api-key"))
    add_judge_arguments(parser)
    parser.add_argument("--output", default="results.json", help="results file (default results.json)")
    parser.add_argument("--predictions", help="predictions JSONL, resumed if it exists (default: OUTPUT with .predictions.jsonl)")
    parser.add_argument("--strict", action="store_true", help="exit non-zero if any judgment failed")


def run(args: argparse.Namespace) -> int:
    output = Path(args.output)
    predictions = args.predictions or str(output.with_name(output.stem + ".predictions.jsonl"))
    try:
        check_executor_flags(args, [args.model, args.profiler, args.judge])
        report = generate_from(args, predictions)
    except (GenerationError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print_report(report)
    system = {**report.system, "predictions": predictions, "generation_failures": report.failed}
    try:
        results = score(predictions, args.judge, source=args.source, revision=args.revision, limit=args.limit, system=system, **judge_options(args))
    except ValueError as error:  # bad predictions or judge options: a message, not a traceback
        print(f"error: {error}", file=sys.stderr)
        return 2
    status = publish(results, str(output), strict=args.strict)
    if report.failed:
        print(f"error: {len(report.failed)} quer(ies) have no prediction; rerun to retry them", file=sys.stderr)
        return 1
    return status
