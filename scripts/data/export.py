"""`bespoke export --source SRC --out DIR [--push-to-hub REPO]`: a typed, Hub-ready copy of a release."""

from __future__ import annotations

import argparse
import logging

from bespoke_cli.options import add_source_arguments

HELP = "export a BESPOKE source as typed parquet configs with a dataset card (and optionally push it)"

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--out", required=True,
                        help="folder to write: new, empty, or holding an earlier export; its config folders and README.md "
                             "are replaced (each atomically), other files such as .git are kept")
    parser.add_argument("--force", action="store_true",
                        help="write into a non-empty folder that holds no earlier export (a fresh clone of a Hub repo)")
    parser.add_argument("--cache-dir", default=None, help="where built configs are cached")
    parser.add_argument("--push-to-hub", metavar="REPO", default=None,
                        help="upload the folder to this Hub dataset repo")
    parser.add_argument("--private", action="store_true", help="create the Hub repo as private")
    parser.add_argument("--token", default=None, help="Hub token (default: the logged-in token or HF_TOKEN)")


def run(args: argparse.Namespace) -> int:
    from bespoke_dataset.exporting import export, push_to_hub

    out = export(args.source, args.out, revision=args.revision, cache_dir=args.cache_dir,
                 repo=args.push_to_hub or "<org>/<repo>", force=args.force)
    print(f"wrote {out}")
    if args.push_to_hub:
        url = push_to_hub(out, args.push_to_hub, token=args.token, private=args.private)
        print(f"pushed to {args.push_to_hub}: {url}")
    return 0
