"""`bespoke SUBCOMMAND ...`: each subcommand is a module of this package with `HELP`,
`add_arguments(parser)` and `run(args) -> int` (and `answer_caches(args)` if it keeps answers in caches).

How every command ends is decided here: a user's mistake is one `error: ...` line and exit 2, Ctrl-C one
line and exit 130 (`interrupt`), and only a bug shows a traceback (or `-v`, which shows them all).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from bespoke_dataset.errors import UserError
from bespoke_dataset.version import __version__
from bespoke_metric.calls.progress import quiet_library_bars

from .interrupt import EXIT_INTERRUPTED, answer_caches, interrupted_line, saved_answers

# subcommand name -> its module in this package, one folder per wing of the library
COMMANDS: dict[str, str] = {
    "info": "data.info",
    "export": "data.export",
    "synth": "data.synth",
    "score": "judging.score",
    "meta-eval": "judging.meta_eval",
    "leaderboard": "analysis.leaderboard",
    "compare": "analysis.compare",
    "report": "analysis.report",
    "generate": "systems.generate",
    "run": "systems.run",
    "sweep": "systems.sweep",
    "submit": "hub.submit",
    "space": "hub.space",
}

EXIT_USAGE = 2
"""Exit code of a user's mistake, as argparse uses for a bad flag."""

OWN_LOGGERS = ("bespoke_dataset", "bespoke_metric", "bespoke_cli")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of the subcommand `only`: adding one imports its module, and some
    import heavy libraries (torch, datasets) that the command being run may not need."""
    parser = argparse.ArgumentParser(prog="bespoke", description="The BESPOKE benchmark on the Hugging Face stack.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="log debug messages, show library progress bars and the traceback of any error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        if only is not None and name != only:
            continue
        module = importlib.import_module(f"bespoke_cli.{module_name}")
        # argparse %-formats help strings (not descriptions): escape a literal "95%".
        command = sub.add_parser(name, help=module.HELP.replace("%", "%%"), description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_run=module.run, _module=module)
    return parser


class _OwnOrWarning(logging.Filter):
    """Lets through our own records, and other libraries' from WARNING up: some (bm25s) log their debug
    lines at DEBUG whatever the root level is."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or record.name.split(".")[0] in OWN_LOGGERS


def configure_output(verbose: bool) -> None:
    """Log lines: ours at INFO (DEBUG with -v), other libraries' at WARNING; no library loading bars
    unless -v."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_OwnOrWarning())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])  # no-op where logging is set up already
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.INFO)
    if not verbose:
        quiet_library_bars()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # The first word that is not an option names the subcommand (the only top-level options take no value).
    command = next((word for word in argv if not word.startswith("-")), None)
    args = build_parser(command if command in COMMANDS else None).parse_args(argv)
    configure_output(args.verbose)
    caches = answer_caches(args._module, args)
    before = saved_answers(caches)
    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # here, where a closed pipe can be told from a failure, not at exit
        return code
    except UserError as error:
        if args.verbose:
            raise
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(interrupted_line(caches, before), file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader stopped reading (`bespoke info | head`): nothing is wrong, and nothing more can be said;
        # stdout goes to /dev/null so that the interpreter's own flush at exit cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
