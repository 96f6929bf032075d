"""`bespoke leaderboard results/` (or `results/*.json`): rank systems scored by the same judge on the same data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bespoke_cli.options import add_resample_arguments
from bespoke_dataset.atomic import atomic_write_text
from bespoke_dataset.errors import UserError
from bespoke_metric.analysis.leaderboard import LeaderboardError, build_leaderboard, gather_results, push_to_hub
from bespoke_metric.analysis.report import render
from bespoke_metric.results.caveats import caveats
from bespoke_metric.results.file_kinds import read_json
from bespoke_metric.results.incomplete import ALLOW_INCOMPLETE, INCOMPLETE_MARK

HELP = "rank results files (one table per judge and data revision) with 95% bootstrap intervals"


FORMATS: tuple[str, ...] = ("markdown", "csv", "html")
_SUFFIXES: dict[str, str] = {".md": "markdown", ".csv": "csv", ".html": "html", ".htm": "html"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", help="results files written by `bespoke score` / `bespoke run`, or "
                        "folders of them such as results/ (other JSON files among them, such as run files or a sweep's summary, are skipped with a note)")
    parser.add_argument("--format", choices=FORMATS, help="output format (default: from the --output suffix, .html, .csv "
                        "or .md; else markdown)")
    parser.add_argument("--output", help="write here instead of printing")
    parser.add_argument("--allow-proxy", action="store_true", help="also show results of proxy judges (embed:); never for publication")
    parser.add_argument(ALLOW_INCOMPLETE, action="store_true", help="also show results of runs that lost judgments "
                        f"(their files' incomplete field), marked {INCOMPLETE_MARK}; never for publication")
    parser.add_argument("--bridge", metavar="BRIDGE_JSON", help="HTML: also show how the ranking moved to a new judge "
                        "(the bridge.json of `bespoke bridge`)")
    add_resample_arguments(parser)
    parser.add_argument("--push-to-hub", metavar="REPO", help="also upload each results file to this Hub dataset repo, as results/{system}/{date}.json")


def output_format(given: str | None, output: str | None) -> str:
    """`--format`, else the one the `--output` suffix names (`board.html` is an HTML page), else markdown."""
    if given:
        return given
    return _SUFFIXES.get(Path(output).suffix.lower(), "markdown") if output else "markdown"


def run(args: argparse.Namespace) -> int:
    try:
        gathered = gather_results(args.results)
        for note in gathered.notes:  # what was left out, before any error or table
            print(note, file=sys.stderr)
        results = gathered.entries
        if not results:
            given = "file(s) and folder(s)" if any(Path(path).is_dir() for path in args.results) else "file(s)"
            raise LeaderboardError(f"no results file among the {len(args.results)} {given} given")
        groups = build_leaderboard(results, allow_proxy=args.allow_proxy, allow_incomplete=args.allow_incomplete,
                                   n_resamples=args.resamples, seed=args.seed)
    except (LeaderboardError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    fmt = output_format(args.format, args.output)
    if args.bridge and fmt != "html":
        raise UserError(f"--bridge is shown in the HTML leaderboard only; give --format html (not {fmt})")
    text = render(groups, fmt, bridge=read_json(args.bridge, LeaderboardError) if args.bridge else None)
    if args.output:
        atomic_write_text(args.output, text)
        print(f"{fmt} leaderboard of {sum(len(g.rows) for g in groups)} system(s) in {len(groups)} group(s) "
              f"written to {args.output}")
    else:
        sys.stdout.write(text)
    for note in dict.fromkeys(note for result in results for note in caveats(result.results)):
        print(note, file=sys.stderr)  # beside the table, not inside a CSV or HTML file
    if args.push_to_hub:
        for result in results:
            path = push_to_hub(result.path, args.push_to_hub, allow_proxy=args.allow_proxy, allow_incomplete=args.allow_incomplete)
            print(f"uploaded {result.path} to {args.push_to_hub}:{path}")
    return 0
