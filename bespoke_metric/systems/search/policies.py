"""How a system under test uses search for a batch of questions: `query`, `rewrite` or `agent`, or the
model's own search (`native`), or none.

| policy | what the system does |
|---|---|
| `query` | the question is searched as asked; the results go into the prompt |
| `rewrite` | the system model first writes up to `queries` search queries from the question and the user context; the answer is written from all their results |
| `agent` | the model is offered a `search(query)` tool (or the plain-text protocol) and may search in up to `rounds` rounds of at most `queries` searches before it must answer |

Every step is batched across the questions: all rewrite requests go to the model together, all searches
of a round go to the engine together, every agent's round-k turn goes to the model with the others'.
A search that fails after its retries fails its question: it is never answered without its search.
A rewrite that writes no usable query, or one that loops on itself (the answers' `repetition` guard),
searches the question as asked instead: its `search` block says so (`fallback`), and a degenerate one is
marked (`Answered.degenerate`). All of it runs on one event loop, so the model's and the engine's
connections serve every round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bespoke_metric.backends.base import Backend, CallError, Completion, Request, Usage
from bespoke_metric.backends.reasoning import strip_reasoning
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.progress import ProgressHook
from bespoke_metric.calls.scheduler import CallResult, ParseError, run_sync
from bespoke_metric.judging.guards import check_repetition
from bespoke_metric.systems.calls import ask_results
from bespoke_metric.systems.prompts import agent_messages, answer_request, rewrite_request
from bespoke_metric.systems.tokens import TokenCounter

from .base import NATIVE
from .noise import result_id
from .protocol import render_search_results, results_for, rewrite_queries, search_calls, search_tool, turn_messages, without_search_lines
from .providers import SearchResult
from .record import SearchTrace, native_block
from .searcher import Searcher

POLICIES: tuple[str, ...] = ("query", "rewrite", "agent")
DEFAULT_QUERIES = 3
DEFAULT_ROUNDS = 3
DEFAULT_SEARCH_BUDGET = 1024
"""Tokens of search results in the prompt, or in each search's results an agent is shown."""

Job = tuple[str, str]
"""`(question, user-context block)`."""


@dataclass(frozen=True)
class SearchPlan:
    """How a run's system searches: with an engine (`searcher`) under a policy, by itself (`native`), or
    not at all (`none`)."""

    engine: str
    """`none`, `native`, or the engine's spec."""
    searcher: Searcher | None = None
    policy: str = "query"
    queries: int = DEFAULT_QUERIES
    """Queries a `rewrite` writes; searches an `agent` may make per round."""
    rounds: int = DEFAULT_ROUNDS
    """Rounds of search an `agent` may make before it must answer."""
    budget: int = DEFAULT_SEARCH_BUDGET
    """Tokens of results in the prompt (`query`, `rewrite`), or per search shown (`agent`)."""

    @property
    def native(self) -> bool:
        return self.engine == NATIVE


@dataclass(frozen=True)
class Answered:
    """One question's end: the answer as it came and its `search` block; or why there is no answer."""

    raw: str | None = None
    search: dict[str, Any] | None = None
    error: str | None = None
    completion: Completion | None = None
    """The model's last call, whole: which model served it, whether the output limit cut it off."""
    degenerate: dict[str, str] | None = None
    """The guard that found the rewrite degenerate (`GuardHit.to_dict()`); the question was searched instead."""


def answer_all(jobs: Sequence[Job], plan: SearchPlan, backend: Backend, *, counter: TokenCounter, cache: Cache | None,
               usage: Usage, max_tokens: int, progress: ProgressHook | None) -> list[Answered]:
    """Answer every question of `jobs` as `plan` says, one `Answered` each, in order. `progress` hears of
    each question as it ends."""
    return run_sync(_Run(plan, backend, counter, cache, usage, max_tokens, progress).answer(jobs))


@dataclass(frozen=True)
class _Run:
    """One `answer_all`: what every step of it needs."""

    plan: SearchPlan
    backend: Backend
    counter: TokenCounter
    cache: Cache | None
    usage: Usage
    max_tokens: int
    progress: ProgressHook | None

    async def answer(self, jobs: Sequence[Job]) -> list[Answered]:
        # A backend that can keep its connections for the loop (OpenAI's) keeps them for every round.
        keep, release = getattr(self.backend, "keep_session", None), getattr(self.backend, "release_session", None)
        if keep is not None and release is not None:
            await keep()
        try:
            if self.plan.searcher is None:
                requests = [answer_request(query, context, "", self.max_tokens, native_search=self.plan.native)
                            for query, context in jobs]
                return [self.final(result, None) for result in await self.ask(requests, "answer", report=True)]
            if self.plan.policy == "agent":
                return await self.agent(jobs)
            return await self.search_then_answer(jobs)
        finally:
            if keep is not None and release is not None:
                await release()
            if self.plan.searcher is not None:
                await self.plan.searcher.engine.release()

    async def ask(self, requests: Sequence[Request], purpose: str, *, report: bool = False) -> list[CallResult]:
        """The model's answers; `report`: each request is a question's last call, told to `progress`."""
        return await ask_results(self.backend, requests, purpose=purpose, cache=self.cache, usage=self.usage,
                                 progress=self.progress if report else None)

    def failed(self, reason: str) -> Answered:
        if self.progress is not None:
            self.progress("failed", 1)
        return Answered(error=reason)

    def final(self, result: CallResult, trace: SearchTrace | None, *, reported: bool = True,
              degenerate: dict[str, str] | None = None) -> Answered:
        """A question's answer from the model's last call (`reported`: `progress` heard of it already)."""
        if not result.ok:
            return Answered(error=result.error) if reported else self.failed(str(result.error))
        raw = result.text or ""
        try:
            answer = strip_reasoning(raw)
        except ParseError as error:
            return Answered(error=error.reason) if reported else self.failed(error.reason)
        if not reported and self.progress is not None:
            self.progress("done", 1)
        if self.plan.native:
            search = native_block(result.completion.search if result.completion is not None else None)
        else:
            search = trace.block(answer) if trace is not None else None
        return Answered(raw, search, completion=result.completion, degenerate=degenerate)

    async def search_round(self, traces: Sequence[SearchTrace], queries: Sequence[Sequence[str]],
                     round_: int) -> list[list[tuple[str, list[SearchResult]]] | CallError]:
        """Every question's searches of one round, in one batch: per question, each query with its
        results, or the first failure among its searches (each is recorded in its trace)."""
        assert self.plan.searcher is not None
        answers = iter(await self.plan.searcher.search([query for asked in queries for query in asked]))
        out: list[list[tuple[str, list[SearchResult]]] | CallError] = []
        for trace, asked in zip(traces, queries, strict=True):
            found: list[tuple[str, list[SearchResult]]] = []
            failure: CallError | None = None
            for query in asked:
                answer = next(answers)
                results = trace.add(round_, query, answer)
                if isinstance(answer, CallError):
                    failure = failure or answer
                elif results is not None:
                    found.append((query, results))
            out.append(failure if failure is not None else found)
        return out

    # -- query and rewrite: search first, then answer once ------------------------------------------

    async def search_then_answer(self, jobs: Sequence[Job]) -> list[Answered]:
        plan = self.plan
        traces = [SearchTrace(plan.engine, plan.policy) for _ in jobs]
        out: list[Answered | None] = [None] * len(jobs)
        queries: list[list[str]] = [[query] for query, _ in jobs]
        marks: list[dict[str, str] | None] = [None] * len(jobs)
        if plan.policy == "rewrite":
            written = await self.ask([rewrite_request(query, context, plan.queries, self.max_tokens) for query, context in jobs], "rewrite")
            for index, ((query, _), result) in enumerate(zip(jobs, written, strict=True)):
                reason = result.error
                if result.ok:
                    try:
                        text = strip_reasoning(result.text or "")
                    except ParseError as error:
                        reason = error.reason
                    else:
                        queries[index], marks[index] = _rewritten(query, text, plan.queries, traces[index])
                        continue
                out[index], queries[index] = self.failed(f"rewriting the question failed: {reason}"), []
        found = await self.search_round(traces, queries, 1)
        asking: list[int] = []
        requests: list[Request] = []
        for index, ((query, context), answer) in enumerate(zip(jobs, found, strict=True)):
            if out[index] is not None:
                continue
            if isinstance(answer, CallError):
                out[index] = self.failed(answer.reason)
                continue
            shown = _distinct([result for _, results in answer for result in results])
            first = traces[index].show(shown)
            rendered = render_search_results(shown, plan.budget, self.counter, first=first)
            asking.append(index)
            requests.append(answer_request(query, context, rendered, self.max_tokens))
        for index, result in zip(asking, await self.ask(requests, "answer", report=True), strict=True):
            out[index] = self.final(result, traces[index], degenerate=marks[index])
        return _complete(out)

    # -- agent: rounds of turns and searches, every question's round k at once ----------------------

    async def agent(self, jobs: Sequence[Job]) -> list[Answered]:
        plan = self.plan
        tools = bool(getattr(self.backend, "takes_tools", False))
        offered = (search_tool(),) if tools else ()
        conversations = [list(agent_messages(query, context, tools=tools, rounds=plan.rounds, queries=plan.queries))
                         for query, context in jobs]
        traces = [SearchTrace(plan.engine, plan.policy) for _ in jobs]
        out: list[Answered | None] = [None] * len(jobs)
        active = list(range(len(jobs)))
        for round_ in range(1, plan.rounds + 2):
            last = round_ > plan.rounds
            results = await self.ask([Request(tuple(conversations[i]), self.max_tokens, tools=offered) for i in active], "agent")
            searching: list[tuple[int, str, list[tuple[str, str]]]] = []
            for index, result in zip(active, results, strict=True):
                calls, answer = self._turn(result, tools)
                if calls and not last:
                    searching.append((index, answer, calls[: plan.queries]))
                elif calls and not (answer if tools else without_search_lines(answer)):
                    out[index] = self.failed(f"the model still asked to search after its {plan.rounds} round(s)")
                else:
                    out[index] = self.final(result, traces[index], reported=False)
            if not searching:
                break
            found = await self.search_round([traces[i] for i, _, _ in searching], [[q for _, q in calls] for _, _, calls in searching], round_)
            active = []
            for (index, answer, calls), searched in zip(searching, found, strict=True):
                if isinstance(searched, CallError):
                    out[index] = self.failed(searched.reason)
                    continue
                rendered = [results_for(query, results, plan.budget, self.counter, traces[index].show(results))
                            for query, results in searched]
                conversations[index] += turn_messages(answer, calls, rendered, tools=tools, round_=round_,
                                                      rounds_left=plan.rounds - round_)
                active.append(index)
        return _complete(out)

    @staticmethod
    def _turn(result: CallResult, tools: bool) -> tuple[list[tuple[str, str]], str]:
        """The searches an agent turn asks for, and its text without reasoning (no searches when the call
        failed or its reasoning never closed: `final` then says why)."""
        if not result.ok or result.completion is None:
            return [], ""
        try:
            answer = strip_reasoning(result.text or "")
        except ParseError:
            return [], ""
        return search_calls(result.completion, answer, tools=tools), answer


def _rewritten(question: str, text: str, count: int, trace: SearchTrace) -> tuple[list[str], dict[str, str] | None]:
    """The queries a rewrite's `text` gives, and its degenerate mark. A degenerate rewrite, or one with
    no usable query, falls back to the question (never no search), recorded in `trace.fallback`."""
    hit = check_repetition(text)
    found = rewrite_queries(text, count) if hit is None else []
    if found:
        return found, None
    trace.fallback = (f"the rewrite was degenerate ({hit.guard}: {hit.reason}); the question was searched as asked"
                      if hit is not None else "the rewrite wrote no usable query; the question was searched as asked")
    return [question], hit.to_dict() if hit is not None else None


def _complete(out: Sequence[Answered | None]) -> list[Answered]:
    missing = [index for index, answered in enumerate(out) if answered is None]
    assert not missing, f"questions {missing} were left without an end"
    return [answered for answered in out if answered is not None]


def _distinct(results: Sequence[SearchResult]) -> list[SearchResult]:
    """Each document once (several queries of a rewrite often find the same page), in order."""
    seen: dict[str, SearchResult] = {}
    for result in results:
        seen.setdefault(result_id(result), result)
    return list(seen.values())

