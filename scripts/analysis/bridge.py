"""`bespoke bridge OLD... --to NEW... --out DIR`: how a leaderboard's ranking moved under a new judge."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bespoke_cli.judging.rescore import expand
from bespoke_cli.options import add_resample_arguments
from bespoke_dataset.atomic import atomic_write_text
from bespoke_metric.analysis.bridge import bridge, format_bridge
from bespoke_metric.analysis.leaderboard import gather_results, refuse_proxy

HELP = "pair each system's results under an old and a new judge: Kendall's tau, shifts, the pairs that flip"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", nargs="+", help="results files (or a folder) scored by the old judge")
    parser.add_argument("--to", nargs="+", required=True, dest="new", metavar="NEW",
                        help="the same systems' results files (or a folder) scored by the new judge (bespoke rescore)")
    parser.add_argument("--out", required=True, help="folder for bridge.json and bridge.md")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level of an order (default 0.05)")
    parser.add_argument("--allow-proxy", action="store_true", help="also bridge results of proxy judges (embed:)")
    add_resample_arguments(parser)


def run(args: argparse.Namespace) -> int:
    sides = []
    for paths in (args.old, args.new):
        gathered = gather_results(expand(paths))
        for note in gathered.notes:
            print(note)
        sides.append(gathered.entries)
    refuse_proxy(sides[0] + sides[1], args.allow_proxy)
    content = bridge(*sides, alpha=args.alpha, n_resamples=args.resamples, seed=args.seed)
    out = Path(args.out)
    markdown = format_bridge(content)
    atomic_write_text(out / "bridge.json", json.dumps(content, indent=2) + "\n")
    atomic_write_text(out / "bridge.md", markdown)
    print(markdown, end="")
    print(f"written to {out / 'bridge.json'} and {out / 'bridge.md'}")
    return 0
