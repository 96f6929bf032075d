"""`bespoke tasks-path lm-eval`: the folder of BESPOKE's lm-eval tasks, for `lm_eval --include_path`."""

from __future__ import annotations

import argparse

from bespoke_metric.frameworks.lm_eval import TASK_FOLDER

HELP = "print the folder of BESPOKE's tasks for a framework: lm-eval's --include_path"
FOLDERS = {"lm-eval": TASK_FOLDER}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("framework", choices=tuple(FOLDERS), help="the framework whose task folder to print")


def run(args: argparse.Namespace) -> int:
    print(FOLDERS[args.framework])
    return 0
