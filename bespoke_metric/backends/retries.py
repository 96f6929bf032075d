"""Calls to a hosted model API: paced under the account's limits, a limit on calls in flight, retries with
backoff, a run-wide retry budget.

Every API engine (`openai:`, `anthropic:`, `perplexity:`, `gemini:`) and search API sends its calls through
one `Caller`. A call waits first for the account's rate limits (`pacing.Pacer`: the rates the user gave, else
those the provider's headers state) and for a slot among the calls in flight (`pacing.AdaptiveLimit`: halved on
a refusal, regained as answers flow). A refusal for a rate limit (a 429) holds every call back for the wait the
provider asks and is sent again: it spends no retry, since it says nothing of the endpoint's health, and fails a
call only once the call has waited on limits longer than `RetryPolicy.max_limit_wait`. A spent quota
(`CallFailed.quota`) is raised by the engine as `limits.QuotaExhaustedError`, which stops the run. Other
failures that may pass (5xx, timeouts, dropped connections) are retried with exponential backoff and jitter,
honouring the server's `Retry-After`; a budget for the whole life of the backend stops a dead endpoint from
being hammered (once it is spent, calls that fail are not retried and calls not yet sent fail at once); and an
endpoint that never answered a single call (a judge that is down, a wrong `--base-url`) fails every call within
seconds instead of backing off for minutes. An engine's part is one attempt: an awaitable that returns a
`Completion` or raises `CallFailed`; `Client` is the part of an API engine's backend that runs a batch of
requests through its caller.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import re
import time
import weakref
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Sequence

from bespoke_dataset.errors import UserError

from .base import CallError, Completion, EngineError, OnDone, Outcome, Request
from .http import CallFailed
from .limits import Cost, Tier
from .pacing import AdaptiveLimit, Pacer, duration

Attempt = Callable[[], Awaitable[Completion]]
"""One try at a call: a completion, or `CallFailed`."""

UNREACHABLE_RETRIES = 2
"""Retries of a call to an endpoint that no connection was ever made to, before every call fails."""


@dataclass(frozen=True)
class RetryPolicy:
    """How failed calls are retried."""

    max_retries: int = 6
    """Retries per call."""
    retry_budget: int = 500
    """Retries for the whole life of a backend, all calls together."""
    backoff_base: float = 1.0
    """The n-th retry waits about `backoff_base * 2**n` seconds (with jitter), ..."""
    backoff_max: float = 60.0
    """... at most this, unless the server says how long with `Retry-After`: its wait is kept as given."""
    max_retry_wait: float = 600.0
    """A `Retry-After` longer than this fails the call instead of waiting (one of exactly this long is waited);
    a rate limit's wait is never cut so, only by `max_limit_wait`."""
    max_limit_wait: float | None = None
    """How long one call keeps waiting on rate limits, from its first refusal, before it fails saying so
    (None: `limits.DEFAULT_MAX_WAIT_S`)."""

    @classmethod
    def of(cls, options: Any) -> "RetryPolicy":
        """The policy an engine's options (`options.ClientOptions`) give: its fields given there, the rest defaults."""
        return cls(**{item.name: getattr(options, item.name) for item in dataclasses.fields(cls)
                      if getattr(options, item.name) is not None})

    def backoff(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry `attempt + 1`; None when the server asks for longer than
        `max_retry_wait` (the call then fails instead of waiting)."""
        jitter = random.uniform(0.0, 0.25 * self.backoff_base)
        if retry_after is not None:  # honour the server's wait, beyond backoff_max too, spread a little
            return None if retry_after > self.max_retry_wait else retry_after + jitter
        return min(self.backoff_max, self.backoff_base * 2**attempt) * random.uniform(0.5, 1.0) + jitter


def check_timeout(timeout: float, flag: str = "--timeout") -> float:
    """`timeout` (seconds per call), refused as `--concurrency` is when it is no positive number: a call with
    no time to answer could only fail."""
    if not timeout > 0:  # NaN too
        raise UserError(f"{flag} must be more than 0 seconds, got {timeout:g}")
    return timeout


def scrub_secret(text: str, secret: str) -> str:
    """`text` without `secret` or any bearer token. A short placeholder ("x", "EMPTY") is no secret, and
    replacing it would garble the text."""
    if len(secret) >= 8:
        text = text.replace(secret, "***")
    return re.sub(r"(?i)(bearer\s+)[^\s\"',}]+", r"\1***", text)


class Caller:
    """Runs attempts under the account's limits and a limit on calls in flight, with retries (see the module
    docstring). One per backend: the retry budget, what is known of the endpoint's reachability and of the
    account's limits span every run of the backend."""

    def __init__(self, policy: RetryPolicy, concurrency: int, secret: str, log: logging.Logger,
                 tier: Tier | None = None, share: float = 1.0, spec: str = "") -> None:
        """
        Args:
            policy: how to retry.
            concurrency: calls in flight at most, per event loop (runs started together share the limit).
            secret: the API key, scrubbed from every reason and log line.
            log: the engine's logger: retries are logged under the engine's name.
            tier: the account's limits as the user gave them (`--rpm`, `--tpm`); the provider's headers tell the rest.
            share: the part of those limits this caller may use (one of several workers of an endpoint).
            spec: the engine and model it calls (`openai:gpt-5`), as a progress line names it.
        """
        if concurrency < 1:
            raise UserError(f"--concurrency must be at least 1, got {concurrency}")
        self.policy = policy
        self.concurrency = concurrency
        self.pacer = Pacer(tier, share=share, max_wait_s=policy.max_limit_wait, spec=spec)
        self._secret = secret
        self._log = log
        self._budget_left = policy.retry_budget
        self.retries_made = 0
        self._retry_warned = False
        self._limit_said = False
        self._reached = False
        """Some call got an HTTP answer from the endpoint."""
        self._unreachable: str | None = None
        """Why no connection could be made, once a call gave up on it: every later call fails at once, unsent,
        with this reason."""
        self._in_flight: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AdaptiveLimit] = weakref.WeakKeyDictionary()
        self.stopped: EngineError | None = None
        """What stopped the run (a spent quota, a model no longer served): raised by every call not yet sent, while
        the calls in flight land (the provider has charged them: their answers are kept)."""

    def scrub(self, text: str) -> str:
        return scrub_secret(text, self._secret)

    async def call(self, build: Callable[[], Attempt], cost: Cost | None = None) -> Outcome:
        """Under the account's limits and the limit on calls in flight, the attempt `build()` makes (a request's
        body built once, there: only the calls in flight hold one), retried as the policy says until it gives a
        completion or fails for good (a `CallError` whose reason holds no secret). `cost`: what the call counts
        against the limits (None: one request, no tokens)."""
        in_flight = self._limit()
        async with in_flight:
            return await self._with_retries(build(), cost or Cost(0, None), in_flight)

    def forget_loops(self) -> None:
        self._in_flight.clear()

    def _limit(self) -> AdaptiveLimit:
        loop = asyncio.get_running_loop()
        limit = self._in_flight.get(loop)
        if limit is None:
            limit = self._in_flight[loop] = AdaptiveLimit(self.concurrency)
        return limit

    async def _with_retries(self, attempt_once: Attempt, cost: Cost, in_flight: AdaptiveLimit) -> Outcome:
        policy = self.policy
        attempt = 0
        limited_since: float | None = None
        while True:
            if self._unreachable is not None and not self._reached:
                return CallError(self._unreachable, retryable=True)
            if self._budget_left <= 0 and attempt == 0 and self.retries_made > 0:
                return CallError("retry budget of the run exhausted; call not sent", retryable=True)
            await self.pacer.admit(cost)
            if self.stopped is not None:
                raise self.stopped
            try:
                completion = await attempt_once()
                self._reached = True
                self.pacer.answered(getattr(completion, "input_tokens", 0), getattr(completion, "output_tokens", 0), cost)
                in_flight.raise_()
                return completion
            except EngineError as error:  # every call would fail so: none more is sent
                self.stopped = self.stopped or error
                raise
            except CallFailed as failure:
                reason = self.scrub(failure.reason)
                self._reached = self._reached or not failure.unreachable
                if failure.rate_limited:  # a wait mends it: no retry spent, every call held back
                    now = time.monotonic()
                    limited_since = now if limited_since is None else limited_since
                    waited = now - limited_since
                    if failure.wait is not None and waited + failure.wait > self.pacer.max_wait_s:
                        return CallError(f"{reason} (rate limited: the provider asks to wait {failure.wait:g} s more, "
                                         f"past the {self.pacer.max_wait_s:g} s a call waits on limits: "
                                         "--rate-limit-wait)", retryable=True)
                    if waited > self.pacer.max_wait_s:
                        return CallError(f"{reason} (rate limited for {duration(waited)}, longer than the "
                                         f"{self.pacer.max_wait_s:g} s a call waits on limits: --rate-limit-wait)",
                                         retryable=True)
                    wait = self.pacer.refused(failure.wait)
                    in_flight.lower()
                    self._log_limit(reason, wait)
                    continue
                if not failure.retryable:
                    return CallError(reason, retryable=False)
                if failure.unreachable and not self._reached and attempt >= UNREACHABLE_RETRIES:
                    # nothing ever answered here: a judge that is down, or a wrong --base-url; say so in
                    # seconds instead of backing off every call for minutes
                    # one cause, said alike by this call and by every later one, which is not sent
                    self._unreachable = f"{reason} (the endpoint answered no call; gave up after {attempt} retries)"
                    return CallError(self._unreachable, retryable=True)
                if attempt >= policy.max_retries:
                    return CallError(f"{reason} (gave up after {attempt} retries)", retryable=True)
                wait = policy.backoff(attempt, failure.wait)
                if wait is None:
                    return CallError(f"{reason} (server asks to wait {failure.wait:g} s, longer than the "
                                     f"{policy.max_retry_wait:g} s a call waits at most)", retryable=True)
                if self._budget_left <= 0:
                    return CallError(f"{reason} (retry budget of the run exhausted)", retryable=True)
                self._budget_left -= 1
                self.retries_made += 1
                attempt += 1
                self._log_retry(reason, attempt, wait, quiet=failure.unreachable and not self._reached)
                await asyncio.sleep(wait)

    def _log_limit(self, reason: str, wait: float) -> None:
        # One line per backend at INFO: waiting on a limit is how a metered account runs, not a fault; the
        # progress bar says how long calls are held. The rest go to DEBUG (`bespoke -v`).
        if self._limit_said:
            self._log.debug("%s; held back %.2f s", reason, wait)
            return
        self._limit_said = True
        self._log.info("%s; calls are held back for the provider's rate limit and sent again (no call fails for "
                       "it; further refusals are logged only with -v)", reason)

    def _log_retry(self, reason: str, attempt: int, wait: float, *, quiet: bool) -> None:
        # One warning per backend: a struggling judge is retried hundreds of times, and a line for each
        # would bury the one-line reason the run ends with. The rest go to DEBUG (`bespoke -v`), as do the
        # few retries of an endpoint that never answered (the run's reason says it all).
        if self._retry_warned or quiet:
            self._log.debug("%s; retry %d in %.1f s", reason, attempt, wait)
            return
        self._retry_warned = True
        self._log.warning("%s; retry %d in %.1f s (further retries are logged only with -v)", reason, attempt, wait)



class Client:
    """An API engine's backend, as far as its calls go: a batch of requests run at once through its
    `Caller`, and the caller's counters."""

    _caller: Caller

    @property
    def concurrency(self) -> int:
        return self._caller.concurrency

    @property
    def retries_made(self) -> int:
        return self._caller.retries_made

    def scrub(self, text: str) -> str:
        """`text` without this backend's key (a reason, a log line)."""
        return self._caller.scrub(text)

    @property
    def pacer(self) -> Pacer:
        """What this backend knows of its account's limits, and how long they held its calls (`pacing.Pacer`)."""
        return self._caller.pacer

    def output_limit(self, request: Request) -> int | None:
        """The output token cap a call of `request` asks for (None: none sent): what the provider charges the
        call's tokens with, beside its prompt's."""
        return request.max_tokens

    async def _run_all(self, requests: Sequence[Request], attempt_for: Callable[[Request], Attempt], on_done: OnDone) -> None:
        """Every request at once (the caller bounds how many are in flight), `on_done` called for each as
        it ends; `attempt_for(request)` builds the request once, when its turn comes, and gives the attempt
        resent on each retry."""

        async def one(index: int, request: Request) -> None:
            cost = Cost.of_request(request, self.output_limit(request))
            on_done(index, await self._caller.call(lambda: attempt_for(request), cost))

        tasks = [asyncio.create_task(one(i, r)) for i, r in enumerate(requests)]
        try:
            # every call ends before the run does: one that stops the run (`Caller.stopped`) lets those in flight
            # land, since the provider charges them, and then stops it
            ended = await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._caller.stopped = None
        raised = next((error for error in ended if isinstance(error, BaseException)), None)
        if raised is not None:
            raise raised
