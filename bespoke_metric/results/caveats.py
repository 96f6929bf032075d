"""What must be said beside a results file's figures: a proxy judge, synthetic data, part of the benchmark,
nothing scored.

Every command that prints figures (`score`, `run`, `meta-eval`, `leaderboard`, `compare`) takes its
notes from here, so a Pearson of 1.000 from a proxy judge on invented data never stands unexplained
next to the paper's 0.847.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from bespoke_dataset.source import SAMPLE, SYNTHETIC_MARKER

from .incomplete import failure_causes, said_causes
from .records import Results


def is_synthetic(data: Mapping[str, Any]) -> bool:
    """Whether a results file's `data` block names a synthetic release: recorded as `synthetic`, or (files
    written before that was recorded) the bundled sample or a local folder with the synthetic marker."""
    if "synthetic" in data:
        return bool(data["synthetic"])
    source = str(data.get("source") or "")
    return source == SAMPLE or (bool(source) and (Path(source) / SYNTHETIC_MARKER).is_file())


PROXY_MARK = "PROXY judge"
SYNTHETIC_MARK = "SYNTHETIC data"
"""The words a title over figures carries (a leaderboard's group, a sweep's table and report) when their
judge is a proxy, or their data synthetic."""
STAND_IN_MARK = "STAND-IN"
"""Said where a stand-in answered (a rule, the `bespoke stand-in` server), not a model: `STAND-IN judge`
beside the figures of a judge it answered for, `STAND-IN` as the model that served a system."""


def judge_marks(judge: Mapping[str, Any]) -> list[str]:
    """`PROXY_MARK` for a proxy judge's block, and `STAND-IN judge` where a stand-in made its answers."""
    return [PROXY_MARK] * bool(judge.get("proxy")) + [f"{STAND_IN_MARK} judge"] * bool(judge.get("stand_in"))


def marks(judge: Mapping[str, Any], data: Mapping[str, Any]) -> list[str]:
    """`judge_marks` and `SYNTHETIC_MARK` where they apply to figures of `judge` on `data`."""
    return judge_marks(judge) + [SYNTHETIC_MARK] * is_synthetic(data)


def caveats(results: Results) -> list[str]:
    """One `note: ...` line per reason the figures of `results` are not benchmark numbers."""
    notes = []
    if results.proxy:
        notes.append(f"note: {results.judge.get('spec')} is a proxy judge for quick checks: these figures are not "
                     "comparable with the paper's, and leaderboards rank them only when told to (--allow-proxy)")
    judged = results.judge.get("stand_in")
    if judged:
        notes.append(f"note: {results.judge.get('spec')} was answered by a stand-in ({judged} answers from a rule or a "
                     "test server, not the model): these figures test the plumbing, they judge nothing")
    written = (results.system or {}).get("stand_in")
    if written:
        notes.append(f"note: {written} of the {len(results.items)} answers scored were written by a stand-in (a rule or a "
                     "test server), not the system's model: these figures score no model")
    for part, count in sorted(((results.system or {}).get("degenerate") or {}).items()):
        notes.append(f"note: {count} of the {len(results.items)} answers were written without their {part} (the {part} "
                     f"was degenerate, caught by a guard): for them the system ran without the {part} it is named after")
    data = results.data
    if is_synthetic(data):
        notes.append(f"note: the data ({data.get('source')}) is a synthetic release, invented users and judgments in "
                     "the real format: these figures say nothing about the real benchmark")
    total, queries = results.summary.get("benchmark_queries"), results.summary.get("queries")
    if total is not None and queries is not None and queries < total:
        notes.append(f"note: the predictions cover {queries} of the benchmark's {total} queries: these figures are "
                     f"over those {queries} only, and are ranked only against results on the same queries")
    return notes


def nothing_scored(results: Results) -> str | None:
    """None when some item was scored on some metric; else one line saying why nothing was: every cause
    of the failed judgments, with its count, most frequent first (a recall claim's failure counted under its
    cause, whichever claim it struck)."""
    if any(results.summary.get("scored", {}).values()):
        return None
    causes = failure_causes(results.items)
    if not causes:
        return "no item was scored (no judgment was made)"
    return f"no item was scored: all {causes.total()} judgment(s) failed ({said_causes(causes)})"


def some_failed(results: Results) -> str | None:
    """None when no judgment failed; else one line counting the items with a failed judgment, which their
    figures leave out, and the commonest cause."""
    causes = failure_causes(results.items)
    if not causes:
        return None
    cause, count = causes.most_common(1)[0]
    items = sum(1 for item in results.items if item.errors)
    return (f"{items} of {len(results.items)} item(s) have failed judgments, left out of the figures they failed "
            f"on: {causes.total()} judgment(s) failed ({count} with: {cause})")
