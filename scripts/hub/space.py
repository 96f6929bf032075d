"""`bespoke space metric|leaderboard --out DIR [--push-to-hub ORG/NAME]`: write (and push) a Hub Space."""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import tempfile

from bespoke_cli.interrupt import EXIT_INTERRUPTED, ctrl_c_seen
from bespoke_metric.hub.spaces import (
    SpaceError,
    evaluate_note,
    leaderboard_results,
    leaderboard_space_files,
    metric_space_files,
    push_space,
    space_name,
    space_package,
    write_space,
)
from bespoke_metric.results.incomplete import ALLOW_INCOMPLETE, INCOMPLETE_MARK

HELP = "write a Hub Space: the metric (evaluate module, card, demo app) or a leaderboard of results files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    metric = kinds.add_parser("metric", help="the metric Space: DIR/<DIR's name>.py for evaluate.load, README.md, app.py, requirements.txt",
                              description="Write the metric Space. evaluate.load('DIR') then loads it; its docstring examples run offline.")
    leaderboard = kinds.add_parser("leaderboard", help="a leaderboard Space ranking a folder (or Hub dataset repo) of results files",
                                   description="Write a leaderboard Space over results files; --serve also serves it on 127.0.0.1.")
    leaderboard.add_argument("--results", required=True, help="a folder of results files (copied into the Space), or a Hub dataset repo id of them (read at start)")
    leaderboard.add_argument("--allow-proxy", action="store_true", help="also rank results of proxy judges (embed:) and results a stand-in answered; never for publication")
    leaderboard.add_argument(ALLOW_INCOMPLETE, action="store_true", help="also rank results of runs that lost judgments "
                             f"(their files' incomplete field), marked {INCOMPLETE_MARK}; never for publication")
    leaderboard.add_argument("--serve", action="store_true", help="then serve the written app on 127.0.0.1 (Ctrl-C stops it)")
    leaderboard.add_argument("--port", type=int, default=7860, help="port for --serve (default 7860)")
    for command in (metric, leaderboard):
        command.add_argument("--out", required=True, help="folder to write; other files in it (.git) are kept. A metric Space's module is named after it")
        command.add_argument("--push-to-hub", metavar="ORG/NAME", help="also create the Space (Gradio) and upload the folder; NAME must be the folder's name for a metric Space")
        command.add_argument("--private", action="store_true", help="create the Space as private")
        command.add_argument("--token", help="Hub token (default: the logged-in token or HF_TOKEN); never written anywhere")
        command.add_argument("--force", action="store_true", help="replace files of ours in --out that `bespoke space` did not write")
        command.add_argument("--package-from", default="auto", metavar="FROM",
                             help="where the Space gets bespoke-eval: auto (default: wheel from a source tree, else registry), "
                                  "wheel (this version's wheel, built from the source tree, beside app.py; needs no release on the "
                                  "package registry), registry (the release of the version installed), or a VCS URL pip installs "
                                  "from (git+https://host/org/bespoke-eval@TAG)")


def run(args: argparse.Namespace) -> int:
    try:
        with tempfile.TemporaryDirectory(prefix="bespoke-space-") as build_dir:
            if args.kind == "metric":
                name = space_name(args.out, args.push_to_hub)
                package = space_package(args.package_from, build_dir)
                files = metric_space_files(name, args.push_to_hub, package=package)
            else:
                results, notes = leaderboard_results(args.results, allow_proxy=args.allow_proxy, allow_incomplete=args.allow_incomplete)
                for note in notes:
                    print(note, file=sys.stderr)
                package = space_package(args.package_from, build_dir)
                files = leaderboard_space_files(results, package=package, allow_proxy=args.allow_proxy,
                                                allow_incomplete=args.allow_incomplete)
        out = write_space(files, args.out, force=args.force)
    except (SpaceError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote the {args.kind} Space to {out}: " + ", ".join(sorted({name.split('/')[0] for name in files})))
    print(package.describe())
    note = evaluate_note() if args.kind == "metric" else None
    if note:
        print(note)
    if args.push_to_hub:
        url = push_space(out, args.push_to_hub, token=args.token, private=args.private)
        print(f"pushed to the Space {args.push_to_hub}: {url}")
    if getattr(args, "serve", False):
        os.environ["GRADIO_SERVER_NAME"] = "127.0.0.1"
        os.environ["GRADIO_SERVER_PORT"] = str(args.port)
        print(f"serving on http://127.0.0.1:{args.port}/ (Ctrl-C stops it)")
        with ctrl_c_seen() as stopped:
            runpy.run_path(str(out / "app.py"), run_name="__main__")
        if stopped:  # Gradio ends its server on Ctrl-C and returns: the command was still interrupted
            print(f"interrupted: stopped serving; the Space is written in {out}", file=sys.stderr)
            return EXIT_INTERRUPTED
    return 0
