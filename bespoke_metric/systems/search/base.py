"""What every search engine shares: its interface, how it is called (`SearchOptions`), its error.

An engine answers a batch of queries at once (`SearchEngine.search`), each with its raw results or the
`CallError` it failed with after its retries. A mistake that no retry can mend (an unknown engine, a
missing key, a refused key, an endpoint that is not the provider's search API) is a `SearchEngineError`
naming the engine. Keys are read from the environment, sent to the provider and nowhere else: never in
an identity, a description, a cache or a message.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import CallError
from bespoke_metric.backends.options import given, option

from .providers import SearchResult

SearchHook = Callable[[str], list[SearchResult]]
"""A search of one's own: a query in, a few documents (`{"title", "url", "text"}`) out."""

DEFAULT_K = 5
NATIVE = "native"
NONE = "none"


class SearchEngineError(UserError):
    """A search engine that cannot be used as given: the message names it and what is wrong."""


@dataclass(frozen=True)
class SearchOptions:
    """How an engine is called. None means the engine's default; an option an engine does not take is
    refused in the user's own words (`--search-base-url does not apply to docs:`)."""

    k: int | None = option("--search-k", f"results per search (default {DEFAULT_K})")
    base_url: str | None = option("--search-base-url", "the search API's endpoint, for one behind another host "
                                  "(tavily, brave, exa, serper)")
    concurrency: int | None = option("--search-concurrency", "searches in flight at most (default 16)")
    timeout: float | None = option("--search-timeout", "seconds per search call (default 30)")
    rpm: int | None = option("--search-rpm", "the search API's requests per minute on your plan: searches are paced "
                             "under it (default: none; a 429 holds searches back and sends them again)", positive=True)
    max_retries: int | None = option(help="retries per search call (default 4)")
    retry_budget: int | None = option(help="retries of the whole run, all searches together (default 200)")
    backoff_base: float | None = option(help="the n-th retry waits about backoff_base * 2**n seconds (default 1)")
    max_retry_wait: float | None = option(help="a Retry-After longer than this fails the search (default 120)")

    def given(self) -> dict[str, Any]:
        """The options that are set."""
        return given(self)


class SearchEngine(Protocol):
    spec: str
    """As recorded: `searxng:http://host:8888`, `tavily`, `docs:/abs/dir` (never a key, never a URL's query)."""
    k: int

    def identity(self) -> dict[str, Any]:
        """Everything that determines its results besides the query: the search cache's key. No secret."""
        ...

    def describe(self) -> dict[str, Any]:
        """Its part of the run file's `search` block."""
        ...

    async def search(self, queries: Sequence[str]) -> list[list[SearchResult] | CallError]:
        """Every query's results, in order, or the `CallError` it failed with after its retries."""
        ...

    async def release(self) -> None:
        """Let go of what it holds on the running event loop (its connections): the run is over."""
        ...

    def close(self) -> None:
        ...


class HookEngine:
    """A search callable (`SearchHook`, a `DocumentCollection`) as an engine: each query in turn, its first
    `k` results kept. A hook that raises fails that query."""

    def __init__(self, hook: SearchHook, spec: str, k: int) -> None:
        self.hook = hook
        self.spec = spec
        self.k = k

    def identity(self) -> dict[str, Any]:
        return {"engine": self.spec, "k": self.k}

    def describe(self) -> dict[str, Any]:
        describe = getattr(self.hook, "describe", None)
        return {**(describe() if callable(describe) else {}), "k": self.k}

    async def search(self, queries: Sequence[str]) -> list[list[SearchResult] | CallError]:
        return [self._one(query) for query in queries]

    def _one(self, query: str) -> list[SearchResult] | CallError:
        try:
            return [dict(result) for result in self.hook(query)][: self.k]
        except Exception as error:  # the hook is the user's code: its failure fails this query only
            return CallError(f"{type(error).__name__}: {error}")

    async def release(self) -> None:
        pass

    def close(self) -> None:
        pass


def key_from_env(env: str, engine: str, environ: Mapping[str, str] = os.environ) -> str:
    """The API key in `env`, or a `SearchEngineError` saying how to set it."""
    key = environ.get(env, "").strip()
    if not key:
        raise SearchEngineError(f"search engine {engine} needs an API key: set {env}")
    return key
