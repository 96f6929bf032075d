"""A run's search, from its settings: the engine (or the model's own search, or none), checked against
how the run would use it (`GenerationSettings.check_search`), and what the run file records of it."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .search.base import NATIVE, NONE, SearchEngine, SearchEngineError
from .search.engines import hook_engine, make_search_engine, parse_search_spec
from .search.policies import SearchPlan
from .search.searcher import Searcher

if TYPE_CHECKING:
    from .search.cache import SearchCache
    from .settings import GenerationSettings


def open_engine(settings: "GenerationSettings", default: str) -> tuple[str, SearchEngine | None]:
    """`(name, engine)` of the run's search: `native` or `none` with no engine, or the engine's spec and
    the engine. `default` is the model's engine's own (`Engine.search_default`), for `search=None`."""
    search = settings.search
    if callable(search):
        engine = hook_engine(search, settings.search_options.k or 5)
        return engine.spec, engine
    spec = parse_search_spec(search or default)
    settings.check_search(spec.name)
    if spec.name in (NATIVE, NONE):
        return spec.name, None
    engine = make_search_engine(spec, settings.search_options, replay=settings.search_replay)
    return engine.spec, engine


def make_plan(settings: "GenerationSettings", name: str, engine: SearchEngine | None, cache: "SearchCache | None") -> SearchPlan:
    searcher = None
    if engine is not None:
        searcher = Searcher(engine, cache=cache, replay=settings.search_replay, noise=settings.search_noise, seed=settings.seed)
    return SearchPlan(name, searcher, policy=settings.search_policy, queries=settings.search_queries,
                      rounds=settings.search_rounds, budget=settings.search_budget)


def describe_search(name: str, engine: SearchEngine | None, settings: "GenerationSettings") -> dict[str, Any] | None:
    """The run file's `search` block: engine, k, policy, rounds, queries, noise, seed (None: no search)."""
    if name == NONE:
        return None
    if engine is None:  # the model's own
        return {"engine": NATIVE, "policy": NATIVE, "k": None, "rounds": None, "queries": None, "noise": 0.0,
                "seed": settings.seed}
    policy = settings.search_policy
    return {
        **engine.describe(), "engine": name, "k": engine.k, "policy": policy,
        "rounds": settings.search_rounds if policy == "agent" else 1,
        "queries": 1 if policy == "query" else settings.search_queries,
        "noise": settings.search_noise, "seed": settings.seed,
    }


def dry_run_search(settings: "GenerationSettings", cache_file: str | os.PathLike[str], scratch: Path) -> "GenerationSettings":
    """`settings` for a dry run in the folder `scratch` (`bespoke run --dry-run`, a sweep's): a search of
    a web engine would be a call, so it is planned only from what the search cache holds
    (`--search-replay`), and the cache (`search_cache`, else the run's `cache_file`) is read from a copy
    in `scratch`, so nothing is written to it. A local collection (`docs:`), the model's own search and
    no search need nothing."""
    search = settings.search
    if search is None or callable(search):
        return settings
    spec = parse_search_spec(search)
    if spec.kind.build is None:
        return settings
    if spec.name != "docs" and not settings.search_replay:
        raise SearchEngineError(f"--dry-run makes no call, and every search of {spec} is one: plan from the searches "
                                "cached with --search-replay, or leave out --search")
    source = Path(settings.search_cache or cache_file)
    copy = scratch / "search.sqlite"
    for suffix in ("", "-wal"):  # what a writer has not checkpointed yet is in its -wal file
        if Path(f"{source}{suffix}").is_file():
            shutil.copyfile(f"{source}{suffix}", f"{copy}{suffix}")
    return dataclasses.replace(settings, search_cache=copy)
