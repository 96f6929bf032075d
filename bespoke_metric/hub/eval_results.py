"""A results file in the Hub's Eval Results format: what a model page and a benchmark's leaderboard show.

The Hub's documentation on eval results: a model repo holds YAML files in `.eval_results/`, each a list
of entries `{dataset: {id, task_id, revision?}, value, date?, source?: {url, name?, user?}, notes?}`;
`dataset.id` is a benchmark dataset repo and `task_id` one of the tasks of its `eval.yaml` (written by
`bespoke export`, `bespoke_dataset.registration`). Scores of one benchmark made under other settings go in
another file, so each (judge, context) variant of a model has its own file. Results are added by a pull
request on the model repo, never a direct commit. The older `model-index` block of the model card
(`huggingface_hub.EvalResult`) is written too on request, for tools that read only that.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from bespoke_dataset.registration import BENCHMARK_CONFIG, BENCHMARK_TASKS, NAME
from bespoke_dataset.source import COMMIT, REPO_ID
from bespoke_dataset.vocabulary import SPLIT
from bespoke_metric.analysis.leaderboard import LABELS, Entry
from bespoke_metric.results.caveats import STAND_IN_MARK
from bespoke_metric.results.incomplete import INCOMPLETE_MARK

from .submission import SubmissionError

EVAL_RESULTS_DIR = ".eval_results"
MODEL_CARD = "README.md"
TASK_TYPE = "text-generation"
"""The model-index task type of a system answering BESPOKE's queries."""



def check_repo_id(repo_id: str, flag: str) -> str:
    """`repo_id` if it is `ORG/NAME`, else `SubmissionError` naming the flag it came from."""
    if not REPO_ID.match(repo_id):
        raise SubmissionError(f"{flag} must be a Hub repo id ORG/NAME, got {repo_id!r}")
    return repo_id


def context(results: Entry) -> str | None:
    """The system's user-context configuration, when the results file records it."""
    system = results.results.system or {}
    return system.get("context")


def variant_file(results: Entry) -> str:
    """`.eval_results/bespoke_<context>_<judge>.yaml`: one file per way of scoring a model."""
    parts = [part for part in (context(results), str(results.judge["spec"])) if part]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", "_".join(parts)).strip("-")
    return f"{EVAL_RESULTS_DIR}/bespoke_{slug}.yaml"


def notes(results: Entry, figure: str) -> str:
    """What makes the figure comparable, in words: judge, protocol, context, data, queries, standard error."""
    judge, data = results.judge, results.results.data
    settings = ", ".join(f"{key} {judge[key]}" for key in ("max_shots", "recall_mode") if judge.get(key) is not None)
    revision = data.get("revision") or (f"local, fingerprint {str(data.get('fingerprint'))[:12]}" if data.get("fingerprint") else "local")
    scored = results.results.summary.get("scored", {}).get(figure)  # None for the average: each figure has its own
    given = len(results.results.items)
    stderr = (results.results.stderr or {}).get(figure)
    parts = [
        f"judge {judge['spec']} (protocol {judge.get('protocol_version', '?')}{'; ' + settings if settings else ''})",
        f"context {context(results) or 'not recorded'}",
        f"data {data.get('source')}@{revision}",
        f"{scored}/{given} queries scored" if scored is not None else f"{given} queries",
    ]
    if stderr is not None:
        parts.append(f"bootstrap standard error {stderr:.2f}")
    text = "; ".join(parts)
    if results.proxy:
        text = f"PROXY judge: not comparable with LLM-judge results; {text}"
    if results.stand_in:
        text = f"{STAND_IN_MARK}: answered by a stand-in (a rule or a test server), not a model; {text}"
    lost = results.results.incomplete
    if lost is not None:
        text = f"{INCOMPLETE_MARK}: the run lost {lost.lost}, left out of the figures; {text}"
    return text


def _revision(results: Entry, dataset: str) -> str | None:
    # the data's commit is the dataset's revision only when the results were scored on that very repo
    data = results.results.data
    revision = str(data.get("revision") or "")
    return revision if data.get("source") == dataset and COMMIT.match(revision) else None


def eval_result_entries(results: Entry, dataset: str, *, source_url: str | None = None) -> list[dict[str, Any]]:
    """One entry per registered task the results have a figure for, the value being the file's own."""
    summary = results.results.summary
    revision = _revision(results, dataset)
    source = {
        "url": source_url or f"https://huggingface.co/datasets/{dataset}",
        "name": f"bespoke-eval {results.results.bespoke_eval_version}, judge {results.judge['spec']}",
    }
    entries = []
    for task in BENCHMARK_TASKS:
        value = summary.get(task.id)
        if value is None:
            continue
        entry: dict[str, Any] = {"dataset": {"id": dataset, "task_id": task.id, **({"revision": revision} if revision else {})},
                                 "value": float(value)}
        if results.results.created:
            entry["date"] = results.results.created
        entry["source"] = dict(source)
        entry["notes"] = notes(results, task.id)
        entries.append(entry)
    return entries


def render_entries(entries: list[dict[str, Any]]) -> str:
    return yaml.safe_dump(entries, sort_keys=False, allow_unicode=True, width=120)


def model_index_results(results: Entry, dataset: str, *, source_url: str | None = None) -> list[Any]:
    """The same figures as `huggingface_hub.EvalResult`s, for the model card's `model-index`."""
    from huggingface_hub import EvalResult

    return [
        EvalResult(
            task_type=TASK_TYPE, dataset_type=entry["dataset"]["id"], dataset_name=NAME, dataset_config=BENCHMARK_CONFIG,
            dataset_split=SPLIT, dataset_revision=entry["dataset"].get("revision"), metric_type=entry["dataset"]["task_id"],
            metric_name=LABELS[entry["dataset"]["task_id"]], metric_value=entry["value"],
            source_name=entry["source"]["name"], source_url=entry["source"]["url"],
        )
        for entry in eval_result_entries(results, dataset, source_url=source_url)
    ]


def update_model_card(card_text: str | None, model: str, new: list[Any]) -> str:
    """The model card with `new` in its `model-index`: earlier results of the same dataset, metric and
    source are replaced, every other result and the card's text are kept."""
    from huggingface_hub import ModelCard, ModelCardData

    card = ModelCard(card_text or f"---\n{ModelCardData(model_name=model).to_yaml()}\n---\n\n# {model}\n")
    replaced = {(r.dataset_type, r.metric_type, r.source_name) for r in new}
    kept = [r for r in (card.data.eval_results or []) if (r.dataset_type, r.metric_type, r.source_name) not in replaced]
    card.data.eval_results = kept + new
    card.data.model_name = card.data.model_name or model
    return str(card)


def submission_files(
    results: Entry, *, model: str, dataset: str, source_url: str | None = None,
    model_index: bool = False, card_text: str | None = None,
) -> dict[str, str]:
    """`{path in the model repo: text}` for a checked results file: its `.eval_results` file and, with
    `model_index`, the model card (`card_text`, the current one, if any) with its `model-index` updated."""
    check_repo_id(model, "--model")
    check_repo_id(dataset, "--dataset")
    entries = eval_result_entries(results, dataset, source_url=source_url)
    files = {variant_file(results): render_entries(entries)}
    if model_index:
        files[MODEL_CARD] = update_model_card(card_text, model, model_index_results(results, dataset, source_url=source_url))
    return files


def current_model_card(model: str, *, token: str | None = None) -> str | None:
    """The model repo's card on the Hub, or None when it has none."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import EntryNotFoundError

    try:
        path = HfApi(token=token).hf_hub_download(repo_id=model, filename=MODEL_CARD)
    except EntryNotFoundError:
        return None
    return Path(path).read_text(encoding="utf-8")


def open_pull_request(out: Path, paths: list[str], model: str, *, token: str | None = None) -> str:
    """Open a pull request (never a direct commit) on the model repo adding `paths`, files under `out`;
    returns its URL."""
    from huggingface_hub import CommitOperationAdd, HfApi

    operations = [CommitOperationAdd(path_in_repo=path, path_or_fileobj=str(out / path)) for path in paths]
    commit = HfApi(token=token).create_commit(
        repo_id=model, repo_type="model", operations=operations, create_pr=True,
        commit_message=f"Add {NAME} evaluation results",
        commit_description="Written by `bespoke submit` (bespoke-eval): " + ", ".join(f"`{path}`" for path in paths),
    )
    return str(commit.pr_url)
