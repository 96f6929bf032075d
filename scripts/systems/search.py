"""`bespoke search freeze CACHE --out DIR`: every search a cache holds, written out as a `docs:` collection."""

from __future__ import annotations

import argparse

from bespoke_metric.systems.search.collection import freeze

HELP = "search caches: freeze every cached search result into a docs: collection that all systems can search"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    action = actions.add_parser("freeze", help="write every result the search cache holds as a docs: collection",
                                description="Write every result the search cache holds, each document once, into "
                                "DIR/frozen.jsonl: search it with --search docs:DIR.")
    action.add_argument("cache", help="the search cache (--search-cache, or a run's generation cache)")
    action.add_argument("--out", required=True, metavar="DIR", help="the collection folder to write")


def run(args: argparse.Namespace) -> int:
    path, documents = freeze(args.cache, args.out)
    print(f"{documents} document(s) from {args.cache} written to {path}; search them with --search docs:{args.out}")
    return 0
