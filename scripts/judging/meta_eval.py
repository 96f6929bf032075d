"""`bespoke meta-eval --judge SPEC`: agreement of a judge with the human scores on the meta-test set."""

from __future__ import annotations

import argparse
import sys

from bespoke_metric.results.caveats import nothing_scored
from bespoke_metric.analysis.meta_eval import format_meta_eval, meta_evaluate
from bespoke_metric.scoring.pipeline import write_results

from bespoke_metric.judging.factory import ProtocolOptions

from bespoke_cli.cost import add_cost_arguments, check_cost_flags, price_table, spending_limit, stopped_by_limit
from bespoke_cli.executor import check_executor_flags
from bespoke_cli.options import add_option_arguments, add_resample_arguments, option_values, positive_int
from .score import add_judge_arguments, answer_caches, judge_options

__all__ = ["HELP", "add_arguments", "answer_caches", "run"]

HELP = "score the held-out meta-test responses and report the judge's agreement with the humans"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_judge_arguments(parser)
    add_option_arguments(parser, ProtocolOptions, only=("with_feedback", "personalized"))  # the paper's ablations
    parser.add_argument("--feedback-grader", help="ENGINE:MODEL that grades feedback accuracy (LLM judges; default: the judge's own model, same endpoint options)")
    parser.add_argument("--no-feedback-accuracy", action="store_true", help="skip feedback accuracy (one grader call per response)")
    parser.add_argument("--rubrics", metavar="FILE", help="judge with these rubrics (JSONL of user, query_id, rubric, "
                                                          "as `bespoke build --rubrics-only` writes) instead of the release's")
    parser.add_argument("--output", help="write the meta-evaluation results (JSON) here")
    parser.add_argument("--limit", type=positive_int, help="judge only the first N meta-test responses")
    add_resample_arguments(parser)
    add_cost_arguments(parser, dry_run=False)


def run(args: argparse.Namespace) -> int:
    check_executor_flags(args, [args.judge])
    check_cost_flags(args, [args.judge, args.feedback_grader])
    prices = price_table(args)
    spending = spending_limit(args, prices, [args.cache])
    options = {**judge_options(args, spending), **option_values(args, ProtocolOptions)}
    if args.feedback_grader:
        options["feedback_grader"] = args.feedback_grader
    if args.no_feedback_accuracy:
        options["feedback_accuracy_check"] = False
    results = meta_evaluate(args.judge, args.source, revision=args.revision, rubrics=args.rubrics, limit=args.limit,
                            n_resamples=args.resamples, seed=args.seed, prices=prices, **options)
    if stopped_by_limit(spending, answer_caches(args)):
        return 1
    print(format_meta_eval(results))
    if args.output:
        write_results(results, args.output)
        print(f"results written to {args.output}")
    unscored = nothing_scored(results)
    if unscored:
        print(f"error: {unscored}", file=sys.stderr)
        return 1
    return 0
