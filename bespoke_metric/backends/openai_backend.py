"""`openai:MODEL`: any OpenAI-compatible endpoint through the official `openai` SDK.

OpenAI itself, a `vllm serve`, TGI, SGLang or Ollama: calls go out concurrently (an asyncio semaphore
bounds how many are in flight), each with a timeout, and failures that may pass (429, 5xx, timeouts,
dropped connections) are retried with exponential backoff and jitter, honouring `Retry-After`. The SDK's
own retries are off so these are the only ones, and a run-wide retry budget stops a dead endpoint from
being hammered: once it is spent, calls that fail are not retried and calls not yet sent fail at once.

Reasoning models (gpt-5, the o-series) go through the Responses API with `reasoning_effort` ("high" by
default, as in the paper) and no temperature; other models through chat completions at temperature 0.

The SDK does what it is for (authentication, the base URL, its HTTP client, its error types) through
`openai_session`, which keeps its per-call request pipeline off the hot path: each body is serialised once,
here, and the answer is read from the raw JSON.

The API key is used for the `Authorization` header and nothing else: it is not part of `identity()`, and
every error message and log line this module writes is scrubbed of it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re
import weakref
from dataclasses import dataclass
from typing import Any, Literal, Sequence
from urllib.parse import urlsplit

from .base import CallError, Completion, OnDone, Outcome, Request
from .openai_session import CallFailed, Session, scrub_url, short

log = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"
UNREACHABLE_RETRIES = 2
"""Retries of a call to an endpoint that no connection was ever made to, before every call fails."""
OPENAI_CONCURRENCY = 32
SERVER_CONCURRENCY = 128
PLACEHOLDER_KEY = "EMPTY"
"""Sent to endpoints that need no key (a local server); the SDK refuses to start without one."""
SESSION_CLOSE_S = 5.0
"""How long `close` waits for a kept session to close on its loop."""

_REASONING_MODEL = re.compile(r"^(?:.*/)?(?:o\d+(?:-|$)|gpt-5(?!.*-chat))", re.IGNORECASE)


def is_reasoning_model(model: str) -> bool:
    """True for OpenAI's reasoning models (o1, o3, o4-mini, gpt-5, gpt-5-mini, ...; not gpt-5-chat)."""
    return bool(_REASONING_MODEL.match(model))


@dataclass
class _RetryBudget:
    """Retries left for the whole run (shared by every call of one backend)."""

    left: int

    def take(self) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        return True


class OpenAIBackend:
    """Concurrent calls to an OpenAI-compatible endpoint. See the module docstring."""

    name = "openai"
    one_batch = False
    takes_tools = False
    searches = False

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api: Literal["auto", "chat", "responses"] = "auto",
        concurrency: int | None = None,
        timeout: float = 600.0,
        max_retries: int = 6,
        retry_budget: int = 500,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        max_retry_wait: float = 600.0,
        temperature: float | None = None,
        reasoning_effort: str | None = None,
        reasoning_max_tokens: int | None = None,
        schema_format: bool = True,
    ) -> None:
        """
        Args:
            model: the model name the endpoint knows.
            base_url: the endpoint, ending in `/v1`; default `OPENAI_BASE_URL`, else OpenAI.
            api_key: default `OPENAI_API_KEY`; a placeholder is sent to non-OpenAI endpoints without one.
            api: `chat` (chat completions), `responses` (Responses API), or `auto`: `responses` for
                reasoning models, `chat` otherwise.
            concurrency: calls in flight at most; default `OPENAI_CONCURRENCY` (32) for OpenAI's API, whose
                rate limits bite first, and `SERVER_CONCURRENCY` (128) for any other endpoint: a
                `vllm serve` batches whatever is in flight, so the more the faster.
            timeout: seconds per call before it counts as failed (and is retried).
            max_retries: retries per call.
            retry_budget: retries for the whole life of this backend, all calls together.
            backoff_base, backoff_max: the n-th retry waits about `backoff_base * 2**n` seconds (with
                jitter), at most `backoff_max`, unless the server says how long with `Retry-After`.
            max_retry_wait: a `Retry-After` longer than this fails the call instead of waiting.
            temperature: default 0 for chat models; reasoning models take none.
            reasoning_effort: default "high" for reasoning models.
            reasoning_max_tokens: output cap for reasoning models, whose hidden reasoning counts against
                it; default none (the request's `max_tokens` would starve the reasoning).
            schema_format: send a request's `json_schema` as a structured-output format.
        """
        self.model = model
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
        self.base_url = base_url.rstrip("/")
        on_openai = urlsplit(self.base_url).hostname == urlsplit(OPENAI_BASE_URL).hostname
        if concurrency is None:
            concurrency = OPENAI_CONCURRENCY if on_openai else SERVER_CONCURRENCY
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if on_openai:
                raise ValueError(
                    "no API key for api.openai.com: set OPENAI_API_KEY or pass api_key "
                    "(or point base_url at an OpenAI-compatible server that needs none)"
                )
            key = PLACEHOLDER_KEY
        self._api_key = key
        self.reasoning = is_reasoning_model(model)
        if api == "auto":
            api = "responses" if self.reasoning else "chat"
        if api not in ("chat", "responses"):
            raise ValueError(f"api must be 'auto', 'chat' or 'responses', got {api!r}")
        self.api = api
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_wait = max_retry_wait
        self.schema_format = schema_format
        if self.reasoning:
            if temperature is not None:
                raise ValueError(f"{model} is a reasoning model: it takes reasoning_effort, not temperature")
            self.temperature = None
            self.reasoning_effort = reasoning_effort or "high"
        else:
            self.temperature = 0.0 if temperature is None else temperature
            self.reasoning_effort = reasoning_effort
        self.reasoning_max_tokens = reasoning_max_tokens
        self._budget = _RetryBudget(retry_budget)
        self.retries_made = 0
        self._retry_warned = False
        self._reached = False
        """Some call got an HTTP answer from the endpoint."""
        self._unreachable: str | None = None
        """Why no connection could be made, once a call gave up on it (every later call fails at once)."""
        self._kept_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Session] = weakref.WeakKeyDictionary()
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    # -- Backend interface -------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"schema_format": self.schema_format}
        if self.temperature is not None:
            settings["temperature"] = self.temperature
        if self.reasoning_effort is not None:
            settings["reasoning_effort"] = self.reasoning_effort
        if self.reasoning:
            settings["reasoning_max_tokens"] = self.reasoning_max_tokens
        return {
            "engine": self.name,
            "model": self.model,
            "base_url": scrub_url(self.base_url),
            "api": self.api,
            "settings": settings,
        }

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        # One session per run: its HTTP pool belongs to the running event loop, and `run_sync` makes a
        # new loop for every run (unless `keep_session` made one for this loop).
        kept = self._kept_sessions.get(asyncio.get_running_loop())
        session = kept or Session(self.base_url, self._api_key, self.timeout)
        semaphore = self._semaphore_for_loop()

        async def one(index: int, request: Request) -> None:
            async with semaphore:
                outcome = await self._call_with_retries(session, request)
            on_done(index, outcome)

        tasks = [asyncio.create_task(one(i, r)) for i, r in enumerate(requests)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if session is not kept:
                await session.close()

    async def keep_session(self) -> None:
        """Reuse one session, and its open connections, for every run on the running event loop: for a
        loop that lives as long as its process (a Ray actor's), where a run is one small batch."""
        loop = asyncio.get_running_loop()
        if loop not in self._kept_sessions:
            self._kept_sessions[loop] = Session(self.base_url, self._api_key, self.timeout)

    async def release_session(self) -> None:
        """Close the session `keep_session` kept for the running event loop, before the loop ends."""
        session = self._kept_sessions.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()

    def close(self) -> None:
        self._semaphores.clear()
        # A kept session lives on a loop running in another thread (a Ray actor's): close it there, so its
        # connections are released, not reported unclosed by aiohttp when the actor exits.
        for loop, session in list(self._kept_sessions.items()):
            if loop.is_running() and loop is not _running_loop():
                asyncio.run_coroutine_threadsafe(session.close(), loop).result(timeout=SESSION_CLOSE_S)
        self._kept_sessions.clear()

    # -- internals -----------------------------------------------------------------------------------

    def _semaphore_for_loop(self) -> asyncio.Semaphore:
        # Shared by every run on the same event loop, so runs started together still respect the limit.
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.concurrency)
        return semaphore

    def _scrub(self, text: str) -> str:
        # A short placeholder ("x", "EMPTY") is no secret, and replacing it would garble the text.
        if len(self._api_key) >= 8:
            text = text.replace(self._api_key, "***")
        return re.sub(r"(?i)(bearer\s+)[^\s\"',}]+", r"\1***", text)

    async def _call_with_retries(self, session: Session, request: Request) -> Outcome:
        path, body = self.path_and_body(request)  # serialised once, resent as it is on every retry
        attempt = 0
        while True:
            if self._unreachable is not None and not self._reached:
                return CallError(f"{self._unreachable} (not sent: the endpoint is unreachable)", retryable=True)
            if self._budget.left <= 0 and attempt == 0 and self.retries_made > 0:
                return CallError("retry budget of the run exhausted; call not sent", retryable=True)
            try:
                completion = await self._call(session, path, body)
                self._reached = True
                return completion
            except CallFailed as failure:
                reason = self._scrub(failure.reason)
                self._reached = self._reached or not failure.unreachable
                if not failure.retryable:
                    return CallError(reason, retryable=False)
                if failure.unreachable and not self._reached and attempt >= UNREACHABLE_RETRIES:
                    # nothing ever answered here: a judge that is down, or a wrong --base-url; say so in
                    # seconds instead of backing off every call for minutes
                    self._unreachable = reason
                    return CallError(f"{reason} (the endpoint answered no call; gave up after {attempt} retries)",
                                     retryable=True)
                if attempt >= self.max_retries:
                    return CallError(f"{reason} (gave up after {attempt} retries)", retryable=True)
                wait = self._backoff(attempt, failure.wait)
                if wait > self.max_retry_wait:
                    return CallError(f"{reason} (server asks to wait {wait:.0f} s)", retryable=True)
                if not self._budget.take():
                    return CallError(f"{reason} (retry budget of the run exhausted)", retryable=True)
                self.retries_made += 1
                attempt += 1
                self._log_retry(reason, attempt, wait, quiet=failure.unreachable and not self._reached)
                await asyncio.sleep(wait)

    def _log_retry(self, reason: str, attempt: int, wait: float, *, quiet: bool) -> None:
        # One warning per backend: a struggling judge is retried hundreds of times, and a line for each
        # would bury the one-line reason the run ends with. The rest go to DEBUG (`bespoke -v`), as do the
        # few retries of an endpoint that never answered (the run's reason says it all).
        if self._retry_warned or quiet:
            log.debug("%s; retry %d in %.1f s", reason, attempt, wait)
            return
        self._retry_warned = True
        log.warning("%s; retry %d in %.1f s (further retries are logged only with -v)", reason, attempt, wait)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        jitter = random.uniform(0.0, 0.25 * self.backoff_base)
        if retry_after is not None:
            return retry_after + jitter  # honour the server's wait, spread a little
        return min(self.backoff_max, self.backoff_base * 2**attempt) * random.uniform(0.5, 1.0) + jitter

    async def _call(self, session: Session, path: str, body: bytes) -> Completion:
        raw = await session.post(path, body)
        try:
            answer = json.loads(raw)
            return _responses_completion(answer) if self.api == "responses" else _chat_completion(answer)
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as err:
            # A 200 that is not a completion (a proxy's error page, a cut-off body): worth another try.
            raise CallFailed(f"malformed response from the server: {short(f'{type(err).__name__}: {err}')}",
                             retryable=True) from None

    def path_and_body(self, request: Request) -> tuple[str, bytes]:
        """The endpoint path and the JSON body of a request, ready to send."""
        if self.api == "responses":
            path, args = "/responses", self._responses_args(request)
        else:
            path, args = "/chat/completions", self._chat_args(request)
        return path, json.dumps(args, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def _output_limit(self, request: Request) -> int | None:
        """The output token cap to send: a reasoning model spends hidden tokens first, so the request's own
        budget would starve it; it gets `reasoning_max_tokens` (None: no cap)."""
        return self.reasoning_max_tokens if self.reasoning else request.max_tokens

    def _chat_args(self, request: Request) -> dict[str, Any]:
        args: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in request.messages]}
        limit = self._output_limit(request)
        if limit is not None:
            args["max_completion_tokens" if self.reasoning else "max_tokens"] = limit
        if self.temperature is not None:
            args["temperature"] = self.temperature
        if self.reasoning_effort is not None:
            args["reasoning_effort"] = self.reasoning_effort
        if self.schema_format and request.json_schema is not None:
            args["response_format"] = {"type": "json_schema", "json_schema": _named_schema(request.json_schema)}
        return args

    def _responses_args(self, request: Request) -> dict[str, Any]:
        args: dict[str, Any] = {
            "model": self.model,
            "input": [{"role": m["role"], "content": m["content"]} for m in request.messages],
            "store": False,
        }
        limit = self._output_limit(request)
        if limit is not None:
            args["max_output_tokens"] = limit
        if self.temperature is not None:
            args["temperature"] = self.temperature
        if self.reasoning_effort is not None:
            args["reasoning"] = {"effort": self.reasoning_effort}
        if self.schema_format and request.json_schema is not None:
            args["text"] = {"format": {"type": "json_schema", **_named_schema(request.json_schema)}}
        return args


def _chat_completion(answer: dict[str, Any]) -> Completion:
    choice = answer["choices"][0]
    usage = answer.get("usage") or {}
    return Completion(
        text=choice["message"].get("content") or "",
        input_tokens=usage.get("prompt_tokens") or 0,
        output_tokens=usage.get("completion_tokens") or 0,
        truncated=choice.get("finish_reason") == "length",
    )


def _responses_completion(answer: dict[str, Any]) -> Completion:
    # The text of every output_text part of every message, as the SDK's `Response.output_text` joins it.
    text = "".join(
        part.get("text") or ""
        for item in answer["output"]
        if item.get("type") == "message"
        for part in item.get("content") or ()
        if part.get("type") == "output_text"
    )
    usage = answer.get("usage") or {}
    return Completion(
        text=text,
        input_tokens=usage.get("input_tokens") or 0,
        output_tokens=usage.get("output_tokens") or 0,
        truncated=answer.get("status") == "incomplete",
    )


def _named_schema(schema: dict[str, Any]) -> dict[str, Any]:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title", "answer")))[:64] or "answer"
    return {"name": name, "schema": schema, "strict": True}


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
