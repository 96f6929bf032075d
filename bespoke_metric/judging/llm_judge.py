"""The paper's judge: the protocol's prompts sent through any backend, answers parsed strictly.

One item costs one personalization call plus, for recall, one call per gold claim (`per-claim`, the
paper's protocol) or one structured call for all of them (`batched`). Every call of a run goes to the
scheduler at once, so the backend decides how to overlap them.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal

from bespoke_dataset.errors import UserError
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.backends.base import MODEL_DEFAULT, Backend, Request, Usage, backend_description
from bespoke_metric.backends.options import keyed_values
from bespoke_metric.backends.schema import LINES
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.progress import ProgressBar, ProgressHook
from bespoke_metric.calls.scheduler import CallResult, run_requests
from bespoke_metric.results import ItemResult
from bespoke_metric.results.aggregation import recall_from_verdicts
from bespoke_metric.results.incomplete import recall_error_reason

from . import protocol
from .config import ProtocolOptions
from .judge import Judge, JudgeItem

if TYPE_CHECKING:
    from bespoke_metric.calls.plan import ReadOnlyCache


@dataclass(frozen=True)
class _Call:
    """What one request is for: the item, and which part of its judgment."""

    item: int
    kind: Literal["personalization", "claim", "claims"]
    claim: int = -1


class LLMJudge(Judge):
    """A judge made of the BESPOKE protocol and an LLM backend (the grader model is an argument)."""

    backend: Backend

    def __init__(
        self,
        backend: Backend,
        options: ProtocolOptions | None = None,
        *,
        spec: str | None = None,
        cache: Cache | ReadOnlyCache | str | os.PathLike[str] | None = None,
        proxy: bool = False,
    ) -> None:
        """
        Args:
            backend: the judge model's.
            options: how it applies the protocol (`ProtocolOptions`; None: every default), each None the default:
                `max_shots` 5, `recall` per-claim, `with_feedback` and `personalized` on, `structured` off,
                `recall_reasoning_effort` none sent, `max_parse_retries` 2, `max_tokens` the protocol's per kind of call,
                `progress` on, `repeat` 0.
            spec: its name in results (default `ENGINE:MODEL` of the backend).
            cache: where its answers are kept (a path is opened here, once the backend is built).
            proxy: its engine approximates a judge (`judges.JudgeKind.proxy`, a rule): never ranked as a real judge.
        """
        options = options or ProtocolOptions()
        max_tokens = options.max_tokens
        self.options = options
        self.max_shots = 5 if options.max_shots is None else options.max_shots
        self.recall = options.recall or "per-claim"
        if self.max_shots < 0:
            raise UserError(f"--max-shots must be >= 0, got {self.max_shots}")
        if options.repeat < 0:
            raise ValueError(f"repeat must be >= 0, got {options.repeat}")
        if max_tokens is not None and max_tokens < 1:
            raise UserError(f"--judge-max-tokens must be at least 1, got {max_tokens}")
        super().__init__(spec or f"{backend.name}:{backend.model}", proxy=proxy)
        self.backend = backend
        # a path is opened here, once the backend is built: a judge that cannot be made leaves no cache file
        self.cache = Cache(cache) if isinstance(cache, (str, os.PathLike)) else cache
        self.with_feedback = options.with_feedback is not False
        self.personalized = options.personalized is not False
        # an engine that can hold no answer to a schema (a Claude without structured outputs or a forced tool)
        # is asked for the paper's lines instead; `describe` records it as the constraint
        self.asked_structured = bool(options.structured)
        self.structured = self.asked_structured and backend.constraint != LINES
        self.recall_effort = options.recall_reasoning_effort
        """The reasoning effort the recall checks are sent at (None: none, the model's own default, as the
        official evaluator sends them); the judgments keep the engine's (`high` for OpenAI's reasoning models)."""
        judged_at = backend.identity().get("settings", {}).get("reasoning_effort")
        # only where it differs from the judgments' does a check carry an effort of its own (and a key apart)
        self._recall_request_effort = (None if self.recall_effort == judged_at else self.recall_effort or MODEL_DEFAULT)
        self.max_parse_retries = 2 if options.max_parse_retries is None else options.max_parse_retries
        # None keeps the protocol's own output budget per kind of call.
        self.token_budget = {} if max_tokens is None else {"max_tokens": max_tokens}
        self.progress = options.progress is not False
        self.repeat = options.repeat

    @property
    def key_extra(self) -> dict[str, Any]:
        """The judge's own part of every cache key: the protocol version, and each of its options that the key
        takes beside the requests (`keyed_values`: a `repeat` from 1 on; repeat 0 keeps the keys of every call
        made before repeats existed)."""
        return {"protocol_version": protocol.PROTOCOL_VERSION, **keyed_values(self.options)}

    def describe(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            **backend_description(self.backend),
            "protocol_version": protocol.PROTOCOL_VERSION,
            "max_shots": self.max_shots,
            "recall_mode": self.recall,
            "with_feedback": self.with_feedback,
            "personalized": self.personalized,
            "structured": self.structured,
            # how the engine held the JSON answers to their schema (schema.GRAMMAR, JSON_SCHEMA); None for lines
            # asked for, LINES where JSON was asked for and the engine could not hold it
            "constraint": self.backend.constraint if self.asked_structured else None,
            "recall_effort": self.recall_effort,
            "max_tokens": self.token_budget.get("max_tokens"),
            "proxy": self.proxy,
            **({"repeat": self.repeat} if self.repeat else {}),  # repeat 0 is the judge as it always was
        }

    def requests(self, items: list[JudgeItem]) -> tuple[list[Request], list[_Call]]:
        """Every request needed to judge `items`, and what each is for (pure: tests inspect prompts here)."""
        requests: list[Request] = []
        calls: list[_Call] = []
        for index, item in enumerate(items):
            requests.append(
                protocol.personalization_request(
                    item.row,
                    item.response,
                    max_shots=self.max_shots,
                    with_feedback=self.with_feedback,
                    personalized=self.personalized,
                    structured=self.structured,
                    **self.token_budget,
                )
            )
            calls.append(_Call(index, "personalization"))
            claims = list(item.row["claims"])
            if self.recall == "none" or not claims:  # no claims: recorded as an error when recall is read
                continue
            if self.recall == "batched":
                requests.append(self._recall(protocol.batched_recall_request(claims, item.response, **self.token_budget)))
                calls.append(_Call(index, "claims"))
            else:
                for claim_index, claim in enumerate(claims):
                    requests.append(self._recall(protocol.claim_request(claim, item.response, structured=self.structured,
                                                                        **self.token_budget)))
                    calls.append(_Call(index, "claim", claim_index))
        return requests, calls

    def _recall(self, request: Request) -> Request:
        """A recall check at its own effort, where that differs from the judgments'."""
        if self._recall_request_effort is None:
            return request
        return dataclasses.replace(request, reasoning_effort=self._recall_request_effort)

    def _parser(self, calls: list[_Call], items: list[JudgeItem]) -> Callable[[int, str], Any]:
        def parse(index: int, text: str) -> Any:
            call = calls[index]
            if call.kind == "personalization":
                return protocol.parse_personalization(text)
            if call.kind == "claim":
                return protocol.parse_claim_verdict(text)
            return protocol.parse_batched_recall(text, len(items[call.item].row["claims"]))

        return parse

    async def judge(self, items: list[JudgeItem], progress: ProgressHook | None = None) -> list[ItemResult]:
        requests, calls = self.requests(items)
        label = self.spec + (f" (repeat {self.repeat})" if self.repeat else "")
        with ProgressBar(len(requests), desc=label, disable=progress is not None or not self.progress) as bar:
            outcomes = await run_requests(
                self.backend,
                requests,
                cache=self.cache,
                key_extra=self.key_extra,
                parse=self._parser(calls, items),
                repair=protocol.repair_request,
                max_parse_retries=self.max_parse_retries,
                progress=progress if progress is not None else bar,
                usage=self.usage,
            )
        results = [ItemResult(str(item.row["user"]), str(item.row["query_id"]), usage=Usage()) for item in items]
        verdicts: list[list[bool | None]] = [[None] * len(item.row["claims"]) for item in items]
        for call, outcome in zip(calls, outcomes, strict=True):
            _apply(results[call.item], verdicts[call.item], call, outcome)
            results[call.item].usage.add(outcome.usage)  # type: ignore[union-attr]
        if self.recall != "none":
            for item, result, item_verdicts in zip(items, results, verdicts, strict=True):
                _finish_recall(item, result, item_verdicts)
        return results

    @property
    def judges_recall(self) -> bool:
        return self.recall != "none"

    def close(self) -> None:
        self.backend.close()
        if self.cache is not None:
            self.cache.close()


def _apply(result: ItemResult, verdicts: list[bool | None], call: _Call, outcome: CallResult) -> None:
    if call.kind == "personalization":
        if outcome.error is not None:
            result.errors.extend({"metric": dimension, "reason": outcome.error} for dimension in DIMENSIONS)
            return
        judgment = outcome.value
        for dimension in DIMENSIONS:
            result.scores[dimension] = judgment.scores[dimension]
            result.feedback[dimension] = judgment.feedback[dimension]
    elif outcome.error is not None:
        claim = None if call.kind == "claims" else call.claim + 1
        result.errors.append({"metric": "recall", "reason": recall_error_reason(claim, outcome.error)})
    elif call.kind == "claims":
        verdicts[:] = list(outcome.value)
    else:
        verdicts[call.claim] = bool(outcome.value)


def _finish_recall(item: JudgeItem, result: ItemResult, verdicts: list[bool | None]) -> None:
    claims = list(item.row["claims"])
    result.claim_verdicts = verdicts
    result.matched_claims = [claim for claim, verdict in zip(claims, verdicts, strict=True) if verdict]
    # An unanswered claim makes recall unknown, never a silent False.
    result.recall = recall_from_verdicts(verdicts)
    if not claims:
        result.errors.append({"metric": "recall", "reason": "the query has no gold claims"})
