"""`bespoke submit RESULTS --model ORG/NAME --dataset REPO_ID --out DIR [--push]`: a results file in the
Hub's Eval Results format, for the model's page and the benchmark's leaderboard."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, TypeVar

from bespoke_dataset.atomic import atomic_write_text
from bespoke_dataset.registration import BENCHMARK_TASKS
from bespoke_metric.hub.eval_results import MODEL_CARD, current_model_card, open_pull_request, submission_files
from bespoke_metric.hub.submission import SubmissionError, read_submission
from bespoke_metric.results.incomplete import ALLOW_INCOMPLETE, INCOMPLETE_MARK

HELP = "write a results file as the Hub's Eval Results of a model repo (.eval_results/*.yaml); --push opens a pull request"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", help="a results file written by `bespoke score` or `bespoke run`")
    parser.add_argument("--model", required=True, help="the model repo the results belong to, ORG/NAME")
    parser.add_argument("--dataset", required=True, help="the benchmark dataset repo (its eval.yaml is written by `bespoke export`), ORG/NAME")
    parser.add_argument("--out", required=True, help="folder to write .eval_results/ (and README.md with --model-index) into, e.g. a clone of the model repo")
    parser.add_argument("--push", action="store_true", help="also open a pull request on the model repo with these files (never a direct commit)")
    parser.add_argument("--model-index", action="store_true", help="also write the model card's model-index block (from the Hub's card with --push, else OUT/README.md if there is one)")
    parser.add_argument("--allow-proxy", action="store_true", help="accept results of a proxy judge (embed:) or answered by a stand-in; each entry's notes then say PROXY")
    parser.add_argument(ALLOW_INCOMPLETE, action="store_true", help="accept results of a run that lost judgments (its "
                        f"incomplete field); each entry's notes then say {INCOMPLETE_MARK} and what it lost")
    parser.add_argument("--source-url", help="where the results can be checked (e.g. the results file on the Hub); default: the dataset's page")
    parser.add_argument("--token", help="Hub token (default: the logged-in token or HF_TOKEN); never written anywhere")


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    try:
        results = read_submission(args.results, allow_proxy=args.allow_proxy, allow_incomplete=args.allow_incomplete)
        card = _current_card(args, out) if args.model_index else None
        files = submission_files(results, model=args.model, dataset=args.dataset, source_url=args.source_url,
                                 model_index=args.model_index, card_text=card)
    except SubmissionError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except _HubError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for path, text in files.items():
        atomic_write_text(out / path, text)
        print(f"wrote {out / path}")
    summary = results.results.summary
    print("values: " + ", ".join(f"{task.id} {summary[task.id]:.2f}" for task in BENCHMARK_TASKS if summary.get(task.id) is not None))
    if results.proxy:
        print(f"note: {results.judge['spec']} is a proxy judge; every entry's notes say so")
    if results.results.incomplete is not None:
        print(f"note: {args.results} is incomplete (the run lost {results.results.incomplete.lost}); every entry's notes say so")
    if args.push:
        try:
            url = _hub(lambda: open_pull_request(out, list(files), args.model, token=args.token))
        except _HubError as error:
            print(f"error: {error}; the files are in {out}", file=sys.stderr)
            return 1
        print(f"opened pull request {url}")
    return 0


def _current_card(args: argparse.Namespace, out: Path) -> str | None:
    """The model card to update: the Hub's when pushing (the pull request edits that one), else OUT's."""
    if args.push:
        return _hub(lambda: current_model_card(args.model, token=args.token))
    local = out / MODEL_CARD
    return local.read_text(encoding="utf-8") if local.exists() else None


class _HubError(RuntimeError):
    pass


T = TypeVar("T")


def _hub(call: Callable[[], T]) -> T:
    """Run a Hub call; any failure (network, auth, missing repo) becomes one line naming it."""
    try:
        return call()
    except Exception as error:  # the Hub's errors are many types (HTTP, network, auth); all end the same way
        raise _HubError(f"the Hub refused or could not be reached ({type(error).__name__}: {error})") from None
