"""`openai:MODEL`: any OpenAI-compatible endpoint, with OpenAI's web search and function calling.

OpenAI itself, a `vllm serve`, TGI, SGLang or Ollama: calls go out concurrently through the part every
provider backend shares (`api_backend.APIBackend`: a limit on calls in flight, a timeout per call, backoff
honouring `Retry-After`, a run-wide retry budget); what is OpenAI's own (its model families, its two APIs,
its shutdown dates) is here, and reaches no other provider.

What a model takes is its family's (`openai_models`: one row per family): reasoning models (the o-series,
GPT-5, GPT-6) go through the Responses API with `reasoning_effort` ("high" by default, as in the paper; an
effort the family refuses is a `UserError`) and no temperature unless their family takes one at the
effort given (GPT-5.1 and later, GPT-6: only at effort `none`); other models through chat completions at
temperature 0. The output cap goes by the name each API and model family takes (`token_parameter`).
From GPT-6.1 tools, web search included, live in the Responses API only: a request with tools goes
there, or, where the chat API was chosen, is refused in one line before any call.

- Native search (`Request.native_search`): the Responses API with the `web_search` tool (its context size,
  approximate user location, allowed domains and `external_web_access` are this backend's settings), asking for the sources it
  searched (`include=["web_search_call.action.sources"]`). The queries and sources come from the
  `web_search_call` output items (each `search` one search, a `failed` one counted as failed, `open_page`
  and `find_in_page` the pages opened), the citations from the final answer's `url_citation` annotations
  (often none: the sources are kept). The chat-completions search models (`gpt-4o-search-preview`,
  `gpt-5-search-api`) search through chat completions with `web_search_options` and cite in
  `message.annotations`; they take no temperature.
- Function calling (`Request.tools`): `tools=` in either API; the calls come back in
  `Completion.tool_calls`. A server that leaves them in the answer's text instead (a `vllm serve` whose
  tool parser failed on the model's output) still yields them: the text is read as a local model's is. A conversation continues in OpenAI's chat shape (`tool_calls.assistant_turn`,
  `tool_calls.tool_turn`), which the Responses API gets as `function_call` / `function_call_output` items.

A request's JSON schema goes as a structured-output format (`response_format` in chat completions, `text.format`
in the Responses API; `constraint` is `json-schema`). Another server than the provider's (a `vllm serve`,
llama.cpp's `llama-server`, which compile the schema into a grammar) gets it bounded
(`schema.bounded_schema`: a `maxLength` on every free string), so that a small model that loops inside a
string is made to close it and its answer ends; OpenAI's own API gets it as the protocol writes it, its
strict mode taking a subset of JSON Schema.

Calls go out through OpenAI's session on the HTTP core (`openai_session.OpenAISession` on `backends.http`),
which keeps the SDK's per-call request pipeline off the hot path: each body is serialised once, here, and the answer is
read from the raw JSON by `_chat_completion` / `_responses_completion`, which take a raw response body (a
batch's output lines too) and record the model that served it (`model`, `system_fingerprint`,
`service_tier`). A refusal, or a response that failed, fails its call naming it (`base.Withheld`); a model
the endpoint no longer serves stops the run (`ModelUnavailableError`, as `retirement` decides). On OpenAI's
API, `describe()` adds the model's published shutdown date, looked up once.

The API key is used for the `Authorization` header and nothing else: it is not part of `identity()`, and
every error message and log line this module writes is scrubbed of it.
"""

from __future__ import annotations

import datetime
import difflib
import json
import logging
import re
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.schema import JSON_SCHEMA, bounded_schema

from ..base import Completion, Request, ToolCall, Withheld, content_text
from ..http import Session, short
from ..options import REASONING_EFFORTS, OpenAIOptions
from ..retirement import ModelNotice, known_shutdown, shutdown_notice
from ..retries import UNREACHABLE_RETRIES
from ..tool_calls import decode_call, with_tool_calls
from ..web_search import SEARCH_CONTEXT_SIZES, check_choice, in_answer, parse_location, search_record, split_list
from .api_backend import APIBackend, SearchSettings
from .openai_models import SAMPLING_PARAMETERS, family_of
from .openai_session import OpenAISession, model_ids, model_shutdown_date

log = logging.getLogger(__name__)

__all__ = ["OpenAIBackend", "UNREACHABLE_RETRIES", "is_reasoning_model", "is_search_model",
           "token_parameter"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_CONCURRENCY = 32
SEARCH_SOURCES = "web_search_call.action.sources"
"""What the Responses API must be asked to `include` for the sources of its searches."""
SHUTDOWN_LOOKUP_S = 5.0
"""How long the one look-up of a model's shutdown date may take before it is given up (silently)."""

_shutdown_dates: dict[tuple[str, str], str | None] = {}
"""(endpoint, model) -> the shutdown date its provider published (None: none), looked up once a process."""
_close_models: dict[tuple[str, str], str | None] = {}
"""(endpoint, model) -> the endpoint's model whose name is closest to it (None: none close), looked up once."""
TYPO_CUTOFF = 0.75
"""How alike (difflib's ratio) a served model's name must be to the unknown one asked for, to be offered as
what was meant: `gtp-5` and `gpt-5` are 0.8 alike."""
STAND_IN_FIELD = "bespoke_stand_in"
"""A top-level field of an answer body (not OpenAI's) by which a server says that a stand-in made the answer,
not a model: `bespoke stand-in` sets it on every answer (`Completion.stand_in`)."""


def token_parameter(model: str, path: str) -> str:
    """The name of the output-token cap a call to `path` of `model` takes: `max_output_tokens` on the
    Responses API; on chat completions the family's (`openai_models`): `max_completion_tokens` for the
    o-series, GPT-5 and GPT-6 (which answer `max_tokens` with a 400), `max_tokens` for every other model
    (what other servers read)."""
    if path == "/responses":
        return "max_output_tokens"
    return family_of(model).chat_token_parameter


def is_reasoning_model(model: str) -> bool:
    """True for OpenAI's reasoning models (o1, o3, o4-mini, gpt-5, gpt-5-mini, gpt-6.2-astra, ...; not gpt-5-chat)."""
    return family_of(model).reasoning


def is_search_model(model: str) -> bool:
    """True for OpenAI's chat-completions search models (gpt-4o-search-preview, gpt-5-search-api, ...)."""
    return family_of(model).chat_search


@dataclass(frozen=True)
class WebSearch(SearchSettings):
    """How OpenAI's web search searches (`Request.native_search`)."""

    context_size: str | None = None
    """low, medium or high: how much of what it found the model reads (default: the API's, medium)."""
    location: tuple[tuple[str, str], ...] = ()
    """The user's approximate location: `country`, `region`, `city`, `timezone`."""
    domains: tuple[str, ...] = ()
    """Search only these domains (the Responses API only)."""
    external_web_access: bool | None = None
    """False: cached pages only, nothing fetched live (the Responses API only; the API's default is True)."""

    @classmethod
    def from_options(cls, context_size: str | None, location: str | Mapping[str, str] | None,
                     domains: str | Iterable[str] | None, external_web_access: bool | None = None) -> "WebSearch":
        return cls(check_choice("--search-context-size", context_size, SEARCH_CONTEXT_SIZES),
                   tuple(parse_location(location, "--search-location").items()), split_list(domains), external_web_access)

    def settings(self) -> dict[str, Any]:
        """What sets this search apart from the default, for the engine's identity."""
        settings: dict[str, Any] = {}
        if self.context_size is not None:
            settings["search_context_size"] = self.context_size
        if self.location:
            settings["user_location"] = dict(self.location)
        if self.domains:
            settings["allowed_domains"] = list(self.domains)
        if self.external_web_access is not None:
            settings["external_web_access"] = self.external_web_access
        return settings

    def responses_tool(self) -> dict[str, Any]:
        """The `web_search` tool (openai-python `WebSearchToolParam`)."""
        tool: dict[str, Any] = {"type": "web_search"}
        if self.context_size is not None:
            tool["search_context_size"] = self.context_size
        if self.location:
            tool["user_location"] = {"type": "approximate", **dict(self.location)}
        if self.domains:
            tool["filters"] = {"allowed_domains": list(self.domains)}
        if self.external_web_access is not None:
            tool["external_web_access"] = self.external_web_access
        return tool

    def chat_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.context_size is not None:
            options["search_context_size"] = self.context_size
        if self.location:
            options["user_location"] = {"type": "approximate", "approximate": dict(self.location)}
        return options


class OpenAIBackend(APIBackend):
    """Concurrent calls to an OpenAI-compatible endpoint. See the module docstring."""

    name = "openai"
    takes_tools = True
    efforts = REASONING_EFFORTS
    default_url = OPENAI_BASE_URL
    url_variable: str | None = "OPENAI_BASE_URL"
    key_variable = "OPENAI_API_KEY"
    provider_concurrency = OPENAI_CONCURRENCY

    def __init__(self, model: str, options: OpenAIOptions | None = None) -> None:
        """
        Args:
            model: the model name the endpoint knows.
            options: its `OpenAIOptions` (None: every default), each None the default:
                base_url: the endpoint, ending in `/v1`; default `OPENAI_BASE_URL`, else OpenAI.
                api_key: default `OPENAI_API_KEY`; a placeholder is sent to non-OpenAI endpoints without one.
                api: `chat` (chat completions), `responses` (Responses API), or `auto` (the default):
                    `responses` for reasoning models and for native search, `chat` otherwise.
                concurrency: calls in flight at most; default `OPENAI_CONCURRENCY` (32) for OpenAI's API, whose
                    rate limits bite first, and `SERVER_CONCURRENCY` (128) for any other endpoint: a
                    `vllm serve` batches whatever is in flight, so the more the faster.
                timeout: seconds per call before it counts as failed (and is retried); default 600.
                temperature: default 0 for chat models; reasoning and search models take none.
                reasoning_effort: one of `REASONING_EFFORTS`; default "high" for reasoning models.
                reasoning_max_tokens: output cap for reasoning models, whose hidden reasoning counts against
                    it; default none (the request's `max_tokens` would starve the reasoning).
                schema_format: send a request's `json_schema` as a structured-output format (default True).
                search_context_size, search_location, search_domains: how native search searches (`WebSearch`):
                    `low`/`medium`/`high`; `"country=GB,city=London"`; `"a.org,b.com"` (Responses API only).
                search_external_web_access: False: the web search reads cached pages only, fetching nothing live
                    (Responses API only; default the API's, live access).
                shutdown_lookup: ask the endpoint once for the model's published shutdown date (`describe()`
                    records it; a `ModelNotice` when it is near); default: on OpenAI's API only.
                max_retries, retry_budget, backoff_base, backoff_max, max_retry_wait: how failed calls are
                    retried (`retries.RetryPolicy`).
        """
        options = options or OpenAIOptions()
        endpoint = self.connect(model, log, options)
        self.family = family_of(model)
        """What the API takes from this model (`openai_models.Family`)."""
        self.reasoning = self.family.reasoning
        self.api, self._api_chosen = self._resolve_api(options.api or "auto")
        self.temperature, self.reasoning_effort = self._sampling(options.temperature, options.reasoning_effort)
        self.reasoning_max_tokens = options.reasoning_max_tokens
        self.schema_format = options.schema_format is not False
        self.constraint = JSON_SCHEMA if self.schema_format else None
        self._bounded_schemas = not endpoint.provider  # a server that compiles the schema itself
        self.search: WebSearch = self._web_search(options.search_context_size, options.search_location,
                                                  options.search_domains, options.search_external_web_access)
        # OpenAI's own models endpoint is the one known to publish shutdown dates
        self.shutdown_lookup = endpoint.provider if options.shutdown_lookup is None else options.shutdown_lookup

    # -- construction, in parts ----------------------------------------------------------------------

    def _resolve_api(self, api: str) -> tuple[str, bool]:
        """(the API of a call without native search, whether the user chose it)."""
        if api == "auto":
            return ("responses" if self.reasoning else "chat"), False
        if api not in ("chat", "responses"):
            raise UserError(f"api must be 'auto', 'chat' or 'responses', got {api!r}")
        return api, True

    def _sampling(self, temperature: float | None, reasoning_effort: str | None) -> tuple[float | None, str | None]:
        """(temperature, reasoning effort) to send: what the model's family takes (`openai_models`), a
        `UserError` in one line for what it would refuse. A chat model gets temperature 0 unless given; a
        reasoning model effort "high" unless given, and a temperature only where given and taken."""
        family = self.family
        self._check_effort(reasoning_effort)
        effort = reasoning_effort or ("high" if family.reasoning else None)
        if temperature is not None and not family.takes_sampling(effort):
            sampling = ", ".join(SAMPLING_PARAMETERS)
            if family.sampling == "effort-none" and "none" in (family.efforts or ("none",)):
                raise UserError(f"{self.name}:{self.model} ({family.name}) takes {sampling} only at --reasoning-effort "
                                f"none, not at {effort!r}: leave the temperature out, or give --reasoning-effort none")
            if family.sampling == "effort-none":
                raise UserError(f"{self.name}:{self.model} ({family.name}) takes no {sampling}: they need reasoning "
                                "effort none, which it does not take; leave the temperature out")
            kind = "a reasoning model: it takes reasoning_effort, not" if family.reasoning else "a search model: it takes no"
            raise UserError(f"{self.model} is {kind} temperature")
        if family.reasoning or family.chat_search:
            return temperature, effort
        return (0.0 if temperature is None else temperature), effort

    def _web_search(self, context_size: str | None, location: str | Mapping[str, str] | None,
                    domains: str | Iterable[str] | None, external_web_access: bool | None) -> WebSearch:
        search = WebSearch.from_options(context_size, location, domains, external_web_access)
        chat = self.family.chat_search or (self._api_chosen and self.api == "chat")
        for flag, given in (("--search-domains", search.domains), ("--no-external-web-access", search.external_web_access is not None)):
            if given and chat:
                raise UserError(f"{self.name}:{self.model}: {flag} needs the Responses API; chat-completions search "
                                "takes no such setting")
        return search

    # -- Backend interface -------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {}
        if self.temperature is not None:
            settings["temperature"] = self.temperature
        if self.reasoning_effort is not None:
            settings["reasoning_effort"] = self.reasoning_effort
        if self.reasoning:
            settings["reasoning_max_tokens"] = self.reasoning_max_tokens
        return settings

    def shutdown_date(self) -> str | None:
        """The model's published shutdown date (OpenAI's `GET /v1/models/{model}`, else the date its
        deprecations page announced: `retirement.SHUTDOWNS`), looked up once a process (`shutdown_lookup`),
        with one `ModelNotice` when it is within `retirement.NOTICE_DAYS`; None when none is known."""
        if not self.shutdown_lookup:
            return None
        key = (self.base_url, self.model)
        if key not in _shutdown_dates:
            published = model_shutdown_date(self.base_url, self._api_key, self.model, SHUTDOWN_LOOKUP_S)
            announced = known_shutdown(self.name, self.model) if published is None else None
            _shutdown_dates[key] = published or (announced.date if announced is not None else None)
            notice = shutdown_notice(f"{self.name}:{self.model}", _shutdown_dates[key], datetime.date.today(),
                                     *((announced.source,) if announced is not None else ()))
            if notice:
                warnings.warn(notice, ModelNotice, stacklevel=2)
        return _shutdown_dates[key]

    def close_model(self) -> str | None:
        """The spec of the endpoint's model (`GET /models`) whose name is closest to this one's, when the
        endpoint does not serve this one: a typo (`openai:gtp-5` -> `openai:gpt-5`); None when none is close
        or the endpoint lists none. Looked up once a process, on the way to stopping the run."""
        key = (self.base_url, self.model)
        if key not in _close_models:
            served = [name for name in model_ids(self.base_url, self._api_key, SHUTDOWN_LOOKUP_S) if name != self.model]
            close = difflib.get_close_matches(self.model, served, n=1, cutoff=TYPO_CUTOFF)
            _close_models[key] = f"{self.name}:{close[0]}" if close else None
        return _close_models[key]

    def new_session(self) -> Session:
        return OpenAISession(self.base_url, self._api_key, self.timeout)

    async def answer(self, session: Session, request: Request, path: str, body: bytes) -> Completion:
        completion = await self._call(session, path, body)
        if request.tools and not completion.tool_calls:
            # a server that left the calls in the text (vLLM's tool parsers, at times): read them as a local
            # model's are read
            return with_tool_calls(completion, request)
        return completion

    def parse(self, path: str, answer: dict[str, Any]) -> Completion:
        """The completion in the raw answer of a call to `path` (a direct call's body, or a Batch API output
        line's `response.body`); KeyError/TypeError/... when it holds none, `Withheld` when the model refused."""
        return _responses_completion(answer) if path == "/responses" else _chat_completion(answer)

    def path_and_body(self, request: Request) -> tuple[str, bytes]:
        """The endpoint path and the JSON body of a request, ready to send."""
        if self._api_for(request) == "responses":
            path, args = "/responses", self._responses_args(request)
        else:
            path, args = "/chat/completions", self._chat_args(request)
        return path, json.dumps(args, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def _api_for(self, request: Request) -> str:
        """The API a request goes through: its model's own (`api`), but OpenAI's web search tool lives in the
        Responses API (only the search models search in chat), and from GPT-6.1 every tool does
        (`Family.chat_tools`): such a request is mapped there, or refused in one line where the chat API was
        chosen (`UserError`)."""
        if self.family.chat_search:
            return self.api
        if (request.tools or request.native_search) and not self.family.chat_tools:
            if self._api_chosen and self.api == "chat":
                raise UserError(f"{self.name}:{self.model} ({self.family.name}) calls tools, web search included, only "
                                "through the Responses API, not chat completions: leave api='chat' out")
            return "responses"
        if request.native_search and not self._api_chosen:
            return "responses"
        return self.api

    def _sampling_for(self, request: Request) -> tuple[float | None, str | None]:
        """(temperature, reasoning effort) of one call: the backend's, or the effort the request asks for
        (`Request.reasoning_effort`; `MODEL_DEFAULT`: none), with the temperature only where the family takes
        it at that effort."""
        if request.reasoning_effort is None:
            return self.temperature, self.reasoning_effort
        effort = self.effort_for(request, self.reasoning_effort)
        taken = self.family.sampling == "always" or (effort is not None and self.family.takes_sampling(effort))
        return (self.temperature if taken else None), effort

    def check_request(self, request: Request) -> None:
        """A `UserError` in one line for a request the model's API would refuse (a tool where it calls none, an
        effort its family does not take), before any call."""
        self._api_for(request)
        super().check_request(request)
        self._check_effort(self.effort_for(request, None))

    def _check_effort(self, effort: str | None) -> None:
        check_choice("--reasoning-effort", effort, REASONING_EFFORTS)
        efforts = self.family.efforts
        if effort is not None and efforts is not None and effort not in efforts:
            raise UserError(f"{self.name}:{self.model} ({self.family.name}) takes --reasoning-effort "
                            f"{', '.join(efforts)}, not {effort!r}")

    def output_limit(self, request: Request) -> int | None:
        """The output token cap to send: a reasoning model spends hidden tokens first, so the request's own
        budget would starve it; it gets `reasoning_max_tokens` (None: no cap)."""
        return self.reasoning_max_tokens if self.reasoning else request.max_tokens

    def _chat_args(self, request: Request) -> dict[str, Any]:
        args: dict[str, Any] = {"model": self.model, "messages": chat_messages(request.messages)}
        limit = self.output_limit(request)
        if limit is not None:
            args[token_parameter(self.model, "/chat/completions")] = limit
        temperature, effort = self._sampling_for(request)
        if temperature is not None:
            args["temperature"] = temperature
        if effort is not None:
            args["reasoning_effort"] = effort
        if self.schema_format and request.json_schema is not None:
            args["response_format"] = self._response_format(self._schema_of(request))
        if request.tools:
            args["tools"] = list(request.tools)
        args.update(self._chat_search_args(request))
        return args

    def _response_format(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {"type": "json_schema", "json_schema": named_schema(schema)}

    def _schema_of(self, request: Request) -> dict[str, Any]:
        """The schema sent for a request that has one: bounded for a server that compiles it itself."""
        assert request.json_schema is not None
        return bounded_schema(request.json_schema, request.max_tokens) if self._bounded_schemas else request.json_schema

    def _chat_search_args(self, request: Request) -> dict[str, Any]:
        """What a chat-completions body adds for (or against) native search."""
        return {"web_search_options": self.search.chat_options()} if request.native_search else {}

    def _responses_args(self, request: Request) -> dict[str, Any]:
        args: dict[str, Any] = {"model": self.model, "input": responses_input(request.messages), "store": False}
        limit = self.output_limit(request)
        if limit is not None:
            args[token_parameter(self.model, "/responses")] = limit
        temperature, effort = self._sampling_for(request)
        if temperature is not None:
            args["temperature"] = temperature
        if effort is not None:
            args["reasoning"] = {"effort": effort}
        if self.schema_format and request.json_schema is not None:
            args["text"] = {"format": {"type": "json_schema", **named_schema(self._schema_of(request))}}
        tools = [responses_function(tool) for tool in request.tools]
        if request.native_search:
            tools.append(self.search.responses_tool())
            args["include"] = [SEARCH_SOURCES]
        if tools:
            args["tools"] = tools
        return args


# -- request bodies ------------------------------------------------------------------------------------


def chat_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages for chat completions: as given, but a tool answer keeps only what the API takes."""
    out = []
    for message in messages:
        message = dict(message)
        if message.get("role") == "tool":
            message.pop("name", None)
        out.append(message)
    return out


def responses_input(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as Responses API input: a turn's tool calls become `function_call` items, a tool
    answer a `function_call_output` item."""
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "tool":
            items.append({"type": "function_call_output", "call_id": message.get("tool_call_id", ""),
                          "output": message.get("content") or ""})
            continue
        calls = message.get("tool_calls") or ()
        if message.get("content") or not calls:
            items.append({"role": message["role"], "content": message.get("content") or ""})
        for call in calls:
            function = call.get("function") or {}
            arguments = function.get("arguments", "{}")
            items.append({"type": "function_call", "call_id": call.get("id", ""), "name": function.get("name", ""),
                          "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)})
    return items


def responses_function(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A chat-completions function tool in the Responses API's flat shape, not strict unless it says so
    (the Responses API's default is strict, chat completions' is not)."""
    function = dict(tool.get("function") or {})
    return {"type": "function", "strict": False, **function}


def named_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as OpenAI's structured outputs take it (`{"name", "schema", "strict"}`, the name from its
    `title`, in the characters and length the API allows)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title", "answer")))[:64] or "answer"
    return {"name": name, "schema": schema, "strict": True}


# -- response bodies (raw JSON in, Completion out) --------------------------------------------------------


def _chat_completion(answer: dict[str, Any]) -> Completion:
    """A chat completions response body as a `Completion`: text, tokens (cached input and reasoning too),
    tool calls, the model that served, and the search record of a search model (its `url_citation`
    annotations in the answer). `Withheld` for a refusal (`message.refusal`)."""
    choice = answer["choices"][0]
    message = choice["message"]
    if message.get("refusal"):
        raise Withheld(f"refused to answer: {short(str(message['refusal']))}")
    text = content_text(message.get("content"))  # a list of text parts read too
    usage = answer.get("usage") or {}
    citations = [note.get("url_citation") or {} for note in message.get("annotations") or ()
                 if note.get("type") == "url_citation"]
    cut = choice.get("finish_reason") == "length"
    return Completion(
        text=text,
        input_tokens=usage.get("prompt_tokens") or 0,
        output_tokens=usage.get("completion_tokens") or 0,
        truncated=cut,
        cached_input_tokens=_detail(usage, "prompt_tokens_details", "cached_tokens"),
        cache_write_tokens=_detail(usage, "prompt_tokens_details", "cache_write_tokens"),
        reasoning_tokens=_detail(usage, "completion_tokens_details", "reasoning_tokens"),
        tool_calls=_calls((call.get("function") or {}, call.get("id", "")) for call in message.get("tool_calls") or ()),
        search=_chat_search(text, citations) if citations else None,
        truncation_reason="length" if cut else "",
        **_served(answer),
    )


def _chat_search(text: str, citations: list[dict[str, Any]]) -> dict[str, Any]:
    """The search record of a chat search model: its citations are its results; those in the answer are cited."""
    found = [{"url": note.get("url"), "title": note.get("title")} for note in citations]
    return search_record((), found, in_answer(text, citations))


def _responses_completion(answer: dict[str, Any]) -> Completion:
    """A Responses API response body as a `Completion`: the text of every `output_text` part of every
    message (as the SDK's `Response.output_text` joins it), tokens, `function_call` items as tool calls, the
    model that served, and the search record of its `web_search_call` items and `url_citation` annotations.
    `Withheld` for a refusal (a `refusal` content part and no text) and for a response whose status is
    `failed` or `cancelled`."""
    if answer.get("status") in ("failed", "cancelled"):  # a 200 whose response failed (ResponseError: code, message)
        error = answer.get("error") or {}
        said = ": ".join(str(error[name]) for name in ("code", "message") if error.get(name))
        raise Withheld(f"answered with status {answer['status']}" + (f" ({short(said)})" if said else ""))
    contents = [part for item in answer["output"] if item.get("type") == "message" for part in item.get("content") or ()]
    parts = [part for part in contents if part.get("type") == "output_text"]
    text = "".join(part.get("text") or "" for part in parts)
    refusals = [str(part.get("refusal") or "") for part in contents if part.get("type") == "refusal"]
    if refusals and not text.strip():
        raise Withheld(f"refused to answer: {short(' '.join(refusals))}")
    calls = [item for item in answer["output"] if item.get("type") == "web_search_call"]
    citations = [note for part in parts for note in in_answer(part.get("text") or "", part.get("annotations") or ())
                 if note.get("type") == "url_citation"]
    usage = answer.get("usage") or {}
    cut = answer.get("status") == "incomplete"
    return Completion(
        text=text,
        input_tokens=usage.get("input_tokens") or 0,
        output_tokens=usage.get("output_tokens") or 0,
        truncated=cut,
        cached_input_tokens=_detail(usage, "input_tokens_details", "cached_tokens"),
        cache_write_tokens=_detail(usage, "input_tokens_details", "cache_write_tokens"),
        reasoning_tokens=_detail(usage, "output_tokens_details", "reasoning_tokens"),
        tool_calls=_calls((item, item.get("call_id", "")) for item in answer["output"] if item.get("type") == "function_call"),
        search=_responses_search(calls, citations) if calls or citations else None,
        truncation_reason=str((answer.get("incomplete_details") or {}).get("reason") or "incomplete") if cut else "",
        **_served(answer),
    )


def _served(answer: Mapping[str, Any]) -> dict[str, Any]:
    """Which model served a call, its `system_fingerprint` and service tier, and whether a stand-in made it
    (`STAND_IN_FIELD`), as the response body says."""
    return {"served_model": str(answer.get("model") or ""), "system_fingerprint": str(answer.get("system_fingerprint") or ""),
            "service_tier": str(answer.get("service_tier") or ""), "stand_in": answer.get(STAND_IN_FIELD) is True}


def _responses_search(calls: list[dict[str, Any]], citations: list[dict[str, Any]]) -> dict[str, Any]:
    """The search record of `web_search_call` items (`ResponseFunctionWebSearch`): each with a `search`
    action is one search (`calls`), its query or queries and its sources the results (a `url` source by its
    URL, an `api` source, a data feed such as `oai-weather`, by its `name`); one whose status is `failed`
    is counted in `failed`, with why in `failures`; `open_page` and `find_in_page` name a page the model
    read (`opened`)."""
    queries: list[str] = []
    results: list[dict[str, Any]] = []
    opened: list[str] = []
    failures: list[str] = []
    searches = 0
    for call in calls:
        action = call.get("action") or {}
        asked = [action["query"]] if action.get("query") else []
        asked += [query for query in action.get("queries") or () if query != action.get("query")]
        if action.get("type") == "search":
            searches += 1
            queries.extend(asked)
            for source in action.get("sources") or ():
                if source.get("type") == "api":
                    results.append({"type": "api", "name": source.get("name")})
                else:
                    results.append({"url": source.get("url"), "title": source.get("title")})
        elif action.get("url"):
            opened.append(str(action["url"]))
        if call.get("status") == "failed":
            what = f"{action.get('type') or 'web search'} {', '.join(map(repr, asked)) or action.get('url') or ''}".strip()
            failures.append(f"the web_search_call {call.get('id') or ''} ({what}) failed".replace("  ", " "))
    return search_record(queries, results, citations, calls=searches, failures=failures, opened=opened)


def _calls(items: Iterable[tuple[Mapping[str, Any], str]]) -> tuple[ToolCall, ...]:
    """The tool calls of (function item, id) pairs; a call whose arguments are not a JSON object is left
    out (nothing could be called with it)."""
    calls = []
    for function, call_id in items:
        call = decode_call(str(function.get("name") or ""), function.get("arguments") or "{}", str(call_id or ""))
        if call is None or not call.name:
            log.debug("dropped a tool call with arguments that are not a JSON object: %.200s", function.get("arguments"))
            continue
        calls.append(call)
    return tuple(calls)


def _detail(usage: Mapping[str, Any], block: str, name: str) -> int:
    return int((usage.get(block) or {}).get(name) or 0)

