"""`gemini:MODEL` (`gemini-3-pro-preview`, `gemini-2.5-flash`, ...): Google's Gemini API through `google-genai`.

The official SDK (`pip install 'bespoke-eval[gemini]'`, imported only when this engine is built) makes each
call, `client.aio.models.generate_content`; what is common to every API engine is `retries.Caller`'s: a
limit on calls in flight, retries with backoff honouring `Retry-After` (and Gemini's own `RetryInfo`
delay), the run-wide retry budget. The SDK's own retries are off. Each run has its own client on one
aiohttp session of its own (as `openai:` runs have), on the run's event loop, closed when the run ends.

With `Request.native_search` the call carries the Google Search tool; the candidate's `groundingMetadata`
is the search record: `webSearchQueries` the queries, `groundingChunks[].web` the results (uri and title
together, at once: the uri is a redirect that expires), and the chunks that `groundingSupports` point at
the citations (a support inside a thought part is not one). A request's JSON schema is sent as
`response_json_schema` unless it searches (Gemini does not combine the two): then it is spelled out in
the prompt.

How much a model thinks is set as the SDK names it (`types.ThinkingConfig`): `thinking_level` on 3.x
(those the model takes: `thinking_levels`; Gemini 3.8 Flash low to high), `thinking_budget` (tokens; 0 off,
-1 automatic) on 2.5, never both. Gemini 3.x is sent no sampling parameter (it deprecates them); 2.5 gets
temperature 0. Thought parts never reach the answer. The model that served is the response's
`modelVersion`, and how it stands its `modelStatus` (`Completion.model_status`: a `DEPRECATED` model or a
retirement within 90 days is one notice, a `RETIRED` one the retirement error); an answer the provider
stopped (`finishReason` `SAFETY`, `RECITATION`, `PROHIBITED_CONTENT`, ...) fails naming that reason, and a
model it does not serve ("not found for API version") stops the run (`ModelUnavailableError`). Each search
query executed is one search (`calls`), as Gemini 3 bills its grounding.

The key (`GEMINI_API_KEY`, else `GOOGLE_API_KEY`) goes into the SDK's header and nowhere else; every
reason and log line is scrubbed of it. `base_url` points the SDK elsewhere (a proxy, a test server).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import re
import ssl
import warnings
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.schema import JSON_SCHEMA

from ..base import Completion, ModelUnavailableError, OnDone, Request, Withheld, messages_with_schema
from ..http import CallFailed, scrub_url, short, status_failure, tls_context
from ..limits import INPUT_TOKENS, REQUESTS, TOKENS, QuotaExhaustedError, Reading, Tier
from ..options import THINKING_LEVELS, GeminiOptions
from ..retirement import ModelNotice, is_retired, status_notice, unavailable_reason
from ..retries import Attempt, Caller, Client, RetryPolicy, check_timeout
from ..web_search import check_choice, search_record
from .api_backend import PLACEHOLDER_KEY, SERVER_CONCURRENCY, MissingKeyError

log = logging.getLogger(__name__)

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"
GEMINI_CONCURRENCY = 16
KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

ANSWERED = frozenset({"STOP", "MAX_TOKENS", "FINISH_REASON_UNSPECIFIED"})
"""Finish reasons (google-genai `types.FinishReason`) of an answer the model gave; MAX_TOKENS cut it off."""
BLOCKED = frozenset({"SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "LANGUAGE"})
"""Finish reasons of an answer the provider stopped: what text came is not the model's answer."""

THINKING_LEVELS_BY_MODEL: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"gemini-3\.8-flash", ("low", "medium", "high")),
)
"""The `thinking_level`s a model takes, where it takes fewer than the SDK names (`options.THINKING_LEVELS`):
Gemini 3.8 Flash answers MINIMAL with a 400 (Google's Gemini 3.8 model page, as issue 32 quotes it, 2026-12-01).
A pattern is searched for in the model name; a model none matches is sent any level the SDK names."""
SAMPLING_DEPRECATED = ("temperature", "top_p", "top_k")
"""The sampling parameters Gemini 3.x deprecates (Google's Gemini 3 developer guide: leave them at their
defaults): never sent to it, and refused when given."""

_THINKING_MODEL = re.compile(r"gemini-(?:2\.5|[3-9])", re.IGNORECASE)
_LEVEL_MODEL = re.compile(r"gemini-[3-9]", re.IGNORECASE)
_DELAY = re.compile(r"^(\d+(?:\.\d+)?)s$")


def is_thinking_model(model: str) -> bool:
    """Gemini 2.5 and later think before they answer, and their thinking counts against the output limit."""
    return bool(_THINKING_MODEL.search(model))


def takes_thinking_level(model: str) -> bool:
    """Gemini 3.x and later set their thinking by `thinking_level` (2.5 by `thinking_budget`); their
    sampling parameters are deprecated (`SAMPLING_DEPRECATED`)."""
    return bool(_LEVEL_MODEL.search(model))


def thinking_levels(model: str) -> tuple[str, ...]:
    """The `thinking_level`s `model` takes: its row of `THINKING_LEVELS_BY_MODEL`, else every one the SDK names."""
    return next((levels for pattern, levels in THINKING_LEVELS_BY_MODEL if re.search(pattern, model, re.IGNORECASE)),
                THINKING_LEVELS)


class GeminiBackend(Client):
    """Concurrent calls to the Gemini API. See the module docstring."""

    name = "gemini"
    one_batch = False
    takes_tools = False
    searches = True

    def __init__(self, model: str, options: GeminiOptions | None = None) -> None:
        """
        Args:
            model: the model name (`gemini-2.5-pro`).
            options: its `GeminiOptions` (None: every default):
                base_url: another endpoint for the SDK (default: Google's API).
                api_key: default `GEMINI_API_KEY`, else `GOOGLE_API_KEY`; a placeholder for another endpoint.
                concurrency: calls in flight at most (default 16 on Google's API, 128 elsewhere).
                timeout: seconds per call before it counts as failed (and is retried); default 600.
                temperature: default 0; none on Gemini 3.x, which deprecates it (refused when given).
                reasoning_max_tokens: the output cap of a thinking model (2.5 and later), whose thinking counts
                    against it; default none (the request's `max_tokens` would starve the thinking).
                thinking_level: 3.x: one of the model's `thinking_levels` (the SDK's `ThinkingConfig.thinking_level`).
                thinking_budget: 2.5 (3.x too, though Google advises the level): thinking tokens, 0 off, -1
                    automatic (the SDK's `ThinkingConfig.thinking_budget`).
                schema_format: send a request's `json_schema` as `response_json_schema` (default True).
                max_retries, ...: `retries.RetryPolicy`'s fields, as for `openai:`.
        """
        options = options or GeminiOptions()
        schema_format = True if options.schema_format is None else options.schema_format
        self._genai = _import_genai()
        self.model = model
        self.base_url = (options.base_url or GEMINI_BASE_URL).rstrip("/")
        provider = urlsplit(self.base_url).hostname == urlsplit(GEMINI_BASE_URL).hostname
        self._api_key = _api_key(options.api_key, provider)
        self.temperature = _temperature(model, options.temperature)
        self.thinking = is_thinking_model(model)
        self.thinking_config = _thinking_config(model, options.thinking_level, options.thinking_budget)
        self.reasoning_max_tokens = options.reasoning_max_tokens
        self.schema_format = schema_format
        self.constraint = JSON_SCHEMA if schema_format else None
        self.timeout = check_timeout(600.0 if options.timeout is None else options.timeout)
        self._noticed: set[str] = set()
        """The model-status notices already given (one line each, however many answers say it)."""
        default_concurrency = GEMINI_CONCURRENCY if provider else SERVER_CONCURRENCY
        concurrency = options.concurrency
        self._caller = Caller(RetryPolicy.of(options), default_concurrency if concurrency is None else concurrency,
                              self._api_key, log, Tier.of(options), options.limit_share or 1.0, f"{self.name}:{model}")

    # -- Backend interface -------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"schema_format": self.schema_format}
        if self.temperature is not None:
            settings["temperature"] = self.temperature
        if self.thinking:
            settings["reasoning_max_tokens"] = self.reasoning_max_tokens
        settings.update(self.thinking_config)
        return {"engine": self.name, "model": self.model, "base_url": scrub_url(self.base_url), "settings": settings}

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        import aiohttp

        # no connection limit of its own: the caller's semaphore is the one limit on calls in flight
        tls = tls_context() if urlsplit(self.base_url).scheme == "https" else False
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, ssl=tls),
                                        timeout=aiohttp.ClientTimeout(total=self.timeout))
        client = self._client(session)

        def attempt_for(request: Request) -> Attempt:
            contents, config = self.contents_and_config(request)
            return lambda: self._attempt(client, contents, config)

        try:
            await self._run_all(requests, attempt_for, on_done)
        finally:
            await session.close()

    def close(self) -> None:
        self._caller.forget_loops()

    # -- requests ------------------------------------------------------------------------------------

    def contents_and_config(self, request: Request) -> tuple[list[Any], Any]:
        """The SDK's `contents` and `GenerateContentConfig` of a request."""
        types = self._genai.types
        structured = self.schema_format and request.json_schema is not None and not request.native_search
        messages = [dict(m) for m in request.messages] if structured else messages_with_schema(request)
        if any(m.get("role") == "tool" or m.get("tool_calls") for m in messages) or request.tools:
            raise ValueError("the gemini engine takes no tools (takes_tools is False)")
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        contents = [types.Content(role="model" if m["role"] == "assistant" else "user", parts=[types.Part(text=m["content"])])
                    for m in messages if m["role"] != "system"]
        config: dict[str, Any] = {} if self.temperature is None else {"temperature": self.temperature}
        limit = self.output_limit(request)
        if limit is not None:
            config["max_output_tokens"] = limit
        if system:
            config["system_instruction"] = system
        if self.thinking_config:
            config["thinking_config"] = types.ThinkingConfig(**{name: value.upper() if name == "thinking_level" else value
                                                                for name, value in self.thinking_config.items()})
        if request.native_search:
            config["tools"] = [types.Tool(google_search=types.GoogleSearch())]
        if structured:
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = request.json_schema
        return contents, types.GenerateContentConfig(**config)

    def output_limit(self, request: Request) -> int | None:
        """The request's cap, but a thinking model's thinking counts against it: it gets `reasoning_max_tokens`."""
        return self.reasoning_max_tokens if self.thinking else request.max_tokens

    def _client(self, session: Any) -> Any:
        types = self._genai.types
        options = types.HttpOptions(base_url=self.base_url, timeout=int(self.timeout * 1000), aiohttp_client=session,
                                    retry_options=types.HttpRetryOptions(attempts=1))  # ours are the retries
        return self._genai.Client(api_key=self._api_key, http_options=options)

    async def _attempt(self, client: Any, contents: list[Any], config: Any) -> Completion:
        import aiohttp

        where = scrub_url(self.base_url)
        try:
            response = await client.aio.models.generate_content(model=self.model, contents=contents, config=config)
        except self._genai.errors.APIError as err:
            gone = unavailable_reason(int(err.code or 0), {"error": {"message": err.message, "status": err.status}})
            if gone:  # every call would fail so: the run stops here
                raise ModelUnavailableError(f"{self.name}:{self.model}", self._caller.scrub(short(gone))) from None
            headers = getattr(getattr(err, "response", None), "headers", None) or {}
            reason = f"HTTP {err.code} from {where}: {err.status or 'error'}: {short(str(err.message or err.details))}"
            spent, readings = quota_failure(err.details)
            if spent:  # no wait helps: the run stops here, its answers kept
                raise QuotaExhaustedError(f"{self.name}:{self.model}", self._caller.scrub(short(spent)), QUOTA_REMEDY) from None
            self._caller.pacer.learn(readings)
            raise status_failure(int(err.code or 0), headers, reason, wait=_retry_delay(err.details)) from None
        except asyncio.TimeoutError:
            raise CallFailed(f"timed out after {self.timeout:g} s", retryable=True) from None
        except (aiohttp.ClientError, ssl.SSLError, OSError) as err:
            raise CallFailed(f"connection error to {where}: {short(str(err) or type(err).__name__)}", retryable=True,
                             unreachable=isinstance(err, aiohttp.ClientConnectorError)) from None
        except ValueError as err:  # the SDK could not read the body as a response
            raise CallFailed(f"malformed response from {self.name}:{self.model} at {where}: {short(str(err))}",
                             retryable=True) from None
        body = response.model_dump(mode="json", by_alias=True, exclude_none=True)
        blocked = (body.get("promptFeedback") or {}).get("blockReason")
        if not body.get("candidates") and blocked:
            raise CallFailed(f"{self.name}:{self.model} refused the prompt ({blocked})", retryable=False)
        try:
            completion = _gemini_completion(body)
        except Withheld as withheld:
            raise CallFailed(f"{self.name}:{self.model} {withheld.reason}", retryable=False) from None
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as err:
            raise CallFailed(f"malformed response from {self.name}:{self.model} at {where}: "
                             f"{short(f'{type(err).__name__}: {err}')}", retryable=True) from None
        self._check_status(completion.model_status or {}, body)
        return completion

    def _check_status(self, status: Mapping[str, str], body: Mapping[str, Any]) -> None:
        """What the answer's `model_status` calls for: a `RETIRED` model stops the run
        (`ModelUnavailableError`, with the provider's message), a `DEPRECATED` one or a retirement within
        `retirement.NOTICE_DAYS` is one `ModelNotice` (once per backend)."""
        spec = f"{self.name}:{self.model}"
        if is_retired(status):
            said = str((body.get("modelStatus") or {}).get("message") or "")
            raise ModelUnavailableError(spec, self._caller.scrub(short(f"model_status says RETIRED{': ' + said if said else ''}")))
        notice = status_notice(spec, status, datetime.date.today()) if status else None
        if notice and notice not in self._noticed:
            self._noticed.add(notice)
            warnings.warn(notice, ModelNotice, stacklevel=2)


def _gemini_completion(body: dict[str, Any]) -> Completion:
    """A `generateContent` response body (Gemini's JSON, camelCase) as a `Completion`: the first candidate's
    text without its thoughts, tokens (the search's prompt tokens and the thinking counted in), the model
    that served (`modelVersion`), and the search record of its `groundingMetadata`. `Withheld` when the
    provider stopped the answer (`BLOCKED`), or it ended with no text for another reason."""
    candidate = body["candidates"][0]
    parts = (candidate.get("content") or {}).get("parts") or ()
    usage = body.get("usageMetadata") or {}
    thoughts = int(usage.get("thoughtsTokenCount") or 0)
    grounding = candidate.get("groundingMetadata")
    text = "".join(part.get("text") or "" for part in parts if not part.get("thought"))
    finish = str(candidate.get("finishReason") or "FINISH_REASON_UNSPECIFIED")
    if finish in BLOCKED or (finish not in ANSWERED and not text.strip()):
        message = f": {short(str(candidate['finishMessage']))}" if candidate.get("finishMessage") else ""
        raise Withheld(f"stopped the answer (finishReason {finish}){message}")
    status = body.get("modelStatus") or {}  # google-genai types.ModelStatus {model_stage, retirement_time, message}
    model_status = {name: str(status[key]) for name, key in (("stage", "modelStage"), ("retirement_time", "retirementTime"))
                    if status.get(key)}
    return Completion(
        text=text,
        input_tokens=int(usage.get("promptTokenCount") or 0) + int(usage.get("toolUsePromptTokenCount") or 0),
        output_tokens=int(usage.get("candidatesTokenCount") or 0) + thoughts,
        truncated=finish == "MAX_TOKENS",
        cached_input_tokens=int(usage.get("cachedContentTokenCount") or 0),
        reasoning_tokens=thoughts,
        search=_grounding_search(grounding, parts) if grounding else None,
        served_model=str(body.get("modelVersion") or ""),
        truncation_reason="MAX_TOKENS" if finish == "MAX_TOKENS" else "",
        model_status=model_status or None,
    )


def _grounding_search(grounding: Mapping[str, Any], parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The search record of `groundingMetadata`; a support whose segment lies in a thought part (its
    `partIndex`) cites nothing: only the answer cites."""
    chunks = [chunk.get("web") or {} for chunk in grounding.get("groundingChunks") or ()]
    results = [{"url": web.get("uri"), "title": web.get("title"), "domain": web.get("domain")} for web in chunks]
    thought = {index for index, part in enumerate(parts) if part.get("thought")}
    pointed = dict.fromkeys(index for support in grounding.get("groundingSupports") or ()
                            if int((support.get("segment") or {}).get("partIndex") or 0) not in thought
                            for index in support.get("groundingChunkIndices") or ())
    cited = [results[index] for index in pointed if isinstance(index, int) and 0 <= index < len(results)]
    queries = grounding.get("webSearchQueries") or ()
    # each query is one search executed, which is what Gemini 3 bills (per 1,000 queries, not per prompt)
    return search_record(queries, results, cited, calls=len(queries))


def _temperature(model: str, temperature: float | None) -> float | None:
    """The temperature to send: none to Gemini 3.x, which deprecates it (a `UserError` when given), else the
    one given, 0 by default."""
    if takes_thinking_level(model):
        if temperature is not None:
            raise UserError(f"gemini:{model}: Gemini 3.x deprecates {', '.join(SAMPLING_DEPRECATED)}; leave the "
                            "temperature out (its thinking is set by --thinking-level)")
        return None
    return 0.0 if temperature is None else temperature


def _thinking_config(model: str, level: str | None, budget: int | None) -> dict[str, Any]:
    """The `ThinkingConfig` fields to send, as the SDK names them; a `UserError` for a level on a model
    before 3.x, a level the model does not take (`thinking_levels`), or a level and a budget together (the
    API refuses both)."""
    check_choice("--thinking-level", level, THINKING_LEVELS)
    if level is not None and budget is not None:
        raise UserError("give one of --thinking-level (gemini 3.x) and --thinking-budget (gemini 2.5), not both")
    if level is not None and not takes_thinking_level(model):
        raise UserError(f"gemini:{model} takes --thinking-budget, not --thinking-level (a gemini 3.x option)")
    if level is not None and level not in thinking_levels(model):
        raise UserError(f"gemini:{model} takes --thinking-level {', '.join(thinking_levels(model))}, not {level!r}")
    if budget is not None and not is_thinking_model(model):
        raise UserError(f"gemini:{model} does not think: --thinking-budget applies to gemini 2.5 and later")
    config: dict[str, Any] = {}
    if level is not None:
        config["thinking_level"] = level
    if budget is not None:
        config["thinking_budget"] = budget
    return config


QUOTA_REMEDY = ("wait for the daily quota to reset (midnight Pacific time), or raise it or enable billing for the key's "
                "Google Cloud project, then run the same command again")
_PER_DAY = re.compile(r"PerDay", re.IGNORECASE)
_PER_MINUTE = re.compile(r"PerMinute", re.IGNORECASE)
_SPENT_WORDS = re.compile(r"prepayment credits are depleted", re.IGNORECASE)


def quota_failure(details: Any) -> tuple[str | None, list[Reading]]:
    """What a Gemini error says of the account's quotas: the provider's words when no wait helps (a daily quota,
    a `QuotaFailure` violation whose `quotaId` is per day, or prepaid credit spent), and the per-minute limits its
    violations name (`quotaValue`, requests or tokens by `quotaMetric`) for the pacer to keep to."""
    error = details.get("error", details) if isinstance(details, dict) else {}
    if not isinstance(error, dict):
        return None, []
    message = str(error.get("message") or "")
    if _SPENT_WORDS.search(message):
        return f"{message} ({error.get('status') or 'RESOURCE_EXHAUSTED'})", []
    readings = []
    for detail in error.get("details") or ():
        if not isinstance(detail, dict) or not str(detail.get("@type", "")).endswith("QuotaFailure"):
            continue
        for violation in detail.get("violations") or ():
            quota = str(violation.get("quotaId") or "") if isinstance(violation, dict) else ""
            if _PER_DAY.search(quota):
                return f"{message or 'daily quota exceeded'} (quota {quota})", []
            value = violation.get("quotaValue") if _PER_MINUTE.search(quota) else None
            try:
                limit = float(value) if value is not None else 0.0
            except (TypeError, ValueError):
                limit = 0.0
            if limit > 0:
                metric = str(violation.get("quotaMetric") or "").lower()  # Gemini meters input tokens alone
                kind = INPUT_TOKENS if "input_token" in metric else TOKENS if "token" in metric else REQUESTS
                readings.append(Reading(kind, limit))
    return None, readings


def _retry_delay(details: Any) -> float | None:
    """The wait in an error's `google.rpc.RetryInfo` (`"retryDelay": "17s"`), which Gemini sends with a 429."""
    error = details.get("error", details) if isinstance(details, dict) else {}
    for detail in error.get("details") or () if isinstance(error, dict) else ():
        match = _DELAY.match(str(detail.get("retryDelay", ""))) if isinstance(detail, dict) else None
        if match:
            return float(match.group(1))
    return None


def _api_key(api_key: str | None, provider: bool) -> str:
    key = api_key or next((os.environ[name] for name in KEY_VARIABLES if os.environ.get(name)), None)
    if key:
        return key
    if provider:
        raise MissingKeyError(f"gemini: no API key for {urlsplit(GEMINI_BASE_URL).hostname}: set GEMINI_API_KEY "
                              f"(or GOOGLE_API_KEY) or pass --api-key (api_key=), or point --base-url elsewhere")
    return PLACEHOLDER_KEY


def _import_genai() -> Any:
    try:
        from google import genai
        from google.genai import errors, types  # noqa: F401 - reached as genai.errors, genai.types
    except ImportError as err:
        raise UserError("the gemini engine needs google-genai: pip install 'bespoke-eval[gemini]'") from err
    return genai
