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

from .base import SearchEngine, SearchEngineError, SearchHook, SearchOptions
from .cache import SearchCache, cached_searches
from .collection import DocumentCollection, SearchCollectionError, freeze
from .engines import SEARCH_ENGINES, make_search_engine, parse_search_spec
from .noise import add_noise
from .policies import POLICIES
from .providers import PROVIDERS, SearchResult
from .searcher import Searcher, SearchReplayMiss

__all__ = [
    "DocumentCollection", "POLICIES", "PROVIDERS", "SEARCH_ENGINES", "SearchCache", "SearchCollectionError",
    "SearchEngine", "SearchEngineError", "SearchHook", "SearchOptions", "SearchReplayMiss", "SearchResult",
    "Searcher", "add_noise", "cached_searches", "freeze", "make_search_engine", "parse_search_spec",
]
