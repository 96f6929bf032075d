"""A backend's outcomes for a list of requests, as the tests of the provider engines read them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from bespoke_metric.backends.base import Backend, Outcome, Request

QUESTION = "hiking trails near Seoul on weekends"
"""The question the provider engines' tests ask (the test servers search and answer it)."""


def ask(text: str = QUESTION, **kwargs: Any) -> Request:
    """A request of `text` after a brief system message; `kwargs` are `Request`'s other fields."""
    return Request(messages=({"role": "system", "content": "be brief"}, {"role": "user", "content": text}), **kwargs)


def complete(backend: Backend, requests: Sequence[Request]) -> list[Outcome]:
    """Run `requests` through `backend.complete` on a fresh event loop: one outcome per request, in order
    (`on_done` called once for each, never twice)."""
    outcomes: dict[int, Outcome] = {}

    def on_done(index: int, outcome: Outcome) -> None:
        assert index not in outcomes, f"on_done called twice for {index}"
        outcomes[index] = outcome

    asyncio.run(backend.complete(requests, on_done))
    return [outcomes[index] for index in range(len(requests))]


def cancel_once(run: Coroutine[Any, Any, Any], ready: Callable[[], bool]) -> None:
    """Run the coroutine `run` and cancel it once `ready()` holds, as a killed process ends: what a provider
    runs for it (a batch) goes on."""

    async def dies() -> None:
        task = asyncio.create_task(run)
        while not ready():
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled()

    asyncio.run(dies())
