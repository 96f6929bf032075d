"""`bespoke info [--source SRC]`: each config of a release and its number of rows."""

from __future__ import annotations

import argparse

from bespoke_cli.options import add_source_arguments

HELP = "print each config of a BESPOKE source and its size"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
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
