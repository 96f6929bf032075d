"""Search noise, as in the paper's robustness experiment: part of each search's results swapped for
results that other queries' searches returned.

`add_noise` is pure: given a search's results, the pool of results other queries returned, the share
and a seeded random generator, it replaces `round(share * n)` of the `n` results by results drawn from
the pool (none with a URL the search already has), shuffles the positions, and marks each result with
whether it is noise. The generator is seeded by `noise_rng(seed, query)`, so the same seed, query and
pool give the same noise.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from bespoke_metric.backends.web_search import page_key

from .providers import SearchResult

Marked = tuple[SearchResult, bool]
"""A result and whether it is noise."""


def noise_rng(seed: int, query: str) -> random.Random:
    """The generator of one search's noise: a string seed hashes the same in every process."""
    return random.Random(f"bespoke-search-noise\x00{seed}\x00{query}")


def result_id(result: SearchResult) -> str:
    """What makes two results the same document: the page (`page_key`: its URL without tracking
    parameters), else the title and text."""
    return page_key(result["url"]) if result.get("url") else f"{result.get('title', '')}\x00{result.get('text', '')}"


def add_noise(results: Sequence[SearchResult], pool: Sequence[SearchResult], share: float, rng: random.Random) -> list[Marked]:
    """`results` with `round(share * len(results))` of them replaced by draws from `pool` (fewer when the
    pool has too few documents the search does not have), every position then shuffled."""
    own = {result_id(result) for result in results}
    candidates = [result for result in pool if result_id(result) not in own]
    count = min(round(share * len(results)), len(candidates))
    replaced = set(rng.sample(range(len(results)), count))
    marked: list[Marked] = [(dict(result), False) for index, result in enumerate(results) if index not in replaced]
    marked += [(dict(result), True) for result in rng.sample(candidates, count)]
    if count:  # the noise must not sit at the bottom, where a reader would skip it
        rng.shuffle(marked)
    return marked
