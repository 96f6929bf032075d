"""The search engine registry: every `--search SPEC` is parsed here, and the engines' options are typed here.

    make_search_engine("searxng:http://127.0.0.1:8888", SearchOptions(k=5))
    make_search_engine("tavily")                       # key from TAVILY_API_KEY
    make_search_engine("docs:corpus/")                 # a local folder searched with BM25

| spec | what it is |
|---|---|
| `docs:DIR` | a local collection of `.txt` / `.jsonl` documents, searched with BM25 |
| `searxng:URL` | a SearXNG instance (its JSON output enabled) |
| `tavily`, `brave`, `exa`, `serper` | the search APIs, keys from `TAVILY_API_KEY`, `BRAVE_API_KEY`, `EXA_API_KEY`, `SERPER_API_KEY` |
| `native` | the system model's own search (its backend searches: `Request.native_search`) |
| `none` | no search |

An engine answers a batch of queries at once (`SearchEngine.search`), each with its raw results or the
`CallError` it failed with after its retries. A mistake that no retry can mend (an unknown engine, a
missing key, a refused key, an endpoint that is not the provider's search API) is a `SearchEngineError`
naming the engine. Keys are read from the environment, sent to the provider and nowhere else: never in
an identity, a description, a cache or a message.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bespoke_dataset.errors import UserError

from bespoke_metric.backends.base import CallError
from bespoke_metric.backends.http import scrub_url
from bespoke_metric.scoring.engines import flag_of, option

from .providers import PROVIDERS, SearchResult

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
    max_retries: int | None = option(help="retries per search call (default 4)")
    retry_budget: int | None = option(help="retries of the whole run, all searches together (default 200)")
    backoff_base: float | None = option(help="the n-th retry waits about backoff_base * 2**n seconds (default 1)")
    max_retry_wait: float | None = option(help="a Retry-After longer than this fails the search (default 120)")

    def given(self) -> dict[str, Any]:
        """The options that are set."""
        return {item.name: getattr(self, item.name) for item in dataclasses.fields(self) if getattr(self, item.name) is not None}


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


@dataclass(frozen=True)
class EngineKind:
    """One row of the registry."""

    name: str
    target: str | None
    """What follows `NAME:` in the spec (`DIR`, `URL`), or None when nothing may."""
    takes: frozenset[str]
    """The `SearchOptions` it takes."""
    build: Callable[[str | None, SearchOptions, bool], SearchEngine] | None
    """`(target, options, replay) -> engine`; None for `native` and `none`, which are no engine here."""


_WEB_OPTIONS = frozenset(item.name for item in dataclasses.fields(SearchOptions))


def _docs(target: str | None, options: SearchOptions, replay: bool) -> SearchEngine:
    from .collection import DocumentCollection

    assert target is not None
    folder = Path(target)
    try:
        collection = DocumentCollection(folder, k=options.k or DEFAULT_K)
    except (FileNotFoundError, ValueError) as error:
        raise SearchEngineError(f"search engine docs:{target}: {error}") from None
    return HookEngine(collection, f"docs:{folder.resolve()}", collection.k)


def _web(name: str) -> Callable[[str | None, SearchOptions, bool], SearchEngine]:
    def build(target: str | None, options: SearchOptions, replay: bool) -> SearchEngine:
        from .web import WebEngine

        return WebEngine.build(PROVIDERS[name], target or options.base_url, options, need_key=not replay)

    return build


SEARCH_ENGINES: dict[str, EngineKind] = {
    "docs": EngineKind("docs", "DIR", frozenset({"k"}), _docs),
    "searxng": EngineKind("searxng", "URL", _WEB_OPTIONS - {"base_url"}, _web("searxng")),
    **{name: EngineKind(name, None, _WEB_OPTIONS, _web(name)) for name in ("tavily", "brave", "exa", "serper")},
    NATIVE: EngineKind(NATIVE, None, frozenset(), None),
    NONE: EngineKind(NONE, None, frozenset(), None),
}
"""Every `--search` engine by name."""


@dataclass(frozen=True)
class SearchSpec:
    """A parsed `--search` spec."""

    kind: EngineKind
    target: str | None

    @property
    def name(self) -> str:
        return self.kind.name

    def __str__(self) -> str:
        return self.name if self.target is None else f"{self.name}:{self.target}"


def parse_search_spec(spec: str | os.PathLike[str]) -> SearchSpec:
    """`"searxng:http://host:8888"` -> its registry row and target; a `SearchEngineError` for an unknown
    engine or a malformed spec. A path (not a str) is a `docs:` folder."""
    if isinstance(spec, os.PathLike):
        return SearchSpec(SEARCH_ENGINES["docs"], os.fspath(spec))
    name, sep, target = str(spec).partition(":")
    known = ", ".join(f"{kind.name}:{kind.target}" if kind.target else kind.name for kind in SEARCH_ENGINES.values())
    kind = SEARCH_ENGINES.get(name)
    if kind is None:
        raise SearchEngineError(f"unknown search engine {str(spec)!r}; known: {known}")
    if kind.target is not None and not target:
        raise SearchEngineError(f"search engine {name} needs its {kind.target}: --search {name}:{kind.target}")
    if kind.target is None and sep:
        raise SearchEngineError(f"search engine {name} takes nothing after its name, got {str(spec)!r}")
    return SearchSpec(kind, target if kind.target is not None else None)


def make_search_engine(spec: str | os.PathLike[str] | SearchSpec, options: SearchOptions | None = None, *,
                       replay: bool = False) -> SearchEngine:
    """The engine named by `spec`, called with `options`. `replay`: it will answer only from a search
    cache, so a missing key is no error (it is never called)."""
    parsed = spec if isinstance(spec, SearchSpec) else parse_search_spec(spec)
    options = options or SearchOptions()
    if parsed.kind.build is None:
        raise SearchEngineError(f"--search {parsed.name} is not a search engine to call: it is handled by the system model")
    refused = sorted(set(options.given()) - parsed.kind.takes)
    if refused:
        flags = ", ".join(flag_of(SearchOptions, name) for name in refused)
        raise SearchEngineError(f"{flags} does not apply to the {parsed.name} search engine")
    for name in ("k", "concurrency", "max_retries", "retry_budget"):
        value = getattr(options, name)
        if value is not None and (isinstance(value, bool) or value < (0 if name in ("max_retries", "retry_budget") else 1)):
            raise SearchEngineError(f"{flag_of(SearchOptions, name)} must be a positive integer, got {value!r}")
    return parsed.kind.build(parsed.target, options, replay)


def hook_engine(hook: SearchHook, k: int = DEFAULT_K) -> SearchEngine:
    """A search callable of one's own as an engine, named by its qualified name."""
    name = getattr(hook, "__qualname__", type(hook).__name__)
    return HookEngine(hook, f"hook:{name}", k)


def recorded_spec(spec: str) -> str:
    """A spec as it may be written down: a URL target without user info or query string."""
    name, sep, target = spec.partition(":")
    return f"{name}:{scrub_url(target)}" if sep and "://" in target else spec


def key_from_env(env: str, engine: str, environ: Mapping[str, str] = os.environ) -> str:
    """The API key in `env`, or a `SearchEngineError` saying how to set it."""
    key = environ.get(env, "").strip()
    if not key:
        raise SearchEngineError(f"search engine {engine} needs an API key: set {env}")
    return key
