"""A run that lost judgments (or its system's answers) never looks complete: the `incomplete` field of its
results file, and the words every reader of one uses for it.

A judgment that fails after its retries is left out of the figures and counted (`summary.failures`), never
scored as 0; a run with any such gap writes one top-level field a reader cannot miss:

    "incomplete": {"judgments_failed": 17, "items_affected": 12, "items": 60,
                   "failed": {"need_alignment": 3, ..., "recall": 10}, "causes": {"HTTP 500 ...": 15, ...},
                   "answers_missing": 0, "rerun": "bespoke score ... --cache judge.sqlite", "cache": "judge.sqlite"}

`rerun` is the command that wrote the file (its keys hidden), which answers the judgments it kept from its
`cache` and pays only for the gaps; `cache` null: the run kept no answers, so a rerun pays for every call
again. A file without the field is complete, as every file before it was: releases read the files of the
ones before. The leaderboard, `bespoke submit` and the leaderboard Space refuse an incomplete file unless
told (`ALLOW_INCOMPLETE`), and mark its row (`INCOMPLETE_MARK`) when told.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Protocol, Sequence

INCOMPLETE = "incomplete"
"""The results file's field, and the first word of the line a command that lost judgments ends with."""
ALLOW_INCOMPLETE = "--allow-incomplete"
"""The flag that lets a leaderboard, a submission or a Space take an incomplete results file."""
INCOMPLETE_MARK = "INCOMPLETE"
"""How a leaderboard row of an incomplete results file is marked, when one was allowed."""
SHOWN_CAUSES = 3
"""The causes of failure a line names (the commonest); the others are counted."""
JUDGMENTS_FAILED = "judgments_failed"
"""How many judgments a run lost: a count in `incomplete`, and in what the `evaluate` metric returns."""

RECALL_PARTS = re.compile(r"^(?:claim \d+|all claims): ")
"""How a recall error's reason begins: the part of the recall that failed (`recall_error_reason`)."""


def recall_error_reason(claim: int | None, reason: str) -> str:
    """The reason of a recall error: `claim 2: ...` for one claim's call (1-based), `all claims: ...` for the
    call judging them all."""
    return f"{'all claims' if claim is None else f'claim {claim}'}: {reason}"


def error_cause(reason: str) -> str:
    """An error's reason without the part of the recall it is of: the same cause, said once, whichever
    claims it struck."""
    return RECALL_PARTS.sub("", reason, count=1)


class Judged(Protocol):
    """What this module reads of a judged item (`records.ItemResult`, which imports this module)."""

    errors: list[dict[str, str]]


def failure_causes(items: Iterable[Judged]) -> Counter[str]:
    """Each cause of the failed judgments of `items` with its count (a recall claim's failure under its cause).
    A judgment is what a call asks: the four dimensions of one response are one judgment (one call, whose
    failure each of them records), each recall claim one, so the count is the count of calls that failed."""
    causes: Counter[str] = Counter()
    for item in items:
        dimensions = set()
        for error in item.errors:
            cause = first_line(error_cause(str(error.get("reason", ""))))
            if error.get("metric") == "recall":
                causes[cause] += 1
            elif cause not in dimensions:
                dimensions.add(cause)
                causes[cause] += 1
    return causes


def said_causes(causes: Counter[str]) -> str:
    """`15 with: HTTP 500 ...; 2 with: ...`: the commonest causes with their counts, the rest counted."""
    ranked = causes.most_common()
    said = "; ".join(f"{count} with: {cause}" for cause, count in ranked[:SHOWN_CAUSES])
    rest = ranked[SHOWN_CAUSES:]
    if rest:
        said += f"; {sum(count for _, count in rest)} with {len(rest)} other cause(s), in the results file"
    return said


def first_line(text: str, limit: int = 200) -> str:
    """A reason's first line, at most `limit` characters."""
    line = str(text).strip().splitlines()[0] if str(text).strip() else "no reason given"
    return line if len(line) <= limit else line[: limit - 3] + "..."


@dataclass(frozen=True)
class Rerun:
    """What fills a run's gaps: `command`, the command line that wrote the results (its keys hidden), and
    `cache`, the answer cache it reads what it kept from (None: it kept none, so a rerun pays again for all)."""

    command: str
    cache: str | None
    framework: str | None = None
    """The framework whose run was imported (`bespoke import`), which judged it: `command` judges its answers again
    here, and what fills the gaps for nothing is the run's own judge cache."""

    @property
    def said(self) -> str:
        """What the rerun does, and the command, as the last line of the command that lost judgments says it."""
        if self.framework:
            return (f"it was judged in {self.framework}: judge its answers again with the run's judge cache (its "
                    f"judge_cache), paying only for the gaps: {self.command} --cache FILE; or rerun it there and import "
                    "it again")
        if self.cache:
            return f"the same command fills the gaps from its cache {self.cache}, paying only for them: {self.command}"
        return ("no --cache was given, so the same command pays again for every judgment (give --cache FILE next time "
                f"to keep them): {self.command}")


@dataclass(frozen=True)
class Incomplete:
    """What a run lost: judgments that failed after their retries, and queries its system could not answer."""

    items: int
    """Items judged (or meant to be)."""
    items_affected: int
    """Of those, items with at least one failed judgment."""
    judgments_failed: int
    """Judge calls that failed for good (`failure_causes`)."""
    failed: dict[str, int] = field(default_factory=dict)
    """Per metric, the items whose judgment on it failed (`summary.failures`), those with any."""
    causes: dict[str, int] = field(default_factory=dict)
    """The commonest causes of the failed judgments (at most `SHOWN_CAUSES`) with their counts."""
    answers_missing: int = 0
    """Queries the system under test could not answer (`system.generation_failures`): not judged at all."""
    rerun: Rerun | None = None
    """The command that fills the gaps; None where a library call, not a command, wrote the results."""

    def to_json(self) -> dict[str, Any]:
        return {JUDGMENTS_FAILED: self.judgments_failed, "items_affected": self.items_affected, "items": self.items,
                "failed": dict(self.failed), "causes": dict(self.causes), "answers_missing": self.answers_missing,
                "rerun": self.rerun.command if self.rerun else None, "cache": self.rerun.cache if self.rerun else None}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> "Incomplete":
        rerun = Rerun(str(raw["rerun"]), raw.get("cache")) if raw.get("rerun") else None
        return cls(items=int(raw.get("items") or 0), items_affected=int(raw.get("items_affected") or 0),
                   judgments_failed=int(raw.get(JUDGMENTS_FAILED) or 0), failed=dict(raw.get("failed") or {}),
                   causes=dict(raw.get("causes") or {}), answers_missing=int(raw.get("answers_missing") or 0), rerun=rerun)

    @property
    def lost(self) -> str:
        """`17 judgment(s) on 12 of 60 items` (and `3 answer(s)`): what the run lost, as refusals and marks say it."""
        parts = [f"{self.judgments_failed} judgment(s) on {self.items_affected} of {self.items} items"] * bool(self.judgments_failed)
        return " and ".join(parts + [f"{self.answers_missing} answer(s)"] * bool(self.answers_missing))


def lost_judgments(items: Sequence[Judged], unanswered: Sequence[Mapping[str, Any]] = ()) -> Incomplete | None:
    """The `incomplete` mark of `items` (and of the queries a system left `unanswered`, its
    `generation_failures`), or None when nothing was lost."""
    causes = failure_causes(items)
    if not causes and not unanswered:
        return None
    failed: Counter[str] = Counter(metric for item in items for metric in {str(error.get("metric")) for error in item.errors})
    return Incomplete(items=len(items), items_affected=sum(1 for item in items if item.errors),
                      judgments_failed=causes.total(), failed=dict(sorted(failed.items())),
                      causes=dict(causes.most_common(SHOWN_CAUSES)), answers_missing=len(unanswered))


def lost_line(items: Sequence[Judged], unanswered: Sequence[Mapping[str, Any]] = ()) -> str:
    """What was lost, in words: `17 judgment(s) failed on 12 of 60 items (15 with: ...), left out of the
    figures` and `3 quer(ies) have no answer (first: ...)`."""
    parts = []
    causes = failure_causes(items)
    if causes:
        affected = sum(1 for item in items if item.errors)
        parts.append(f"{causes.total()} judgment(s) failed on {affected} of {len(items)} items ({said_causes(causes)}), "
                     "left out of the figures")
    if unanswered:
        parts.append(f"{len(unanswered)} quer(ies) have no answer (first: {first_line(str(unanswered[0].get('reason')))})")
    return "; ".join(parts)
