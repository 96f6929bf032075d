"""What must be said beside a results file's figures: a proxy judge, synthetic data, part of the benchmark,
nothing scored.

Every command that prints figures (`score`, `run`, `meta-eval`, `leaderboard`, `compare`) takes its
notes from here, so a Pearson of 1.000 from a proxy judge on invented data never stands unexplained
next to the paper's 0.847.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Mapping

from bespoke_dataset.source import SAMPLE, SYNTHETIC_MARKER

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


def marks(judge: Mapping[str, Any], data: Mapping[str, Any]) -> list[str]:
    """`PROXY_MARK` and `SYNTHETIC_MARK` where they apply to figures of `judge` on `data`."""
    return [PROXY_MARK] * bool(judge.get("proxy")) + [SYNTHETIC_MARK] * is_synthetic(data)


def caveats(results: Results) -> list[str]:
    """One `note: ...` line per reason the figures of `results` are not benchmark numbers."""
    notes = []
    if results.proxy:
        notes.append(f"note: {results.judge.get('spec')} is a proxy judge for quick checks: these figures are not "
                     "comparable with the paper's, and leaderboards rank them only when told to (--allow-proxy)")
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
    """None when some item was scored on some metric; else one line saying why nothing was (the commonest
    failure reason)."""
    if any(results.summary.get("scored", {}).values()):
        return None
    reasons = _failure_reasons(results)
    if not reasons:
        return "no item was scored (no judgment was made)"
    reason, count = reasons.most_common(1)[0]
    return f"no item was scored: all {sum(reasons.values())} judgment(s) failed ({count} with: {reason})"


def some_failed(results: Results) -> str | None:
    """None when no judgment failed; else one line counting the items with a failed judgment, which their
    figures leave out, and the commonest reason."""
    reasons = _failure_reasons(results)
    if not reasons:
        return None
    reason, count = reasons.most_common(1)[0]
    items = sum(1 for item in results.items if item.errors)
    return (f"{items} of {len(results.items)} item(s) have failed judgments, left out of the figures they failed "
            f"on: {sum(reasons.values())} judgment(s) failed ({count} with: {reason})")


def _failure_reasons(results: Results) -> Counter[str]:
    return Counter(_first_line(error.get("reason", "")) for item in results.items for error in item.errors)


def _first_line(text: str, limit: int = 200) -> str:
    line = str(text).strip().splitlines()[0] if str(text).strip() else "no reason given"
    return line if len(line) <= limit else line[: limit - 3] + "..."
