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
turns `ProfileTask`s into profile texts (`bespoke_metric.generation` provides one backed by an LLM; tests
and benchmarks can pass any function). Budgets are counted in tokens by a `TokenCounter`, which wraps the
system model's own tokenizer; the budget covers the whole context block, heading included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bespoke_dataset.keys import query_key
from bespoke_dataset.retrieval import Retriever

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

DEFAULT_BUDGET = 4096
"""Tokens of context given to the system."""
DEFAULT_TOP_K = 10
DEFAULT_PROFILE_CHUNK_TOKENS = 8192
"""History tokens the profiler reads per call."""
DEFAULT_MAX_PROFILE_CHUNKS = 8
"""Whole-history profiles read at most this many chunks, most recent first; older history is dropped."""
MIN_TRUNCATED_TOKENS = 32
"""A session cut shorter than this is left out rather than shown as a stub."""

HEADINGS = {
    "history": "The user's recent activity, newest first (search queries and chats):",
    "selected-history": "Past activity of this user that relates to the question:",
    "profile": "What is known about this user:",
    "query-profile": "What is known about this user that bears on the question:",
    "selected-profile": "What is known about this user that bears on the question:",
    "oracle": "What the user actually wants from the answer:",
}


# ---------------------------------------------------------------- tokens


class TokenCounter:
    """Counts and truncates text in the tokens of one tokenizer.

    `encode` maps text to a token list and `decode` maps a prefix of it back to text: a Hugging Face
    tokenizer (`TokenCounter.from_hf`), a tiktoken-style encoding, or the documented character
    approximation (`TokenCounter.approximate`)."""

    def __init__(self, name: str, encode: Callable[[str], Sequence[Any]], decode: Callable[[Sequence[Any]], str]):
        self.name = name
        self._encode = encode
        self._decode = decode

    @classmethod
    def from_hf(cls, tokenizer: Any, name: str | None = None) -> TokenCounter:
        return cls(
            name or f"hf:{getattr(tokenizer, 'name_or_path', type(tokenizer).__name__)}",
            lambda text: tokenizer.encode(text, add_special_tokens=False),
            lambda ids: tokenizer.decode(ids, skip_special_tokens=True),
        )

    @classmethod
    def approximate(cls, chars_per_token: float = 3.0) -> TokenCounter:
        """One token per `chars_per_token` characters. English averages about four characters per token
        in OpenAI's encodings; three over-counts on purpose, so a budget is kept, not exceeded."""
        step = max(1, int(chars_per_token))

        def encode(text: str) -> list[str]:
            return [text[i : i + step] for i in range(0, len(text), step)]

        return cls(f"approx:{step}-chars-per-token", encode, "".join)

    def count(self, text: str) -> int:
        return len(self._encode(text)) if text else 0

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix (by tokens) that counts at most `max_tokens` tokens."""
        if max_tokens <= 0:
            return ""
        tokens = self._encode(text)
        if len(tokens) <= max_tokens:
            return text
        keep = max_tokens
        # Decoding then re-encoding can merge or split tokens at the cut; shrink until it fits.
        while keep > 0:
            prefix = self._decode(tokens[:keep])
            if self.count(prefix) <= max_tokens:
                return prefix
            keep -= 1
        return ""


# ---------------------------------------------------------------- sessions


def format_session(session: Mapping[str, Any]) -> str:
    """`[search, 2024-05-02T10:31:00] <text>`: one history session as the model sees it."""
    tags = [str(session.get("source") or "history")]
    if session.get("timestamp"):
        tags.append(str(session["timestamp"]))
    return f"[{', '.join(tags)}] {str(session.get('text') or '').strip()}"


def recent_first(sessions: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Sessions newest first by ISO timestamp; undated sessions follow, in their given order."""
    sessions = list(sessions)
    dated = sorted((s for s in sessions if s.get("timestamp")), key=lambda s: str(s["timestamp"]), reverse=True)
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


def render_search_results(results: Sequence[Mapping[str, str]], budget: int, counter: TokenCounter) -> str:
    """Search results as a numbered list of `title (url)` + text, cut to `budget` tokens."""
    if not results:
        return ""
    lines = ["Search results:"]
    for number, result in enumerate(results, start=1):
        title = result.get("title") or "(untitled)"
        url = f" ({result['url']})" if result.get("url") else ""
        lines.append(f"[{number}] {title}{url}\n{str(result.get('text') or '').strip()}")
    return counter.truncate("\n\n".join(lines), budget)


@dataclass
class ContextSettings:
    budget: int = DEFAULT_BUDGET
    top_k: int = DEFAULT_TOP_K
    profile_chunk_tokens: int = DEFAULT_PROFILE_CHUNK_TOKENS
    max_profile_chunks: int = DEFAULT_MAX_PROFILE_CHUNKS


def _row_key(row: Mapping[str, Any]) -> str:
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
    queries = [(str(row["user"]), (retrieval_queries or {}).get(_row_key(row), row["query"])) for row in rows]
    hits = retriever.search(queries, top_k)
    return {_row_key(row): [sessions_by_id[(str(row["user"]), hit.id)] for hit in found] for row, found in zip(rows, hits)}


def build_contexts(
    rows: Sequence[Mapping[str, Any]],
    kind: str,
    sessions: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    *,
    settings: ContextSettings | None = None,
    retriever: Retriever | None = None,
    profiler: Profiler | None = None,
    profile_counter: TokenCounter | None = None,
    retrieval_queries: Mapping[str, str] | None = None,
) -> list[UserContext]:
    """The context of each query row (`benchmark` or `queries` rows: `user`, `query_id`, `query`,
    `gold_information_need`) under configuration `kind`, one per row, in order.

    `sessions` are `histories` rows (all users). `retriever` is needed for the `selected-*` kinds and is
    fitted here; `profiler` for the profile kinds. `profile_counter` counts the profiler's tokens
    (default: `counter`)."""
    if kind not in CONTEXTS:
        raise ValueError(f"unknown context {kind!r}; choose one of {', '.join(CONTEXTS)}")
    settings = settings or ContextSettings()
    if settings.budget <= 0:
        raise ValueError(f"the context budget must be positive, got {settings.budget}")
    by_user: dict[str, list[Mapping[str, Any]]] = {}
    for session in sessions:
        by_user.setdefault(str(session["user"]), []).append(session)
    users_without_history = sorted({str(row["user"]) for row in rows} - set(by_user))
    if kind not in ("none", "oracle") and users_without_history:
        raise ValueError(f"context {kind!r} needs history, but these users have none: {', '.join(users_without_history)}")

    def context(row: Mapping[str, Any], body: str, ids: Sequence[str] = (), profile: str | None = None, query: str | None = None) -> UserContext:
        text, tokens = render(kind, body, settings.budget, counter)
        return UserContext(str(row["user"]), str(row["query_id"]), kind, text, tokens, tuple(ids), profile, query)

    if kind == "none":
        return [context(row, "") for row in rows]
    if kind == "oracle":
        return [context(row, str(row["gold_information_need"])) for row in rows]
    if kind == "history":
        heading = counter.count(HEADINGS[kind] + "\n")
        packs = {user: pack_sessions(recent_first(items), settings.budget - heading, counter) for user, items in by_user.items()}
        return [context(row, packs[str(row["user"])].text, packs[str(row["user"])].included) for row in rows]

    selected: dict[str, list[Mapping[str, Any]]] = {}
    if kind in RETRIEVAL_CONTEXTS:
        if retriever is None:
            raise ValueError(f"context {kind!r} needs a retriever")
        # Only the users asked about: a limited run embeds only their sessions.
        retriever.fit([session for user in sorted({str(row["user"]) for row in rows}) for session in by_user[user]])
        # Keyed by user too: a release may number each user's sessions from 1.
        sessions_by_id = {(str(session["user"]), str(session["id"])): session for session in sessions}
        selected = select_sessions(rows, sessions_by_id, retriever, settings.top_k, retrieval_queries)
    query_used = {_row_key(row): (retrieval_queries or {}).get(_row_key(row), row["query"]) for row in rows} if selected else {}

    if kind == "selected-history":
        heading = counter.count(HEADINGS[kind] + "\n")
        contexts = []
        for row in rows:
            packed = pack_sessions(selected[_row_key(row)], settings.budget - heading, counter)
            contexts.append(context(row, packed.text, packed.included, query=query_used[_row_key(row)]))
        return contexts

    # The profile kinds.
    if profiler is None:
        raise ValueError(f"context {kind!r} needs a profiler")
    reader = profile_counter or counter
    tasks: dict[str, ProfileTask] = {}
    task_of_row: list[str] = []
    for row in rows:
        user = str(row["user"])
        if kind == "profile":
            key, query, source = user, None, recent_first(by_user[user])
        elif kind == "query-profile":
            key, query, source = _row_key(row), str(row["query"]), recent_first(by_user[user])
        else:  # selected-profile: the retrieved sessions, best first, in one chunk
            key, query, source = _row_key(row), str(row["query"]), selected[_row_key(row)]
        if key not in tasks:
            max_chunks = 1 if kind == "selected-profile" else settings.max_profile_chunks
            chunks = chunk_sessions(source, settings.profile_chunk_tokens, reader, max_chunks=max_chunks)
            ids = tuple(i for chunk in chunks for i in chunk.included)
            tasks[key] = ProfileTask(key, kind, user, query, tuple(chunk.text for chunk in chunks), ids)
        task_of_row.append(key)
    ordered = list(tasks.values())
    written = list(profiler(ordered))
    if len(written) != len(ordered):
        raise ValueError(f"the profiler returned {len(written)} profiles for {len(ordered)} tasks")
    profiles = {task.key: text for task, text in zip(ordered, written)}
    return [
        context(row, profiles[key], tasks[key].session_ids, profiles[key], query_used.get(_row_key(row)))
        for row, key in zip(rows, task_of_row)
    ]
