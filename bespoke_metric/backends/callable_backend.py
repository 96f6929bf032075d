"""`CallableBackend`: any async text-generation function as a backend, so the scheduler, its cache and the
judging protocol run over a model that another framework calls (inspect's `get_model(...).generate`, a
per-sample profiler).

    async def generate(messages: list[dict[str, str]], max_tokens: int) -> str | Completion: ...
    backend = CallableBackend(generate, name="inspect", model="openai/gpt-5")
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .base import CallError, Completion, OnDone, Request, messages_with_schema

Generate = Callable[[list[dict[str, str]], int], Awaitable["str | Completion"]]
"""`(messages, max_tokens) -> the answer`: its text, or a whole `Completion` (tokens, truncation)."""


class CallableBackend:
    """A backend whose calls are `generate`'s: each request's messages (its JSON schema, if any, written into
    the last user message, as for an engine that cannot constrain decoding) and output limit. Requests run
    concurrently; how many at once is the function's own business (inspect's connection limits). An
    exception is that call's failure, never the run's; its message names the error's type."""

    one_batch = False
    takes_tools = False
    searches = False
    constraint: str | None = None

    def __init__(self, generate: Generate, *, name: str = "callable", model: str = "",
                 identity: dict[str, Any] | None = None) -> None:
        self.generate = generate
        self.name = name
        self.model = model or getattr(generate, "__qualname__", "generate")
        self._identity = {"engine": name, "model": self.model, **(identity or {})}

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        async def one(index: int, request: Request) -> None:
            try:
                answer = await self.generate(messages_with_schema(request), request.max_tokens)
            except Exception as error:  # the function's own failure, whatever its type: this call's, not the run's
                on_done(index, CallError(f"{type(error).__name__}: {error}"))
                return
            on_done(index, answer if isinstance(answer, Completion) else Completion(str(answer)))

        await asyncio.gather(*(one(index, request) for index, request in enumerate(requests)))

    def close(self) -> None:
        """Nothing to release: the function's owner holds its model."""
