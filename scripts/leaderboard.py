"""`bespoke leaderboard results/*.json`: rank systems scored by the same judge on the same data."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from bespoke_metric.leaderboard import LeaderboardError, build_leaderboard, load_results, push_to_hub, render

HELP = "rank results files (one table per judge and data revision) with 95% bootstrap intervals"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", help="results files written by `bespoke score` / `bespoke run`")
    parser.add_argument("--format", choices=("markdown", "csv", "html"), default="markdown", help="output format (default markdown)")
    parser.add_argument("--output", help="write here instead of printing")
    parser.add_argument("--allow-proxy", action="store_true", help="also show results of proxy judges (embed:); never for publication")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples for the intervals (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--push-to-hub", metavar="REPO", help="also upload each results file to this Hub dataset repo, as results/{system}/{date}.json")


def write_text(text: str, path: str) -> None:
    """Write atomically: a failed run never leaves half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=directory, prefix=".bespoke-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def run(args: argparse.Namespace) -> int:
    try:
        results = load_results(args.results)
        groups = build_leaderboard(results, allow_proxy=args.allow_proxy, n_resamples=args.resamples, seed=args.seed)
    except (LeaderboardError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    text = render(groups, args.format)
    if args.output:
        write_text(text, args.output)
        print(f"{sum(len(g.rows) for g in groups)} systems in {len(groups)} group(s) written to {args.output}")
    else:
        sys.stdout.write(text)
    if args.push_to_hub:
        for result in results:
            path = push_to_hub(result.path, args.push_to_hub, allow_proxy=args.allow_proxy)
            print(f"uploaded {result.path} to {args.push_to_hub}:{path}")
    return 0
