"""The one interface every LLM engine implements, as a judge or as a system under test.

A backend turns a list of chat requests into completions. How it gets there is its own business:
`openai` sends them concurrently with retries, `hf` batches them through `model.generate`, `vllm`
submits them all at once. The scheduler (`bespoke_metric.calls.scheduler`) sits in front of every backend and
owns what is common: the cache, the progress bar, and re-asking when an answer cannot be parsed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, Union


@dataclass(frozen=True)
class Request:
    """One chat completion to make."""

    messages: tuple[dict[str, str], ...]
    """Chat messages, `{"role": ..., "content": ...}`, in order."""
    max_tokens: int = 2048
    json_schema: dict[str, Any] | None = None
    """When set, ask the engine to constrain the output to this JSON schema (guided decoding,
    `response_format`); engines that cannot constrain still receive the schema in the prompt."""


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    truncated: bool = False
    """The output limit (`max_tokens`) ended the answer before the model did: whatever it holds may be
    unfinished reasoning, so a parsed judgment must not be taken from it."""


@dataclass(frozen=True)
class CallError:
    """A call that failed for good (after the backend's own retries). `reason` never holds a secret."""

    reason: str
    retryable: bool = False


Outcome = Union[Completion, CallError]
OnDone = Callable[[int, Outcome], None]
"""Called once per request index as soon as its outcome is known, so results can be cached as they land."""


class Backend(Protocol):
    name: str
    """Engine name: `openai`, `hf`, `vllm`."""
    model: str
    one_batch: bool
    """Schedules best when it is given every request of a run at once (vLLM), rather than in groups."""

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
    wall_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    """Engine-specific counters for the usage block (the `embed:` judge's `texts_encoded`)."""

    def counts(self) -> dict[str, Any]:
        """The counters for a usage block: calls, cached, failed, tokens, and the engine's own. Wall time
        is the caller's to add (runs may overlap)."""
        return {"calls": self.calls, "cached": self.cached, "failed": self.failed,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens, **self.extra}


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
