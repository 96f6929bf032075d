"""Options several subcommands share, defined once: where the data comes from, and the engines' options
(whose flags are read off `bespoke_metric.backends.options`)."""

from __future__ import annotations

import argparse
import dataclasses
import re
import typing
from typing import Any

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_metric.results.stats import DEFAULT_RESAMPLES


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """`--source` (one default for every subcommand) and `--revision`."""
    parser.add_argument("--source", default=DEFAULT_SOURCE,
                        help=f"Hub dataset repo id, local release folder (either layout), or 'sample' (default: {DEFAULT_SOURCE})")
    parser.add_argument("--revision", help="Hub branch, tag or commit of the data (Hub sources only)")


def add_resample_arguments(parser: argparse.ArgumentParser) -> None:
    """`--resamples` (the one bootstrap count of every interval, `stats.DEFAULT_RESAMPLES`) and `--seed`."""
    parser.add_argument("--resamples", type=positive_int, default=DEFAULT_RESAMPLES,
                        help=f"bootstrap resamples for the intervals (default {DEFAULT_RESAMPLES})")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")


def positive_int(text: str) -> int:
    """The argparse type of a count that must be at least 1 (`--limit 0` would score nothing)."""
    if not re.fullmatch(r"\s*[+-]?\d+\s*", text):
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_option_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, options: type,
                         only: tuple[str, ...] | None = None, prefix: str = "") -> None:
    """One flag per option of an options class of `bespoke_metric.backends.options` that has one (or of those in
    `only`): its spelling, help and choices come from the class, so a flag is defined in one place. A
    `--no-...` flag sets its boolean option to False, another boolean flag sets it to True; unset flags
    stay None (the engine's default). `prefix` goes before each option's name in the parsed arguments,
    to keep apart two classes' options of one name (the judge's `base_url` and the search engine's)."""
    hints = typing.get_type_hints(options)
    for item in dataclasses.fields(options):
        flag = item.metadata.get("flag")
        if not flag or (only is not None and item.name not in only):
            continue
        kinds = [kind for kind in typing.get_args(hints[item.name]) if kind is not type(None)] or [hints[item.name]]
        if kinds[0] is bool:
            parser.add_argument(flag, dest=prefix + item.name, action="store_const", const=not flag.startswith("--no-"),
                                default=None, help=item.metadata["help"])
        else:
            parser.add_argument(flag, dest=prefix + item.name, type=kinds[0], choices=item.metadata.get("choices"),
                                default=None, help=item.metadata["help"])


def option_values(args: argparse.Namespace, *classes: type, prefix: str = "") -> dict[str, Any]:
    """The options of `classes` that the command line set (flags left unset are left out), by option name
    (`prefix` as given to `add_option_arguments`)."""
    names = {item.name for cls in classes for item in dataclasses.fields(cls) if item.metadata.get("flag")}
    return {name: getattr(args, prefix + name) for name in sorted(names) if getattr(args, prefix + name, None) is not None}
