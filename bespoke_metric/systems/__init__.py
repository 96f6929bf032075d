"""The systems under test: generation, user-context building, history retrieval, profiles, query expansion.

>>> from bespoke_metric.systems import GenerationSettings, generate
>>> report = generate("hf:Qwen/Qwen3-8B", "preds.jsonl", GenerationSettings(context="selected-profile"))  # doctest: +SKIP

| module | concern |
|---|---|
| `generation` | `generate`: the run, from data to predictions |
| `runs` | `run`: predictions generated, then judged in memory (`bespoke run`; a sweep's judging) |
| `settings` | `GenerationSettings`: context configuration, parts, budgets, limits |
| `context` | `build_contexts`: what the system is given besides the query, per configuration; history sessions packed into token budgets and profiler chunks |
| `retrieval`, `embeddings` | history selection (dense, BM25, hybrid) and cached sentence embeddings |
| `search` | search engines (`--search`), how a model uses them (`--search-policy`), noise, cache and replay |
| `search_plan` | a run's search from its settings, checked, and its record in the run file |
| `profiler`, `calls` | the profiler model's profiles and query expansions; asking a model |
| `prompts` | every text a model is sent, and the version derived from them |
| `messages` | `Prompter`, `QueryMessages`: one query's messages as `generate` sends them, a sample at a time |
| `tokens` | token counters for budgets |
| `runfiles` | the files beside the predictions and the resume checks |
"""

from bespoke_dataset.lazy import lazy_attributes

# Imported on first use: `bespoke score` reaches `systems.tokens` for a dry run's estimate and needs none of
# the rest (generation, contexts, retrieval, search). name -> the module that defines it.
_LAZY: dict[str, str] = {
    **dict.fromkeys(("CONTEXTS", "ContextSettings", "Profiler", "ProfileTask", "UserContext", "build_contexts"), ".context"),
    "Embedder": ".embeddings",
    **dict.fromkeys(("GenerationReport", "SystemData", "generate", "load_system_data"), ".generation"),
    "GENERATION_PROMPT_VERSION": ".prompts",
    **dict.fromkeys(("Prompter", "QueryMessages"), ".messages"),
    **dict.fromkeys(("RETRIEVERS", "BM25Retriever", "DenseRetriever", "HybridRetriever", "Retriever", "make_retriever"),
                    ".retrieval"),
    "GenerationError": ".runfiles",
    **dict.fromkeys(("DocumentCollection", "SearchHook", "SearchOptions"), ".search"),
    **dict.fromkeys(("EXPANSIONS", "GenerationSettings"), ".settings"),
    **dict.fromkeys(("TokenCounter", "token_counter"), ".tokens"),
}

__all__ = [
    "BM25Retriever", "CONTEXTS", "ContextSettings", "DenseRetriever", "DocumentCollection", "EXPANSIONS", "Embedder",
    "GENERATION_PROMPT_VERSION", "GenerationError", "GenerationReport", "GenerationSettings", "HybridRetriever",
    "ProfileTask", "Profiler", "Prompter", "QueryMessages", "RETRIEVERS", "Retriever", "SearchHook", "SearchOptions", "SystemData", "TokenCounter",
    "UserContext", "build_contexts", "generate", "load_system_data", "make_retriever", "token_counter",
]

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
