"""`bespoke info [--source SRC] [--check [--strict]]`: each config of a release and its number of rows; with
`--check`, what was read from each raw table and every fallback taken."""

from __future__ import annotations

import argparse
import sys

from bespoke_cli.options import add_source_arguments

HELP = "print each config of a BESPOKE source and its size (--check: what was read from each table, and what fell back)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--cache-dir", default=None, help="where built configs are cached")
    parser.add_argument("--check", action="store_true",
                        help="read every raw table (no cache) and print, per table, the rows read, sessions with a "
                             "time, chats with turns, searches with a query, responses and claims per query, scores "
                             "written as text or dropped, ids normalised, the forms rows came in and every fallback")
    parser.add_argument("--strict", action="store_true", help="with --check: exit 1 if anything fell back")


def run(args: argparse.Namespace) -> int:
    if args.strict and not args.check:
        print("error: --strict applies to --check", file=sys.stderr)
        return 2
    if args.check:
        return _check(args)
    from bespoke_dataset import load, resolve_source
    from bespoke_dataset.rows import available_configs

    source = resolve_source(args.source, args.revision)
    print(f"source: {source.source} ({source.layout} layout)  revision: {source.revision or 'local'}  "
          f"fingerprint: {source.fingerprint[:16]}")
    for config in available_configs(source):
        dataset = load(config, source, cache_dir=args.cache_dir)
        print(f"{config:<12} {len(dataset):>6} rows  {', '.join(dataset.column_names)}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from bespoke_dataset import check

    report = check(args.source, args.revision)
    print(report.format())
    if report.errors:
        print(f"error: {len(report.errors)} config(s) could not be read: {', '.join(report.errors)}", file=sys.stderr)
        return 1
    if args.strict and report.fallbacks:
        print(f"error: {report.fallbacks} row(s) fell back (--strict)", file=sys.stderr)
        return 1
    return 0
