"""Calls to a hosted model API: a limit on calls in flight, retries with backoff, a run-wide retry budget.

Every API engine (`openai:`, `perplexity:`, `gemini:`) sends its calls through one `Caller`: failures that
may pass (429, 5xx, timeouts, dropped connections) are retried with exponential backoff and jitter,
honouring the server's `Retry-After`; a budget for the whole life of the backend stops a dead endpoint
from being hammered (once it is spent, calls that fail are not retried and calls not yet sent fail at
once); and an endpoint that never answered a single call (a judge that is down, a wrong `--base-url`)
fails every call within seconds instead of backing off for minutes. An engine's part is one attempt:
an awaitable that returns a `Completion` or raises `CallFailed`; `Client` is the part of an API engine's
backend that runs a batch of requests through its caller.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import re
import weakref
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Sequence

from bespoke_dataset.errors import UserError

from .base import CallError, Completion, OnDone, Outcome, Request
from .http import CallFailed

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
    """A `Retry-After` longer than this fails the call instead of waiting (one of exactly this long is waited)."""

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
    """Runs attempts under a concurrency limit with retries (see the module docstring). One per backend:
    the retry budget, and what is known of the endpoint's reachability, span every run of the backend."""

    def __init__(self, policy: RetryPolicy, concurrency: int, secret: str, log: logging.Logger) -> None:
        """
        Args:
            policy: how to retry.
            concurrency: calls in flight at most, per event loop (runs started together share the limit).
            secret: the API key, scrubbed from every reason and log line.
            log: the engine's logger: retries are logged under the engine's name.
        """
        if concurrency < 1:
            raise UserError(f"--concurrency must be at least 1, got {concurrency}")
        self.policy = policy
        self.concurrency = concurrency
        self._secret = secret
        self._log = log
        self._budget_left = policy.retry_budget
        self.retries_made = 0
        self._retry_warned = False
        self._reached = False
        """Some call got an HTTP answer from the endpoint."""
        self._unreachable: str | None = None
        """Why no connection could be made, once a call gave up on it: every later call fails at once, unsent,
        with this reason."""
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def scrub(self, text: str) -> str:
        return scrub_secret(text, self._secret)

    async def call(self, build: Callable[[], Attempt]) -> Outcome:
        """Under the concurrency limit, the attempt `build()` makes (a request's body built once, there: only
        the calls in flight hold one), retried as the policy says until it gives a completion or fails for
        good (a `CallError` whose reason holds no secret)."""
        async with self._semaphore():
            return await self._with_retries(build())

    def forget_loops(self) -> None:
        self._semaphores.clear()

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.concurrency)
        return semaphore

    async def _with_retries(self, attempt_once: Attempt) -> Outcome:
        policy = self.policy
        attempt = 0
        while True:
            if self._unreachable is not None and not self._reached:
                return CallError(self._unreachable, retryable=True)
            if self._budget_left <= 0 and attempt == 0 and self.retries_made > 0:
                return CallError("retry budget of the run exhausted; call not sent", retryable=True)
            try:
                completion = await attempt_once()
                self._reached = True
                return completion
            except CallFailed as failure:
                reason = self.scrub(failure.reason)
                self._reached = self._reached or not failure.unreachable
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

    async def _run_all(self, requests: Sequence[Request], attempt_for: Callable[[Request], Attempt], on_done: OnDone) -> None:
        """Every request at once (the caller bounds how many are in flight), `on_done` called for each as
        it ends; `attempt_for(request)` builds the request once, when its turn comes, and gives the attempt
        resent on each retry."""

        async def one(index: int, request: Request) -> None:
            on_done(index, await self._caller.call(lambda: attempt_for(request)))

        tasks = [asyncio.create_task(one(i, r)) for i, r in enumerate(requests)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
