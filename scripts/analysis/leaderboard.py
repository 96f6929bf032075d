"""`bespoke leaderboard results/*.json`: rank systems scored by the same judge on the same data."""

from __future__ import annotations

import argparse
import sys

from bespoke_dataset.atomic import atomic_write_text
from bespoke_metric.results.caveats import caveats
from bespoke_metric.analysis.leaderboard import LeaderboardError, build_leaderboard, load_results, push_to_hub
from bespoke_metric.analysis.report import render

HELP = "rank results files (one table per judge and data revision) with 95% bootstrap intervals"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", help="results files written by `bespoke score` / `bespoke run`")
    parser.add_argument("--format", choices=("markdown", "csv", "html"), default="markdown", help="output format (default markdown)")
    parser.add_argument("--output", help="write here instead of printing")
    parser.add_argument("--allow-proxy", action="store_true", help="also show results of proxy judges (embed:); never for publication")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples for the intervals (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--push-to-hub", metavar="REPO", help="also upload each results file to this Hub dataset repo, as results/{system}/{date}.json")


def run(args: argparse.Namespace) -> int:
    try:
        results = load_results(args.results)
        groups = build_leaderboard(results, allow_proxy=args.allow_proxy, n_resamples=args.resamples, seed=args.seed)
    except (LeaderboardError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    text = render(groups, args.format)
    if args.output:
        atomic_write_text(args.output, text)
        print(f"{sum(len(g.rows) for g in groups)} systems in {len(groups)} group(s) written to {args.output}")
    else:
        sys.stdout.write(text)
    for note in dict.fromkeys(note for result in results for note in caveats(result.results)):
        print(note, file=sys.stderr)  # beside the table, not inside a CSV or HTML file
    if args.push_to_hub:
        for result in results:
            path = push_to_hub(result.path, args.push_to_hub, allow_proxy=args.allow_proxy)
            print(f"uploaded {result.path} to {args.push_to_hub}:{path}")
    return 0
