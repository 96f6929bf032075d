"""What every JSON-over-HTTP provider backend shares (`openai:`, `anthropic:`, `perplexity:`), and no more.

A provider's backend is made of its own request bodies and answer readers, and of this: its endpoint and key
(from the arguments, else the environment, else the provider's API, which needs a key), the HTTP core
(`http.Session`, one aiohttp session per run's event loop, or one kept for a loop that lives as long as its
process, every answer's rate-limit headers shown to the pacer), the retries (`retries.Caller`: the account's
limits, a limit on calls in flight, backoff honouring `Retry-After`, the run-wide retry budget), and one call:
the body posted, the answer read by the backend's `parse`, a refusal (`base.Withheld`) failed without a retry, a
body that is no answer retried, a model the provider no longer serves stopping the run (`ModelUnavailableError`,
as `retirement` decides), and so a spent quota (`limits.QuotaExhaustedError`). Its identity has one shape:
engine, model, endpoint (scrubbed), API and settings, of which the search settings sit under the backend's
`search_key`, where they differ from the provider's default.

A backend subclasses `APIBackend` and says the rest: `name`, where its provider is (`default_url`,
`url_variable`, `key_variable`, `provider_concurrency`), `new_session` (its headers and error names),
`path_and_body`, `parse`, `settings` and `search`. OpenAI's own choices (model families, two APIs, shutdown
dates) stay in `openai_backend`, so a change there reaches no other provider.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import weakref
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Sequence, TypeVar
from urllib.parse import urlsplit

from bespoke_dataset.errors import UserError

from ..base import MODEL_DEFAULT, CallError, Completion, ModelUnavailableError, OnDone, Request, Withheld
from ..http import CallFailed, Session, scrub_url, short
from ..limits import QuotaExhaustedError, Tier
from ..options import ClientOptions
from ..retries import Attempt, Caller, Client, RetryPolicy, check_timeout
from ..web_search import check_choice

T = TypeVar("T")

SERVER_CONCURRENCY = 128
"""Calls in flight by default on an endpoint that is not the provider's (a `vllm serve` batches whatever is in
flight, so the more the faster)."""
PLACEHOLDER_KEY = "EMPTY"
"""Sent to endpoints that need no key (a local server); the SDK refuses to start without one."""
SESSION_CLOSE_S = 5.0
"""How long `close` waits for a kept session to close on its loop."""


class MissingKeyError(UserError):
    """An engine that needs an API key was given none."""


@dataclass(frozen=True)
class Endpoint:
    """Where calls go and with which key."""

    base_url: str
    api_key: str
    provider: bool
    """The provider's own API (rate limits bite first, and a key is needed), not another server."""


class SearchSettings:
    """What a backend's native search settings give its identity (`WebSearch`, `WebSearchTool`, ...)."""

    def settings(self) -> dict[str, Any]:
        """What sets this search apart from the provider's default (none: no key at all)."""
        raise NotImplementedError


class APIBackend(Client):
    """A provider's backend over the HTTP core, with retries. See the module docstring."""

    name: str
    one_batch = False
    takes_tools = False
    searches = True
    default_url: str
    url_variable: str | None
    """The environment variable naming another endpoint (None: the provider's API unless `base_url` is given)."""
    key_variable: str
    provider_concurrency: int
    """Calls in flight by default on the provider's own API."""
    search_key = "web_search"
    """The identity's key of the search settings."""
    efforts: tuple[str, ...] = ()
    """The reasoning efforts the provider's API names: a request's own effort is one of them."""

    model: str
    api: str
    """The API the calls go through, as the identity records it."""
    search: SearchSettings
    schema_format: bool
    constraint: str | None
    temperature: float | None

    def connect(self, model: str, log: logging.Logger, options: ClientOptions) -> Endpoint:
        """Set up the transport for `model` (called once, by the constructor) as the engine's `options` say: the
        endpoint and key, the time a call may take (600 s by default), the caller and its limit on calls in flight
        (the provider's own by default on its API, `SERVER_CONCURRENCY` elsewhere), paced under the account's
        limits (`rpm`, `tpm`, `limit_share`; the provider's headers tell the rest) and retried as the options say
        (`retries.RetryPolicy.of`), logged under `log`."""
        self.model = model
        endpoint = self.endpoint(options.base_url, options.api_key)
        self.base_url = endpoint.base_url
        self._api_key = endpoint.api_key
        self.timeout = check_timeout(600.0 if options.timeout is None else options.timeout)
        default_concurrency = self.provider_concurrency if endpoint.provider else SERVER_CONCURRENCY
        concurrency = options.concurrency
        self._caller = Caller(RetryPolicy.of(options), default_concurrency if concurrency is None else concurrency,
                              self._api_key, log, Tier.of(options), options.limit_share or 1.0, f"{self.name}:{model}")
        self._kept_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Session] = weakref.WeakKeyDictionary()
        return endpoint

    @classmethod
    def endpoint(cls, base_url: str | None, api_key: str | None) -> Endpoint:
        """The endpoint and key from the arguments, else the environment, else the provider's API (which
        needs a key: `MissingKeyError`); another server without a key gets a placeholder."""
        url = base_url or (os.environ.get(cls.url_variable) if cls.url_variable else None) or cls.default_url
        url = url.rstrip("/")
        provider = urlsplit(url).hostname == urlsplit(cls.default_url).hostname
        key = api_key or os.environ.get(cls.key_variable)
        if not key:
            if provider:
                raise MissingKeyError(
                    f"{cls.name}: no API key for {urlsplit(cls.default_url).hostname}: set {cls.key_variable} or "
                    f"pass --api-key (api_key=), or point --base-url at a compatible server that needs none"
                )
            key = PLACEHOLDER_KEY
        return Endpoint(url, key, provider)

    # -- what a backend says -------------------------------------------------------------------------

    def new_session(self) -> Session:
        """A session to this endpoint with this backend's key, for the running event loop; the caller closes it."""
        raise NotImplementedError

    def path_and_body(self, request: Request) -> tuple[str, bytes]:
        """The endpoint path and the JSON body of a request, ready to send."""
        raise NotImplementedError

    def parse(self, path: str, answer: dict[str, Any]) -> Completion:
        """The completion in the raw answer of a call to `path`; KeyError/TypeError/ValueError/... when it holds
        none, `Withheld` when the model refused, `CallFailed` when the provider says the call failed."""
        raise NotImplementedError

    def settings(self) -> dict[str, Any]:
        """The decoding settings of its identity, besides `schema_format` and the search's."""
        raise NotImplementedError

    def check_request(self, request: Request) -> None:
        """A `UserError` in one line for a request the provider would refuse on every call, before any call:
        here, an effort of its own (`Request.reasoning_effort`) the API does not name."""
        if request.reasoning_effort not in (None, MODEL_DEFAULT):
            check_choice("--recall-reasoning-effort", request.reasoning_effort, self.efforts)

    @staticmethod
    def effort_for(request: Request, own: str | None) -> str | None:
        """The reasoning effort a call is sent at: the backend's `own`, or the request's (`MODEL_DEFAULT`: none)."""
        if request.reasoning_effort is None:
            return own
        return None if request.reasoning_effort == MODEL_DEFAULT else request.reasoning_effort

    def close_model(self) -> str | None:
        """The spec of a served model whose name is close to this one's, when the endpoint does not serve it
        (None: none known)."""
        return None

    def shutdown_date(self) -> str | None:
        """The model's published shutdown date, where the provider publishes one (None: none known)."""
        return None

    # -- the Backend interface -----------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return {"engine": self.name, "model": self.model, "base_url": scrub_url(self.base_url), "api": self.api,
                "settings": {"schema_format": self.schema_format, **self.settings(), **self.search_settings()}}

    def search_settings(self) -> dict[str, Any]:
        """How native search is set up, where it differs from the provider's default (part of the identity)."""
        search = self.search.settings()
        return {self.search_key: search} if search else {}

    def describe(self) -> dict[str, Any]:
        """The identity, with the model's shutdown date where its provider publishes one (`shutdown_date`; not
        part of the identity: it does not change an answer)."""
        described = self.identity()
        date = self.shutdown_date()
        if date:
            described["shutdown_date"] = date
        return described

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        for request in requests:  # a request the provider would refuse stops the run before any call
            self.check_request(request)
        # One session per run: its HTTP pool belongs to the running event loop, and `run_sync` makes a
        # new loop for every run (unless `keep_session` made one for this loop).
        kept = self._kept_sessions.get(asyncio.get_running_loop())
        session = kept or self._open_session()

        def attempt_for(request: Request) -> Attempt:
            path, body = self.path_and_body(request)  # serialised once, resent as it is on every retry
            return lambda: self.answer(session, request, path, body)

        try:
            await self._run_all(requests, attempt_for, on_done)
        finally:
            if session is not kept:
                await session.close()

    async def answer(self, session: Session, request: Request, path: str, body: bytes) -> Completion:
        """One try at `request`: its completion (a backend may read more of it than `parse` does)."""
        return await self._call(session, path, body)

    async def keep_session(self) -> None:
        """Reuse one session, and its open connections, for every run on the running event loop: for a
        loop that lives as long as its process (a Ray actor's), where a run is one small batch."""
        loop = asyncio.get_running_loop()
        if loop not in self._kept_sessions:
            self._kept_sessions[loop] = self._open_session()

    async def release_session(self) -> None:
        """Close the session `keep_session` kept for the running event loop, before the loop ends."""
        session = self._kept_sessions.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()

    def close(self) -> None:
        self._caller.forget_loops()
        # A kept session lives on a loop running in another thread (a Ray actor's): close it there, so its
        # connections are released, not reported unclosed by aiohttp when the actor exits.
        for loop, session in list(self._kept_sessions.items()):
            if loop.is_running() and loop is not _running_loop():
                asyncio.run_coroutine_threadsafe(session.close(), loop).result(timeout=SESSION_CLOSE_S)
        self._kept_sessions.clear()

    async def retrying(self, attempt_once: Callable[[], Awaitable[T]]) -> T | CallError:
        """`attempt_once()` under this backend's limit and retry policy (backoff, `Retry-After`, the run's
        retry budget, an unreachable endpoint given up on); a `CallError` when it never passes. For calls
        besides completions: the Batch APIs' files and batches."""
        return await self._caller.call(lambda: attempt_once)  # type: ignore[arg-type, return-value]

    # -- one call ------------------------------------------------------------------------------------

    def _open_session(self) -> Session:
        """A new session whose every answer's rate-limit headers reach this backend's pacer."""
        session = self.new_session()
        session.observe = self._caller.pacer.observe
        return session

    async def _call(self, session: Session, path: str, body: bytes) -> Completion:
        try:
            raw = await session.post(path, body)
        except CallFailed as failure:
            if failure.unavailable:  # every call would fail so: the run stops here
                raise ModelUnavailableError(f"{self.name}:{self.model}", self._caller.scrub(short(failure.unavailable)),
                                            did_you_mean=self.close_model()) from None
            if failure.quota:  # no wait helps: the run stops here, its answers kept
                raise QuotaExhaustedError(f"{self.name}:{self.model}", self._caller.scrub(short(failure.quota)),
                                          failure.remedy) from None
            raise
        try:
            return self.parse(path, json.loads(raw))
        except Withheld as withheld:
            raise CallFailed(f"{self.name}:{self.model} {withheld.reason}", retryable=False) from None
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as err:
            # A 200 that is not a completion (a proxy's error page, a cut-off body): worth another try.
            raise CallFailed(f"malformed response from {self.name}:{self.model} at {session.where}: "
                             f"{short(f'{type(err).__name__}: {err}')}", retryable=True) from None


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
