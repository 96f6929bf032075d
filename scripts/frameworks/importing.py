"""`bespoke import PATH... --output FILE`: a run made in inspect or lm-eval as our results file, its
predictions beside it (`bespoke_metric.frameworks.importing`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bespoke_cli.incomplete import finish
from bespoke_cli.judging.score import print_summary
from bespoke_cli.options import add_source_arguments, positive_int
from bespoke_cli.systems.run import companion_folder
from bespoke_metric.frameworks.importing import import_runs, write_imported
from bespoke_metric.results.caveats import caveats

HELP = ("read an inspect log (.eval, .json) or lm-eval's --log_samples output (samples_bespoke_*.jsonl) as a "
        "results file, its predictions beside it, for leaderboard, compare, bridge, rescore and submit")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="an inspect log of bespoke_metric/bespoke, or lm-eval's samples file of one bespoke_* "
                        "task; several: one run split over files")
    parser.add_argument("--output", required=True, help="the results file to write (its predictions go to "
                        "OUTPUT-STEM/predictions.jsonl beside it)")
    add_source_arguments(parser, default=None, default_help="default: the data the run records, where it is found "
                         "from here")
    parser.add_argument("--epoch", type=positive_int, help="of an inspect log run over several epochs (--epochs), the "
                        "epoch to import (default: every epoch, where they all gave the same answers and judgments)")


def run(args: argparse.Namespace) -> int:
    imported = import_runs(args.paths, source=args.source, revision=args.revision, epoch=args.epoch)
    predictions = companion_folder(args.output) / "predictions.jsonl"
    write_imported(imported, Path(args.output), predictions)
    print_summary(imported.results)
    for note in caveats(imported.results):
        print(note)
    print(f"wrote {args.output} ({imported.results.system['framework']} run, {len(imported.predictions)} "
          f"predictions in {predictions})")
    incomplete = imported.results.incomplete
    return finish([imported.results], incomplete.rerun) if incomplete is not None and incomplete.rerun else 0
