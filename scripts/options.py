"""Options several subcommands share, defined once: where the data comes from, and the engines' options
(whose flags are read off `bespoke_metric.backends.options`)."""

from __future__ import annotations

import argparse
import dataclasses
import re
import typing
from typing import Any, Mapping

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_metric.backends.options import dest_of, flag_type
from bespoke_metric.results.stats import DEFAULT_RESAMPLES


def add_source_arguments(parser: argparse.ArgumentParser, default: str | None = DEFAULT_SOURCE,
                         default_help: str = f"default: {DEFAULT_SOURCE}") -> None:
    """`--source` (one default for every subcommand, or None where the default is read off the input) and
    `--revision`."""
    parser.add_argument("--source", default=default,
                        help=f"Hub dataset repo id, local release folder (either layout), or 'sample' ({default_help})")
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
                         only: tuple[str, ...] | None = None, prefix: str = "", *, several: bool = False,
                         exclude: tuple[str, ...] = (), aliases: Mapping[str, str] | None = None) -> None:
    """One flag per field of an options or settings class that has one (of those in `only`, but those in
    `exclude`): its spelling, help, choices and default come from the class (`backends.options.option`,
    `setting`), so a flag is defined in one place. A `--no-...` flag sets its boolean to False, another
    boolean flag sets it to True. Unset flags stay None: the class's default, which the help shows.
    `prefix` goes before each name in the parsed arguments, to keep apart two classes' options of one name
    (the judge's `base_url` and the search engine's); `several`: each value flag takes one or more values
    (a sweep's axes); `aliases`: another spelling of a field's flag, by field, put first (`--contexts`)."""
    hints = typing.get_type_hints(options)
    for item in dataclasses.fields(options):
        flag = item.metadata.get("flag")
        if not flag or (only is not None and item.name not in only) or item.name in exclude:
            continue
        dest, kind, text = prefix + dest_of(item), flag_type(hints[item.name]), item.metadata["help"]
        flags = [*([aliases[item.name]] if aliases and item.name in aliases else []), flag]
        if item.default is not None and item.default is not False and item.default is not dataclasses.MISSING:
            text = f"{text} (default: {item.default})"
        if kind is bool:
            parser.add_argument(*flags, dest=dest, action="store_const", const=not flag.startswith("--no-"), default=None,
                                help=text)
            continue
        choices, metavar = item.metadata.get("choices"), item.metadata.get("metavar")
        if several and choices and metavar is None:  # the usage line would repeat every choice per value
            metavar, text = dest.upper(), f"{text}; one or more of {', '.join(choices)}"
        parser.add_argument(*flags, dest=dest, type=positive_int if item.metadata.get("positive") else kind, choices=choices,
                            metavar=metavar, nargs="+" if several else None, default=None, help=text)


def option_values(args: argparse.Namespace | Mapping[str, Any], *classes: type, prefix: str = "") -> dict[str, Any]:
    """The options of `classes` that the command line set (flags left unset are left out), by option name
    (`prefix` as given to `add_option_arguments`); `args` the parsed arguments or their values by name."""
    values = vars(args) if isinstance(args, argparse.Namespace) else args
    found = {item.name: values.get(prefix + dest_of(item)) for cls in classes for item in dataclasses.fields(cls)
             if item.metadata.get("flag")}
    return {name: value for name, value in sorted(found.items()) if value is not None}
