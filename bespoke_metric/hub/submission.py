"""Whether a results file may be submitted: to the Hub's Eval Results (`bespoke submit`) or to a
leaderboard Space (its submit tab). One check, with one reason a file is refused, for both.

A file is refused when it is not JSON, is not a results file, scored no item (every judgment failed,
or it holds none), was judged by a proxy judge (`embed:`) unless proxies are allowed, lost judgments (its
`incomplete` field) unless incomplete results are allowed, or was scored on
synthetic data (the bundled sample, a `bespoke synth` release) unless that is allowed: a leaderboard Space
may rank synthetic results under its SYNTHETIC heading, but the Hub's Eval Results never take them.
"""

from __future__ import annotations

import json
import os
from typing import Any

from bespoke_dataset.errors import UserError
from bespoke_metric.analysis.leaderboard import Entry, LeaderboardError, incomplete_refusal, parse_results, proxy_refusal
from bespoke_metric.results.caveats import is_synthetic


class SubmissionError(UserError):
    """A results file that cannot be submitted; the message says which file and why."""


def check_submission(content: Any, origin: str, *, allow_proxy: bool = False, allow_incomplete: bool = False,
                     allow_synthetic: bool = False) -> Entry:
    """The parsed results of a decoded results file, or `SubmissionError` naming `origin` and the reason
    (`parse_results` refuses what is not a results file and a file in which no item was scored)."""
    if not isinstance(content, dict):
        raise SubmissionError(f"{origin}: not a BESPOKE results file (a JSON {type(content).__name__}, not an object)")
    try:
        results = parse_results(content, origin)
    except LeaderboardError as error:
        raise SubmissionError(str(error)) from None
    refusal = (None if allow_proxy else proxy_refusal([results], stand_ins=True)) or (
        None if allow_incomplete else incomplete_refusal([results]))
    if refusal is not None:
        raise SubmissionError(refusal)
    if is_synthetic(results.results.data) and not allow_synthetic:
        raise SubmissionError(f"{origin}: scored on synthetic data ({results.results.data.get('source')}), invented users "
                              "and judgments: its figures are not BESPOKE results and cannot be submitted as such")
    return results


def read_submission(path: str | os.PathLike[str], *, allow_proxy: bool = False, allow_incomplete: bool = False,
                    allow_synthetic: bool = False, name: str | None = None) -> Entry:
    """Read and check a results file; `name` is how to call it in messages (default: its path)."""
    origin = name or os.fspath(path)
    try:
        with open(path, encoding="utf-8") as handle:
            content = json.load(handle)
    except json.JSONDecodeError as error:
        raise SubmissionError(f"{origin}: not valid JSON (line {error.lineno} column {error.colno}: {error.msg})") from None
    except UnicodeDecodeError:
        raise SubmissionError(f"{origin}: not a text file, so not a results file") from None
    except FileNotFoundError:
        raise SubmissionError(f"{origin}: no such file") from None
    return check_submission(content, origin, allow_proxy=allow_proxy, allow_incomplete=allow_incomplete,
                            allow_synthetic=allow_synthetic)
