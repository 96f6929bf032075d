"""Asking the system and profiler models: through the scheduler and its cache, answers without reasoning."""

from __future__ import annotations

from collections.abc import Sequence

from bespoke_metric.backends.base import Backend, ParseError, Request, Usage
from bespoke_metric.backends.reasoning import strip_reasoning
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.progress import ProgressHook
from bespoke_metric.calls.scheduler import CallResult, run_requests, run_sync

from .prompts import GENERATION_PROMPT_VERSION

Answer = tuple[str | None, str | None]
"""`(text, None)`, or `(None, reason)` when there is no answer to use."""


def final_text(result: CallResult) -> Answer:
    """`(text, None)`: a model's answer without its reasoning block (`<think>...</think>`, a gpt-oss
    analysis channel), stripped; or `(None, reason)` when there is none: the call failed, or a reasoning
    block was opened and never closed (the answer was cut off before it began)."""
    if not result.ok:
        return None, result.error
    try:
        return strip_reasoning(result.text or ""), None
    except ParseError as error:
        return None, error.reason


async def ask_results(
    backend: Backend,
    requests: Sequence[Request],
    *,
    purpose: str,
    cache: Cache | None,
    usage: Usage,
    progress: ProgressHook | None,
) -> list[CallResult]:
    """One `CallResult` per request, in order, the answer as it came. `purpose` (answer, profile,
    expansion, rewrite, agent) and the prompt version are part of every cache key, so a changed prompt
    never reuses an old answer."""
    if not requests:
        return []
    key_extra = {"purpose": purpose, "generation_prompt_version": GENERATION_PROMPT_VERSION}
    return await run_requests(backend, requests, cache=cache, key_extra=key_extra, progress=progress, usage=usage)


def ask(backend: Backend, requests: Sequence[Request], *, purpose: str, cache: Cache | None, usage: Usage,
        progress: ProgressHook | None) -> list[Answer]:
    """One `final_text` per request, in order, from synchronous code (`ask_results`)."""
    results = ask_results(backend, requests, purpose=purpose, cache=cache, usage=usage, progress=progress)
    return [final_text(result) for result in run_sync(results)]
