"""The profiler model's work: user profiles, and query expansion before retrieval.

Profiles (`profile`, `query-profile`, `selected-profile`): a history larger than one profiler call is read
in chunks, each summarised into notes, and the notes merged into one profile. Query expansion (`cot`: the
profiler reasons about what the user is after and lists search terms; `pseudo-history`: it writes history
entries such a user would have) is appended to the query text that retrieval searches with. Both are kept
in the run's `ProfileStore` and not asked again on resume.

A profile that loops on itself (the answers' `repetition` guard: a small model repeating one line to its
token limit) is kept in the store with its `degenerate` mark and not given to the system, which answers
without a profile; the prediction carries the mark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bespoke_metric.backends.base import Backend, Request, Usage
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.progress import ProgressBar
from bespoke_metric.calls.scheduler import run_sync
from bespoke_metric.judging.guards import check_repetition

from .calls import Answer, ask, ask_results, final_text
from .context import ProfileTask, row_key
from .prompts import expansion_request, merge_request, notes_request
from .runfiles import ProfileStore


class LLMProfiler:
    """A `context.Profiler` backed by a profiler model: per-chunk notes, then a merge where a history
    took more than one chunk. Profiles already in the store are not asked again; a profile that cannot
    be written is recorded in `failed` (its queries get no prediction)."""

    def __init__(self, backend: Backend, store: ProfileStore, *, cache: Cache | None, max_tokens: int, usage: Usage, progress: bool):
        self.backend = backend
        self.store = store
        self.cache = cache
        self.max_tokens = max_tokens
        self.usage = usage
        self.progress = progress
        self.failed: dict[str, str] = {}
        """Task key -> reason."""
        self.degenerate: dict[str, dict[str, str]] = {}
        """Task key -> the guard that found its profile degenerate (`GuardHit.to_dict()`): not given to the system."""

    async def _ask(self, requests: list[Request], desc: str) -> list[Answer]:
        with ProgressBar(len(requests), desc=desc, disable=not self.progress or not requests) as bar:
            results = await ask_results(self.backend, requests, purpose="profile", cache=self.cache, usage=self.usage,
                                        progress=bar)
        return [final_text(result) for result in results]

    def __call__(self, tasks: Sequence[ProfileTask]) -> list[str]:
        """Every task's profile in one batch, from synchronous code (`bespoke generate`)."""
        return run_sync(self.write(tasks))

    async def write(self, tasks: Sequence[ProfileTask]) -> list[str]:
        """Every task's profile as the system is given it, in order (`""` for one that failed, recorded in
        `failed`, or was degenerate, recorded in `degenerate`): from async code, a query at a time as well as
        all at once (`bespoke_metric.systems.messages.Prompter`)."""
        todo = [task for task in tasks if self.store.get(task.kind, task.key) is None]
        notes_for = [(task, i) for task in todo for i in range(len(task.chunks))]
        answers = await self._ask([notes_request(task.chunks, i, task.query, self.max_tokens) for task, i in notes_for], "profile notes")
        notes: dict[str, list[Answer]] = {}
        for (task, _), answer in zip(notes_for, answers, strict=True):
            notes.setdefault(task.key, []).append(answer)
        finished: dict[str, str] = {}
        to_merge: list[tuple[ProfileTask, list[str]]] = []
        for task in todo:
            found = notes.get(task.key, [])
            errors = [error for _, error in found if error is not None]
            if errors:
                self.failed[task.key] = f"profile notes failed: {errors[0]}"
            elif len(found) == 1:
                finished[task.key] = found[0][0] or ""
            elif not found:  # a user without history sessions: nothing to describe
                finished[task.key] = ""
            else:
                to_merge.append((task, [text or "" for text, _ in found]))
        merged = await self._ask([merge_request(texts, task.query, self.max_tokens) for task, texts in to_merge], "profile merge")
        for (task, _), (text, error) in zip(to_merge, merged, strict=True):
            if error is None:
                finished[task.key] = text or ""
            else:
                self.failed[task.key] = f"profile merge failed: {error}"
        self.store.add(
            {"kind": task.kind, "key": task.key, "user": task.user, "query": task.query, "text": finished[task.key],
             "session_ids": list(task.session_ids), "chunks": len(task.chunks), "degenerate": _mark(finished[task.key])}
            for task in todo
            if task.key in finished
        )
        return [self._usable(task) for task in tasks]

    def _usable(self, task: ProfileTask) -> str:
        """The task's profile as the system is given it: none when it is degenerate (read again from the
        text, so a resumed run decides as the first did)."""
        text = self.store.get(task.kind, task.key) or ""
        mark = _mark(text)
        if mark is None:
            return text
        self.degenerate[task.key] = mark
        return ""


def _mark(text: str) -> dict[str, str] | None:
    hit = check_repetition(text)
    return hit.to_dict() if hit is not None else None


def expand_queries(
    rows: Sequence[Mapping[str, Any]],
    kind: str,
    backend: Backend,
    store: ProfileStore,
    *,
    cache: Cache | None,
    max_tokens: int,
    usage: Usage,
    progress: bool,
) -> tuple[dict[str, str], dict[str, str]]:
    """(`user/query_id` -> retrieval text, `user/query_id` -> failure reason) for query expansion `kind`:
    the query followed by the profiler's expansion."""
    store_kind = f"expansion:{kind}"
    keys = [row_key(row) for row in rows]
    todo = [(key, row) for key, row in zip(keys, rows, strict=True) if store.get(store_kind, key) is None]
    with ProgressBar(len(todo), desc="query expansion", disable=not progress or not todo) as bar:
        requests = [expansion_request(str(row["query"]), kind, max_tokens) for _, row in todo]
        answers = ask(backend, requests, purpose="expansion", cache=cache, usage=usage, progress=bar)
    store.add(
        {"kind": store_kind, "key": key, "user": str(row["user"]), "query": str(row["query"]), "text": text or ""}
        for (key, row), (text, error) in zip(todo, answers, strict=True)
        if error is None
    )
    failed = {key: f"query expansion failed: {error}" for (key, _), (_, error) in zip(todo, answers, strict=True) if error is not None}
    expanded = {key: f"{row['query']}\n{store.get(store_kind, key)}" for key, row in zip(keys, rows, strict=True) if key not in failed}
    return expanded, failed
