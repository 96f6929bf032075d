"""`bespoke meta-eval --judge SPEC [--judge SPEC ...] [--out DIR]`: agreement of judges with the human scores on
the meta-test set; several judges (or `--repeats`) make the table of `bespoke_metric.analysis.judges_table`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from bespoke_cli.context import CommandContext, command_context
from bespoke_cli.cost import add_cost_arguments, print_plan
from bespoke_cli.incomplete import finish, rerun_of
from bespoke_cli.options import add_option_arguments, add_resample_arguments, option_values, positive_int
from bespoke_dataset.atomic import atomic_write_text
from bespoke_dataset.errors import UserError
from bespoke_metric.analysis.judges_table import compare_judges, format_judges_md
from bespoke_metric.analysis.meta_eval import format_meta_eval, meta_evaluate, meta_items
from bespoke_metric.judging.config import JudgeConfig, ProtocolOptions
from bespoke_metric.judging.factory import judge_option_names
from bespoke_metric.judging.judges import as_judge_spec
from bespoke_metric.results.caveats import nothing_scored
from bespoke_metric.results.incomplete import Rerun
from bespoke_metric.scoring.pipeline import plan_judging, write_results

from .score import add_judge_arguments, answer_caches, judge_options

__all__ = ["HELP", "add_arguments", "answer_caches", "run"]

HELP = "score the held-out meta-test responses and report the judge's agreement with the humans"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_judge_arguments(parser, several=True)
    add_option_arguments(parser, ProtocolOptions, only=("with_feedback", "personalized"))  # the paper's ablations
    parser.add_argument("--feedback-grader", help="ENGINE:MODEL that grades feedback accuracy (LLM judges; default: the judge's own model, same endpoint options)")
    parser.add_argument("--no-feedback-accuracy", action="store_true", help="skip feedback accuracy (one grader call per response)")
    parser.add_argument("--rubrics", metavar="FILE", help="judge with these rubrics (JSONL of user, query_id, rubric, "
                                                          "as `bespoke build --rubrics-only` writes) instead of the release's")
    parser.add_argument("--output", help="write the meta-evaluation results (JSON) here (one judge)")
    parser.add_argument("--out", metavar="DIR", help="write the table of judges here: judges.json, judges.md, and "
                        "each judge's results in results/ (needed with several judges or --repeats), rewritten as each "
                        "judge finishes; the judges' calls are cached in DIR/judges.cache.sqlite unless --cache says "
                        "otherwise, so a rerun resumes")
    parser.add_argument("--reference", metavar="SPEC", help="the judge the others are compared with (default the first --judge)")
    parser.add_argument("--repeats", type=positive_int, default=1, help="judge every response N times with each LLM "
                        "judge (each repeat its own cache entries; the first is the plain run): its self-consistency")
    parser.add_argument("--limit", type=positive_int, help="judge only the first N meta-test responses")
    add_resample_arguments(parser)
    add_cost_arguments(parser)


TABLE_CACHE = "judges.cache.sqlite"
"""The judges' answer cache in the `--out` folder, when `--cache` names none."""

META_OPTIONS = frozenset({"guards", "feedback_grader", "feedback_accuracy_check"})
"""Options of `meta_evaluate` itself, not of a judge: every judge gets them."""


def options_by_judge(given: Callable[[str, Callable[[str], bool]], Mapping[str, Any]],
                     specs: list[str]) -> Callable[[str], dict[str, Any]]:
    """Each judge's share of the command's options (`given(spec, keep)`, `keep` saying which are its share): those
    its engine takes, and those no judge takes (so that the judge refuses them in the user's words, as with one
    judge)."""
    takes = {spec: judge_option_names(spec) for spec in specs}

    def options_for(spec: str) -> dict[str, Any]:
        def keep(name: str) -> bool:
            return name in META_OPTIONS or name in takes[spec] or not any(name in taken for taken in takes.values())

        return {name: value for name, value in given(spec, keep).items() if keep(name)}

    return options_for


def run(args: argparse.Namespace) -> int:
    specs: list[str] = args.judge
    table = len(specs) > 1 or args.repeats > 1 or args.out is not None
    if table and args.out is None:
        raise UserError("several judges (or --repeats) make a table of judges: give --out DIR for judges.json and judges.md")
    if args.output and len(specs) > 1:
        raise UserError("--output is one judge's results file; with several judges --out DIR writes each one's")
    if args.reference is not None and args.reference not in specs:
        raise UserError(f"--reference {args.reference} is not one of the --judge specs ({', '.join(specs)})")
    if table and args.cache is None:  # a judge that fails or is stopped: the rerun pays for what is missing only
        args.cache = str(Path(args.out) / TABLE_CACHE)
    context = command_context(args, [*map(as_judge_spec, specs), args.feedback_grader], caches=answer_caches(args), kept=[args.cache])
    spending, prices = context.spending, context.prices
    options: dict[str, Any] = option_values(args, ProtocolOptions)
    if args.feedback_grader:
        options["feedback_grader"] = args.feedback_grader
    if args.no_feedback_accuracy:
        options["feedback_accuracy_check"] = False
    judge_flags = options_by_judge(lambda spec, keep: {**judge_options(args, spending, spec, keep), **options}, specs)
    if args.dry_run:
        return dry_run(args, context, judge_flags)
    rerun = rerun_of(args, args.cache)
    if not table:
        results = meta_evaluate(specs[0], args.source, revision=args.revision, rubrics=args.rubrics, limit=args.limit,
                                n_resamples=args.resamples, seed=args.seed, prices=prices, **judge_flags(specs[0]))
    else:
        found, judges = compare_judges(specs, args.source, revision=args.revision, rubrics=args.rubrics, limit=args.limit,
                                       reference=args.reference, repeats=args.repeats, n_resamples=args.resamples,
                                       seed=args.seed, prices=prices, options_for=judge_flags,
                                       on_judge=lambda so_far, runs: write_progress(so_far, runs, specs, Path(args.out), rerun))
    if context.stopped():
        return 1
    if not table:
        return finish([results], rerun, publish(results, args.output, rerun))
    for judge in judges:
        print(format_meta_eval(judge.runs[0]) + "\n")
    write_table(found, [judge.runs[0] for judge in judges], Path(args.out), rerun=rerun)
    print(format_judges_md(found))
    print(f"table written to {Path(args.out) / 'judges.json'} and {Path(args.out) / 'judges.md'}")
    firsts = [judge.runs[0] for judge in judges]
    return finish(firsts, rerun, max(publish_status(results, named=True) for results in firsts))


def publish(results: Any, output: str | None, rerun: Rerun) -> int:
    """One judge's table, its results file (`--output`, marked `incomplete` with `rerun` where judgments were
    lost), and 1 when nothing was scored."""
    print(format_meta_eval(results))
    if output:
        write_results(results, output, rerun=rerun)
        print(f"results written to {output}")
    return publish_status(results)


def publish_status(results: Any, *, named: bool = False) -> int:
    """1, with one `error:` line (naming the judge when `named`), when the judge scored nothing."""
    unscored = nothing_scored(results)
    if unscored:
        print(f"error: {results.judge['spec'] + ': ' if named else ''}{unscored}", file=sys.stderr)
        return 1
    return 0


def write_table(table: Mapping[str, Any], firsts: list[Any], out: Path, specs: list[str] | None = None, *,
                rerun: Rerun | None = None) -> None:
    """judges.json, judges.md and each judge's results (`results/N-ENGINE-MODEL.json`, N its place among
    `specs`, default the order of `firsts`; marked `incomplete`, with `rerun`, where they lost judgments), each
    written atomically: a failure leaves no half-written file."""
    order = specs or [results.judge["spec"] for results in firsts]
    for results in firsts:
        spec = results.judge["spec"]
        name = "".join(c if c.isalnum() or c in "-." else "-" for c in spec)
        write_results(results, out / "results" / f"{order.index(spec) + 1}-{name}.json", rerun=rerun)
    atomic_write_text(out / "judges.md", format_judges_md(table))
    atomic_write_text(out / "judges.json", json.dumps(table, indent=2, ensure_ascii=False) + "\n")


def write_progress(table: Mapping[str, Any], runs: list[Any], specs: list[str], out: Path, rerun: Rerun) -> None:
    """The table of the judges done so far, written as one finishes (the others `pending`)."""
    write_table(table, [judge.runs[0] for judge in runs], out, specs, rerun=rerun)
    print(f"{len(runs)} of {len(specs)} judges done: {out / 'judges.md'} written (pending {', '.join(table['pending'])})",
          flush=True)


def dry_run(args: argparse.Namespace, context: CommandContext, options_for: Callable[[str], dict[str, Any]]) -> int:
    """What every judge's calls would be (each repeat's), from the cache as it stands; no call, nothing written."""
    specs: list[str] = args.judge
    items, _, _ = meta_items(args.source, args.revision, args.rubrics)
    items = items[: args.limit] if args.limit else items
    planned = []
    without_calls = []
    for spec, parsed in zip(specs, context.specs[:len(specs)], strict=True):  # the judges first, as given, then the feedback grader
        options = {name: value for name, value in options_for(spec).items() if name not in META_OPTIONS or name == "guards"}
        if not parsed.engine.llm:  # a judge that calls no model: its line says so (and it has no repeats)
            without_calls.append(spec)
            continue
        options.setdefault("recall", "none")  # as meta_evaluate judges: agreement needs no claim calls
        guards, cache = options.pop("guards", True), options.pop("cache", None)
        for repeat in range(args.repeats):
            config = JudgeConfig(spec=parsed, options={**options, "repeat": repeat}, cache=cache, guards=guards)
            planned += plan_judging(config, [items])
    print_plan(planned, context.prices, without_calls=without_calls)
    if not args.no_feedback_accuracy:
        print(f"  (feedback accuracy adds up to {len(items)} grader call(s) per LLM judge, not estimated: "
              "--no-feedback-accuracy skips them)")
    return 0
