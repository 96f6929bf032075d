"""`bespoke build --from DIR --out RELEASE [--rubric-model M] [--claim-model M] [--accept FILE]`: a release
in the public layout from your own users' data; `bespoke build --rubrics-only --source SRC --rubric-model M
--out FILE`: new rubrics for an existing release (to judge with `bespoke meta-eval --rubrics FILE`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bespoke_cli.options import add_option_arguments, add_source_arguments, option_values
from bespoke_dataset import DEFAULT_SOURCE
from bespoke_dataset.building import DEFAULT_META_TEST_SHARE, REVIEW_FILE
from bespoke_dataset.errors import UserError
from bespoke_dataset.source import default_cache_dir
from bespoke_metric.backends.options import OpenAIOptions

HELP = ("build a release in the public BESPOKE layout from your own users' data (histories, queries, judged "
        "responses, claims or gold responses), or new rubrics for an existing release (--rubrics-only)")

CACHE_KIND = "build"
"""`default_cache_dir(CACHE_KIND)` holds the default cache of the authoring calls."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="from_dir", metavar="DIR",
                        help="folder of JSONL files: histories.jsonl, queries.jsonl, judgments.jsonl, and claims.jsonl "
                             "or gold_responses.jsonl, and rubrics.jsonl unless --rubric-model (docs/build.md)")
    parser.add_argument("--out", required=True,
                        help="the release folder to write (new, empty, or an earlier build, replaced atomically); "
                             "with --rubrics-only, the rubrics file (JSONL)")
    parser.add_argument("--rubric-model", metavar="ENGINE:MODEL",
                        help="model that writes each query's rubric from the query, its gold need and its judged "
                             "examples (else rubrics.jsonl is needed)")
    parser.add_argument("--claim-model", metavar="ENGINE:MODEL",
                        help="model that extracts atomic claims from gold_responses.jsonl; the release gets "
                             f"{REVIEW_FILE} to review them")
    parser.add_argument("--accept", metavar="FILE",
                        help=f"a reviewed {REVIEW_FILE}: build with the claims it keeps (keep: true), extracting none")
    parser.add_argument("--meta-test-share", type=float, default=DEFAULT_META_TEST_SHARE,
                        help=f"share of each query's judged responses held out as meta-test (default {DEFAULT_META_TEST_SHARE})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the examples/meta-test split (default 0)")
    parser.add_argument("--cache", help="SQLite cache of the model calls; a rerun makes only the calls that did not "
                                        f"finish (default: {default_cache_dir(CACHE_KIND) / 'calls.sqlite'})")
    parser.add_argument("--force", action="store_true",
                        help="replace a non-empty folder that is not an earlier build, and everything in it")
    parser.add_argument("--rubrics-only", action="store_true",
                        help="write new rubrics for the release --source to --out (a file), with --rubric-model")
    add_source_arguments(parser)  # read by --rubrics-only alone
    add_option_arguments(parser, OpenAIOptions)


def _cache_path(args: argparse.Namespace) -> str:
    return args.cache or str(default_cache_dir(CACHE_KIND) / "calls.sqlite")


def answer_caches(args: argparse.Namespace) -> list[str]:
    """The cache of the authoring calls, when a model is asked (see `bespoke_cli.interrupt`)."""
    return [_cache_path(args)] if args.rubric_model or args.claim_model else []


class _Authors:
    """The model authors of one command, sharing the cache; closes their backends."""

    def __init__(self, args: argparse.Namespace) -> None:
        from bespoke_metric.calls.cache import Cache

        self.options = option_values(args, OpenAIOptions)
        self.cache = Cache(_cache_path(args))
        self.made: list[Any] = []

    def author(self, spec: str, purpose: str) -> Any:
        from bespoke_metric.backends.registry import make_backend
        from bespoke_metric.judging.authoring import ModelAuthor

        author = ModelAuthor(make_backend(spec, **self.options), purpose, cache=self.cache)
        self.made.append(author)
        return author

    def usage_line(self) -> str:
        return "; ".join(f"{a.purpose}: {a.usage.calls} calls, {a.usage.cached} from cache, {a.usage.failed} failed"
                         for a in self.made)

    def close(self) -> None:
        for author in self.made:
            author.backend.close()
        self.cache.close()


def run(args: argparse.Namespace) -> int:
    from bespoke_dataset.building import BuildInputError, IncompleteBuild

    try:
        return _rubrics_only(args) if args.rubrics_only else _build(args)
    except BuildInputError as error:
        for problem in error.problems:
            print(f"error: {problem}", file=sys.stderr)
        print(f"error: {len(error.problems)} problem(s) in the input; nothing was written", file=sys.stderr)
        return 2
    except IncompleteBuild as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


def _refuse(args: argparse.Namespace, flags: dict[str, object], why: str) -> None:
    given = [flag for flag, value in flags.items() if value]
    if given:
        raise UserError(f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply {why}")


def _build(args: argparse.Namespace) -> int:
    from bespoke_dataset.building import build_release
    from bespoke_metric.judging.prompts import AUTHORING_VERSION

    if not args.from_dir:
        raise UserError("--from DIR is required (the folder of your users' data), unless --rubrics-only")
    _refuse(args, {"--source": args.source != DEFAULT_SOURCE, "--revision": args.revision},
            "to a build from --from (only to --rubrics-only)")
    authors = _Authors(args) if args.rubric_model or (args.claim_model and not args.accept) else None
    made_by = {what: {"model": spec, "prompt_version": AUTHORING_VERSION}
               for what, spec in (("rubrics", args.rubric_model), ("claims", args.claim_model)) if spec}
    try:
        summary = build_release(
            args.from_dir, args.out,
            write_rubrics=authors.author(args.rubric_model, "rubric") if authors and args.rubric_model else None,
            extract_claims=authors.author(args.claim_model, "claims") if authors and args.claim_model and not args.accept else None,
            accept=args.accept, meta_test_share=args.meta_test_share, seed=args.seed, made_by=made_by, force=args.force)
    finally:
        if authors is not None:
            authors.close()
    counts = summary.manifest["counts"]
    print(f"wrote {summary.out}: {counts['users']} users, {counts['queries']} queries, {counts['sessions']} history "
          f"sessions, {counts['shots']} judged examples and {counts['meta_test']} held-out, {counts['claims']} claims")
    if authors is not None:
        print(authors.usage_line())
    if args.claim_model and not args.accept:
        print(f"review the claims in {summary.out / REVIEW_FILE} (set keep to false to drop one), then build again "
              f"with --accept FILE")
    return 0


def _rubrics_only(args: argparse.Namespace) -> int:
    from bespoke_dataset.atomic import atomic_write_text
    from bespoke_dataset.building import rubric_tasks, rubrics_text
    from bespoke_dataset.building.authored import run_author
    from bespoke_dataset.rows import load_rows

    if not args.rubric_model:
        raise UserError("--rubrics-only needs --rubric-model ENGINE:MODEL")
    _refuse(args, {"--from": args.from_dir, "--claim-model": args.claim_model, "--accept": args.accept,
                   "--force": args.force}, "with --rubrics-only")
    source = args.source
    tasks = rubric_tasks(load_rows("benchmark", source, args.revision))
    authors = _Authors(args)
    try:
        rubrics = run_author(authors.author(args.rubric_model, "rubric"), tasks, "rubrics")
    finally:
        authors.close()
    atomic_write_text(args.out, rubrics_text(rubrics))
    print(f"wrote {len(rubrics)} rubrics of {source} to {args.out}; {authors.usage_line()}")
    print(f"judge with them: bespoke meta-eval --source {source} --rubrics {args.out} --judge ENGINE:MODEL")
    return 0
