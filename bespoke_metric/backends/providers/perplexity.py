"""`perplexity:MODEL`: Perplexity's Agent API (`POST /v1/agent`, OpenAI's Responses format).

Perplexity ended its Sonar chat-completions API on 2026-09-27; its successor, the Agent API, serves its
own models and other providers' behind provider-prefixed slugs, and named presets:

- `perplexity:perplexity/sonar`, `perplexity:openai/gpt-5.1`, ...: the model slug as `GET /v1/models` lists it;
- `perplexity:preset/NAME` (`fast`, `low`, `medium`, `high`, `xhigh`): a preset, which picks the model (read
  what served in the record's `served_model`) and bundles web search;
- `perplexity:sonar`, `perplexity:sonar-reasoning` (and the other retired Sonar names): run as the closest
  Agent API setting that Perplexity's migration guide documents (`SONAR_SUBSTITUTES`); `substitution(model)`
  says so, and a results file carries it as `system.substitution`.

It is made of the part every provider backend shares (`api_backend.APIBackend`: one aiohttp session per
run, retries honouring `Retry-After`, the run-wide retry budget) and Perplexity's endpoint and key
(`PERPLEXITY_API_KEY`) and bodies. The Agent API rejects any field it does not know with a 400, so only
the mapped fields are sent: `model` or `preset`, `input` (the chat messages as `message` items), `max_output_tokens` (none for a
model that reasons first, unless `reasoning_max_tokens` is set), `reasoning`,
`response_format`, `temperature` when given, and for native search the `web_search` tool, whose `filters`
carry the domain and recency filters. Search is not automatic: a request without native search carries
no tool (a preset's own tools are turned off with `max_tool_calls: 0`), so a Perplexity judge, or
`--search none`, never searches.

What comes back: the text of every `output_text` part of every message; the `search_results` output
items as the search record (their queries and results; `calls` from `usage.tool_calls_details.search_web`,
else one per item; `cited` only from the answer's `url_citation` annotations, often none); `model` as the
served model; `usage.cost.total_cost` as the provider's own cost. A 200 whose `status` is `failed` or
`cancelled` is a failed call naming the provider's error; `incomplete` a truncated answer with
`incomplete_details.reason`; an unknown model (a 404, or a 400 `invalid_model`) stops the run with
`ModelUnavailableError` (as `backends.retirement` decides, for every OpenAI-style endpoint).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Mapping

from bespoke_dataset.errors import UserError

from ..base import Completion, Request
from ..http import CallFailed, Session, short
from ..options import PerplexityOptions
from ..schema import JSON_SCHEMA
from ..web_search import RECENCY_FILTERS, SEARCH_CONTEXT_SIZES, check_choice, search_record, split_list
from .api_backend import APIBackend, SearchSettings
from .openai_backend import is_reasoning_model, named_schema
from .openai_session import OpenAISession

log = logging.getLogger(__name__)

PERPLEXITY_BASE_URL = "https://api.perplexity.ai"
AGENT_PATH = "/v1/agent"
"""The Agent API's endpoint (`/v1/responses` is the same API, for the OpenAI SDK)."""
PERPLEXITY_CONCURRENCY = 8
"""Calls in flight on Perplexity's API: its rate limits (requests per minute) are low."""
PRESET_PREFIX = "preset/"
"""How a spec names a preset instead of a model: `perplexity:preset/medium`."""
PRESETS = ("fast", "low", "medium", "high", "xhigh")
"""The Agent API's preset names (the guide's canonical short names)."""
REASONING_EFFORTS = ("minimal", "low", "medium", "high", "xhigh")
"""What `reasoning.effort` takes (the Perplexity SDK's `Reasoning`)."""
MIN_OUTPUT_TOKENS = 16
"""The Agent API floors `max_output_tokens` at 16."""
SEARCH_BILLING_NAME = "search_web"
"""The key of web searches in `usage.tool_calls_details` (billing names differ from the tool types)."""
SUBSTITUTION_DATE = "2026-12-01"
"""When the Sonar names' mapping below was read off Perplexity's migration guide."""
"""A 400 naming an unknown model (the guide's `invalid_model`; the SDK's message keeps only the words)."""
_GUIDE = ("Perplexity's guide \"Migrate from Sonar\" (docs.perplexity.ai/docs/agent-api/migrate-from-sonar; "
          "perplexityai/api-platform-developers, skills/migrate-sonar-to-agent-api/references/models-and-presets.md)")


@dataclass(frozen=True)
class Substitute:
    """The Agent API setting a retired Sonar model runs as."""

    ran_as: str
    """A model slug, or `preset/NAME`."""
    reasoning_effort: str | None
    reason: str


SONAR_SUBSTITUTES: dict[str, Substitute] = {
    "sonar": Substitute("perplexity/sonar", None,
                        "the Sonar chat-completions API ended on 2026-09-27; " + _GUIDE + " maps sonar to "
                        "perplexity/sonar with the web_search tool (its output and prices differ from chat sonar)"),
    "sonar-pro": Substitute("perplexity/sonar", None,
                            "the Sonar chat-completions API ended on 2026-09-27 and there is no perplexity/sonar-pro "
                            "slug; " + _GUIDE + " gives perplexity/sonar with web_search where the contract is a model "
                            "name (preset low is its heavier, multi-step match)"),
    "sonar-reasoning": Substitute("openai/gpt-5.1", "medium",
                                  "sonar-reasoning was retired before the Sonar API ended (2026-09-27); " + _GUIDE +
                                  " maps it to preset low or a reasoning model (openai/gpt-5.1, reasoning effort "
                                  "medium, web_search): the reasoning model is taken, a fixed model (a preset may "
                                  "resolve to other models) whose search can be left off"),
    "sonar-reasoning-pro": Substitute("openai/gpt-5.1", "medium",
                                      "the Sonar chat-completions API ended on 2026-09-27; " + _GUIDE + " maps "
                                      "sonar-reasoning-pro to preset low or a reasoning model with reasoning effort "
                                      "medium and web_search: the fixed reasoning model is taken"),
    "sonar-deep-research": Substitute("preset/medium", None,
                                      "the Sonar chat-completions API ended on 2026-09-27; " + _GUIDE + " names the "
                                      "medium (deep-research) preset the closest equivalent of sonar-deep-research"),
}
"""The retired Sonar names, each as the Agent API setting Perplexity's migration guide maps it to."""


def substitution(model: str) -> dict[str, Any] | None:
    """The `system.substitution` record (`{asked, ran_as, reason, date}`) of a model name that runs as
    another setting, or None (the engine's `Engine.substitute`)."""
    substitute = SONAR_SUBSTITUTES.get(model)
    if substitute is None:
        return None
    ran_as = substitute.ran_as + (f" (reasoning effort {substitute.reasoning_effort})" if substitute.reasoning_effort else "")
    return {"asked": f"perplexity:{model}", "ran_as": f"perplexity:{ran_as}", "reason": substitute.reason,
            "date": SUBSTITUTION_DATE}


def agent_model(model: str) -> str:
    """The Agent API model slug (or `preset/NAME`) a `perplexity:` model name runs as, for prices."""
    substitute = SONAR_SUBSTITUTES.get(model)
    return substitute.ran_as if substitute is not None else model


@dataclass(frozen=True)
class SearchFilters(SearchSettings):
    """The `web_search` tool's settings: where and how recent, and how much of it the model reads."""

    domains: tuple[str, ...] = ()
    """Domains to search (`nature.com`), or to leave out (`-pinterest.com`); at most 20."""
    recency: str | None = None
    """`hour`, `day`, `week`, `month` or `year`."""
    context_size: str | None = None
    """`low`, `medium` or `high`."""

    def tool(self) -> dict[str, Any]:
        """The `web_search` tool as the Agent API takes it: filters inside `filters`, the context size on the tool."""
        tool: dict[str, Any] = {"type": "web_search"}
        filters: dict[str, Any] = {}
        if self.domains:
            filters["search_domain_filter"] = list(self.domains)
        if self.recency is not None:
            filters["search_recency_filter"] = self.recency
        if filters:
            tool["filters"] = filters
        if self.context_size is not None:
            tool["search_context_size"] = self.context_size
        return tool

    def settings(self) -> dict[str, Any]:
        """What sets this search apart from the default, for the engine's identity."""
        return {name: value for name, value in self.tool().items() if name != "type"}


class PerplexityBackend(APIBackend):
    """Perplexity's Agent API. See the module docstring."""

    name = "perplexity"
    default_url = PERPLEXITY_BASE_URL
    url_variable = None
    key_variable = "PERPLEXITY_API_KEY"
    provider_concurrency = PERPLEXITY_CONCURRENCY
    api = "agent"
    search_key = "search"
    efforts = REASONING_EFFORTS

    def __init__(self, model: str, options: PerplexityOptions | None = None) -> None:
        """
        Args:
            model: an Agent API model slug (`perplexity/sonar`, `openai/gpt-5.1`), `preset/NAME`, or a retired
                Sonar name (`sonar`, `sonar-reasoning`, ...), which runs as its documented substitute.
            options: its `PerplexityOptions` (None: every default):
                temperature: none unless given (the Agent API's own).
                schema_format: send a request's `json_schema` as `response_format` (default on).
                reasoning_effort: `reasoning.effort` (minimal, low, medium, high, xhigh); default the model's
                    (a substitute's own, where the guide gives one).
                reasoning_max_tokens: the output cap of a model that reasons first (default: none).
                search_domain_filter: domains to search (`"nature.com,arxiv.org"`), or to leave out (`-pinterest.com`).
                search_recency_filter: only results from the last `hour`, `day`, `week`, `month` or `year`.
                search_context_size: `low`, `medium` or `high`: how much of what it found it reads.
                the transport's endpoint and retry options (`APIBackend.connect`: `base_url`, `api_key`,
                    `concurrency`, `timeout`, `max_retries`, ...); the endpoint default is Perplexity's API, the key
                    `PERPLEXITY_API_KEY`, at most 8 calls in flight.
        """
        options = options or PerplexityOptions()
        self.connect(model, log, options)
        substitute = SONAR_SUBSTITUTES.get(model)
        self.target = substitute.ran_as if substitute is not None else model
        """The model slug, or `preset/NAME`, that the calls name."""
        self.preset = self.target[len(PRESET_PREFIX):] if self.target.startswith(PRESET_PREFIX) else None
        if self.preset is not None and self.preset not in PRESETS:
            raise UserError(f"perplexity:{model}: the Agent API's presets are {', '.join(PRESETS)} "
                            f"(perplexity:preset/NAME), got {self.preset!r}")
        effort = options.reasoning_effort or (substitute.reasoning_effort if substitute is not None else None)
        self.agent_effort = check_choice("reasoning_effort=", effort, REASONING_EFFORTS)
        self.search: SearchFilters = SearchFilters(
            split_list(options.search_domain_filter),
            check_choice("--search-recency-filter", options.search_recency_filter, RECENCY_FILTERS),
            check_choice("--search-context-size", options.search_context_size, SEARCH_CONTEXT_SIZES))
        self.temperature = options.temperature  # the Agent API's own unless given
        self.reasoning_max_tokens = options.reasoning_max_tokens
        self.schema_format = options.schema_format is not False
        self.constraint = JSON_SCHEMA if self.schema_format else None

    def settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"preset" if self.preset is not None else "agent_model": self.preset or self.target}
        if self.agent_effort is not None:
            settings["reasoning_effort"] = self.agent_effort
        if self.reasoning_max_tokens is not None:
            settings["reasoning_max_tokens"] = self.reasoning_max_tokens
        if self.temperature is not None:
            settings["temperature"] = self.temperature
        return settings

    def new_session(self) -> Session:
        return OpenAISession(self.base_url, self._api_key, self.timeout)

    def path_and_body(self, request: Request) -> tuple[str, bytes]:
        return AGENT_PATH, json.dumps(self.agent_body(request), ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def agent_body(self, request: Request) -> dict[str, Any]:
        """The request as the Agent API takes it: mapped fields only (an unknown one is a 400)."""
        body: dict[str, Any] = {"preset": self.preset} if self.preset is not None else {"model": self.target}
        body["input"] = [{"type": "message", "role": message["role"], "content": message.get("content") or ""}
                         for message in request.messages]
        limit = self.output_limit(request)
        if limit is not None:
            body["max_output_tokens"] = max(limit, MIN_OUTPUT_TOKENS)
        effort = self.effort_for(request, self.agent_effort)
        if effort is not None:
            body["reasoning"] = {"effort": effort}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.schema_format and request.json_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": named_schema(request.json_schema)}
        if request.native_search:
            body["tools"] = [self.search.tool()]
        elif self.preset is not None:
            body["max_tool_calls"] = 0  # a preset's bundled tools cannot be removed, only all calls stopped
        return body

    def output_limit(self, request: Request) -> int | None:
        """`max_output_tokens`: the request's, but a model that reasons first (a preset, a reasoning effort,
        a reasoning model) spends hidden tokens before any text or search, so it gets `reasoning_max_tokens`
        (None: no cap), as the guide advises; Anthropic's models require one: the request's."""
        if self.target.startswith("anthropic/"):
            return request.max_tokens
        if self.preset is not None or self.agent_effort is not None or is_reasoning_model(self.target):
            return self.reasoning_max_tokens
        return request.max_tokens

    def parse(self, path: str, answer: dict[str, Any]) -> Completion:
        return agent_completion(answer, f"{self.name}:{self.model}")


def agent_completion(answer: Mapping[str, Any], engine: str) -> Completion:
    """An Agent API response body as a `Completion` (see the module docstring); `CallFailed` for a run
    that failed or was cancelled, naming the provider's error; KeyError/TypeError/... for a body that is
    not a response."""
    status = answer["status"]
    if status in ("failed", "cancelled"):
        error = answer.get("error") or {}
        words = ": ".join(str(error[name]) for name in ("type", "code", "message") if error.get(name)) or "no error given"
        raise CallFailed(f"{engine} answered status {status}: {short(words)}", retryable=False)
    if status not in ("completed", "incomplete"):
        raise ValueError(f"status {status!r}")  # a run still queued or in progress: not an answer (yet)
    output = answer["output"]
    parts = [part for item in output if item.get("type") == "message" for part in _content_parts(item.get("content"))]
    usage = answer.get("usage") or {}
    details = usage.get("input_tokens_details") or {}
    cost = (usage.get("cost") or {}).get("total_cost")
    reason = str((answer.get("incomplete_details") or {}).get("reason") or "incomplete") if status == "incomplete" else ""
    return Completion(
        text="".join(str(part.get("text") or "") for part in parts),
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        truncated=status == "incomplete",
        truncation_reason=reason,
        cached_input_tokens=int(details.get("cache_read_input_tokens") or 0),
        search=_search(output, parts, usage),
        served_model=str(answer.get("model") or ""),
        provider_cost=float(cost) if cost is not None else None,
    )


def _content_parts(content: Any) -> list[Mapping[str, Any]]:
    """A message's `output_text` parts (the content given as a string: one part)."""
    if isinstance(content, str):
        return [{"type": "output_text", "text": content}]
    return [part for part in content or () if part.get("type") == "output_text"]


def _search(output: list[Mapping[str, Any]], parts: list[Mapping[str, Any]], usage: Mapping[str, Any]) -> dict[str, Any] | None:
    """The search record of the `search_results` items, with the answer's `url_citation` annotations as
    `cited`; None when the model did not search."""
    items = [item for item in output if item.get("type") == "search_results"]
    invoked = ((usage.get("tool_calls_details") or {}).get(SEARCH_BILLING_NAME) or {}).get("invocation")
    if not items and not invoked:
        return None
    queries = [query for item in items for query in item.get("queries") or ()]
    results = [{name: value for name, value in result.items() if name != "id"}  # `id` numbers a result in this response only
               for item in items for result in item.get("results") or ()]
    cited = [note for part in parts for note in part.get("annotations") or () if note.get("type") == "url_citation"]
    calls = int(invoked) if invoked is not None else len(items)
    return search_record(queries, results, cited, calls=calls)
