"""`bespoke compare A.json B.json`: is A better than B? Paired tests per metric on shared queries."""

from __future__ import annotations

import argparse
import json
import sys

from bespoke_cli.options import positive_int
from bespoke_metric.analysis.leaderboard import LeaderboardError, compare, format_comparison, load_results
from bespoke_metric.results.caveats import caveats
from bespoke_metric.results.stats import PAIRED_RESAMPLES, PAIRED_TESTS

HELP = "compare two results files: per-metric difference, 95% CI and p-value on the shared queries"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", help="results file of system A")
    parser.add_argument("b", help="results file of system B")
    parser.add_argument("--method", choices=tuple(PAIRED_TESTS), default="permutation", help="paired test (default permutation)")
    parser.add_argument("--resamples", type=positive_int, default=PAIRED_RESAMPLES,
                        help=f"resamples / sign flips (default {PAIRED_RESAMPLES})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level marked in the table (default 0.05)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")


def run(args: argparse.Namespace) -> int:
    try:
        a, b = load_results([args.a, args.b])
        comparison = compare(a, b, method=args.method, n_resamples=args.resamples, seed=args.seed)
    except (LeaderboardError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(comparison, indent=2) if args.json else format_comparison(comparison, args.alpha))
    for note in dict.fromkeys(caveats(a.results) + caveats(b.results)):
        print(note, file=sys.stderr if args.json else sys.stdout)  # JSON on stdout stays JSON
    return 0
