"""`anthropic:MODEL` (`claude-sonnet-5-5`, `claude-opus-5-5`, `claude-haiku-5-5`, `claude-fable-5-2`, ...):
Anthropic's Messages API (`POST /v1/messages`), as a judge and as a system with Claude's own web search.

It is made of the part every provider backend shares (`api_backend.APIBackend`: one aiohttp session per
run, calls in flight bounded, retries honouring `Retry-After`, the run-wide retry budget) and Anthropic's
endpoint, headers (`x-api-key`, `anthropic-version`) and bodies. The official SDK (`pip install 'bespoke-eval[anthropic]'`,
imported only when this engine is built) gives the shapes: a body is a `MessageCreateParamsNonStreaming`,
each answer is read as the SDK's `Message` (`anthropic/types/message.py`), and an error is named with the
SDK's error class for its status (`OverloadedError` for a 529, which is retried like a 5xx). The
OpenAI-compatible endpoint Anthropic offers ignores `response_format` and is not meant for production:
it is not used.

What is sent: `model`, `max_tokens` (always: the API requires it; the request's own cap), the system
messages as `system`, the others as `messages`, `output_config.effort` when `--reasoning-effort` is given
(a judge gives `high` to a model that takes it, as the official evaluator judges: `anthropic_models.judgment_effort`),
refused before any call for a model that does not take that effort (before Opus 4.5, none at all), and
`temperature` only when given, refused before any call for a model that refuses it (Opus 4.7 and
later, Fable: "`temperature` is deprecated for this model"). A request's JSON schema is held as the
model takes it (`anthropic_models`): by structured outputs (`output_config.format`, the schema as the SDK's
`transform_schema` writes it), the answer's text the JSON; for a Claude before structured outputs, by a tool
with that `input_schema` the model is made to call (`tool_choice`, only with thinking off: never sent to a
model that always thinks), the call's input the answer; a Claude that takes neither is no constraint at all
(`schema.LINES`: a judge asks it for the paper's lines). With native search the schema is spelled out in
the prompt instead. `thinking` is never sent: each model thinks as it does by default (Opus 5.5:
adaptively, `output_config.effort` its only setting).

Native search (`Request.native_search`) adds the server web search tool (`WebSearchTool`: its version,
`max_uses`, `allowed_domains` or `blocked_domains`, `user_location`). What comes back is the record:
each `server_tool_use` block named `web_search` one query, each `web_search_tool_result` its results
(`url`, `title`, `page_age`; the `encrypted_content` is not kept) or its failure (`error_code`), the
citations only the answer's `web_search_result_location`s, and `calls` from
`usage.server_tool_use.web_search_requests` (billed per search).

What else comes back: the text blocks' text; the model that served (`model`); input tokens as Anthropic
bills them (`input_tokens` plus the prompt cache's reads and writes; the reads are `cached_input_tokens`),
`output_tokens` with its `thinking_tokens` as reasoning; `stop_reason` `max_tokens`,
`model_context_window_exceeded` and `pause_turn` as an answer cut off; `refusal` as a refused call
(`base.Withheld`, not retried); a retired model's `not_found_error` stops the run (`ModelUnavailableError`,
as `backends.retirement` decides).

The API key goes into the `x-api-key` header and nowhere else: not into `identity()`, and every error
message and log line is scrubbed of it.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from bespoke_dataset.errors import UserError

from ..base import Completion, Request, Withheld, messages_with_schema
from ..http import CallFailed, Session, short, status_failure
from ..options import ANTHROPIC_EFFORTS, WEB_SEARCH_TOOLS, AnthropicOptions
from ..retirement import unavailable_reason
from ..schema import JSON_SCHEMA, LINES
from ..web_search import check_choice, in_answer, parse_location, search_record, split_list
from .anthropic_models import Held, claude_family
from .api_backend import APIBackend, SearchSettings
from .openai_backend import named_schema
from .openai_session import sdk_error

log = logging.getLogger(__name__)

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
MESSAGES_PATH = "/v1/messages"
ANTHROPIC_VERSION = "2023-06-01"
"""The `anthropic-version` header (docs.anthropic.com/en/api/versioning: the Messages API's version; its
later fields are additions to it)."""
ANTHROPIC_CONCURRENCY = 16
"""Calls in flight on Anthropic's API by default: its rate limits are per minute, per organisation."""
CUT_OFF = frozenset({"max_tokens", "model_context_window_exceeded", "pause_turn"})
"""`stop_reason`s (anthropic/types/stop_reason.py) of an answer that did not end: the output cap, the
context window, or a long server-tool turn the API paused."""
STRUCTURED_TOOL_HELP = "Give the answer in this shape."
"""The description of the tool a structured answer is asked through (its input schema says the rest)."""



def refuses_temperature(model: str) -> bool:
    """True for the models that answer `temperature` with a 400 ("`temperature` is deprecated for this
    model"): `claude-opus-4-7` and later Opus models, and every Fable model (`anthropic_models`)."""
    return not claude_family(model).temperature


@dataclass(frozen=True)
class WebSearchTool(SearchSettings):
    """Anthropic's server web search tool, as BESPOKE's native-search settings set it up."""

    version: str = WEB_SEARCH_TOOLS[0]
    """The tool's `type`: one of `WEB_SEARCH_TOOLS`."""
    max_uses: int | None = None
    """Searches per answer at most (None: as many as the model makes)."""
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
    location: tuple[tuple[str, str], ...] = ()
    """The user's approximate location: `country`, `region`, `city`, `timezone` (the tool's own fields)."""

    @classmethod
    def from_options(cls, version: str | None, max_uses: int | None, allowed: str | Iterable[str] | None,
                     blocked: str | Iterable[str] | None, location: str | Mapping[str, str] | None) -> "WebSearchTool":
        """The tool from the options; a `UserError` in one line for a setting it cannot take."""
        allowed_domains, blocked_domains = split_list(allowed), split_list(blocked)
        if allowed_domains and blocked_domains:
            raise UserError("anthropic's web search takes --search-domains (allowed_domains) or --search-blocked-domains "
                            "(blocked_domains), not both")
        if max_uses is not None and max_uses < 1:
            raise UserError(f"--search-max-uses must be at least 1, got {max_uses}")
        return cls(check_choice("--search-tool", version, WEB_SEARCH_TOOLS) or WEB_SEARCH_TOOLS[0], max_uses,
                   allowed_domains, blocked_domains, tuple(parse_location(location, "--search-location").items()))

    def param(self) -> dict[str, Any]:
        """The tool as a request's `tools` entry (the SDK's `WebSearchTool20250305Param` and its later versions)."""
        tool: dict[str, Any] = {"type": self.version, "name": "web_search"}
        if self.max_uses is not None:
            tool["max_uses"] = self.max_uses
        if self.allowed_domains:
            tool["allowed_domains"] = list(self.allowed_domains)
        if self.blocked_domains:
            tool["blocked_domains"] = list(self.blocked_domains)
        if self.location:
            tool["user_location"] = {"type": "approximate", **dict(self.location)}
        return tool

    def settings(self) -> dict[str, Any]:
        """What sets this search apart from the default, for the engine's identity (none: no key at all,
        so the cache keys of a default search never change)."""
        settings = {name: value for name, value in self.param().items() if name not in ("type", "name")}
        if self.version != WEB_SEARCH_TOOLS[0]:
            settings["tool"] = self.version
        return settings


class AnthropicSession(Session):
    """Calls to Anthropic's API within one event loop: its key and version headers on every call, an error
    named as the anthropic SDK names it, and a retired model recognised (`retirement.unavailable_reason`)."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        super().__init__(base_url, {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION}, timeout)

    def _status_failure(self, status: int, headers: Mapping[str, str], content: bytes) -> CallFailed:
        failure = status_failure(status, headers, f"HTTP {status} from {self.where}: "
                                                  f"{short(sdk_error(status, content, sdk_error_class(status)))}")
        failure.unavailable = unavailable_reason(status, content)
        words = spent_credit(status, content)
        return failure.spent(words, CREDIT_REMEDY) if words else failure


SPENT_WORDS = re.compile(r"credit balance is too low|reached your specified API usage limits", re.IGNORECASE)
"""What Anthropic's 400 `invalid_request_error` says of an account that can make no call until someone acts: its
credit balance, or the spend limit its owner set (Anthropic's errors and rate-limits pages)."""
CREDIT_REMEDY = ("buy credits or raise the spend limit in the Anthropic Console (Plans & Billing, Limits), then run the "
                 "same command again")


def spent_credit(status: int, content: bytes) -> str | None:
    """The provider's words when an error says the account's credit or spend limit is spent (a 402 `billing_error`,
    or a 400 saying `SPENT_WORDS`); None otherwise."""
    try:
        error = json.loads(content).get("error")
    except (ValueError, AttributeError):
        return None
    if not isinstance(error, dict):
        return None
    message = str(error.get("message") or "")
    if status == 402 or error.get("type") == "billing_error" or (status == 400 and SPENT_WORDS.search(message)):
        return f"{message or 'billing error'} ({error.get('type') or status})"
    return None


def sdk_error_class(status: int) -> type:
    """The anthropic SDK's public error class for an HTTP error status, as its client picks it
    (anthropic/_error_classes.py: 529 is `OverloadedError`)."""
    import anthropic  # only on a failed call

    by_status = {400: anthropic.BadRequestError, 401: anthropic.AuthenticationError, 402: anthropic.PaymentRequiredError,
                 403: anthropic.PermissionDeniedError, 404: anthropic.NotFoundError, 408: anthropic.RequestTimeoutError,
                 409: anthropic.ConflictError, 413: anthropic.ContentTooLargeError, 422: anthropic.UnprocessableEntityError,
                 429: anthropic.RateLimitError, 503: anthropic.ServiceUnavailableError, 504: anthropic.GatewayTimeoutError,
                 529: anthropic.OverloadedError}
    if status in by_status:
        return by_status[status]
    return anthropic.InternalServerError if status >= 500 else anthropic.APIStatusError


class AnthropicBackend(APIBackend):
    """Anthropic's Messages API. See the module docstring."""

    name = "anthropic"
    default_url = ANTHROPIC_BASE_URL
    url_variable = "ANTHROPIC_BASE_URL"
    key_variable = "ANTHROPIC_API_KEY"
    provider_concurrency = ANTHROPIC_CONCURRENCY
    api = "messages"
    efforts = ANTHROPIC_EFFORTS

    def __init__(self, model: str, options: AnthropicOptions | None = None) -> None:
        """
        Args:
            model: the model name the API knows (`claude-sonnet-5-5`, `claude-opus-4-7-20260416`).
            options: its `AnthropicOptions` (None: every default):
                temperature: none unless given (the model's own); refused for a model that refuses it.
                schema_format: hold a request's JSON schema as the model takes it (`anthropic_models`; default on).
                reasoning_effort: `output_config.effort`, one the model takes (`ClaudeFamily.efforts`; default: none
                    sent, the model's own).
                search_domains, search_blocked_domains: the web search tool's `allowed_domains` or
                    `blocked_domains` (`"a.org,b.com"`; not both).
                search_location: its `user_location`, `"country=GB,city=London"`.
                search_max_uses: its `max_uses`, searches per answer at most.
                search_tool: its version, one of `WEB_SEARCH_TOOLS` (default `web_search_20250305`).
                the transport's endpoint and retry options (`APIBackend.connect`: `base_url`, `api_key`,
                    `concurrency`, `timeout`, `max_retries`, ...); the endpoint default is `ANTHROPIC_BASE_URL`,
                    else Anthropic's API, the key `ANTHROPIC_API_KEY`, at most 16 calls in flight.
        """
        options = options or AnthropicOptions()
        self._anthropic = _import_anthropic()
        self.connect(model, log, options)
        self.family = claude_family(model)
        """How the Messages API holds this model to a schema, and what else it takes (`anthropic_models`)."""
        if options.temperature is not None and not self.family.temperature:
            raise UserError(f"{self.name}:{self.model} takes no temperature (Anthropic answers it with a 400 for "
                            "Opus 4.7 and later and Fable: \"`temperature` is deprecated for this model\"); leave it out")
        self.temperature = options.temperature
        self.effort = self._checked_effort(options.reasoning_effort, "--reasoning-effort")
        self.schema_format = options.schema_format is not False
        self.held: Held | None = self.family.held() if self.schema_format else None
        """How a request's schema is held: `output_config.format`, a forced tool, or not (the paper's lines)."""
        self.constraint = None if self.held is None else LINES if self.held == "lines" else JSON_SCHEMA
        self.search: WebSearchTool = WebSearchTool.from_options(options.search_tool, options.search_max_uses,
                                                              options.search_domains, options.search_blocked_domains,
                                                              options.search_location)

    def settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {}
        if self.temperature is not None:
            settings["temperature"] = self.temperature
        if self.effort is not None:
            settings["reasoning_effort"] = self.effort
        return settings

    def check_request(self, request: Request) -> None:
        super().check_request(request)
        self._checked_effort(self.effort_for(request, None), "--recall-reasoning-effort")

    def _checked_effort(self, effort: str | None, flag: str) -> str | None:
        """`effort`, where the model takes it (`ClaudeFamily.efforts`); a `UserError` in one line where not."""
        check_choice(flag, effort, ANTHROPIC_EFFORTS)
        efforts = self.family.efforts
        if effort is None or effort in efforts:
            return effort
        if not efforts:
            raise UserError(f"{self.name}:{self.model} ({self.family.name}) takes no {flag}, not {effort!r}: Anthropic "
                            "answers any with a 400 (\"This model does not support the effort parameter.\"); leave it out")
        raise UserError(f"{self.name}:{self.model} ({self.family.name}) takes {flag} {', '.join(efforts)}, not {effort!r}")

    def new_session(self) -> AnthropicSession:
        return AnthropicSession(self.base_url, self._api_key, self.timeout)

    def path_and_body(self, request: Request) -> tuple[str, bytes]:
        return MESSAGES_PATH, json.dumps(self.message_params(request), ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def message_params(self, request: Request) -> dict[str, Any]:
        """The request as the Messages API takes it (the SDK's `MessageCreateParamsNonStreaming`): mapped
        fields only; a schema held as the model takes it (`held`), never by a forced tool with thinking on."""
        schema = None if request.native_search else request.json_schema  # with search: spelled out in the prompt
        held = self.held if schema is not None else None
        messages = [dict(m) for m in request.messages] if held in ("format", "tool") else messages_with_schema(request)
        if request.tools or any(m.get("role") == "tool" or m.get("tool_calls") for m in messages):
            raise ValueError("the anthropic engine takes no tools (takes_tools is False)")
        params: dict[str, Any] = {"model": self.model, "max_tokens": request.max_tokens,
                                  "messages": [{"role": m["role"], "content": m["content"]} for m in messages
                                               if m["role"] != "system"]}
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        if system:
            params["system"] = system
        if self.temperature is not None:
            params["temperature"] = self.temperature
        output_config: dict[str, Any] = {}
        effort = self.effort_for(request, self.effort)
        if effort is not None:
            output_config["effort"] = effort
        tools = [self.search.param()] if request.native_search else []
        if schema is not None and held == "format":
            output_config["format"] = {"type": "json_schema", "schema": self._anthropic.transform_schema(schema)}
        elif schema is not None and held == "tool":
            name = named_schema(schema)["name"]
            tools.append({"name": name, "description": STRUCTURED_TOOL_HELP, "input_schema": schema})
            params["tool_choice"] = {"type": "tool", "name": name}
        if output_config:
            params["output_config"] = output_config
        if tools:
            params["tools"] = tools
        return params

    def parse(self, path: str, answer: dict[str, Any]) -> Completion:
        """The completion of a Messages API answer (a direct call's body, or a batch result's `message`):
        read as the SDK's `Message` (a body that is not one: pydantic's ValidationError, a ValueError)."""
        return message_completion(self._anthropic.types.Message.model_validate(answer))


def message_completion(message: Any) -> Completion:
    """A `Message` (the SDK's type) as a `Completion` (see the module docstring); `Withheld` for a refusal."""
    if message.stop_reason == "refusal":
        details = message.stop_details
        why = ": ".join(filter(None, (details.category, details.explanation))) if details is not None else ""
        raise Withheld("refused to answer" + (f" ({short(why)})" if why else ""))
    text = "".join(block.text for block in message.content if block.type == "text")
    answers = [block for block in message.content if block.type == "tool_use"]
    if answers:  # the forced tool of a structured answer (no other tool is offered): its input is the answer
        text = json.dumps(answers[-1].input, ensure_ascii=False)
    usage = message.usage
    cached, written = usage.cache_read_input_tokens or 0, usage.cache_creation_input_tokens or 0
    cut = message.stop_reason in CUT_OFF
    return Completion(
        text=text,
        input_tokens=usage.input_tokens + written + cached,
        output_tokens=usage.output_tokens,
        truncated=cut,
        cached_input_tokens=cached,
        cache_write_tokens=written,
        reasoning_tokens=usage.output_tokens_details.thinking_tokens if usage.output_tokens_details is not None else 0,
        search=_search(message, text),
        served_model=str(message.model or ""),
        service_tier=str(usage.service_tier or ""),
        truncation_reason=str(message.stop_reason) if cut else "",
    )


def _search(message: Any, text: str) -> dict[str, Any] | None:
    """The search record of a message's web search blocks (see the module docstring); None when it did not
    search."""
    searches = {block.id: block for block in message.content if block.type == "server_tool_use" and block.name == "web_search"}
    answered = [block for block in message.content if block.type == "web_search_tool_result"]
    citations = [{"url": citation.url, "title": citation.title} for block in message.content if block.type == "text"
                 for citation in block.citations or () if citation.type == "web_search_result_location"]
    billed = message.usage.server_tool_use.web_search_requests if message.usage.server_tool_use is not None else None
    if not searches and not answered and not citations and not billed:
        return None
    results: list[dict[str, Any]] = []
    failures: list[str] = []
    for block in answered:
        if isinstance(block.content, list):
            results += [{"url": found.url, "title": found.title, **({"page_age": found.page_age} if found.page_age else {})}
                        for found in block.content]
            continue
        asked = searches.get(block.tool_use_id)
        query = f" ({str(asked.input.get('query') or '')!r})" if asked is not None else ""
        failures.append(f"the web search {block.tool_use_id}{query} failed: {block.content.error_code}")
    queries = [str(block.input.get("query") or "") for block in searches.values()]
    return search_record(queries, results, in_answer(text, citations), calls=billed if billed is not None else len(searches),
                         failures=failures)


def _import_anthropic() -> Any:
    try:
        import anthropic
        from anthropic import types  # noqa: F401 - reached as anthropic.types
    except ImportError as err:
        raise UserError("the anthropic engine needs the anthropic SDK: pip install 'bespoke-eval[anthropic]'") from err
    return anthropic
