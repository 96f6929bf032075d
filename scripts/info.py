"""`bespoke info [--source SRC]`: each config of a release and its number of rows."""

from __future__ import annotations

import argparse

HELP = "print each config of a BESPOKE source and its size"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", default="sample",
                        help="Hub repo id, local folder (either layout) or 'sample' (default: the bundled sample)")
    parser.add_argument("--revision", default=None, help="Hub branch, tag or commit")
    parser.add_argument("--cache-dir", default=None, help="where built configs are cached")


def run(args: argparse.Namespace) -> int:
    from bespoke_dataset import load, resolve_source
    from bespoke_dataset.loading import available_configs

    source = resolve_source(args.source, args.revision)
    print(f"source: {source.source} ({source.layout} layout)  revision: {source.revision or 'local'}  "
          f"fingerprint: {source.fingerprint[:16]}")
    for config in available_configs(source):
        dataset = load(config, source, cache_dir=args.cache_dir)
        print(f"{config:<12} {len(dataset):>6} rows  {', '.join(dataset.column_names)}")
    return 0
