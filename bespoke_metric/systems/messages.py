"""The system's messages for one query, exactly as `bespoke generate` sends them: for frameworks that ask
the model under test themselves, a sample at a time (inspect's solver, lm-eval's documents).

    prompter = Prompter.load(source="sample", context="selected-history", retriever="bm25", top_k=5)
    asked = prompter.messages_now(prompter.rows[0])          # contexts needing no profiler
    asked = await prompter.messages(row, profiler=generate)  # profile contexts: the profile written now

Everything up to the profiles is planned when the prompter is loaded (`context.plan_contexts`, as
`generate` plans it: histories packed, sessions retrieved over every user asked about); a profile is
written when its query's messages are asked for, through `LLMProfiler.write` (the notes, the merge, the
repetition guard, the profile store), and the block is then made within the budget (`PendingContext.finish`).
The messages are `prompts.answer_request`'s, without search (a framework's model searches by itself or not
at all).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bespoke_dataset import DEFAULT_SOURCE, resolve_source
from bespoke_dataset.errors import UserError
from bespoke_dataset.keys import query_key
from bespoke_dataset.rows import load_rows
from bespoke_metric.backends.base import Backend, Usage
from bespoke_metric.backends.callable_backend import CallableBackend, Generate
from bespoke_metric.calls.cache import Cache

from .context import HISTORY_CONTEXTS, PROFILE_CONTEXTS, RETRIEVAL_CONTEXTS, PendingContext, UserContext, plan_contexts, row_key
from .profiler import LLMProfiler
from .prompts import answer_request
from .runfiles import ProfileStore
from .settings import GenerationSettings
from .tokens import TokenCounter, hf_token_counter, openai_token_counter, token_counter

CONTEXT_OPTIONS: tuple[str, ...] = (
    "budget", "top_k", "profile_chunk_tokens", "max_profile_chunks", "profile_max_tokens", "max_new_tokens",
    "retriever", "embedding_model", "embedding_cache_dir", "tokenizer",
)
"""The `GenerationSettings` a prompter takes, named as `bespoke generate`'s flags are (`--top-k` is `top_k`)."""
DEFAULT_COUNTER_MODEL = "gpt-5"
"""Whose tokens count the budgets of a prompter told neither `model` nor `tokenizer`: OpenAI's `o200k_base`."""


@dataclass(frozen=True)
class QueryMessages:
    """What the system under test is sent for one query under one context."""

    user: str
    query_id: str
    messages: list[dict[str, str]]
    """The chat messages exactly as `bespoke generate` sends them: its system prompt, then the context block
    and the question."""
    context_block: str
    """The user-context block, heading included; empty for `none` (what the echo guard compares with)."""
    context_tokens: int
    session_ids: tuple[str, ...]
    """The history sessions the block was made from."""
    degenerate: dict[str, Any] | None = None
    """`{"profile": hit}` when the profile written was degenerate (the repetition guard): answered without it."""

    @property
    def key(self) -> str:
        return query_key(self.user, self.query_id)


class ProfileError(UserError):
    """A profile could not be written (its calls failed): the query has no messages, as `generate` gives it no
    prediction."""


class Prompter:
    """The benchmark's queries (`rows`, in benchmark order) and their messages under one context."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], planned: Sequence[UserContext | PendingContext],
                 settings: GenerationSettings, *, profiler: str | Backend | Generate | None = None,
                 profile_store: str | os.PathLike[str] | None = None, cache: Cache | None = None) -> None:
        self.rows = list(rows)
        self.settings = settings
        self.planned = {context.key: context for context in planned}
        self.profiler = profiler
        self.store = ProfileStore(Path(profile_store) if profile_store is not None else None, settings.context)
        self.cache = cache
        self.profiler_usage = Usage()
        self._profiles: dict[str, asyncio.Future[tuple[str, LLMProfiler]]] = {}
        self._writers: dict[int, tuple[Any, LLMProfiler]] = {}

    @classmethod
    def load(cls, source: str | os.PathLike[str] = DEFAULT_SOURCE, context: str = "none", *, revision: str | None = None,
             model: str | None = None, profiler: str | Backend | Generate | None = None,
             profile_store: str | os.PathLike[str] | None = None, cache: str | os.PathLike[str] | None = None,
             **options: Any) -> "Prompter":
        """The prompter of `source`'s benchmark under `context`, with the context options `bespoke generate`
        takes, named as its flags are (`CONTEXT_OPTIONS`: `budget`, `top_k`, `retriever`, `profile_max_tokens`,
        ...). `model`: the system's spec, whose tokenizer counts the budgets as `generate` counts them
        (default: `tokenizer`, else OpenAI's `o200k_base`). `profiler`: the profile contexts' default profiler
        (a spec, a backend or an async `(messages, max_tokens) -> text` function); `profile_store`: a JSONL
        file keeping the profiles written (default: in memory); `cache`: an SQLite file of the profiler's calls."""
        unknown = sorted(set(options) - set(CONTEXT_OPTIONS))
        if unknown:  # search and query expansion run before the answer as generate runs them, not per sample
            raise UserError(f"{', '.join(unknown)}: not among the options of a prompter, which are generate's context "
                            f"options {', '.join(CONTEXT_OPTIONS)} (no search, no query expansion)")
        settings = GenerationSettings(context=context, **options)
        counter = _counter(model, settings)
        resolved = resolve_source(source, revision)
        rows = load_rows("benchmark", resolved)
        sessions = load_rows("histories", resolved) if context in HISTORY_CONTEXTS else []
        retriever = settings.open_retriever(progress=False) if context in RETRIEVAL_CONTEXTS else None
        planned = plan_contexts(rows, context, sessions, counter, settings=settings, retriever=retriever)
        return cls(rows, planned, settings, profiler=profiler, profile_store=profile_store,
                   cache=Cache(cache) if cache is not None else None)

    @property
    def needs_profiler(self) -> bool:
        return self.settings.context in PROFILE_CONTEXTS

    def messages_now(self, row: Mapping[str, Any]) -> QueryMessages:
        """The messages of `row`'s query under a context that needs no profiler; a `UserError` naming the
        context for one that does (ask `messages` then)."""
        planned = self._planned(row)
        if isinstance(planned, PendingContext):
            raise UserError(f"--context {self.settings.context} writes a profile per query: use "
                            "`await Prompter.messages(row, profiler=...)`")
        return self._asked(row, planned)

    async def messages(self, row: Mapping[str, Any], profiler: str | Backend | Generate | None = None) -> QueryMessages:
        """The messages of `row`'s query; for a profile context its profile is written now (once per profile:
        a static profile is shared by its user's queries) by `profiler` (default: the prompter's), with
        `bespoke generate`'s guard, store and budget. A `ProfileError` when it cannot be written."""
        planned = self._planned(row)
        if not isinstance(planned, PendingContext):
            return self._asked(row, planned)
        key = planned.task.key
        if key not in self._profiles:  # the first asker writes it; a concurrent one awaits the same
            self._profiles[key] = asyncio.ensure_future(self._write(planned, self._writer(profiler)))
        profile, writer = await asyncio.shield(self._profiles[key])
        if key in writer.failed:
            raise ProfileError(f"{row_key(row)}: {writer.failed[key]}")
        mark = writer.degenerate.get(key)
        return self._asked(row, planned.finish(profile), {"profile": mark} if mark else None)

    async def _write(self, planned: PendingContext, writer: LLMProfiler) -> tuple[str, LLMProfiler]:
        [profile] = await writer.write([planned.task])
        return profile, writer

    def _writer(self, profiler: str | Backend | Generate | None) -> LLMProfiler:
        given = profiler if profiler is not None else self.profiler
        if given is None:
            raise UserError(f"--context {self.settings.context} needs a profiler (a backend or an async text "
                            "generation function)")
        if id(given) not in self._writers:  # the profiler is kept with its writer: its id stays its own
            writer = LLMProfiler(_backend(given), self.store, cache=self.cache, max_tokens=self.settings.profile_max_tokens,
                                 usage=self.profiler_usage, progress=False)
            self._writers[id(given)] = (given, writer)
        return self._writers[id(given)][1]

    def _planned(self, row: Mapping[str, Any]) -> UserContext | PendingContext:
        try:
            return self.planned[row_key(row)]
        except KeyError:
            raise UserError(f"{row_key(row)}: not a query of this prompter's benchmark") from None

    def _asked(self, row: Mapping[str, Any], context: UserContext, degenerate: dict[str, Any] | None = None) -> QueryMessages:
        request = answer_request(str(row["query"]), context.text, "", self.settings.max_new_tokens)
        return QueryMessages(context.user, context.query_id, [dict(message) for message in request.messages],
                             context.text, context.tokens, tuple(context.session_ids), degenerate)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


def _backend(profiler: str | Backend | Generate) -> Backend:
    if isinstance(profiler, str):
        from bespoke_metric.backends.registry import make_backend

        return make_backend(profiler)
    if hasattr(profiler, "complete") and hasattr(profiler, "identity"):
        return profiler  # type: ignore[return-value]
    return CallableBackend(profiler)  # type: ignore[arg-type]


def _counter(model: str | None, settings: GenerationSettings) -> TokenCounter:
    """The budgets' counter as `generate` makes it for `model`; without a model, `tokenizer`'s, else
    OpenAI's `o200k_base`."""
    if model is not None:
        return token_counter(model, tokenizer=settings.tokenizer)
    if settings.tokenizer is not None:
        return hf_token_counter(settings.tokenizer)
    return openai_token_counter(DEFAULT_COUNTER_MODEL)

