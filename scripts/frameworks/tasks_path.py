"""`bespoke tasks-path lm-eval`: the folder of BESPOKE's lm-eval tasks, for `lm_eval --include_path`;
`bespoke tasks-path inspect`: the folder of its inspect tasks' file, for `inspect list tasks inspect_task.py` there."""

from __future__ import annotations

import argparse

from bespoke_metric.frameworks import INSPECT_FOLDER
from bespoke_metric.frameworks.lm_eval import TASK_FOLDER

HELP = ("print the folder of BESPOKE's tasks for a framework: lm-eval's --include_path, the folder inspect lists "
        "inspect_task.py from")
FOLDERS = {"lm-eval": TASK_FOLDER, "inspect": INSPECT_FOLDER}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("framework", choices=tuple(FOLDERS), help="the framework whose task folder to print")


def run(args: argparse.Namespace) -> int:
    print(FOLDERS[args.framework])
    return 0
