"""How a command ends that lost judgments (or its system's answers): its results files marked `incomplete`
(`bespoke_metric.results.incomplete`), exit status `EXIT_INCOMPLETE`, and as its last line on stderr how much
was lost and the command that fills the gaps from its cache, its keys hidden:

    incomplete: 17 judgment(s) failed on 12 of 60 items (15 with: HTTP 500 ...), left out of the figures;
    the same command fills the gaps from its cache judge.sqlite, paying only for them: bespoke score ...
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from typing import Sequence

from bespoke_metric.backends.retries import scrub_secret
from bespoke_metric.results import Results
from bespoke_metric.results.caveats import nothing_scored
from bespoke_metric.results.incomplete import INCOMPLETE, Rerun, lost_line

EXIT_INCOMPLETE = 3
"""Exit code of a run that did its work but lost some of it (judgments, answers): its files are written and
marked, and the same command fills the gaps. Distinct from a failure (1) and a user's mistake (2)."""

HIDDEN = "***"
"""What a secret is shown as in a command line."""
SECRET_FLAG = re.compile(r"^--(?:[a-z0-9]+-)*(?:key|token|secret|password)$")
"""A flag whose value is a secret: `--api-key`, `--model-api-key`, `--token`."""
SECRET_SHAPES = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{12,}|\bhf_[A-Za-z0-9]{12,}|\bAIza[0-9A-Za-z_-]{20,}")
"""Words that look like a provider's key wherever they stand (OpenAI's and Anthropic's `sk-`, the Hub's `hf_`,
Google's `AIza`)."""
URL_SECRETS = re.compile(r"(?i)(//[^/@:\s]+:)[^@/\s]+(@)|([?&](?:[a-z_-]*key|[a-z_-]*token|secret|password|sig)=)[^&\s]+")
"""A password in a URL (`https://user:PASSWORD@host`) and a key in its query (`?api_key=...`)."""


def hide_secrets(words: Sequence[str]) -> list[str]:
    """Command-line `words` with every secret shown as `HIDDEN`: the value of a secret flag (`--api-key KEY`,
    `--api-key=KEY`), that value wherever else it appears, and whatever looks like a key (`SECRET_SHAPES`,
    `URL_SECRETS`)."""
    shown = list(words)
    secrets = []
    for index, word in enumerate(shown):
        flag, equals, value = word.partition("=")
        if not SECRET_FLAG.match(flag):
            continue
        if equals:
            secrets.append(value)
            shown[index] = f"{flag}={HIDDEN}"
        elif index + 1 < len(shown) and not shown[index + 1].startswith("--"):
            secrets.append(shown[index + 1])
            shown[index + 1] = HIDDEN
    for index, word in enumerate(shown):
        for secret in secrets:
            word = scrub_secret(word, secret)
        word = SECRET_SHAPES.sub(HIDDEN, word)
        shown[index] = URL_SECRETS.sub(lambda match: f"{match[1] or match[3]}{HIDDEN}{match[2] or ''}", word)
    return shown


def command_line(args: argparse.Namespace) -> str:
    """The command as it was given (`bespoke_cli.cli.main` keeps its words), its secrets hidden."""
    words = getattr(args, "_argv", None)
    return shlex.join(["bespoke", *hide_secrets(sys.argv[1:] if words is None else words)])


def rerun_of(args: argparse.Namespace, cache: str | None) -> Rerun:
    """The rerun that fills the gaps of this command's run: the same command, reading `cache` (None: it keeps none)."""
    return Rerun(command_line(args), cache)


def finish(all_results: Sequence[Results], rerun: Rerun, status: int = 0) -> int:
    """The command's exit status once its results files are written: where any lost judgments or answers, its
    last line on stderr says how many and how to fill the gaps, and the status is `EXIT_INCOMPLETE` unless
    `status` is a failure already (`--strict`'s); else `status`. A file that scored nothing at all has said so
    in its own `error:` line (`nothing_scored`): it is not counted here."""
    scored = [results for results in all_results if nothing_scored(results) is None]
    lost = [results for results in scored if results.incomplete is not None]
    if not lost:
        return status
    items = [item for results in scored for item in results.items]
    unanswered = [failure for results in lost for failure in (results.system or {}).get("generation_failures") or []]
    files = f" in {len(lost)} of {len(all_results)} results files" if len(all_results) > 1 else ""
    return ended(lost_line(items, unanswered) + files, rerun, status)


def ended(lost: str, rerun: Rerun, status: int = 0) -> int:
    """Say what was `lost` and how to fill the gaps, as the command's last line; its exit status."""
    print(f"{INCOMPLETE}: {lost}; {rerun.said}", file=sys.stderr)
    return status or EXIT_INCOMPLETE
