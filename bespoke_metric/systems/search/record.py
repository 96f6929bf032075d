"""What a system searched for one query, as its prediction records it (the `search` block).

    {"engine": "searxng:http://...", "policy": "agent", "calls": 2, "failed": 0, "failures": [],
     "queries": [{"round": 1, "query": "..."}],
     "results": [{"round": 1, "rank": 1, "url": "...", "title": "...", "noise": false}],
     "opened": [], "cited": ["https://..."]}

A `rewrite` that fell back to searching the question as asked adds `"fallback": REASON`.

A `SearchTrace` is filled as the policy searches; the results the model is shown are numbered from 1
across the whole conversation, so the answer's `[n]` markers name them. `calls` counts searches (the same
string searched twice is two), `failed` those that failed, with their reasons in `failures`; `opened`
lists the pages a model searching by itself opened. `cited` is every result the answer (never its
reasoning) points at, by marker or by URL, in the order it first does; a URL is matched to a result as
one page (`page_key`: without tracking parameters), and the result's URL is the one recorded. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bespoke_metric.backends.base import CallError
from bespoke_metric.backends.web_search import distinct_pages, page_key, searches_made

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
    failures: list[str] = field(default_factory=list)
    """Why each failed search failed."""
    queries: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    opened: list[str] = field(default_factory=list)
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
            self.failures.append(found.reason)
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
            "failures": list(self.failures), "queries": list(self.queries), "results": list(self.results),
            "opened": list(self.opened), "cited": list(cited) if cited is not None else cited_urls(raw, self.shown),
        }
        if self.fallback is not None:
            block["fallback"] = self.fallback
        return block


def cited_urls(raw: str, shown: Sequence[SearchResult]) -> list[str]:
    """The URLs `raw` cites: those of the shown results its `[n]` markers name, and those it writes out
    (as the shown result's URL where it is the same page), in order of first mention, each page once."""
    urls: dict[str, str] = {}
    for result in shown:
        if result.get("url"):
            urls.setdefault(page_key(result["url"]), result["url"])
    found: list[tuple[int, str]] = []
    for match in _MARKER.finditer(raw):
        for number in match.group(1).split(","):
            index = int(number) - 1
            if 0 <= index < len(shown) and shown[index].get("url"):
                found.append((match.start(), shown[index]["url"]))
    for match in _URL.finditer(raw):
        url = match.group(0).rstrip(".,;:!?")
        found.append((match.start(), urls.get(page_key(url), url)))
    return distinct_pages(url for _, url in sorted(found, key=lambda item: item[0]))


def native_block(search: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `search` block of an answer from a model's own search (`Completion.search`, None when it did
    not search): every query and result in round 1, as the provider reported them; an API source by its
    `name`. `calls` is the provider's count where it gives one; else one per query, and a search that
    reported results but no query was still one search, never none."""
    search = search or {}
    trace = SearchTrace("native", NATIVE_POLICY)
    trace.queries = [{"round": 1, "query": str(query)} for query in search.get("queries") or ()]
    results = [result for result in search.get("results") or () if isinstance(result, Mapping)]
    trace.failures = [str(reason) for reason in search.get("failures") or ()]
    trace.failed = int(search.get("failed") or len(trace.failures))
    trace.calls = searches_made(search)
    for rank, result in enumerate(results, start=1):
        entry = {"round": 1, "rank": rank, "url": str(result.get("url") or ""), "title": str(result.get("title") or "")}
        if not entry["url"] and result.get("name"):
            entry.update(type=str(result.get("type") or "api"), name=str(result["name"]))
        trace.results.append({**entry, "noise": False})
    # results marked `opened`: records cached before `opened` was kept
    opened = [*(search.get("opened") or ()), *(result["url"] for result in results if result.get("opened") and result.get("url"))]
    trace.opened = distinct_pages(opened)
    return trace.block("", cited=[str(url) for url in search.get("cited") or ()])
