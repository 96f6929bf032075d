"""Fakes of the search-augmented providers on 127.0.0.1, each answering in its provider's documented JSON.

Built on `server.serve` (faults, latency and recorded requests work as there), each responder returns a
whole response body in its provider's shape:

- `openai_responder`: OpenAI's Responses API with `web_search_call` items (a `search` with its sources,
  an `open_page`) and `url_citation` annotations (or none, `cite=False`), and chat completions with
  `message.annotations` (for `web_search_options`) and `tool_calls` (for `tools=`);
  `serve_strict` serves it as strictly as OpenAI's API: an unknown field (by the SDK's parameter types),
  `max_tokens` where `max_completion_tokens` is taken, or what a GPT-6 model refuses is a 400;
- `perplexity_responder`: Perplexity's Agent API (`POST /v1/agent`): `search_results` output items, a
  message in several `output_text` parts, `usage.cost`, a 200 `failed` and an `incomplete` answer; served by
  `serve_perplexity`, which rejects an unknown field with a 400 as the real API does;
- `gemini_responder`: Gemini's `generateContent` with `groundingMetadata` (`webSearchQueries`,
  `groundingChunks`, `groundingSupports`) when the request carries the Google Search tool, and the model's
  `modelStatus` where given; `serve_strict` serves it as strictly as the Gemini API (an unknown field, a
  thinking level with a thinking budget, a level the model does not take: a 400).

They search a small fixed web (`PAGES`), so what a test expects follows from its question. A model
offered tools calls the first one with `{"query": QUESTION}` until it has a tool's answer, then answers.
Every usage block reports cached input tokens (`CACHED_TOKENS`) and, but Perplexity's (which has no such
field), reasoning tokens (`REASONING_TOKENS`).

    with serve_perplexity() as server:
        backend = make_backend("perplexity:perplexity/sonar", base_url=root_url(server), api_key="test")
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from bespoke_metric.testing.server import (
    Cutoff,
    Fault,
    RecordedRequest,
    Responder,
    TestServer,
    chat_body,
    chat_usage,
    messages_of,
    output_message,
    responses_body,
    responses_usage,
    serve,
)

CACHED_TOKENS = 3
"""Input tokens every fake reports as served from the provider's prompt cache."""
REASONING_TOKENS = 5
"""Output tokens every fake reports as spent on hidden reasoning."""
GEMINI_ROUTE = ":generateContent"


@dataclass(frozen=True)
class Page:
    url: str
    title: str
    snippet: str
    date: str


PAGES: tuple[Page, ...] = (
    Page("https://trails.example/bukhansan", "Bukhansan trails", "Weekend crowds on the Baegundae trail peak at 10am.", "2025-04-02"),
    Page("https://trails.example/gwanaksan", "Gwanaksan for beginners", "A two-hour loop from Seoul National University.", "2025-03-11"),
    Page("https://laptops.example/ml", "Laptops for machine learning", "Pick 32 GB of memory and a GPU with 12 GB.", "2025-05-20"),
    Page("https://recipes.example/vegan-bibimbap", "Vegan bibimbap", "Swap the egg for tofu and the beef for mushrooms.", "2024-11-30"),
    Page("https://docs.example/asyncio", "asyncio in ten minutes", "An event loop runs coroutines; gather awaits many.", "2025-01-15"),
)


def search_pages(query: str, k: int = 3) -> list[Page]:
    """The `k` pages sharing most words with `query` (ties in `PAGES` order)."""
    words = set(re.findall(r"[a-z0-9]+", query.lower()))
    scored = sorted(PAGES, key=lambda page: -len(words & set(re.findall(r"[a-z0-9]+", f"{page.title} {page.snippet} {page.url}".lower()))))
    return scored[:k]


def answer_citing(question: str, pages: list[Page]) -> str:
    """The fakes' answer: one sentence per page, marked `[n]` as Perplexity marks them."""
    return f"On {question!r}: " + " ".join(f"{page.snippet} [{number}]" for number, page in enumerate(pages, 1))


def _usage_numbers(prompt: str, text: str) -> tuple[int, int]:
    return max(len(prompt.split()), CACHED_TOKENS), len(text.split()) + REASONING_TOKENS


# -- OpenAI: Responses API and chat completions ---------------------------------------------------------


def openai_responder(*, cite: bool = True, answer: Responder | None = None) -> Responder:
    """Answers Responses and chat-completions bodies alike (see the module docstring); `cite=False`: the
    answer carries no `url_citation` annotation (as many real ones), only the searched sources. `answer`: a
    request that neither searches nor is offered tools is answered by it instead (`answer_any` answers as a
    system, a profiler and a judge would; a text it gives is sent in the API's shape by the server)."""

    def respond(body: dict[str, Any]) -> str | Cutoff | dict[str, Any]:
        if answer is not None and not body.get("tools") and "web_search_options" not in body:
            return answer(body)
        return _responses(body, cite) if "input" in body else _chat(body, cite)

    return respond


def _question(body: dict[str, Any]) -> str:
    users = [m["content"] for m in messages_of(body) if m["role"] == "user" and m["content"]]
    return users[-1] if users else ""


def _wants_call(body: dict[str, Any], answered: bool) -> str | None:
    """The tool the fake model calls: the first offered, unless a tool has answered already."""
    tools = body.get("tools") or ()
    names = [(tool.get("function") or tool).get("name") for tool in tools if tool.get("type") == "function"]
    return names[0] if names and not answered else None


def _responses(body: dict[str, Any], cite: bool) -> dict[str, Any]:
    question = _question(body)
    prompt = " ".join(m["content"] for m in messages_of(body))
    answered = any(item.get("type") == "function_call_output" for item in body.get("input") or ())
    output: list[dict[str, Any]] = []
    tool = _wants_call(body, answered)
    searching = any(t.get("type") in ("web_search", "web_search_preview") for t in body.get("tools") or ())
    pages = search_pages(question) if searching else []
    text = answer_citing(question, pages) if pages else f"answer to {question}"
    if tool is not None:
        output.append({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": tool,
                       "arguments": json.dumps({"query": question}), "status": "completed"})
        text = ""
    if pages:
        action: dict[str, Any] = {"type": "search", "query": question}
        if "web_search_call.action.sources" in (body.get("include") or ()):
            action["sources"] = [{"type": "url", "url": page.url} for page in pages]
        output.append({"type": "web_search_call", "id": "ws_1", "status": "completed", "action": action})
        output.append({"type": "web_search_call", "id": "ws_2", "status": "completed",
                       "action": {"type": "open_page", "url": pages[0].url}})
    if text:
        annotations = []
        if cite and pages:
            start = text.index(pages[0].snippet)
            annotations.append({"type": "url_citation", "url": pages[0].url, "title": pages[0].title,
                                "start_index": start, "end_index": start + len(pages[0].snippet)})
        output.append(output_message("msg_1", text, annotations))
    input_tokens, output_tokens = _usage_numbers(prompt, text)
    return responses_body("resp_1", body.get("model"), output,
                          responses_usage(input_tokens, output_tokens, cached=CACHED_TOKENS, reasoning=REASONING_TOKENS))


def _chat(body: dict[str, Any], cite: bool) -> dict[str, Any]:
    question = _question(body)
    prompt = " ".join(m["content"] for m in messages_of(body))
    answered = any(m.get("role") == "tool" for m in body.get("messages") or ())
    tool = _wants_call(body, answered)
    pages = search_pages(question) if "web_search_options" in body else []
    message: dict[str, Any] = {"role": "assistant", "content": answer_citing(question, pages) if pages else f"answer to {question}"}
    if tool is not None:
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": tool, "arguments": json.dumps({"query": question})}}]}
    elif pages and cite:
        text = message["content"]
        message["annotations"] = [
            {"type": "url_citation", "url_citation": {"url": page.url, "title": page.title, "start_index": text.index(page.snippet),
                                                      "end_index": text.index(page.snippet) + len(page.snippet)}}
            for page in pages[:2]
        ]
    prompt_tokens, completion_tokens = _usage_numbers(prompt, message["content"] or "")
    return chat_body("chatcmpl-1", body.get("model"), message, "tool_calls" if tool else "stop",
                     chat_usage(prompt_tokens, completion_tokens, cached=CACHED_TOKENS, reasoning=REASONING_TOKENS))


# -- OpenAI, as strict as its API ---------------------------------------------------------------------------

# The request fields OpenAI's API takes: the official SDK's own parameter types (openai-python 3.57:
# types/responses/response_create_params.py ResponseCreateParamsBase, web_search_tool_param.py
# WebSearchToolParam {type, external_web_access, filters{allowed_domains}, search_context_size, user_location},
# function_tool_param.py, shared_params/reasoning.py; types/chat/completion_create_params.py
# CompletionCreateParamsBase, WebSearchOptions). The API answers any other field with a 400
# ("Unrecognized request argument supplied: NAME", `invalid_request_error`).


def _sdk_fields(module: str, name: str) -> frozenset[str]:
    import importlib

    return frozenset(getattr(importlib.import_module(f"openai.types.{module}"), name).__annotations__)


def openai_fields() -> dict[str, frozenset[str]]:
    """The fields each part of a request body may hold, by where it is (`""`: the top level of a Responses
    API body, `"chat"`: of a chat-completions body), read off the SDK's parameter types."""
    return {
        "": _sdk_fields("responses.response_create_params", "ResponseCreateParamsBase"),
        "chat": _sdk_fields("chat.completion_create_params", "CompletionCreateParamsBase"),
        "reasoning": _sdk_fields("shared_params.reasoning", "Reasoning"),
        "web_search": _sdk_fields("responses.web_search_tool_param", "WebSearchToolParam"),
        "web_search.filters": _sdk_fields("responses.web_search_tool_param", "Filters"),
        "web_search.user_location": _sdk_fields("responses.web_search_tool_param", "UserLocation"),
        "function": _sdk_fields("responses.function_tool_param", "FunctionToolParam"),
        "web_search_options": _sdk_fields("chat.completion_create_params", "WebSearchOptions"),
    }


def unknown_openai_field(path: str, body: dict[str, Any]) -> str | None:
    """The first field of a request body that OpenAI's API does not know (its path), or None."""
    fields = openai_fields()
    chat = path.endswith("/chat/completions")
    checks: list[tuple[str, Any, frozenset[str]]] = [("", body, fields["chat" if chat else ""])]
    if chat:
        checks.append(("web_search_options.", body.get("web_search_options"), fields["web_search_options"]))
    else:
        checks.append(("reasoning.", body.get("reasoning"), fields["reasoning"]))
        for tool in body.get("tools") or ():
            kind = tool.get("type")
            if kind == "web_search":
                checks += [("tools[].", tool, fields["web_search"]), ("tools[].filters.", tool.get("filters"), fields["web_search.filters"]),
                           ("tools[].user_location.", tool.get("user_location"), fields["web_search.user_location"])]
            elif kind == "function":
                checks.append(("tools[].", tool, fields["function"]))
    for where, part, known in checks:
        for name in part if isinstance(part, dict) else ():
            if name not in known:
                return where + name
    return None


_GPT6 = re.compile(r"^(?:.*/)?gpt-6(?:\.(\d+))?", re.IGNORECASE)
_SOL = re.compile(r"^(?:.*/)?gpt-6\.1-sol\b", re.IGNORECASE)
"""GPT-6.1 Sol, which refuses efforts none and minimal as GPT-6.2 does (its model page, 2026-12-04)."""
_REASONING_CHAT = re.compile(r"^(?:.*/)?(?:o\d|gpt-[56])", re.IGNORECASE)


def gpt6_refusal(path: str, body: dict[str, Any]) -> str | None:
    """What OpenAI's API refuses of a request to a GPT-6 model (as issue 32 quotes OpenAI, 2026-12-01), in
    the manner of its parameter errors, or None: tools (web search included) on chat completions from GPT-6.1; efforts `none` and
    `minimal` on GPT-6.1 Sol and GPT-6.2 and later; `temperature`, `top_p` and logprobs unless the effort is `none`."""
    match = _GPT6.match(str(body.get("model") or ""))
    if match is None:
        return None
    minor = int(match.group(1) or 0)
    chat = path.endswith("/chat/completions")
    effort = body.get("reasoning_effort") if chat else (body.get("reasoning") or {}).get("effort")
    if chat and minor >= 1 and (body.get("tools") or "web_search_options" in body):
        return "Tools, including web search, are supported with this model only in the Responses API (/v1/responses)."
    if (minor >= 2 or _SOL.match(str(body["model"]))) and effort in ("none", "minimal"):
        return (f"Unsupported value: 'reasoning.effort' does not support '{effort}' with this model. "
                "Supported values are: 'low', 'medium', 'high', 'xhigh' and 'max'.")
    for name in ("temperature", "top_p", "logprobs", "top_logprobs"):
        if name in body and effort != "none":
            return f"Unsupported parameter: '{name}' is not supported with this model unless reasoning effort is 'none'."
    return None


def openai_error(path: str, body: dict[str, Any]) -> Fault | None:
    """OpenAI's 400 for a body it rejects: an unknown field, `max_tokens` on chat completions to a model that
    takes `max_completion_tokens` (the o-series, GPT-5, GPT-6), or what a GPT-6 model refuses
    (`gpt6_refusal`); the error object as the API sends it (`{message, type, param, code}`)."""
    unknown = unknown_openai_field(path, body)
    if unknown is not None:
        return Fault(status=400, body={"error": {"message": f"Unrecognized request argument supplied: {unknown.rsplit('.', 1)[-1]}",
                                                 "type": "invalid_request_error", "param": unknown, "code": None}})
    if path.endswith("/chat/completions") and "max_tokens" in body and _REASONING_CHAT.match(str(body.get("model") or "")):
        return Fault(status=400, body={"error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}})
    refused = gpt6_refusal(path, body)
    if refused is not None:
        return Fault(status=400, body={"error": {"message": refused, "type": "invalid_request_error", "param": None,
                                                 "code": "unsupported_parameter"}})
    return None


# -- Perplexity: the Agent API -----------------------------------------------------------------------------

AGENT_ROUTE = "/v1/agent"
AGENT_MODELS = ("perplexity/sonar", "openai/gpt-5.1", "openai/gpt-5.4", "google/gemini-3-flash-preview",
                "anthropic/claude-sonnet-4-5")
"""The model slugs the fake serves (the migration guide's examples; `GET /v1/models` lists them on the real API);
any other is a 400 `invalid_model`."""
PRESET_MODELS = {"fast": "perplexity/sonar", "low": "google/gemini-3-flash-preview", "medium": "openai/gpt-5.1",
                 "high": "openai/gpt-5.4", "xhigh": "openai/gpt-5.4"}
"""What each preset resolves to here (the real ones may resolve to third-party models: read `response.model`)."""
FAIL_WORD = "FAILRUN"
"""A question holding this word gets a 200 `status: failed` answer."""
CUT_WORD = "CUTOFF"
"""A question holding this word gets a 200 `status: incomplete` answer (`max_output_tokens`)."""
SEARCH_COST = 0.005
"""Dollars per web search in the fake's `usage.cost.tool_calls_cost` (the Agent API's published $5 per 1,000)."""

# The request body's fields as the Agent API takes them; anything else, at any depth, is a 400. From the
# Perplexity SDK's `ResponseCreateParamsBase` and its tool and filter types (perplexityai/perplexity-py,
# src/perplexity/types/response_create_params.py, input_item_param.py, shared_params/response_format.py,
# json_schema_format.py) and the fields the migration guide documents besides (api-platform-developers,
# skills/migrate-sonar-to-agent-api/references/request-mapping.md: temperature, top_p, tool_choice,
# max_tool_calls, `max_results` on the web_search tool).
AGENT_FIELDS = frozenset({"input", "background", "instructions", "language_preference", "max_output_tokens", "max_steps",
                          "model", "models", "preset", "reasoning", "response_format", "stream", "tools", "temperature",
                          "top_p", "tool_choice", "max_tool_calls"})
WEB_SEARCH_FIELDS = frozenset({"type", "filters", "max_tokens", "max_tokens_per_page", "search_context_size",
                               "user_location", "max_results"})
FILTER_FIELDS = frozenset({"search_domain_filter", "search_recency_filter", "search_after_date_filter",
                           "search_before_date_filter", "last_updated_after_filter", "last_updated_before_filter"})
MESSAGE_FIELDS = frozenset({"type", "role", "content"})
REASONING_FIELDS = frozenset({"effort"})
FORMAT_FIELDS = frozenset({"type", "json_schema"})
SCHEMA_FIELDS = frozenset({"name", "schema", "description", "strict"})


def unknown_agent_field(body: dict[str, Any]) -> str | None:
    """The first field of an Agent API body that the API does not know (its path), or None."""
    checks: list[tuple[str, Any, frozenset[str]]] = [("", body, AGENT_FIELDS)]
    checks += [("reasoning.", body.get("reasoning"), REASONING_FIELDS), ("response_format.", body.get("response_format"), FORMAT_FIELDS),
               ("response_format.json_schema.", (body.get("response_format") or {}).get("json_schema"), SCHEMA_FIELDS)]
    for item in body.get("input") if isinstance(body.get("input"), list) else ():
        checks.append(("input[].", item, MESSAGE_FIELDS))
    for tool in body.get("tools") or ():
        checks.append(("tools[].", tool, WEB_SEARCH_FIELDS if tool.get("type") == "web_search" else frozenset(tool)))
        checks.append(("tools[].filters.", tool.get("filters"), FILTER_FIELDS))
    for where, part, known in checks:
        for name in part or ():
            if name not in known:
                return where + name
    return None


def agent_error(body: dict[str, Any]) -> Fault | None:
    """The Agent API's 400 for a body it rejects: an unknown field (in the envelope the migration guide quotes,
    SKILL.md's strict-mode warning), or a model slug it does not serve (`invalid_model`, response-and-streaming.md's
    error catalogue)."""
    unknown = unknown_agent_field(body)
    if unknown is not None:
        name = unknown.rsplit(".", 1)[-1]
        return Fault(status=400, body={"error": {"message": f'invalid request body: json: unknown field "{name}"',
                                                 "type": "invalid_request", "code": 400, "param": unknown}})
    if "preset" not in body and body.get("model") not in AGENT_MODELS:
        return Fault(status=400, body={"error": {"message": f"model {body.get('model')!r} not found",
                                                 "type": "invalid_model", "code": 400, "param": "model"}})
    return None


class AgentServer(TestServer):
    """A `TestServer` answering `POST /v1/agent` as strictly as the Agent API: an unknown field or model is
    a 400 (`agent_error`); scripted faults and a `rule` come first."""

    def __init__(self, responder: Responder, **options: Any) -> None:
        super().__init__(responder, **options)
        self.paths = (*self.paths, AGENT_ROUTE)
        self.unknown_fields: list[str] = []
        """Every field a call was rejected for, as its path (`tools[].filters.search_mode`)."""

    def _begin(self, record: RecordedRequest) -> Fault | None:
        fault = super()._begin(record)
        if fault is not None or record.method != "POST" or not isinstance(record.body, dict):
            return fault
        unknown = unknown_agent_field(record.body)
        if unknown is not None:
            with self._lock:
                self.unknown_fields.append(unknown)
        return agent_error(record.body)


def serve_perplexity(responder: Responder | None = None, **options: Any) -> AgentServer:
    """A strict Agent API (`AgentServer`) answering with `responder` (default `perplexity_responder()`) on
    127.0.0.1 for the `with` block; its base URL without `/v1` is `root_url(server)`."""
    return AgentServer(responder or perplexity_responder(), **options)


def perplexity_responder() -> Responder:
    """Perplexity's Agent API response (`ResponseCreateResponse` of the Perplexity SDK: id, object, created_at,
    model, status, output, error, usage). With the `web_search` tool, or a preset (which bundles it) not
    stopped by `max_tool_calls: 0`, it searches twice: one
    `search_results` item per search, `{queries, results: [{id, url, title, snippet, date, last_updated,
    source}]}` (output_item.py, shared/search_result.py; response-and-streaming.md's response mapping), and
    `usage.tool_calls_details.search_web.invocation` 2; the message's content is two `output_text` parts
    whose first cites the first page in a `url_citation` annotation (content_part.py, annotation.py). `usage`
    carries `input_tokens_details.cache_read_input_tokens` and `cost {currency, input_cost, output_cost,
    tool_calls_cost, total_cost}` (responses_usage.py). A question with `FAIL_WORD` gets HTTP 200 with
    `status: failed` and an `error {message, code, type}` (error_info.py; SKILL.md pitfall 4); one with
    `CUT_WORD` `status: incomplete` with `incomplete_details.reason: max_output_tokens` (response-and-
    streaming.md, "finish_reason")."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        question = _question(body)
        prompt = " ".join(m["content"] for m in messages_of(body))
        model = PRESET_MODELS[body["preset"]] if "preset" in body else body["model"]
        searching = any(tool.get("type") == "web_search" for tool in body.get("tools") or ()) or (
            "preset" in body and body.get("max_tool_calls") != 0)
        answer: dict[str, Any] = {"id": "resp_pplx_1", "object": "response", "created_at": 1764547200, "model": model}
        if FAIL_WORD in question:
            return {**answer, "status": "failed", "output": [],
                    "error": {"message": "upstream model error: the model produced no output", "code": "model_error",
                              "type": "server_error"}}
        pages = search_pages(question) if searching else []
        output: list[dict[str, Any]] = []
        for number, (query, found) in enumerate(((question, pages[:2]), (f"{question} reviews", pages[1:])), 1):
            if pages:
                output.append({"type": "search_results", "queries": [query], "results": [
                    {"id": index, "url": page.url, "title": page.title, "snippet": page.snippet, "date": page.date,
                     "last_updated": page.date, "source": "web"} for index, page in enumerate(found, 1)]})
        # the answer names the question's last line only: a user message that carries a profile or history
        # before its question would otherwise come back whole, and the context-echo guard rightly catches it
        topic = question.strip().splitlines()[-1] if question.strip() else question
        first = f"On {topic!r}: " + (pages[0].snippet if pages else "no search.")
        rest = " " + " ".join(page.snippet for page in pages[1:]) if pages else f" answer to {topic}"
        annotations = ([{"type": "url_citation", "url": pages[0].url, "title": pages[0].title,
                         "start_index": first.index(pages[0].snippet), "end_index": len(first)}] if pages else [])
        if CUT_WORD in question:
            rest = ""
        output.append({"type": "message", "id": "msg_pplx_1", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": first, "annotations": annotations},
                                   {"type": "output_text", "text": rest, "annotations": []}]})
        input_tokens, output_tokens = _usage_numbers(prompt, first + rest)
        searches = 2 if pages else 0
        input_cost, output_cost = input_tokens * 0.25e-6, output_tokens * 2.5e-6
        usage: dict[str, Any] = {
            "input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens,
            "input_tokens_details": {"cache_read_input_tokens": CACHED_TOKENS},
            "cost": {"currency": "USD", "input_cost": input_cost, "output_cost": output_cost,
                     "tool_calls_cost": searches * SEARCH_COST,
                     "total_cost": input_cost + output_cost + searches * SEARCH_COST},
        }
        if searches:
            usage["tool_calls_details"] = {"search_web": {"invocation": searches}}
        if CUT_WORD in question:
            return {**answer, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
                    "output": output, "usage": usage}
        return {**answer, "status": "completed", "output": output, "usage": usage}

    return respond


# -- Gemini ----------------------------------------------------------------------------------------------


def gemini_responder(*, answer: Responder | None = None, model_status: dict[str, str] | None = None) -> Responder:
    """Gemini's `generateContent`: with the Google Search tool, two queries, three grounding chunks (each
    uri a redirect, its title the page's domain, as Gemini gives them) and supports pointing at the first two.
    `answer`: the text of an answer without search comes from this responder, asked with the request as chat
    messages (`answer_any` answers as a system, a profiler and a judge would). `model_status`: every answer
    carries it, in the response's `modelStatus` (google-genai 3.6 `types.ModelStatus`: `modelStage`,
    `retirementTime`, `message`; the Gemini API's, not Vertex's)."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        texts = [part.get("text", "") for content in body.get("contents") or () for part in content.get("parts") or ()]
        question = texts[-1] if texts else ""
        searching = any("googleSearch" in tool or "google_search" in tool for tool in body.get("tools") or ())
        pages = search_pages(question) if searching else []
        text = answer_citing(question, pages[:2]) if pages else f"answer to {question}"
        if answer is not None and not pages:
            answered = answer(_as_chat(body))
            text = answered if isinstance(answered, str) else text
        prompt_tokens, output_tokens = _usage_numbers(" ".join(texts), text)
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": "thinking it over", "thought": True},
                                                                           {"text": text}]},
                                     "finishReason": "STOP", "index": 0}
        if pages:
            candidate["groundingMetadata"] = {
                "webSearchQueries": [question, f"{question} reviews"],
                "groundingChunks": [{"web": {"uri": gemini_redirect(page), "title": page.url.split("/")[2]}} for page in pages],
                "groundingSupports": [
                    {"segment": {"partIndex": 1, "startIndex": text.index(page.snippet),  # part 0 is the thought
                                 "endIndex": text.index(page.snippet) + len(page.snippet), "text": page.snippet},
                     "groundingChunkIndices": [number]}
                    for number, page in enumerate(pages[:2])
                ],
                "searchEntryPoint": {"renderedContent": "<div>search suggestions</div>"},
            }
        response = {
            "candidates": [candidate],
            "usageMetadata": {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens - REASONING_TOKENS,
                              "thoughtsTokenCount": REASONING_TOKENS, "cachedContentTokenCount": CACHED_TOKENS,
                              "toolUsePromptTokenCount": 10 if pages else 0,
                              "totalTokenCount": prompt_tokens + output_tokens},
            "modelVersion": "gemini-fake",
        }
        if model_status is not None:
            response["modelStatus"] = dict(model_status)
        return response

    return respond


def _as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A `generateContent` body as a chat-completions one (its system instruction and contents as messages), for
    a responder that reads chat messages."""
    def text(content: dict[str, Any]) -> str:
        return "".join(part.get("text", "") for part in content.get("parts") or ())

    system = body.get("systemInstruction") or body.get("system_instruction")
    messages = [{"role": "system", "content": text(system)}] if system else []
    messages += [{"role": "assistant" if content.get("role") == "model" else "user", "content": text(content)}
                 for content in body.get("contents") or ()]
    return {"model": body.get("model", ""), "messages": messages}


# The fields of a `generateContent` request body: the Gemini API reference's request body (ai.google.dev/api/
# generate-content#request-body: contents, tools, toolConfig, safetySettings, systemInstruction, generationConfig,
# cachedContent) and, inside, google-genai 3.6's own types (types.GenerationConfig, ThinkingConfig, Tool). Field
# names are protobuf JSON: camelCase or the proto's snake_case. The API answers any other with a 400
# INVALID_ARGUMENT ('Invalid JSON payload received. Unknown name "x" at 'generation_config': Cannot find field.').
GEMINI_REQUEST_FIELDS = frozenset({"contents", "tools", "toolConfig", "safetySettings", "systemInstruction", "generationConfig",
                                   "cachedContent"})


def _genai_fields(name: str) -> frozenset[str]:
    from google.genai import types

    return frozenset(getattr(types, name).model_fields)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", lambda match: "_" + match.group(1).lower(), name)


def gemini_refusal(path: str, body: dict[str, Any]) -> str | None:
    """What the Gemini API answers a `generateContent` body with a 400 for, in the manner of its errors, or
    None: an unknown field, a thinking level and a thinking budget together, and a thinking level the model
    does not take (MINIMAL on Gemini 3.8 Flash, as issue 32 quotes Google, 2026-12-01)."""
    generation = body.get("generationConfig") or body.get("generation_config") or {}
    thinking = generation.get("thinkingConfig") or generation.get("thinking_config") or {}
    checks = [("", body, frozenset(map(_snake, GEMINI_REQUEST_FIELDS))), ("generation_config", generation, _genai_fields("GenerationConfig")),
              ("generation_config.thinking_config", thinking, _genai_fields("ThinkingConfig"))]
    checks += [("tools", tool, _genai_fields("Tool")) for tool in body.get("tools") or ()]
    for where, part, known in checks:
        for name in part:
            if _snake(name) not in known:
                return f"Invalid JSON payload received. Unknown name \"{name}\" at '{where or 'request'}': Cannot find field."
    names = {_snake(name) for name in thinking}
    if {"thinking_level", "thinking_budget"} <= names:
        return "thinking_budget and thinking_level cannot both be set."
    level = str(thinking.get("thinkingLevel") or thinking.get("thinking_level") or "")
    if level == "MINIMAL" and re.search(r"gemini-3\.8-flash", path):
        return "Thinking level MINIMAL is not supported for this model. Supported levels: LOW, MEDIUM, HIGH."
    return None


def gemini_redirect(page: Page) -> str:
    """The grounding redirect a fake Gemini gives for a page (real ones expire; these are stable)."""
    return "https://vertexaisearch.cloud.google.com/grounding-api-redirect/" + re.sub(r"[^a-z0-9]+", "-", page.url.lower())


# -- servers -------------------------------------------------------------------------------------------


def serve_provider(responder: Responder, **options: Any) -> TestServer:
    """`server.serve` with `responder`, answering Gemini's route too; `options` as for `serve`."""
    server = serve(responder, **options)
    server.paths = (*server.paths, GEMINI_ROUTE)
    return server


class StrictServer(TestServer):
    """A `TestServer` answering OpenAI's chat completions and Responses API and Gemini's `generateContent` as
    strictly as those APIs: a body OpenAI's API refuses (`openai_error`) or the Gemini API does
    (`gemini_refusal`, a 400 `INVALID_ARGUMENT` as a `google.rpc.Status` body) is refused, its error message
    kept in `refused`; every sampling parameter a Gemini body carries (Gemini 3 deprecates them) is kept in
    `deprecated`. Scripted faults and a `rule` come first."""

    def __init__(self, responder: Responder, **options: Any) -> None:
        super().__init__(responder, **options)
        self.paths = (*self.paths, GEMINI_ROUTE)
        self.refused: list[str] = []
        """The error message of every call refused (since the last `reset`)."""
        self.deprecated: list[str] = []
        """The deprecated sampling parameters Gemini bodies carried (since the last `reset`)."""

    def reset(self) -> None:
        super().reset()
        with self._lock:
            self.refused.clear()
            self.deprecated.clear()

    def _begin(self, record: RecordedRequest) -> Fault | None:
        fault = super()._begin(record)
        if fault is not None or record.method != "POST" or not isinstance(record.body, dict):
            return fault
        if record.path.endswith(GEMINI_ROUTE):
            refused = gemini_refusal(record.path, record.body)
            generation = record.body.get("generationConfig") or {}
            with self._lock:
                self.deprecated += [name for name in ("temperature", "topP", "topK", "top_p", "top_k") if name in generation]
            fault = Fault(status=400, body={"error": {"code": 400, "message": refused, "status": "INVALID_ARGUMENT"}}) if refused else None
        else:
            fault = openai_error(record.path, record.body)
        if fault is not None and fault.body is not None:
            with self._lock:
                self.refused.append(str(fault.body["error"]["message"]))
        return fault


def strict_responder(*, answer: Responder | None = None) -> Responder:
    """Answers OpenAI's bodies as `openai_responder(answer=answer)` and Gemini's (`contents`) as
    `gemini_responder(answer=answer)`: one server for both providers."""
    openai, gemini = openai_responder(answer=answer), gemini_responder(answer=answer)
    return lambda body: gemini(body) if "contents" in body else openai(body)


def serve_strict(responder: Responder | None = None, **options: Any) -> StrictServer:
    """A `StrictServer` answering with `responder` (default `strict_responder()`) on 127.0.0.1 for the `with`
    block: `server.base_url` for `openai:` (it ends in `/v1`), `root_url(server)` for `gemini:`."""
    return StrictServer(responder or strict_responder(), **options)


def root_url(server: TestServer) -> str:
    """The server's address without `/v1`: the base URL of Perplexity's API (`/chat/completions`) and of
    Gemini's (the SDK adds `/v1beta/models/...`)."""
    return server.base_url.removesuffix("/v1")
