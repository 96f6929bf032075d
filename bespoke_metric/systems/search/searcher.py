"""A run's searches: an engine behind the search cache, with replay and noise.

`Searcher.search` takes a batch of queries (a round of every query of the run), answers what the cache
holds, sends the rest to the engine in one batch and stores each answer, then adds noise where the run
asks for it. With `replay`, the cache is all there is: a query it lacks stops the run at once
(`SearchReplayMiss`), before any call. The noise pool is every result the run's searches have returned
so far, in the order of the queries (never of arrival), so a rerun or a replay of the same run draws
the same noise.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import CallError

from .base import SearchEngine
from .cache import SearchCache, search_key
from .noise import Marked, add_noise, noise_rng, result_id
from .providers import SearchResult

log = logging.getLogger(__name__)


class SearchReplayMiss(UserError):
    """A replayed run asked for a search its cache does not hold."""


class Searcher:
    def __init__(self, engine: SearchEngine, *, cache: SearchCache | None = None, replay: bool = False,
                 noise: float = 0.0, seed: int = 0) -> None:
        if replay and cache is None:
            raise ValueError("replaying searches needs a search cache")
        self.engine = engine
        self.cache = cache
        self.replay = replay
        self.noise = noise
        self.seed = seed
        self._pool: dict[str, tuple[str, SearchResult]] = {}
        """Result id -> (the first query that returned it, the result)."""
        self._short_warned = False

    async def search(self, queries: Sequence[str]) -> list[list[Marked] | CallError]:
        """Each query's results (marked noise or not), in order, or the `CallError` its search failed with."""
        identity = self.engine.identity()
        keys = {query: search_key(identity, query) for query in queries}
        cached = self.cache.get_results(keys.values()) if self.cache is not None else {}
        found: dict[str, list[SearchResult] | CallError] = {q: cached[k] for q, k in keys.items() if k in cached}
        missing = [query for query in keys if query not in found]
        if missing and self.replay:
            assert self.cache is not None
            raise SearchReplayMiss(f"--search-replay: {self.cache.path} holds no {self.engine.spec} search for "
                                   f"{missing[0]!r} ({len(missing)} search(es) missing); run without --search-replay to make them")
        if missing:
            for query, answer in zip(missing, await self.engine.search(missing), strict=True):
                found[query] = answer
                if self.cache is not None and not isinstance(answer, CallError):
                    self.cache.put_results(keys[query], self.engine.spec, query, answer)
        for query in keys:  # in query order: the pool must not depend on which answer came first
            answer = found[query]
            if not isinstance(answer, CallError):
                for result in answer:
                    self._pool.setdefault(result_id(result), (query, result))
        return [self._marked(query, found[query]) for query in queries]

    def _marked(self, query: str, answer: list[SearchResult] | CallError) -> list[Marked] | CallError:
        if isinstance(answer, CallError):
            return CallError(f"search failed ({self.engine.spec}): {answer.reason}", answer.retryable)
        if not self.noise:
            return [(dict(result), False) for result in answer]
        pool = [result for source, result in self._pool.values() if source != query]
        marked = add_noise(answer, pool, self.noise, noise_rng(self.seed, query))
        wanted = round(self.noise * len(answer))
        drawn = sum(noise for _, noise in marked)
        if drawn < wanted and not self._short_warned:
            self._short_warned = True
            log.warning("search noise: only %d of %d results of %r could be replaced (too few other results in "
                        "the run so far)", drawn, wanted, query)
        return marked
