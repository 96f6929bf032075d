"""A web search API as an engine: a batch of queries searched concurrently over one aiohttp session,
kept for every batch of a run on its event loop (a run's rounds reuse their connections).

The client is the model APIs' (`backends.retries.Caller` over `backends.http.Session`): a pace under the
plan's rate (`--search-rpm`), a 429 held back and sent again (never a failure), a concurrency
limit, a timeout per call, backoff honouring `Retry-After`, a retry budget for the whole run, and an
endpoint that never answered given up on in seconds. What no retry can mend stops the run with one
`SearchEngineError` naming the engine: a key refused (401/403; for SearXNG, JSON output not enabled), a
path that does not exist (404), an answer that is not the provider's documented JSON. An answer that
says it could not search (a SearXNG whose engines did not answer) is a failed search, retried.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import weakref
from collections.abc import Sequence
from typing import Any

from bespoke_metric.backends.base import CallError
from bespoke_metric.backends.http import CallFailed, Refused, Session, scrub_url
from bespoke_metric.backends.limits import Tier
from bespoke_metric.backends.pacing import Pacer
from bespoke_metric.backends.retries import Caller, RetryPolicy, check_timeout

from .base import DEFAULT_K, SearchEngineError, SearchOptions, key_from_env
from .providers import Provider, SearchFailed, SearchResult, ShapeError, decode

log = logging.getLogger(__name__)

DEFAULT_CONCURRENCY = 16
DEFAULT_TIMEOUT = 30.0
DEFAULT_POLICY = RetryPolicy(max_retries=4, retry_budget=200, backoff_base=1.0, backoff_max=30.0, max_retry_wait=120.0)


class WebEngine:
    """Searches through one provider's API. See the module docstring."""

    def __init__(self, provider: Provider, base_url: str, key: str | None, *, k: int, concurrency: int,
                 timeout: float, policy: RetryPolicy, tier: Tier | None = None) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.k = k
        self.timeout = check_timeout(timeout, "--search-timeout")
        self._key = key
        self.spec = f"searxng:{scrub_url(base_url)}" if provider.base_url is None else provider.name
        self._caller = Caller(policy, concurrency, key or "", log, tier, spec=self.spec)
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Session] = weakref.WeakKeyDictionary()

    @classmethod
    def build(cls, provider: Provider, base_url: str | None, options: SearchOptions, *, need_key: bool) -> "WebEngine":
        """The engine for `provider` at `base_url` (default: its public endpoint), its key from the
        environment (only when `need_key`: a replayed run never calls it)."""
        if provider.max_k is not None and options.k is not None and options.k > provider.max_k:
            raise SearchEngineError(f"--search-k {options.k} is more than search engine {provider.name} gives for one "
                                    f"search: at most {provider.max_k} (its {provider.k_parameter})")
        url = base_url or provider.base_url
        assert url is not None  # SearXNG's URL is its spec's target
        if not re.match(r"^https?://", url):
            raise SearchEngineError(f"search engine {provider.name}: {url!r} is not an http(s) URL")
        key = None
        if provider.key_env is not None and need_key:
            key = key_from_env(provider.key_env, provider.name)
        given = {name: value for name, value in options.given().items() if name in ("max_retries", "retry_budget",
                                                                                       "backoff_base", "max_retry_wait")}
        return cls(provider, url, key, k=options.k or DEFAULT_K, concurrency=options.concurrency or DEFAULT_CONCURRENCY,
                   timeout=DEFAULT_TIMEOUT if options.timeout is None else options.timeout, policy=RetryPolicy(**{**vars(DEFAULT_POLICY), **given}), tier=Tier.of(options))

    def identity(self) -> dict[str, Any]:
        return {"engine": self.provider.name, "url": scrub_url(self.base_url), "k": self.k}

    def describe(self) -> dict[str, Any]:
        return {"url": scrub_url(self.base_url), "k": self.k}

    @property
    def retries_made(self) -> int:
        return self._caller.retries_made

    @property
    def pacer(self) -> Pacer:
        """What this engine knows of its plan's rate limit, and how long it held its searches (`limits.Pacer`)."""
        return self._caller.pacer

    async def search(self, queries: Sequence[str]) -> list[list[SearchResult] | CallError]:
        if self._key is None and self.provider.key_env is not None:
            raise SearchEngineError(f"search engine {self.spec} needs an API key: set {self.provider.key_env}")
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None:
            session = self._sessions[loop] = Session(self.base_url, self.provider.headers(self._key), self.timeout)
            session.observe = self._caller.pacer.observe

        async def one(query: str) -> list[SearchResult] | CallError:
            attempt = lambda: self._call(session, query)  # noqa: E731 - one try, made again on each retry
            # the caller's attempts give results here, not a completion: it passes them through as they are
            return await self._caller.call(lambda: attempt)  # type: ignore[arg-type, return-value]

        tasks = [asyncio.create_task(one(query)) for query in queries]
        try:
            return list(await asyncio.gather(*tasks))
        finally:  # a fatal error in one: the others are not left running
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def release(self) -> None:
        session = self._sessions.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()

    def close(self) -> None:
        self._sessions.clear()  # each was released on its own loop
        self._caller.forget_loops()

    async def _call(self, session: Session, query: str) -> list[SearchResult]:
        call = self.provider.call(query, self.k)
        try:
            if call.body is None:
                content = await session.query(call.path, call.params or {})
            else:
                content = await session.post(call.path, json.dumps(call.body, ensure_ascii=False).encode("utf-8"))
        except Refused as refused:
            raise SearchEngineError(self._refused(refused.status, call.path)) from None
        try:
            return self.provider.read(decode(content), self.k)
        except ShapeError as error:
            raise SearchEngineError(f"search engine {self.spec} {error} at {session.where}{call.path}: "
                                    f"is that the {self.provider.name} search API?") from None
        except SearchFailed as failed:  # its engines may answer again: retried as a 5xx is
            raise CallFailed(str(failed), retryable=True) from None

    def _refused(self, status: int, path: str) -> str:
        where = f"{scrub_url(self.base_url)}{path}"
        if status == 404:
            return f"search engine {self.spec}: {where} does not exist (HTTP 404); check its URL"
        return f"search engine {self.spec} refused the search (HTTP {status} from {where}): {self.provider.refused_hint}"
