"""Calls to a remote JSON API, with the one retry discipline every remote part of the project shares.

A judge's or system model's endpoint (`openai_backend`) and a search provider (`systems.search.web`) fail
the same ways: 429s that say how long to wait, 5xx, timeouts, dropped connections, and endpoints nobody
ever answered at. `HttpSession` makes one call on an aiohttp session and classifies its failure as
`CallFailed`; `Retrier` retries what may pass, with exponential backoff and jitter, honouring
`Retry-After`, within a retry budget shared by every call of its owner, and gives up within seconds on
an endpoint no connection was ever made to.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import logging
import math
import random
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

from bespoke_dataset.version import __version__

from .base import CallError

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
UNREACHABLE_RETRIES = 2
"""Retries of a call to an endpoint that no connection was ever made to, before every call fails."""
USER_AGENT = f"bespoke-eval/{__version__}"


def scrub_url(url: str) -> str:
    """The URL without user info or query string, which is where credentials hide in URLs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header: a number of seconds or an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = moment.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


def short(text: str, limit: int = 300) -> str:
    """`text` on one line, cut to `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class CallFailed(Exception):
    """A call that brought no answer. `retryable`: another try may pass; `wait`: the seconds the server
    asked to wait (`Retry-After`), if it did; `unreachable`: no connection could be made at all (refused,
    unknown host), as opposed to one that broke or timed out; `status`: the HTTP status, if one came."""

    def __init__(self, reason: str, retryable: bool, wait: float | None = None, unreachable: bool = False,
                 status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.wait = wait
        self.unreachable = unreachable
        self.status = status


@functools.cache
def tls_context() -> ssl.SSLContext:
    # Shared by every session of the process: building one reads the CA bundle, tens of ms a run.
    try:
        import certifi
    except ImportError:  # the system's bundle
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


ErrorText = Callable[[int, Mapping[str, str], bytes], str]
"""`(status, headers, body) -> what the error response says`, for the failure's reason."""


def body_text(status: int, headers: Mapping[str, str], content: bytes) -> str:
    """An error response's body as text: what most APIs put their message in."""
    return content.decode("utf-8", "replace") or f"HTTP {status}"


class HttpSession:
    """Calls to one base URL within one event loop; `close()` when done (the connection pool belongs to
    the loop). `headers` go with every call (they may hold a key: never shown); `error_text` reads an
    error response for the failure's reason."""

    def __init__(self, base_url: str, headers: Mapping[str, str], timeout: float,
                 error_text: ErrorText = body_text) -> None:
        import aiohttp

        self.base_url = base_url.rstrip("/")
        self.where = scrub_url(base_url)
        self.timeout = timeout
        self._headers = {"accept": "application/json", "user-agent": USER_AGENT, **headers}
        self._error_text = error_text
        tls = tls_context() if urlsplit(self.base_url).scheme == "https" else False
        # no connection limit of its own: the owner's semaphore is the one limit on calls in flight
        self._http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, ssl=tls),
                                           timeout=aiohttp.ClientTimeout(total=timeout))

    async def request(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                      body: bytes | None = None) -> bytes:
        """`method` `path` (under the base URL) with query `params` and a JSON `body`; the answer's body,
        or `CallFailed`."""
        import aiohttp

        headers = self._headers if body is None else {**self._headers, "content-type": "application/json"}
        try:
            async with self._http.request(method, self.base_url + path, params=params, data=body,
                                          headers=headers) as response:
                content = await response.read()
                if response.status >= 400:
                    raise self._status_failure(response.status, response.headers, content)
                return content
        except asyncio.TimeoutError:
            raise CallFailed(f"timed out after {self.timeout:g} s", retryable=True) from None
        except (aiohttp.ClientError, ssl.SSLError, OSError) as err:
            detail = str(err) or type(err).__name__
            raise CallFailed(f"connection error to {self.where}: {short(detail)}", retryable=True,
                             unreachable=isinstance(err, aiohttp.ClientConnectorError)) from None

    async def close(self) -> None:
        await self._http.close()

    def _status_failure(self, status: int, headers: Mapping[str, str], content: bytes) -> CallFailed:
        wait = None
        if status == 429 or status >= 500:
            wait = parse_retry_after(headers.get("retry-after"))
            if wait is None and headers.get("retry-after-ms"):
                wait = (parse_retry_after(headers.get("retry-after-ms")) or 0.0) / 1000
        return CallFailed(f"HTTP {status} from {self.where}: {short(self._error_text(status, headers, content))}",
                          retryable=status in RETRYABLE_STATUS or status >= 500, wait=wait, status=status)


@dataclass(frozen=True)
class RetryPolicy:
    """How failed calls are retried. The n-th retry waits about `backoff_base * 2**n` seconds (with
    jitter), at most `backoff_max`, unless the server says how long with `Retry-After`; a wait longer
    than `max_retry_wait` fails the call instead."""

    max_retries: int = 6
    """Retries per call."""
    retry_budget: int = 500
    """Retries for the whole life of the owner, all calls together."""
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    max_retry_wait: float = 600.0


class Retrier:
    """Runs calls with retries under one `RetryPolicy`, keeping the state of their owner's whole life:
    the retry budget left, whether the endpoint ever answered, and why it is unreachable once that is
    known (every later call then fails at once)."""

    def __init__(self, policy: RetryPolicy, log: logging.Logger) -> None:
        self.policy = policy
        self.log = log
        self.budget_left = policy.retry_budget
        self.retries_made = 0
        self._warned = False
        self._reached = False
        """Some call got an HTTP answer from the endpoint."""
        self._unreachable: str | None = None

    async def run(self, call: Callable[[], Awaitable[T]], scrub: Callable[[str], str] = lambda text: text) -> T | CallError:
        """`await call()` until it returns, a failure may not pass, or the retries are spent; a failure's
        reason goes through `scrub` (which takes the secrets out) before it is logged or returned."""
        attempt = 0
        while True:
            if self._unreachable is not None and not self._reached:
                return CallError(f"{self._unreachable} (not sent: the endpoint is unreachable)", retryable=True)
            if self.budget_left <= 0 and attempt == 0 and self.retries_made > 0:
                return CallError("retry budget of the run exhausted; call not sent", retryable=True)
            try:
                answer = await call()
                self._reached = True
                return answer
            except CallFailed as failure:
                reason = scrub(failure.reason)
                self._reached = self._reached or not failure.unreachable
                if not failure.retryable:
                    return CallError(reason, retryable=False)
                if failure.unreachable and not self._reached and attempt >= UNREACHABLE_RETRIES:
                    # nothing ever answered here: a server that is down, or a wrong URL; say so in seconds
                    # instead of backing off every call for minutes
                    self._unreachable = reason
                    return CallError(f"{reason} (the endpoint answered no call; gave up after {attempt} retries)",
                                     retryable=True)
                if attempt >= self.policy.max_retries:
                    return CallError(f"{reason} (gave up after {attempt} retries)", retryable=True)
                wait = self.backoff(attempt, failure.wait)
                if wait > self.policy.max_retry_wait:
                    return CallError(f"{reason} (server asks to wait {wait:.0f} s)", retryable=True)
                if self.budget_left <= 0:
                    return CallError(f"{reason} (retry budget of the run exhausted)", retryable=True)
                self.budget_left -= 1
                self.retries_made += 1
                attempt += 1
                self._log_retry(reason, attempt, wait, quiet=failure.unreachable and not self._reached)
                await asyncio.sleep(wait)

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        policy = self.policy
        jitter = random.uniform(0.0, 0.25 * policy.backoff_base)
        if retry_after is not None:
            return retry_after + jitter  # honour the server's wait, spread a little
        return min(policy.backoff_max, policy.backoff_base * 2**attempt) * random.uniform(0.5, 1.0) + jitter

    def _log_retry(self, reason: str, attempt: int, wait: float, *, quiet: bool) -> None:
        # One warning per owner: a struggling endpoint is retried hundreds of times, and a line for each
        # would bury the one-line reason the run ends with. The rest go to DEBUG (`bespoke -v`), as do the
        # few retries of an endpoint that never answered (the run's reason says it all).
        if self._warned or quiet:
            self.log.debug("%s; retry %d in %.1f s", reason, attempt, wait)
            return
        self._warned = True
        self.log.warning("%s; retry %d in %.1f s (further retries are logged only with -v)", reason, attempt, wait)

