"""The call scheduler: what every run of requests needs, whatever the backend.

`run_requests` looks every request up in the cache, sends the misses to the backend in one go, writes
each completion to the cache the moment it lands (so a killed run, rerun, pays only for the calls that
had not finished), parses each answer, and re-asks the ones that cannot be parsed with a repair request
(up to `max_parse_retries` times). An answer the output limit cut off (a model looping, or rambling) is
never parsed: it is re-asked once (`RUN_ON_RETRIES`), its repair turn showing only its start
(`RUN_ON_ECHO_CHARS`), and counted (`CallResult.truncated`, `Usage.truncated`); cut off again, the request
fails saying so. Identical requests within a round are sent once. Every request ends as exactly one
`CallResult`: a parsed value, or an error saying why not — never a silent default.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Coroutine, Sequence, TypeVar

from bespoke_metric.backends.base import Backend, CallError, Completion, Outcome, ParseError, Request, Usage
from bespoke_metric.backends.web_search import searches_made

from .cache import Cache, key_for
from .progress import ProgressBar, ProgressHook

T = TypeVar("T")

Parse = Callable[[int, str], Any]
"""`parse(index, text) -> value`, raising `ParseError` for an answer that cannot be read."""
Repair = Callable[[Request, str, str], Request]
"""`repair(request, bad_text, reason) -> request` asking the model to fix its answer."""

RUN_ON_RETRIES = 1
"""Re-asks an answer cut off at the output limit gets: a model that ran on once mostly runs on again, and
each try costs the whole output limit."""
RUN_ON_ECHO_CHARS = 1000
"""How much of a cut-off answer its re-ask shows the model: the start, not the loop it ran into."""
RUN_ON = "the answer was cut off at the output limit before it ended"
"""The reason a cut-off answer is re-asked with."""


@dataclass
class CallResult:
    """The end of one request."""

    text: str | None = None
    """The last answer received (None if the call itself failed)."""
    value: Any = None
    """`parse(index, text)`, or None without a parser or on failure."""
    error: str | None = None
    """Why there is no value: the call failed, or the answer could not be parsed after the retries."""
    cached: bool = False
    """True when every answer this request needed came from the cache."""
    attempts: int = 0
    """Answers received for it: 1, plus one per repair round."""
    usage: Usage = field(default_factory=Usage)
    """What this request cost: its share of the run's `usage` (a call answering several identical requests
    is counted on the first), so a caller can say what each item, or each file, cost."""
    completion: Completion | None = None
    """The last answer received, whole (its tool calls, its native search), None if the call failed."""
    truncated: int = 0
    """Answers received for it that the output limit cut off (at most `RUN_ON_RETRIES` + 1)."""

    @property
    def ok(self) -> bool:
        return self.error is None


async def run_requests(
    backend: Backend,
    requests: Sequence[Request],
    *,
    cache: Cache | None = None,
    key_extra: dict[str, Any] | None = None,
    parse: Parse | None = None,
    repair: Repair | None = None,
    max_parse_retries: int = 2,
    progress: ProgressHook | bool | None = None,
    usage: Usage | None = None,
) -> list[CallResult]:
    """Run `requests` through `backend`, one `CallResult` per request, in order.

    Args:
        cache: where answers are looked up first and stored as they land.
        key_extra: more that determines an answer, for the cache key (e.g. the protocol version).
        parse: reads an answer; a `ParseError` sends the request to repair.
        repair: builds the follow-up request for an unparseable answer; without it, such an answer
            fails at once (a deterministic model would only repeat it).
        max_parse_retries: repair rounds at most.
        progress: a `ProgressHook` called once per request as it ends, or True for a tqdm bar.
        usage: counters to add to: `calls` (answers from the backend), `cached` (answers from the
            cache), `failed` (requests that ended in error), tokens of the calls made. Wall time is the
            caller's to measure (runs may overlap). Each `CallResult.usage` holds the request's share.
    """
    own_bar = ProgressBar(len(requests)) if progress is True else None
    hook: ProgressHook | None = own_bar if own_bar is not None else (progress or None)  # type: ignore[assignment]
    run = _Run(backend, backend.identity(), cache, key_extra, _Reading(parse, repair, max_parse_retries),
               usage if usage is not None else Usage(), hook)
    jobs = [_Job(request) for request in requests]
    pending = list(range(len(jobs)))
    try:
        while pending:
            pending = await _round(run, jobs, pending)
    finally:
        if own_bar is not None:
            own_bar.close()
    return [job.result for job in jobs]


@dataclass(frozen=True)
class _Reading:
    """How answers are read: the parser, and the repair turns an unreadable answer gets."""

    parse: Parse | None
    repair: Repair | None
    max_parse_retries: int


@dataclass(frozen=True)
class _Run:
    """What stays fixed for a whole run: where requests go, how answers are kept, read and reported."""

    backend: Backend
    identity: dict[str, Any]
    cache: Cache | None
    key_extra: dict[str, Any] | None
    reading: _Reading
    usage: Usage
    hook: ProgressHook | None


@dataclass
class _Job:
    """One request's way through the rounds: the request it is at (the original, then its repairs) and
    its result so far."""

    request: Request
    result: CallResult = field(default_factory=CallResult)


async def _round(run: _Run, jobs: list[_Job], pending: list[int]) -> list[int]:
    """One round over the `pending` jobs: cache hits settle at once, the misses go to the backend in one
    go (identical requests once). Returns the jobs sent to repair, for the next round."""
    keys = {index: key_for(run.identity, jobs[index].request, run.key_extra) for index in pending}
    hits = run.cache.get_many(keys.values()) if run.cache is not None else {}
    repairs: list[int] = []
    misses: dict[str, list[int]] = {}
    for index in pending:
        hit = hits.get(keys[index])
        if hit is None:
            misses.setdefault(keys[index], []).append(index)
            continue
        for usage in (run.usage, jobs[index].result.usage):
            usage.cached += 1
            _count_answer(usage, hit, run.backend.model)
        if not _settle(run, jobs[index], index, hit, cached=True):
            repairs.append(index)
    if misses:
        landing = _Landing(run, jobs, misses)
        await run.backend.complete([jobs[indices[0]].request for indices in misses.values()], landing)
        repairs += landing.repairs + landing.settle_unanswered()
    return repairs


class _Landing:
    """The `on_done` of one round's backend call: each answer is cached and counted the moment it lands
    (so a killed run, rerun, pays only for what had not landed), then settled for every job that asked it."""

    def __init__(self, run: _Run, jobs: list[_Job], misses: dict[str, list[int]]) -> None:
        self.run = run
        self.jobs = jobs
        self.keys = list(misses)
        self.misses = misses
        self.answered: set[int] = set()
        self.repairs: list[int] = []
        """Jobs whose answer could not be read: their repair request goes in the next round."""

    def __call__(self, position: int, outcome: Outcome) -> None:
        run = self.run
        if position in self.answered:
            raise RuntimeError(f"{run.backend.name} backend reported request {position} twice")
        self.answered.add(position)
        key = self.keys[position]
        first, *others = self.misses[key]
        for usage in (run.usage, self.jobs[first].result.usage):  # a shared call counts on its first asker
            _count(usage, outcome, run.backend.model)
        if isinstance(outcome, Completion):  # who answered, on every asker (as a cache hit is): a cell judged
            for index in others:  # entirely through another's calls still says its judge's model, or a stand-in
                _count_answer(self.jobs[index].result.usage, outcome, run.backend.model)
        if isinstance(outcome, Completion) and run.cache is not None:
            run.cache.put(key, outcome)
        self._settle_all(key, outcome)

    def settle_unanswered(self) -> list[int]:
        """Settle the requests the backend never reported as failed; returns those sent to repair (none)."""
        before = len(self.repairs)
        for position, key in enumerate(self.keys):
            if position not in self.answered:
                self._settle_all(key, CallError(f"{self.run.backend.name} backend returned no outcome"))
        return self.repairs[before:]

    def _settle_all(self, key: str, outcome: Outcome) -> None:
        for index in self.misses[key]:
            if not _settle(self.run, self.jobs[index], index, outcome, cached=False):
                self.repairs.append(index)


def _count(usage: Usage, outcome: Outcome, model: str) -> None:
    """Add a call the backend made to the usage counters."""
    usage.calls += 1
    if isinstance(outcome, Completion):
        usage.input_tokens += outcome.input_tokens
        usage.output_tokens += outcome.output_tokens
        usage.cached_input_tokens += outcome.cached_input_tokens
        usage.cache_write_tokens += outcome.cache_write_tokens
        usage.reasoning_tokens += outcome.reasoning_tokens
        if outcome.provider_cost is not None:
            usage.provider_cost += outcome.provider_cost
            usage.provider_costed += 1
        usage.web_searches += searches_made(outcome.search)
        _count_answer(usage, outcome, model)


def _count_answer(usage: Usage, completion: Completion, model: str) -> None:
    """Count an answer, made or from the cache: whether the output limit cut it off, and the model that served
    it: the one the provider names, else `model`, the one asked for (a local model is the one loaded), keeping
    what the provider said of its stage (`model_status`); an answer a stand-in made is counted as such, served
    by no model."""
    usage.truncated += completion.truncated
    if completion.stand_in:
        usage.stand_in += 1
        return
    served = completion.served_model or model
    usage.served_models[served] = usage.served_models.get(served, 0) + 1
    if completion.model_status:
        usage.model_status = dict(completion.model_status)


def _settle(run: _Run, job: _Job, index: int, outcome: Outcome, *, cached: bool) -> bool:
    """Record an answer (or a failed call) on its job. True when the job has ended; False when its answer
    could not be read and a repair request replaced `job.request`, for the next round."""
    result = job.result
    result.cached = cached if result.attempts == 0 else (result.cached and cached)
    result.attempts += 1
    if isinstance(outcome, CallError):
        result.text, result.value, result.error, result.completion = None, None, outcome.reason, None
    else:
        result.text, result.error, result.completion = outcome.text, None, outcome
        result.truncated += outcome.truncated
        reason = _read(run.reading, result, index, outcome)
        if reason is not None:
            reading = run.reading
            ran_on_again = outcome.truncated and result.truncated > RUN_ON_RETRIES
            if reading.repair is not None and result.attempts <= reading.max_parse_retries and not ran_on_again:
                shown = outcome.text[:RUN_ON_ECHO_CHARS] if outcome.truncated else outcome.text
                job.request = reading.repair(job.request, shown, reason)
                return False
            result.value = None
            result.error = (f"cut off at the output limit in {result.truncated} of {result.attempts} answers "
                            f"({outcome.output_tokens} tokens the last): a model that runs on is re-asked once"
                            if ran_on_again else f"unparseable answer after {result.attempts} attempt(s): {reason}")
    if result.error is not None:
        for usage in (run.usage, result.usage):
            usage.failed += 1
    if run.hook is not None:
        run.hook("failed" if result.error is not None else "cached" if result.cached else "done", 1)
    return True


def _read(reading: _Reading, result: CallResult, index: int, completion: Completion) -> str | None:
    """Parse an answer into `result.value`; the reason it cannot be read, or None."""
    if reading.parse is None:
        return None
    try:
        if completion.truncated:
            raise ParseError(RUN_ON)
        result.value = reading.parse(index, completion.text)
    except ParseError as err:
        return err.reason
    return None


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from synchronous code. Inside a running event loop (a notebook) it runs on a
    worker thread with its own loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = asyncio.run(coroutine)
        except BaseException as err:  # re-raised in the caller's thread
            box["error"] = err

    thread = threading.Thread(target=work, name="run_sync")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


def run_requests_sync(backend: Backend, requests: Sequence[Request], **options: Any) -> list[CallResult]:
    """`run_requests` for synchronous code (see `run_sync`)."""
    return run_sync(run_requests(backend, requests, **options))
