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

What an engine is and how it is called are in `base`; the web APIs' client is `web`, their shapes
`providers`, the local collection `collection`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bespoke_metric.backends.options import flag_of

from .base import DEFAULT_K, NATIVE, NONE, HookEngine, SearchEngine, SearchEngineError, SearchHook, SearchOptions
from .providers import PROVIDERS
from .web import WebEngine


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
    from .collection import DocumentCollection, ReplayedCollection

    assert target is not None
    folder = Path(target)
    k = options.k or DEFAULT_K
    if replay and not folder.is_dir():  # a replay's searches all come from its cache: the folder may be gone
        return HookEngine(ReplayedCollection(folder), f"docs:{folder.resolve()}", k)
    collection = DocumentCollection(folder, k=k)  # a SearchCollectionError names the folder
    return HookEngine(collection, f"docs:{folder.resolve()}", collection.k)


def _web(name: str) -> Callable[[str | None, SearchOptions, bool], SearchEngine]:
    def build(target: str | None, options: SearchOptions, replay: bool) -> SearchEngine:
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
    engine or a malformed spec. A path, or a folder's name that names no engine, is a `docs:` folder (the
    spelling from before engine specs)."""
    name, sep, target = str(spec).partition(":")
    if isinstance(spec, os.PathLike) or (name not in SEARCH_ENGINES and os.path.isdir(spec)):
        return SearchSpec(SEARCH_ENGINES["docs"], os.fspath(spec))
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


