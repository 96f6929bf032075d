"""User-context configurations: what the system under test is given besides the query.

| name | the context block |
|---|---|
| `none` | nothing (no personalization) |
| `history` | the user's raw history, most recent first, truncated to a token budget |
| `profile` | a static profile of the user, written once per user from the whole history |
| `query-profile` | a profile written for this query from the whole history |
| `selected-history` | the history sessions most relevant to the query (top-k, retrieved) |
| `selected-profile` | a query-aware profile written from the selected sessions (the paper's best) |
| `oracle` | the gold information need itself (an upper bound, not a system) |

This module is pure assembly and calls no LLM: profiles come from a `Profiler`, a batch callable that
turns `ProfileTask`s into profile texts (`bespoke_metric.systems.profiler.LLMProfiler` is one backed by an
LLM; tests and benchmarks can pass any function). Budgets are counted in tokens by a `TokenCounter`, which
wraps the system model's own tokenizer; the budget covers the whole context block, heading included. The
headings and the other texts the model sees are in `bespoke_metric.systems.prompts`. History sessions are
written as the model sees them and packed into those budgets here too: one block, or consecutive chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bespoke_dataset.errors import UserError
from bespoke_dataset.keys import query_key
from bespoke_dataset.reading.timestamps import instant
from bespoke_metric.backends.options import flag_of, positive_fields, setting

from .prompts import HEADINGS, SESSION_TEMPLATE
from .retrieval import Retriever
from .tokens import TokenCounter

CONTEXTS: tuple[str, ...] = (
    "none",
    "history",
    "profile",
    "query-profile",
    "selected-history",
    "selected-profile",
    "oracle",
)
PROFILE_CONTEXTS = frozenset({"profile", "query-profile", "selected-profile"})
RETRIEVAL_CONTEXTS = frozenset({"selected-history", "selected-profile"})
HISTORY_CONTEXTS = frozenset(CONTEXTS) - {"none", "oracle"}
"""The contexts made from the user's history sessions (`none` has no context, `oracle` the gold need)."""

DEFAULT_BUDGET = 4096
"""Tokens of context given to the system."""
DEFAULT_TOP_K = 10
DEFAULT_PROFILE_CHUNK_TOKENS = 8192
"""History tokens the profiler reads per call."""
DEFAULT_MAX_PROFILE_CHUNKS = 8
"""Whole-history profiles read at most this many chunks, most recent first; older history is dropped."""


# ---------------------------------------------------------------- history sessions packed into token budgets

MIN_TRUNCATED_TOKENS = 32
"""A session cut shorter than this is left out rather than shown as a stub."""


def format_session(session: Mapping[str, Any]) -> str:
    """`[search, 2024-05-02T10:31:00] <text>`: one history session as the model sees it; `[search] <text>` when
    the text's first line says the time itself (`[2024-05-02 10:31:00] Searched: ...`, `Conversation started:
    2024-05-02 10:31`), so a session's time is said once."""
    text = str(session.get("text") or "").strip()
    tags = [str(session.get("source") or "history")]
    timestamp = str(session.get("timestamp") or "")
    if timestamp and not says_time(text.split("\n", 1)[0], timestamp):
        tags.append(timestamp)
    return SESSION_TEMPLATE.format(tags=", ".join(tags), text=text)


def says_time(line: str, timestamp: str) -> bool:
    """Whether `line` holds the date and the hour and minute of the ISO `timestamp`."""
    date, _, time = timestamp.partition("T")
    return bool(date and time) and date in line and time[:5] in line


def recent_first(sessions: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Sessions newest first by ISO timestamp (zoned times compared as instants); undated sessions follow,
    in their given order."""
    sessions = list(sessions)
    dated = sorted((s for s in sessions if s.get("timestamp")), key=lambda s: instant(str(s["timestamp"])), reverse=True)
    return dated + [s for s in sessions if not s.get("timestamp")]


@dataclass(frozen=True)
class Packed:
    text: str
    tokens: int
    included: tuple[str, ...]
    """Ids of the sessions shown, whole or truncated, in order."""
    truncated: bool
    """True when something was cut or left out to fit."""


def pack_sessions(
    sessions: Sequence[Mapping[str, Any]],
    budget: int,
    counter: TokenCounter,
    *,
    separator: str = "\n\n",
    truncate_overflow: bool = True,
) -> Packed:
    """Formatted sessions, in the given order, until `budget` tokens are used; the session that
    overflows is truncated when at least `MIN_TRUNCATED_TOKENS` of it fit (with `truncate_overflow`
    False it is left out whole, for a next chunk to show it)."""
    pieces: list[str] = []
    included: list[str] = []
    used = 0
    gap = counter.count(separator)
    truncated = False
    for session in sessions:
        piece = format_session(session)
        room = budget - used - (gap if pieces else 0)
        size = counter.count(piece)
        if size > room:
            truncated = True
            if truncate_overflow and room >= MIN_TRUNCATED_TOKENS:
                pieces.append(counter.truncate(piece, room))
                included.append(str(session["id"]))
            break
        pieces.append(piece)
        included.append(str(session["id"]))
        used += size + (gap if len(pieces) > 1 else 0)
    text = separator.join(pieces)
    tokens = counter.count(text)
    if tokens > budget:  # token boundaries at the joins can add a token or two
        text, truncated = counter.truncate(text, budget), True
        tokens = counter.count(text)
    return Packed(text, tokens, tuple(included), truncated)


def chunk_sessions(
    sessions: Sequence[Mapping[str, Any]],
    chunk_tokens: int,
    counter: TokenCounter,
    *,
    max_chunks: int | None = None,
) -> list[Packed]:
    """Split sessions, in order, into consecutive chunks of at most `chunk_tokens` tokens each; a
    session that does not fit what is left of a chunk starts the next one, and only a session longer
    than a whole chunk is truncated (to one chunk). At most `max_chunks` chunks."""
    chunks: list[Packed] = []
    start = 0
    while start < len(sessions) and (max_chunks is None or len(chunks) < max_chunks):
        packed = pack_sessions(sessions[start:], chunk_tokens, counter, truncate_overflow=False)
        if not packed.included:  # the session alone is larger than a chunk: cut it to one
            text = counter.truncate(format_session(sessions[start]), chunk_tokens)
            packed = Packed(text, counter.count(text), (str(sessions[start]["id"]),), True)
        chunks.append(packed)
        start += len(packed.included)
    return chunks


# ---------------------------------------------------------------- profiles


@dataclass(frozen=True)
class ProfileTask:
    """One profile to write: from `chunks` of history, for a user (`query` None) or for a query."""

    key: str
    """`user` for a static profile, `user/query_id` for a query-aware one."""
    kind: str
    user: str
    query: str | None
    chunks: tuple[str, ...]
    session_ids: tuple[str, ...]


Profiler = Callable[[Sequence[ProfileTask]], Sequence[str]]
"""Writes one profile per task, in order. Given all tasks at once so an LLM can batch them."""


# ---------------------------------------------------------------- assembly


@dataclass(frozen=True)
class UserContext:
    """What the system is given for one query besides the query itself."""

    user: str
    query_id: str
    kind: str
    text: str
    """The context block, heading included; empty for `none`."""
    tokens: int
    session_ids: tuple[str, ...] = ()
    """History sessions the block was made from (shown, or read by the profiler)."""
    profile: str | None = None
    retrieval_query: str | None = None

    @property
    def key(self) -> str:
        return query_key(self.user, self.query_id)


def render(kind: str, body: str, budget: int, counter: TokenCounter) -> tuple[str, int]:
    """The context block `heading + body`, the body cut so that the whole block fits `budget`."""
    if kind == "none" or not body.strip():
        return "", 0
    heading = HEADINGS[kind] + "\n"
    body = counter.truncate(body.strip(), budget - counter.count(heading))
    text = counter.truncate(heading + body, budget)
    return text, counter.count(text)


@dataclass(frozen=True, kw_only=True)
class ContextSettings:
    """How a user context is built, whatever its kind. `GenerationSettings` extends it."""

    budget: int = setting(DEFAULT_BUDGET, "--budget", "tokens of user context, in the system model's tokens", positive=True)
    top_k: int = setting(DEFAULT_TOP_K, "--top-k", "sessions retrieved per query", positive=True)
    profile_chunk_tokens: int = setting(DEFAULT_PROFILE_CHUNK_TOKENS, "--profile-chunk-tokens", "history tokens per profiler call",
                                        positive=True)
    max_profile_chunks: int = setting(DEFAULT_MAX_PROFILE_CHUNKS, "--max-profile-chunks", "chunks of history read per "
                                      "whole-history profile, newest first", positive=True)

    def __post_init__(self) -> None:
        check_positive(self, positive_fields(type(self)))


def check_positive(settings: object, names: Sequence[str]) -> None:
    """A `UserError` naming (by its flag, `flag_of`) the first of the fields `names` that is set and not a
    positive integer."""
    for name in names:
        value = getattr(settings, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise UserError(f"{flag_of(type(settings), name)} must be a positive integer, got {value!r}")


def row_key(row: Mapping[str, Any]) -> str:
    """The `user/query_id` key of a query row."""
    return query_key(str(row["user"]), row["query_id"])


def select_sessions(
    rows: Sequence[Mapping[str, Any]],
    sessions_by_id: Mapping[tuple[str, str], Mapping[str, Any]],
    retriever: Retriever,
    top_k: int,
    retrieval_queries: Mapping[str, str] | None = None,
) -> dict[str, list[Mapping[str, Any]]]:
    """`user/query_id` -> that user's `top_k` most relevant sessions, best first. The retriever must
    already be fitted; `retrieval_queries` replaces the query text (query expansion)."""
    queries = [(str(row["user"]), (retrieval_queries or {}).get(row_key(row), row["query"])) for row in rows]
    hits = retriever.search(queries, top_k)
    return {row_key(row): [sessions_by_id[(str(row["user"]), hit.id)] for hit in found] for row, found in zip(rows, hits, strict=True)}


def build_contexts(
    rows: Sequence[Mapping[str, Any]],
    kind: str,
    sessions: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    *,
    profiler: Profiler | None = None,
    **planning: Any,
) -> list[UserContext]:
    """The context of each query row (`benchmark` or `queries` rows: `user`, `query_id`, `query`,
    `gold_information_need`) under configuration `kind`, one per row, in order: `plan_contexts` (`planning`
    are its keywords: `settings`, `retriever`, `profile_counter`, `retrieval_queries`), then for the profile
    kinds every profile written by `profiler` in one batch."""
    planned = plan_contexts(rows, kind, sessions, counter, **planning)
    pending = [context for context in planned if isinstance(context, PendingContext)]
    if not pending:
        return [context for context in planned if isinstance(context, UserContext)]
    if profiler is None:
        raise UserError(f"--context {kind} needs a profiler (--profiler)")
    profiles = _write_profiles(profiler, {context.task.key: context.task for context in pending})
    return [context.finish(profiles[context.task.key]) if isinstance(context, PendingContext) else context
            for context in planned]


@dataclass(frozen=True)
class PendingContext:
    """The context of a profile kind before its profile is written: the profile to write (`task`, shared by
    a user's queries for `profile`), and how the block is made of it (`finish`)."""

    row: Mapping[str, Any]
    task: ProfileTask
    block: "_Block"
    retrieval_query: str | None = None

    @property
    def key(self) -> str:
        return row_key(self.row)

    def finish(self, profile: str) -> UserContext:
        """The context given `profile` (as the system is given it: empty when it was degenerate), within the
        block's budget."""
        return self.block.context(self.row, profile, self.task.session_ids, profile, self.retrieval_query)


def plan_contexts(
    rows: Sequence[Mapping[str, Any]],
    kind: str,
    sessions: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    *,
    settings: ContextSettings | None = None,
    retriever: Retriever | None = None,
    profile_counter: TokenCounter | None = None,
    retrieval_queries: Mapping[str, str] | None = None,
) -> list[UserContext | PendingContext]:
    """`build_contexts` up to the profiles: each row's finished context, or for the profile kinds its
    `PendingContext`, whose profile can be written later (all at once, or one query at a time).

    `sessions` are `histories` rows (all users). `retriever` is needed for the `selected-*` kinds and is
    fitted here. `profile_counter` counts the profiler's tokens (default: `counter`)."""
    if kind not in CONTEXTS:
        raise UserError(f"unknown context {kind!r}; choose one of {', '.join(CONTEXTS)}")
    settings = settings or ContextSettings()
    by_user = _sessions_by_user(sessions)
    _check_history(rows, kind, by_user)
    block = _Block(kind, settings.budget, counter)
    if kind == "none":
        return [block.context(row, "") for row in rows]
    if kind == "oracle":
        return [block.context(row, str(row["gold_information_need"])) for row in rows]
    if kind == "history":
        return list(_history_contexts(rows, by_user, block))
    selected: dict[str, list[Mapping[str, Any]]] = {}
    if kind in RETRIEVAL_CONTEXTS:
        if retriever is None:
            raise UserError(f"--context {kind} needs a retriever (--retriever)")
        selected = _select(rows, by_user, sessions, retriever, settings.top_k, retrieval_queries)
    used = {row_key(row): (retrieval_queries or {}).get(row_key(row), row["query"]) for row in rows} if selected else {}
    if kind == "selected-history":
        return [_packed(block, row, selected[row_key(row)], used[row_key(row)]) for row in rows]
    tasks, task_of_row = _profile_tasks(rows, kind, by_user, selected, settings, profile_counter or counter)
    return [PendingContext(row, tasks[key], block, used.get(row_key(row))) for row, key in zip(rows, task_of_row, strict=True)]


@dataclass(frozen=True)
class _Block:
    """How one configuration's context blocks are written: its heading, within its budget."""

    kind: str
    budget: int
    counter: TokenCounter

    @property
    def body_budget(self) -> int:
        return self.budget - self.counter.count(HEADINGS[self.kind] + "\n")

    def context(self, row: Mapping[str, Any], body: str, ids: Sequence[str] = (), profile: str | None = None,
                query: str | None = None) -> UserContext:
        text, tokens = render(self.kind, body, self.budget, self.counter)
        return UserContext(str(row["user"]), str(row["query_id"]), self.kind, text, tokens, tuple(ids), profile, query)


def _sessions_by_user(sessions: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    by_user: dict[str, list[Mapping[str, Any]]] = {}
    for session in sessions:
        by_user.setdefault(str(session["user"]), []).append(session)
    return by_user


def _check_history(rows: Sequence[Mapping[str, Any]], kind: str, by_user: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    without = sorted({str(row["user"]) for row in rows} - set(by_user))
    if kind in HISTORY_CONTEXTS and without:
        raise UserError(f"--context {kind} needs history, but these users have none: {', '.join(without)}")


def _history_contexts(rows: Sequence[Mapping[str, Any]], by_user: Mapping[str, Sequence[Mapping[str, Any]]],
                      block: _Block) -> list[UserContext]:
    """`history`: each user's sessions, most recent first, packed once and given to all their queries."""
    packs = {user: pack_sessions(recent_first(items), block.body_budget, block.counter) for user, items in by_user.items()}
    return [block.context(row, packs[str(row["user"])].text, packs[str(row["user"])].included) for row in rows]


def _select(rows: Sequence[Mapping[str, Any]], by_user: Mapping[str, Sequence[Mapping[str, Any]]],
            sessions: Sequence[Mapping[str, Any]], retriever: Retriever, top_k: int,
            retrieval_queries: Mapping[str, str] | None) -> dict[str, list[Mapping[str, Any]]]:
    """The `selected-*` sessions of each row, with the retriever fitted on the users asked about only (a
    limited run embeds only their sessions)."""
    retriever.fit([session for user in sorted({str(row["user"]) for row in rows}) for session in by_user[user]])
    # Keyed by user too: a release may number each user's sessions from 1.
    sessions_by_id = {(str(session["user"]), str(session["id"])): session for session in sessions}
    return select_sessions(rows, sessions_by_id, retriever, top_k, retrieval_queries)


def _packed(block: _Block, row: Mapping[str, Any], sessions: Sequence[Mapping[str, Any]], query: str) -> UserContext:
    """`selected-history`: the retrieved sessions, best first, within the budget."""
    packed = pack_sessions(sessions, block.body_budget, block.counter)
    return block.context(row, packed.text, packed.included, query=query)


def _profile_tasks(
    rows: Sequence[Mapping[str, Any]], kind: str, by_user: Mapping[str, Sequence[Mapping[str, Any]]],
    selected: Mapping[str, Sequence[Mapping[str, Any]]], settings: ContextSettings, reader: TokenCounter,
) -> tuple[dict[str, ProfileTask], list[str]]:
    """The profiles a profile kind needs (one per user for `profile`, one per query otherwise), and the
    task key of each row."""
    tasks: dict[str, ProfileTask] = {}
    task_of_row: list[str] = []
    for row in rows:
        user = str(row["user"])
        if kind == "profile":
            key, query, source = user, None, recent_first(by_user[user])
        elif kind == "query-profile":
            key, query, source = row_key(row), str(row["query"]), recent_first(by_user[user])
        else:  # selected-profile: the retrieved sessions, best first, in one chunk
            key, query, source = row_key(row), str(row["query"]), list(selected[row_key(row)])
        if key not in tasks:
            max_chunks = 1 if kind == "selected-profile" else settings.max_profile_chunks
            chunks = chunk_sessions(source, settings.profile_chunk_tokens, reader, max_chunks=max_chunks)
            ids = tuple(i for chunk in chunks for i in chunk.included)
            tasks[key] = ProfileTask(key, kind, user, query, tuple(chunk.text for chunk in chunks), ids)
        task_of_row.append(key)
    return tasks, task_of_row


def _write_profiles(profiler: Profiler, tasks: Mapping[str, ProfileTask]) -> dict[str, str]:
    """Every task's profile, by task key, written in one batch."""
    ordered = list(tasks.values())
    written = list(profiler(ordered))
    if len(written) != len(ordered):
        raise ValueError(f"the profiler returned {len(written)} profiles for {len(ordered)} tasks")
    return {task.key: text for task, text in zip(ordered, written, strict=True)}
