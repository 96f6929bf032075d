"""The one interface every LLM engine implements, as a judge or as a system under test.

A backend turns a list of chat requests into completions. How it gets there is its own business:
`openai` sends them concurrently with retries, `hf` batches them through `model.generate`, `vllm`
submits them all at once. The scheduler (`bespoke_metric.calls.scheduler`) sits in front of every backend and
owns what is common: the cache, the progress bar, and re-asking when an answer cannot be parsed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol, Sequence, Union

from bespoke_dataset.errors import MissingExtraError


@dataclass(frozen=True)
class Request:
    """One chat completion to make."""

    messages: tuple[dict[str, str], ...]
    """Chat messages, `{"role": ..., "content": ...}`, in order."""
    max_tokens: int = 2048
    json_schema: dict[str, Any] | None = None
    """When set, ask the engine to constrain the output to this JSON schema (guided decoding,
    `response_format`); engines that cannot constrain still receive the schema in the prompt."""
    tools: tuple[dict[str, Any], ...] = ()
    """Function tools the model may call, in OpenAI's shape (`{"type": "function", "function": {"name",
    "description", "parameters"}}`): sent as `tools=` to an API, rendered through the chat template for
    local models. The calls come back in `Completion.tool_calls`."""
    native_search: bool = False
    """Ask the engine's own web search for this call (OpenAI's `web_search` tool, Perplexity, Gemini's
    Google Search); how it searches (context size, domains, ...) is the backend's configuration, part of
    its identity. What it searched comes back in `Completion.search`."""
    reasoning_effort: str | None = None
    """How hard this call's model reasons, where the engine takes an effort (`openai:`, `anthropic:`,
    `perplexity:`) and it differs from the engine's own setting: an effort name, or `MODEL_DEFAULT` (none sent,
    the model's own default); None: the engine's setting. A judge's recall checks carry it."""


MODEL_DEFAULT = "default"
"""`Request.reasoning_effort` of a call sent with no effort at all: the model's own default."""


@dataclass(frozen=True)
class ToolCall:
    """One function call a model asked for."""

    name: str
    arguments: dict[str, Any]
    """The call's arguments, decoded from the model's JSON."""
    id: str = ""
    """The provider's call id (to answer the call with a `tool` message), empty where there is none."""


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    truncated: bool = False
    """The output limit (`max_tokens`) ended the answer before the model did: whatever it holds may be
    unfinished reasoning, so a parsed judgment must not be taken from it."""
    cached_input_tokens: int = 0
    """Of `input_tokens`, those the provider served from its prompt cache (billed lower)."""
    cache_write_tokens: int = 0
    """Of `input_tokens`, those the provider wrote to its prompt cache, where it says (OpenAI's
    `cache_write_tokens`, Anthropic's `cache_creation_input_tokens`; some bill them higher)."""
    reasoning_tokens: int = 0
    """Of `output_tokens`, those spent on hidden reasoning."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The function calls the model asked for (`Request.tools`), in order."""
    search: dict[str, Any] | None = None
    """What the engine's own search did (`Request.native_search`), as the provider reported it; None when
    it did not search. Keys: `queries` [str], `results` [{"url", "title", ...}], `cited` [url] (from the
    answer only), and where known `calls` (searches made, not distinct strings), `failed` (searches that
    failed), `failures` [reason], `opened` [url] (pages the model opened or searched in)."""
    served_model: str = ""
    """The model the provider says served the call (the response's `model`, Gemini's `modelVersion`, a
    preset's resolved model); empty where the engine does not say (a local model is the one loaded)."""
    system_fingerprint: str = ""
    """The provider's `system_fingerprint`, where given."""
    service_tier: str = ""
    """The provider's service tier for the call, where given."""
    truncation_reason: str = ""
    """Why the answer was cut off (`truncated`), in the provider's words: `length`, `max_output_tokens`,
    `MAX_TOKENS`, ..."""
    provider_cost: float | None = None
    """What the provider says the call cost, in dollars (Perplexity's `usage.cost.total_cost`); None where
    it does not say. Kept beside the cost computed from our prices, never in place of it."""
    model_status: dict[str, str] | None = None
    """How the provider says the model stands, where it says in the answer (Gemini's `model_status`):
    `{"stage": "DEPRECATED", "retirement_time": "2027-01-15T00:00:00Z"}`, each key where given."""
    stand_in: bool = False
    """A stand-in made this answer, not the model asked for: a rule answering in-process (the docs' plugin
    example), or the `bespoke stand-in` server, which says so in every answer. Counted in `Usage.stand_in`,
    not in `served_models`; it costs nothing, and the figures of a judge so answered are marked `STAND-IN`."""

    def extras(self) -> dict[str, Any]:
        """The fields beyond text, tokens and truncation that are set, as JSON (what the cache stores)."""
        out: dict[str, Any] = {}
        if self.cached_input_tokens:
            out["cached_input_tokens"] = self.cached_input_tokens
        if self.cache_write_tokens:
            out["cache_write_tokens"] = self.cache_write_tokens
        if self.reasoning_tokens:
            out["reasoning_tokens"] = self.reasoning_tokens
        if self.tool_calls:
            out["tool_calls"] = [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in self.tool_calls]
        if self.search is not None:
            out["search"] = self.search
        for name in ("served_model", "system_fingerprint", "service_tier", "truncation_reason"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        if self.provider_cost is not None:
            out["provider_cost"] = self.provider_cost
        if self.model_status:
            out["model_status"] = self.model_status
        if self.stand_in:
            out["stand_in"] = True
        return out

    @classmethod
    def from_parts(cls, text: str, input_tokens: int, output_tokens: int, truncated: bool,
                   extras: dict[str, Any] | None) -> "Completion":
        """The inverse of `extras`: a completion from its stored parts."""
        extras = extras or {}
        return cls(text, input_tokens, output_tokens, truncated,
                   cached_input_tokens=int(extras.get("cached_input_tokens", 0)),
                   cache_write_tokens=int(extras.get("cache_write_tokens", 0)),
                   reasoning_tokens=int(extras.get("reasoning_tokens", 0)),
                   tool_calls=tuple(ToolCall(c["name"], dict(c["arguments"]), c.get("id", ""))
                                    for c in extras.get("tool_calls", ())),
                   search=extras.get("search"),
                   served_model=str(extras.get("served_model", "")),
                   system_fingerprint=str(extras.get("system_fingerprint", "")),
                   service_tier=str(extras.get("service_tier", "")),
                   truncation_reason=str(extras.get("truncation_reason", "")),
                   provider_cost=float(extras["provider_cost"]) if extras.get("provider_cost") is not None else None,
                   model_status=dict(extras["model_status"]) if extras.get("model_status") else None,
                   stand_in=bool(extras.get("stand_in", False)))


@dataclass(frozen=True)
class CallError:
    """A call that failed for good (after the backend's own retries). `reason` never holds a secret."""

    reason: str
    retryable: bool = False


class EngineError(RuntimeError):
    """The engine itself failed (a CUDA error, a dead engine), not one request: every request after it
    would fail the same way, so the run stops here. The message is one line and holds no secret; the
    answers that landed before it are in the cache."""


class ModelUnavailableError(EngineError):
    """The provider no longer serves the model asked for (retired, shut down, deprecated or unknown: a 404
    `model_not_found`, Gemini's "not found for API version"). Every call would fail the same way, so the
    run stops before anything is written; the message names the model and quotes the provider's words."""

    def __init__(self, model: str, provider_words: str, did_you_mean: str | None = None) -> None:
        self.model = model
        self.provider_words = provider_words
        self.did_you_mean = did_you_mean
        """A model of the endpoint's whose name is close to the one asked for (a typo: `gtp-5` -> `gpt-5`)."""
        hint = (f"did you mean {did_you_mean}?" if did_you_mean else
                "it may be retired; docs/choosing-a-judge.md compares successors against the human labels")
        super().__init__(f"the model {model!r} is not served: {provider_words} ({hint})")


class Withheld(Exception):
    """The provider answered, but without the answer: the model refused (OpenAI's `refusal`), or the
    provider stopped it (Gemini's `SAFETY`, `RECITATION`, `PROHIBITED_CONTENT`). `reason` says which, in the
    provider's words; asking again would get the same, so the call fails without a retry."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ParseError(ValueError):
    """An answer that cannot be read unambiguously: a parser raises it (the judges' parsers, `reasoning`'s
    for a reasoning block that never closes), and the scheduler (`calls.scheduler`) then asks for a repair.
    `reason` says why, in one short sentence."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


Outcome = Union[Completion, CallError]
OnDone = Callable[[int, Outcome], None]
"""Called once per request index as soon as its outcome is known, so results can be cached as they land."""


class Backend(Protocol):
    name: str
    """Engine name: `openai`, `hf`, `vllm`."""
    model: str
    one_batch: bool
    """Schedules best when it is given every request of a run at once (vLLM), rather than in groups."""
    takes_tools: bool
    """Takes `Request.tools` itself (an API's `tools=`, a chat template that renders tools) and returns the
    calls in `Completion.tool_calls`; otherwise a caller that offers tools speaks a plain-text protocol."""
    searches: bool
    """Can search the web itself (`Request.native_search`); a request asking it of another engine is refused."""
    constraint: str | None
    """How it holds an answer to a request's JSON schema: `"grammar"` (compiled here into a grammar over the
    next tokens), `"json-schema"` (sent to the server, which holds it), or None (the schema is only written
    into the prompt). The words are `schema`'s `GRAMMAR` and `JSON_SCHEMA`."""

    def identity(self) -> dict[str, Any]:
        """Everything that determines an answer besides the request, for the cache key and the results
        file: engine, model, endpoint, decoding settings. Never a secret."""
        ...

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        """Run all requests, calling `on_done(i, outcome)` exactly once for each index `i`."""
        ...

    def close(self) -> None:
        ...


@dataclass
class Usage:
    """Counters for the `usage` block of a results file."""

    calls: int = 0
    cached: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    """Of `input_tokens`, those the provider served from its prompt cache."""
    cache_write_tokens: int = 0
    """Of `input_tokens`, those the provider wrote to its prompt cache, where it says
    (`Completion.cache_write_tokens`)."""
    reasoning_tokens: int = 0
    """Of `output_tokens`, those spent on hidden reasoning."""
    truncated: int = 0
    """Answers (made or from the cache) that the output limit cut off (`Completion.truncated`). Not part of
    `counts()`: results files carry the judge's as `summary.judge_truncated`."""
    provider_cost: float = 0.0
    """Dollars the provider itself reported for the calls that said (`Completion.provider_cost`)."""
    provider_costed: int = 0
    """Of `calls`, those whose cost the provider reported."""
    web_searches: int = 0
    """Searches the provider's own web search made in the calls (`Completion.search`, as
    `web_search.searches_made` counts them): billed per search, besides the tokens."""
    wall_seconds: float = 0.0
    stand_in: int = 0
    """Answers (calls and cache hits) a stand-in made, not a model (`Completion.stand_in`): left out of
    `served_models`; a model with any costs nothing, a judge with any has its figures marked."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Engine-specific counters for the usage block (the `embed:` judge's `texts_encoded`)."""
    served_models: dict[str, int] = field(default_factory=dict)
    """`{model: answers}`: the model that served each answer received, from the cache too: the provider's
    `Completion.served_model`, else the model asked for (a local model is the one loaded). Not part of
    `counts()`: results files carry it as `judge.served_models` and `system.served_models`."""
    model_status: dict[str, str] = field(default_factory=dict)
    """The latest `Completion.model_status` of the answers received (from the cache too), where the provider
    gives one; not part of `counts()`: results files carry it as `judge.model_status`."""

    def counts(self) -> dict[str, Any]:
        """The counters for a usage block: calls, cached, failed, tokens, and the engine's own. Wall time
        is the caller's to add (runs may overlap)."""
        return {"calls": self.calls, "cached": self.cached, "failed": self.failed,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cached_input_tokens": self.cached_input_tokens, "reasoning_tokens": self.reasoning_tokens,
                **({"cache_write_tokens": self.cache_write_tokens} if self.cache_write_tokens else {}),
                **({"provider_cost": round(self.provider_cost, 6), "provider_costed": self.provider_costed}
                   if self.provider_costed else {}),
                **({"web_searches": self.web_searches} if self.web_searches else {}),
                **({"stand_in": self.stand_in} if self.stand_in else {}), **self.extra}

    @classmethod
    def total(cls, usages: Iterable["Usage"]) -> "Usage":
        """The counters of `usages` added up: a file's items' calls, a model's runs."""
        total = cls()
        for usage in usages:
            total.add(usage)
        return total

    def add(self, other: "Usage") -> None:
        """Add `other`'s counters (and engine counters) to these: an item's calls to its file's, say."""
        for counter in dataclasses.fields(self):
            if counter.name not in ("extra", "served_models", "model_status"):
                setattr(self, counter.name, getattr(self, counter.name) + getattr(other, counter.name))
        for name, value in other.extra.items():
            self.extra[name] = self.extra.get(name, 0) + value
        for name, count in other.served_models.items():
            self.served_models[name] = self.served_models.get(name, 0) + count
        self.model_status = dict(other.model_status or self.model_status)


TEXT_PART_TYPES = ("text", "output_text")
"""The types of the content parts that hold a message's text (chat's `text`, the Responses API's `output_text`)."""


def content_text(content: Any) -> str:
    """A model message's content as text: a string as it is; a list of parts (`[{"type": "text", "text":
    ...}]`, as Perplexity and OpenAI-compatible servers may send it) joined, the parts that are not text
    (images, reasoning) left out; None as empty. Pure."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        return "".join(part if isinstance(part, str) else str(part.get("text") or "") for part in content
                       if isinstance(part, str) or (isinstance(part, dict) and part.get("type", "text") in TEXT_PART_TYPES))
    return str(content)


def messages_with_schema(request: Request) -> list[dict[str, str]]:
    """The request's messages, with its JSON schema spelled out at the end of the last user message.

    For engines that cannot constrain decoding to a schema (plain `transformers`, or an API called with
    structured output off): the model still learns the exact shape it must answer in."""
    messages = [dict(m) for m in request.messages]
    if request.json_schema is None:
        return messages
    import json

    note = "\n\nAnswer with a single JSON object that follows this JSON schema:\n" + json.dumps(
        request.json_schema, sort_keys=True
    )
    for message in reversed(messages):
        if message["role"] == "user":
            message["content"] = message["content"] + note
            return messages
    return messages + [{"role": "user", "content": note.strip()}]


class BackendWrapper:
    """A backend in front of another (a dry run's, a spending limit's, a test's recorder): the same name,
    model and capabilities, and the same identity, so its answers have the same cache keys. `close`
    closes the wrapped backend."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.name = backend.name
        self.model = backend.model
        self.one_batch = backend.one_batch
        self.takes_tools = backend.takes_tools
        self.searches = backend.searches
        self.constraint = backend.constraint

    def identity(self) -> dict[str, Any]:
        return self.backend.identity()

    def describe(self) -> dict[str, Any]:
        return backend_description(self.backend)

    def close(self) -> None:
        self.backend.close()


def backend_description(backend: Backend) -> dict[str, Any]:
    """What a results file records of a backend: its `identity()`, and what a backend knows of its model
    besides (an API model's published shutdown date), from its `describe()` where it has one."""
    describe = getattr(backend, "describe", None)
    return describe() if callable(describe) else backend.identity()


@dataclass(frozen=True)
class Requirement:
    """A module an engine imports only on its first call, from an optional extra: said missing before any
    call of a run (`Engine.check_requirements`), so a run of several judges stops before the first one spends."""

    module: str
    extra: str
    what: str
    """What the engine does with it, in words."""
    option: str | None = None
    """The engine option that needs it (`--no-OPTION` does without; on unless given off); None: always."""

    def missing(self, engine: str) -> MissingExtraError:
        instead = f" (or --no-{self.option.replace('_', '-')} to do without)" if self.option else ""
        return MissingExtraError(f"the {engine} engine {self.what} with {self.module}, which is not installed: "
                                 f"pip install 'bespoke-eval[{self.extra}]'{instead}")
