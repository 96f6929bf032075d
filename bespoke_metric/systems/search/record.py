"""What a system searched for one query, as its prediction records it (the `search` block).

    {"engine": "searxng:http://...", "policy": "agent", "calls": 2, "failed": 0,
     "queries": [{"round": 1, "query": "..."}],
     "results": [{"round": 1, "rank": 1, "url": "...", "title": "...", "noise": false}],
     "cited": ["https://..."]}

A `rewrite` that fell back to searching the question as asked adds `"fallback": REASON`.

A `SearchTrace` is filled as the policy searches; the results the model is shown are numbered from 1
across the whole conversation, so the answer's `[n]` markers name them. `cited` is every result the
answer points at, by marker or by URL, in the order it first does. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bespoke_metric.backends.base import CallError

from .noise import Marked
from .providers import SearchResult

NATIVE_POLICY = "native"
"""The `policy` of a model that searched by itself."""

_MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_URL = re.compile(r"https?://[^\s<>()\[\]{}\"']+")


@dataclass
class SearchTrace:
    engine: str
    policy: str
    calls: int = 0
    failed: int = 0
    queries: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    shown: list[SearchResult] = field(default_factory=list)
    """The results shown to the model, in the order numbered: `[n]` is `shown[n - 1]`."""
    fallback: str | None = None
    """Why a `rewrite` searched the question as asked instead of queries of its own."""

    def add(self, round_: int, query: str, found: list[Marked] | CallError) -> list[SearchResult] | None:
        """Record one search of round `round_`; its results, or None when it failed."""
        self.calls += 1
        self.queries.append({"round": round_, "query": query})
        if isinstance(found, CallError):
            self.failed += 1
            return None
        for rank, (result, noise) in enumerate(found, start=1):
            self.results.append({"round": round_, "rank": rank, "url": result.get("url", ""),
                                 "title": result.get("title", ""), "noise": noise})
        return [result for result, _ in found]

    def show(self, results: Sequence[SearchResult]) -> int:
        """Number `results` for the model, after those shown before; the number of the first."""
        first = len(self.shown) + 1
        self.shown.extend(results)
        return first

    def block(self, raw: str, cited: Sequence[str] | None = None) -> dict[str, Any]:
        """The `search` block of the prediction whose raw answer is `raw`; `cited` as the engine
        reported it (native search), else read from the answer."""
        block = {
            "engine": self.engine, "policy": self.policy, "calls": self.calls, "failed": self.failed,
            "queries": list(self.queries), "results": list(self.results),
            "cited": list(cited) if cited is not None else cited_urls(raw, self.shown),
        }
        if self.fallback is not None:
            block["fallback"] = self.fallback
        return block


def cited_urls(raw: str, shown: Sequence[SearchResult]) -> list[str]:
    """The URLs `raw` cites: those of the shown results its `[n]` markers name, and those it writes out,
    in order of first mention, each once."""
    found: list[tuple[int, str]] = []
    for match in _MARKER.finditer(raw):
        for number in match.group(1).split(","):
            index = int(number) - 1
            if 0 <= index < len(shown) and shown[index].get("url"):
                found.append((match.start(), shown[index]["url"]))
    found += [(match.start(), match.group(0).rstrip(".,;:!?")) for match in _URL.finditer(raw)]
    return list(dict.fromkeys(url for _, url in sorted(found, key=lambda item: item[0])))


def native_block(search: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `search` block of an answer from a model's own search (`Completion.search`, None when it did
    not search): every query and result in round 1, as the provider reported them. A provider that says
    only how many searches it made (Perplexity's `query_count`) has that many calls and no query."""
    search = search or {}
    trace = SearchTrace("native", NATIVE_POLICY)
    trace.queries = [{"round": 1, "query": str(query)} for query in search.get("queries") or ()]
    trace.calls = int(search.get("query_count") or len(trace.queries))
    for rank, result in enumerate(search.get("results") or (), start=1):
        trace.results.append({"round": 1, "rank": rank, "url": str(result.get("url", "")),
                              "title": str(result.get("title") or ""), "noise": False})
    return trace.block("", cited=[str(url) for url in search.get("cited") or ()])
