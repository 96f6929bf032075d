"""`bespoke SUBCOMMAND ...`: each subcommand is a module of this package with `HELP`,
`add_arguments(parser)` and `run(args) -> int` (and `answer_caches(args)` if it keeps answers in caches).

How every command ends is decided here: a user's mistake (`UserError`, of any kind) is one `error: ...`
line and exit 2, an engine that failed (`EngineError`: a CUDA error, a dead engine, a retired model) and what
`--strict` refuses (`StrictError`) one line and exit 1,
a run that lost judgments or answers its `incomplete:` line last and exit 3 (`incomplete`, said by the command),
Ctrl-C one line and exit 130 (`interrupt`); anything else is a bug, one line that says so and exit 1.
`-v` shows the traceback of every one of them.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import time
import warnings
from typing import Any, NoReturn

from bespoke_dataset.errors import BespokeDataWarning, UserError, did_you_mean
from bespoke_dataset.version import __version__
from bespoke_metric.backends.base import EngineError
from bespoke_metric.backends.retirement import ModelNotice
from bespoke_metric.calls.progress import quiet_library_bars
from bespoke_metric.results.served import StrictError

from .interrupt import EXIT_INTERRUPTED, answer_caches, interrupted_line, saved_answers

# subcommand name -> its module in this package, one folder per wing of the library
COMMANDS: dict[str, str] = {
    "info": "data.info",
    "export": "data.export",
    "synth": "data.synth",
    "build": "data.build",
    "score": "judging.score",
    "meta-eval": "judging.meta_eval",
    "rescore": "judging.rescore",
    "leaderboard": "analysis.leaderboard",
    "compare": "analysis.compare",
    "bridge": "analysis.bridge",
    "report": "analysis.report",
    "generate": "systems.generate",
    "run": "systems.run",
    "search": "systems.search",
    "sweep": "systems.sweep",
    "submit": "hub.submit",
    "space": "hub.space",
    "stand-in": "stand_in",
    "import": "frameworks.importing",
    "tasks-path": "frameworks.tasks_path",
}

EXIT_USAGE = 2
"""Exit code of a user's mistake, as argparse uses for a bad flag."""
EXIT_FAILED = 1
"""Exit code of a run that could not do its work, or of a bug."""

OWN_LOGGERS = ("bespoke_dataset", "bespoke_metric", "bespoke_cli")


VERBOSE_HELP = "log debug messages, show library progress bars and the traceback of any error"


class CommandParser(argparse.ArgumentParser):
    """Every parser of the command line, the top level's and each subcommand's (and theirs): built here, so
    a subcommand's flags, whoever adds them, parse the same way.

    - Flags are never matched by prefix (`allow_abbrev=False`): `--search` is not taken for `--search-docs`.
    - An unknown flag is reported by the parser of the subcommand it was given to, with that subcommand's
      usage (argparse leaves it to the top level, which prints its own).
    - `-v` is taken after the subcommand as well as before it.
    - A mistake on the command line (an unknown flag, a value a flag does not take) is the one `error: ...`
      line every user mistake prints, naming the command whose `-h` shows the usage, and exit 2.
    """

    def __init__(self, *args: Any, top_level: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        self.flags: set[str] = set()
        """Every flag spelling this parser takes, its groups' included (recorded as they are added)."""
        super().__init__(*args, **kwargs)
        # A subcommand's -v leaves the attribute alone when it is not given, so a -v before the
        # subcommand still counts.
        self.add_argument("-v", "--verbose", action="store_true", default=False if top_level else argparse.SUPPRESS,
                          help=VERBOSE_HELP)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.flags.update(action.option_strings)
        return action

    def add_argument_group(self, *args: Any, **kwargs: Any) -> Any:
        return _RecordedGroup(super().add_argument_group(*args, **kwargs), self.flags)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> tuple[argparse.Namespace, list[str]]:
        words = list(sys.argv[1:] if args is None else args)
        if self._subparsers is None:  # a subcommand: a flag it does not know is the mistake to name first
            unknown = [word for word in words[: words.index("--") if "--" in words else len(words)]
                       if word.startswith("--") and word.split("=", 1)[0] not in self.flags]
            if unknown:
                self.error(f"unrecognized arguments: {' '.join(unknown)}"
                           + "".join(did_you_mean(word.split("=", 1)[0], self.flags, cutoff=0.8) for word in unknown))
        parsed, extras = super().parse_known_args(words, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {message} (`{self.prog} -h` shows the usage)\n")


class _RecordedGroup:
    """An argument group of a `CommandParser` that records the flags added to it in the parser's `flags`."""

    def __init__(self, group: argparse._ArgumentGroup, flags: set[str]) -> None:
        self._group = group
        self._flags = flags

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = self._group.add_argument(*args, **kwargs)
        self._flags.update(action.option_strings)
        return action

    def __getattr__(self, name: str) -> Any:
        return getattr(self._group, name)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of the subcommand `only`: adding one imports its module, and some
    import heavy libraries (torch, datasets) that the command being run may not need."""
    parser = CommandParser(prog="bespoke", description="The BESPOKE benchmark on the Hugging Face stack.", top_level=True)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
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


def _format_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                    line: str | None = None) -> str:
    """A data warning as the user needs it, `warning: ...` (what fell back, where), a model's coming shutdown
    as `notice: ...`; any other as Python shows it."""
    if issubclass(category, BespokeDataWarning):
        return f"warning: {message}\n"
    if issubclass(category, ModelNotice):
        return f"notice: {message}\n"
    return _PYTHON_FORMAT(message, category, filename, lineno, line)


_PYTHON_FORMAT = warnings.formatwarning


def configure_output(verbose: bool) -> None:
    """Log lines: ours at INFO (DEBUG with -v), other libraries' at WARNING; no library loading bars
    unless -v; data warnings as `warning: ...` lines, without the source line Python would show."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_OwnOrWarning())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])  # no-op where logging is set up already
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.INFO)
    warnings.formatwarning = _format_warning
    if not verbose:
        quiet_library_bars()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # The first word that is not an option names the subcommand (the only top-level options take no value).
    command = next((word for word in argv if not word.startswith("-")), None)
    args = build_parser(command if command in COMMANDS else None).parse_args(argv)
    args._argv = argv  # the command as given: what a run that lost judgments names as its rerun (`incomplete`)
    configure_output(args.verbose)
    caches = answer_caches(args._module, args)
    before, started = saved_answers(caches), time.time()
    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # here, where a closed pipe can be told from a failure, not at exit
        return code
    except UserError as error:
        if args.verbose:
            raise
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except StrictError as error:  # what --strict refuses: nothing was written
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
    except EngineError as error:
        if args.verbose:
            raise
        kept = interrupted_line(caches, before).removeprefix("interrupted: ")  # what is kept, how to go on
        print(f"error: {error}; {kept}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        # the command is ending: a second press while a model's thread reaches its next token (the interpreter
        # waits for it at exit) would end the process by the signal instead of the exit status below
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print(interrupted_line(caches, before, started), file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader stopped reading (`bespoke info | head`): nothing is wrong, and nothing more can be said;
        # stdout goes to /dev/null so that the interpreter's own flush at exit cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as error:  # not a mistake of the user's, nor an engine's failure: ours
        if args.verbose:
            raise
        print(f"error: a bug in bespoke {__version__}: {type(error).__name__}: {error} "
              f"(rerun with -v to see the traceback, and please report it)", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
