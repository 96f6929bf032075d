"""The call scheduler: what every run of requests needs, whatever the backend.

`run_requests` looks every request up in the cache, sends the misses to the backend in one go, writes
each completion to the cache the moment it lands (so a killed run, rerun, pays only for the calls that
had not finished), parses each answer, and re-asks the ones that cannot be parsed with a repair request
(up to `max_parse_retries` times). Identical requests within a round are sent once. Every request ends
as exactly one `CallResult`: a parsed value, or an error saying why not — never a silent default.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any, Callable, Coroutine, Sequence, TypeVar

from bespoke_metric.backends.base import Backend, CallError, Completion, Outcome, Request, Usage
from .cache import Cache, key_for
from .progress import ProgressBar, ProgressHook


class ParseError(ValueError):
    """An answer that cannot be read unambiguously (a parser raises it; the scheduler then asks for a repair).
    `reason` says why, in one short sentence."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


T = TypeVar("T")

Parse = Callable[[int, str], Any]
"""`parse(index, text) -> value`, raising `ParseError` for an answer that cannot be read."""
Repair = Callable[[Request, str, str], Request]
"""`repair(request, bad_text, reason) -> request` asking the model to fix its answer."""


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
    completion: Completion | None = None
    """The last answer received, whole (its tool calls, its native search), None if the call failed."""

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
            caller's to measure (runs may overlap).
    """
    own_bar = ProgressBar(len(requests)) if progress is True else None
    hook: ProgressHook | None = own_bar if own_bar is not None else (progress or None)  # type: ignore[assignment]
    usage = usage if usage is not None else Usage()
    identity = backend.identity()
    results = [CallResult() for _ in requests]
    current = list(requests)  # the request each index is at: the original, then its repairs
    pending = list(range(len(requests)))
    try:
        while pending:
            retry: list[int] = []

            def settle(index: int, outcome: Outcome, cached: bool) -> None:
                result = results[index]
                result.cached = cached if result.attempts == 0 else (result.cached and cached)
                result.attempts += 1
                if isinstance(outcome, CallError):
                    result.text, result.value, result.error, result.completion = None, None, outcome.reason, None
                else:
                    result.text, result.error, result.completion = outcome.text, None, outcome
                    if parse is not None:
                        try:
                            if outcome.truncated:
                                raise ParseError("the answer was cut off at the output limit before it ended")
                            result.value = parse(index, outcome.text)
                        except ParseError as err:
                            if repair is not None and result.attempts <= max_parse_retries:
                                current[index] = repair(current[index], outcome.text, err.reason)
                                retry.append(index)
                                return
                            result.value = None
                            result.error = f"unparseable answer after {result.attempts} attempt(s): {err.reason}"
                if result.error is not None:
                    usage.failed += 1
                if hook is not None:
                    hook("failed" if result.error is not None else "cached" if result.cached else "done", 1)

            keys = {index: key_for(identity, current[index], key_extra) for index in pending}
            hits = cache.get_many(keys.values()) if cache is not None else {}
            misses: dict[str, list[int]] = {}
            for index in pending:
                hit = hits.get(keys[index])
                if hit is not None:
                    usage.cached += 1
                    settle(index, hit, cached=True)
                else:
                    misses.setdefault(keys[index], []).append(index)

            if misses:
                unique = list(misses)
                answered: set[int] = set()

                def on_done(position: int, outcome: Outcome) -> None:
                    if position in answered:
                        raise RuntimeError(f"{backend.name} backend reported request {position} twice")
                    answered.add(position)
                    key = unique[position]
                    usage.calls += 1
                    if isinstance(outcome, Completion):
                        usage.input_tokens += outcome.input_tokens
                        usage.output_tokens += outcome.output_tokens
                        if cache is not None:
                            cache.put(key, outcome)
                    for index in misses[key]:
                        settle(index, outcome, cached=False)

                await backend.complete([current[misses[key][0]] for key in unique], on_done)
                for position, key in enumerate(unique):
                    if position not in answered:
                        for index in misses[key]:
                            settle(index, CallError(f"{backend.name} backend returned no outcome"), cached=False)
            pending = retry
    finally:
        if own_bar is not None:
            own_bar.close()
    return results


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
