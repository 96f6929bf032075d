"""History sessions as the model sees them, packed into token budgets: one block, or consecutive chunks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bespoke_dataset.reading.timestamps import instant

from .prompts import SESSION_TEMPLATE
from .tokens import TokenCounter

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
