"""What BESPOKE's inspect components share: the names inspect registers them under (`registered`), and how a
wrong argument is said (`ArgumentError`): one message naming it as inspect takes it (`-T NAME` for a task's
argument, `-S NAME` for a scorer's), status 1 under inspect's command line, a `UserError` from Python."""

from __future__ import annotations

import contextlib
import inspect
import site
import sys
from collections.abc import Collection, Iterator, Mapping
from typing import Any

import click

from bespoke_dataset.errors import UserError, did_you_mean

from .arguments import said_as

PACKAGE = "bespoke_metric"
"""The top-level package inspect names our components after (`bespoke_metric/bespoke`)."""
INSPECT_OPTIONS = frozenset({"model", "model_role", "epochs", "epochs_reducer", "limit"})
"""inspect's own options that messages name (`--model-role grader=...`): said as inspect's command line takes them."""


def registered(name: str) -> str:
    """What `@task`, `@solver`, `@scorer` and `@metric` are given for a component to be named `PACKAGE/name`:
    inspect prefixes the top-level package itself where the defining module lies in site-packages (a wheel), but
    not from an editable install (a clone, CI's `pip install -e`), whose distribution (`bespoke-eval`) is named
    unlike the package; there the whole name is given. (inspect_ai's rule, in its `registry_name`, which it does
    not export: the wheel and editable tests of `inspect eval` pin it.)"""
    return name if _in_site_packages(str(__spec__.origin)) else f"{PACKAGE}/{name}"


def _in_site_packages(path: str) -> bool:
    path = path.lower()
    roots = [*site.getsitepackages(), site.getusersitepackages()]
    return (any(path.startswith(root.lower()) for root in roots)
            or any("site-packages" in entry.lower() and path.startswith(entry.lower()) for entry in sys.path))


class ArgumentError(click.ClickException, UserError):
    """An argument of a BESPOKE task or scorer that cannot be used, said as inspect takes it: `-T NAME=VALUE` (or
    `-S`) for the component's own arguments, the bare key for a judge option (in `judge_options`), where the
    library's message names a flag. inspect's command line prints it as one `Error:` line and exits 1 (click
    handles it: inspect exports no error type of its own for this); from Python it is a `UserError`."""

    def __init__(self, component: str, message: str, parameters: Collection[str] = (), flag: str = "-T") -> None:
        def name(key: str, value: str | None) -> str:
            if key in INSPECT_OPTIONS:
                given = f"--{key.replace('_', '-')}"
                return f"{given} {value}" if value is not None else given
            given = f"{flag} {key}" if key in parameters else key
            return f"{given}={value}" if value is not None else given

        click.ClickException.__init__(self, f"{component}: {said_as(message, name)}")


@contextlib.contextmanager
def said_for(component: str, parameters: Collection[str], flag: str = "-T", what: str = "") -> Iterator[None]:
    """The library's `UserError`s raised inside, as the `ArgumentError` of `component` (its `parameters` given
    with `flag`), their message after `what`."""
    try:
        yield
    except ArgumentError:
        raise
    except UserError as error:
        raise ArgumentError(component, what + str(error), parameters, flag) from None


def refuse_unknown(component: str, unknown: Mapping[str, Any], parameters: Collection[str], flag: str = "-T") -> None:
    """An `ArgumentError` for the first argument `component` does not take (inspect would only warn and run on
    the defaults), with the closest one it takes."""
    for given in unknown:
        raise ArgumentError(component, f"{flag} {given}: not an argument of {component}{did_you_mean(given, parameters)}; "
                            f"it takes {', '.join(sorted(parameters))}", parameters, flag)


def parameters_of(function: Any) -> tuple[str, ...]:
    """The named parameters of a task or scorer function (its `**unknown` left out)."""
    return tuple(name for name, parameter in inspect.signature(function).parameters.items()
                 if parameter.kind is not inspect.Parameter.VAR_KEYWORD)
