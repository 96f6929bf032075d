"""`bespoke SUBCOMMAND ...`: each subcommand is a module of this package with `HELP`,
`add_arguments(parser)` and `run(args) -> int`."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

# subcommand name -> module in this package
COMMANDS: dict[str, str] = {
    "info": "info",
    "export": "export",
    "synth": "synth",
    "score": "score",
    "meta-eval": "meta_eval",
    "leaderboard": "leaderboard",
    "compare": "compare",
    "generate": "generate",
    "run": "run",
    "submit": "submit",
    "space": "space",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of the subcommand `only`: adding one imports its module, and some
    import heavy libraries (torch, datasets) that the command being run may not need."""
    parser = argparse.ArgumentParser(prog="bespoke", description="The BESPOKE benchmark on the Hugging Face stack.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        if only is not None and name != only:
            continue
        module = importlib.import_module(f"bespoke_cli.{module_name}")
        # argparse %-formats help strings (not descriptions): escape a literal "95%".
        command = sub.add_parser(name, help=module.HELP.replace("%", "%%"), description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # The first word that is not an option names the subcommand (the only top-level option takes no value).
    command = next((word for word in argv if not word.startswith("-")), None)
    args = build_parser(command if command in COMMANDS else None).parse_args(argv)
    # Other libraries stay at WARNING: their debug logs (HTTP traces) drown ours.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("bespoke_dataset", "bespoke_metric", "bespoke_cli"):
        logging.getLogger(name).setLevel(logging.DEBUG if args.verbose else logging.INFO)
    return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
