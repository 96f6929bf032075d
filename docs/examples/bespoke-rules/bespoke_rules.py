"""A bespoke-eval engine plugin: `rules:MODEL`, a stand-in LLM that answers the judge's prompts by a rule.

A real engine would call its provider's API in `complete`; this one answers in-process, so the example
runs anywhere. Being an LLM engine (`backend=`), it is judged through the BESPOKE protocol like `openai:`
or `hf:`: bespoke-eval builds the prompts, parses the answers, caches, retries and aggregates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from bespoke_metric.backends.base import Completion, OnDone, Request
from bespoke_metric.backends.options import option
from bespoke_metric.backends.registry import Engine
from bespoke_metric.judging.judges import JudgeKind
from bespoke_metric.testing.judge_responder import judge_answer


@dataclass(frozen=True)
class RulesOptions:
    """What `make_judge("rules:...", ...)` takes besides the protocol's options."""

    temperature: float | None = option(help="accepted for the sake of the example; the rule ignores it")


class RulesBackend:
    """Answers every judge prompt with the protocol's format, scoring how much of the need a response repeats."""

    name = "rules"
    one_batch = False
    takes_tools = False
    searches = False

    def __init__(self, model: str, options: RulesOptions) -> None:
        self.model = model
        self.temperature = options.temperature

    def identity(self) -> dict[str, Any]:
        # what determines an answer besides the request: part of the cache key and the results file
        return {"engine": "rules", "model": self.model, "rule": "need-words-v1"}

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        for index, request in enumerate(requests):
            text = judge_answer({"messages": list(request.messages)})
            # a rule answered, not a model: no served model to check, and no cost
            on_done(index, Completion(text, stand_in=True))

    def close(self) -> None:
        pass


def build(model: str, options: RulesOptions) -> RulesBackend:
    return RulesBackend(model, options)


ENGINE = Engine("rules", RulesOptions, backend=build)

# a rule approximates a judge: its results are a proxy's, ranked only with --allow-proxy
JUDGE = JudgeKind("rules", proxy=True)
