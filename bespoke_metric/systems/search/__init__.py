"""Search for the systems under test: engines behind one registry, how a model uses them, and what is kept.

    GenerationSettings(search="searxng:http://127.0.0.1:8888", search_policy="agent")

| module | concern |
|---|---|
| `base` | what every engine shares: its interface, `SearchOptions`, `SearchEngineError` |
| `engines` | the `--search` registry (`docs:`, `searxng:`, `tavily`, `brave`, `exa`, `serper`, `native`, `none`) |
| `providers` | each search API's documented request and answer shapes (pure) |
| `web` | a search API as an engine: the judge's HTTP client (concurrency, timeouts, retries) |
| `collection` | `DocumentCollection`: a local folder searched with BM25, and frozen corpora written as one |
| `cache` | `SearchCache`: every search call in SQLite, for reruns, replays and `bespoke search freeze` |
| `searcher` | `Searcher`: an engine behind the cache, with replay and noise |
| `noise` | the paper's noise experiment: results swapped for other queries' (pure) |
| `policies` | `query`, `rewrite`, `agent`: how a model uses an engine, every round batched across questions |
| `protocol` | results as the model reads them, and the queries it writes, as tool calls or plain text (pure) |
| `record` | the `search` block of a prediction: queries, results, citations (pure) |

A run's search from its settings, checked, and its record in the run file, is `systems.search_plan`'s.
"""

from bespoke_dataset.lazy import lazy_attributes

# name -> the module that defines it, imported on first use
_LAZY: dict[str, str] = {
    "DocumentCollection": ".collection",
    "POLICIES": ".policies",
    "PROVIDERS": ".providers",
    "SEARCH_ENGINES": ".engines",
    "SearchCache": ".cache",
    "SearchCollectionError": ".collection",
    "SearchEngine": ".base",
    "SearchEngineError": ".base",
    "SearchHook": ".base",
    "SearchOptions": ".base",
    "SearchReplayMiss": ".searcher",
    "SearchResult": ".providers",
    "Searcher": ".searcher",
    "add_noise": ".noise",
    "cached_searches": ".cache",
    "freeze": ".collection",
    "make_search_engine": ".engines",
    "parse_search_spec": ".engines",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
