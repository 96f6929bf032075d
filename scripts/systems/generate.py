"""`bespoke generate`: answer every query with a system model under a user-context configuration."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from bespoke_cli.executor import add_executor_arguments, check_executor_flags
from bespoke_cli.incomplete import ended, rerun_of
from bespoke_cli.options import add_option_arguments, add_source_arguments, positive_int
from bespoke_metric.backends.options import ClientOptions, option_help
from bespoke_metric.backends.registry import as_spec
from bespoke_metric.results.incomplete import lost_line
from bespoke_metric.systems import GenerationReport, GenerationSettings, generate
from bespoke_metric.systems.config import MODEL_THINKING_OPTIONS, SEARCH_PREFIX, SystemConfig, native_search_options
from bespoke_metric.systems.runfiles import sidecar
from bespoke_metric.systems.search.base import SearchOptions
from bespoke_metric.systems.settings import small_local_note

HELP = "generate predictions with any model (hf:, vllm:, openai:) under a user-context configuration"

SEARCH_SETTINGS = ("search", "search_policy", "search_queries", "search_rounds", "search_noise", "seed", "search_cache",
                   "search_replay")
"""The `GenerationSettings` of how the system searches: their flags go in the `search` group."""


def add_generation_arguments(parser: argparse.ArgumentParser, *, endpoint_prefix: str, several: bool = False) -> None:
    """The system-model options shared by `generate`, `run` and `sweep` (`several`: each value flag takes one
    or more values, `--models` and `--contexts` spelled in the plural): the flags of `GenerationSettings`'
    fields and of the engines' options. `endpoint_prefix` goes before the flags of the system model's API
    endpoint, key and account limits (`run` keeps `--base-url` and `--rpm` for the judge: `--model-base-url`)."""
    nargs = "+" if several else None
    parser.add_argument(*(("--models",) if several else ()), "--model", dest="model", nargs=nargs, required=not several,
                        help="the system under test: hf:MODEL, vllm:MODEL or openai:MODEL")
    parser.add_argument("--model-name", nargs=nargs, help="the system's name in tables and results (default: the model's "
                        "spec, a local file or folder by its own name)" + ("; one per --models value, in order" if several else ""))
    add_option_arguments(parser, GenerationSettings, exclude=SEARCH_SETTINGS, several=several,
                         aliases={"context": "--contexts"} if several else None)
    flag = f"--{endpoint_prefix}"
    parser.add_argument(f"{flag}base-url", dest="model_base_url", nargs=nargs, help="the system model's OpenAI-compatible endpoint (openai: models)")
    parser.add_argument(f"{flag}api-key", dest="model_api_key", nargs=nargs, help="its API key (default: $OPENAI_API_KEY); never written anywhere")
    for name in ("rpm", "tpm"):  # the system model's account limits, as the judge's are given (`ClientOptions`)
        parser.add_argument(f"{flag}{name}", dest=f"model_{name}", type=positive_int, nargs=nargs,
                            help="the system model's: " + option_help(ClientOptions, name))
    parser.add_argument("--batch-size", type=int, nargs=nargs, help="prompts per batch (hf: models; default: adapted to memory)")
    for options, names in MODEL_THINKING_OPTIONS:
        add_option_arguments(parser, options, only=names, several=several)
    group = parser.add_argument_group("search")
    add_option_arguments(group, GenerationSettings, only=SEARCH_SETTINGS[:1], several=several)
    group.add_argument("--search-docs", metavar="DIR", nargs=nargs, help="the same as --search docs:DIR")
    add_option_arguments(group, SearchOptions, prefix=SEARCH_PREFIX, several=several)
    add_option_arguments(group, GenerationSettings, only=SEARCH_SETTINGS[1:4], several=several)
    for options, names in native_search_options():
        add_option_arguments(group, options, only=names, several=several)
    add_option_arguments(group, GenerationSettings, only=SEARCH_SETTINGS[4:], several=several)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_generation_arguments(parser, endpoint_prefix="")
    parser.add_argument("--output", required=True, help="predictions JSONL; an existing file is resumed")
    parser.add_argument("--strict", action="store_true", help="exit 1, writing none of them, at predictions whose "
                        "answer was cut off at the output limit or whose calls were served by another model than asked for")
    add_source_arguments(parser)
    add_executor_arguments(parser)


def generation_cache(args: argparse.Namespace, predictions: str) -> str:
    """The SQLite cache of the system model's calls: `--generation-cache`, else where `generate` puts it,
    beside the predictions."""
    return args.generation_cache or str(sidecar(Path(predictions), ".cache.sqlite"))


def answer_caches(args: argparse.Namespace) -> list[str]:
    """See `bespoke_cli.interrupt`."""
    return [generation_cache(args, args.output)]


def system_config(args: argparse.Namespace) -> SystemConfig:
    """The system the flags describe (shared with `bespoke run`)."""
    return SystemConfig.from_cli(args)


def print_local_note(config: SystemConfig) -> None:
    """A local model that wrote profiles at settings that cost it minutes a query is told what to set: said once
    the answers are in (a run that stops on a mistake says only that, in one line)."""
    note = small_local_note(config.model, config.settings)
    if note:
        print(note, file=sys.stderr)


def generate_from(args: argparse.Namespace, output: str) -> GenerationReport:
    """Run generation as the parsed arguments say; `--strict` refuses cut-off answers and calls served by another model."""
    config = system_config(args)
    # a bar on a terminal, a line now and then into a log (`calls.progress`)
    report = generate(config.engine, output, config.settings, source=args.source, revision=args.revision, progress=True,
                      strict=args.strict, model_name=args.model_name)
    print_local_note(config)
    return report


def print_report(report: GenerationReport, out: TextIO | None = None) -> None:
    out = out or sys.stdout  # looked up per call: sys.stdout may have been replaced since import
    substitution = report.system.get("substitution")
    if substitution:
        print(f"note: {substitution['asked']} runs as {substitution['ran_as']} (as of {substitution['date']}): "
              f"{substitution['reason']}", file=out)
    print(
        f"{report.generated} generated{cut_off(report)}, {report.already_done} already there, {len(report.failed)} failed; "
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


def cut_off(report: GenerationReport) -> str:
    """` (3 cut off at the output limit)` when answers were, to follow the count of those generated."""
    return f" ({report.truncated} cut off at the output limit: truncated in their predictions)" if report.truncated else ""


def run(args: argparse.Namespace) -> int:
    args.model = as_spec(args.model)  # where the flags enter: parsed once, the `Spec` what every layer gets
    args.profiler = as_spec(args.profiler) if args.profiler else None
    check_executor_flags(args, [args.model, args.profiler])
    report = generate_from(args, args.output)
    if report.served_warning:
        print(report.served_warning, file=sys.stderr)
    print_report(report)
    print(f"predictions in {args.output}")
    if report.failed:  # the queries without a prediction: the same command asks them again, the others from its cache
        # none at all is a run that could not do its work (as a score that scored nothing), some an incomplete one
        return ended(lost_line([], report.failed), rerun_of(args, generation_cache(args, args.output)),
                     0 if report.predictions else 1)
    return 0
