"""What goes wrong with a release: an error that names where, or a warning that says what was dropped."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable
from types import ModuleType


class UserError(ValueError):
    """A user's mistake (bad data, file, folder, flag or model name): its message is all they need, so the
    command line prints it as one `error:` line, without a traceback. Every such error derives from it."""


def did_you_mean(given: str, known: Iterable[str], cutoff: float = 0.6) -> str:
    """` (did you mean NAME?)`, NAME the one of `known` closest to a mistyped `given`; "" when none is close."""
    close = difflib.get_close_matches(given, sorted(set(known)), n=1, cutoff=cutoff)
    return f" (did you mean {close[0]}?)" if close else ""


class MissingExtraError(UserError, ImportError):
    """An optional part that is not installed (vLLM, Ray): the message names the extra that installs it.
    Still an ImportError, for code that tells an absent package that way."""


def require_extra(module: str, extra: str, what: str) -> ModuleType:
    """`module` imported; a `MissingExtraError` saying that `what` needs it and which extra of bespoke-eval
    installs it when it is not installed (one `error:` line, not a traceback ending in ModuleNotFoundError)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        top = module.partition(".")[0]
        if error.name is None or error.name.partition(".")[0] != top:
            raise  # the package is there and something it needs is not: its own error says what
        raise MissingExtraError(f"{what} needs {top}, which is not installed: pip install 'bespoke-eval[{extra}]'") from error


class BespokeDataError(UserError):
    """The release cannot be read as BESPOKE data.

    `where` names the table or file and the row (e.g. ``evaluation_shot/evaluation_shot.parquet row 12``),
    `field` the column or JSON path at fault; both appear in the message.
    """

    def __init__(self, where: str, message: str, field: str | None = None) -> None:
        self.where = where
        self.field = field
        location = where if field is None else f"{where}, field {field!r}"
        super().__init__(f"{location}: {message}")


class BespokeDataWarning(UserWarning):
    """Part of the release was dropped; the rest stays usable. The message says what and why."""
