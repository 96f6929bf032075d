"""Options several subcommands share, defined once: where the data comes from."""

from __future__ import annotations

import argparse

from bespoke_dataset import DEFAULT_SOURCE


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """`--source` (one default for every subcommand) and `--revision`."""
    parser.add_argument("--source", default=DEFAULT_SOURCE,
                        help=f"Hub dataset repo id, local release folder (either layout), or 'sample' (default: {DEFAULT_SOURCE})")
    parser.add_argument("--revision", help="Hub branch, tag or commit of the data (Hub sources only)")
