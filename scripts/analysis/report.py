"""`bespoke report DIR`: a sweep drawn for reading, as HTML with its figures also as PNG."""

from __future__ import annotations

import argparse

HELP = "draw a sweep (bespoke sweep --out DIR) as HTML: the table, Average by system x context, bars per system, the noise drop"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", metavar="DIR", help="the --out folder of a bespoke sweep")


def run(args: argparse.Namespace) -> int:
    from bespoke_metric.experiments import write_report  # matplotlib is imported only for this command

    page = write_report(args.sweep)
    print(f"report written to {page}, its figures to {page.parent / 'figures'}")
    return 0
