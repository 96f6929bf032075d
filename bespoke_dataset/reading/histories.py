"""Structure that raw history text reliably yields: a timestamp, chat turns, URLs, search queries.

The release stores each session as free text whose layout nobody has documented, so every layout an export
plausibly has is read (`FORMS`), and each session says which one it was read as:

* ``json messages``: a JSON chat, ``[{"role", "content"}, ...]`` or ``{"messages": [...]}``, with or
  without a time per message (``timestamp``, ``time``, ``create_time``, ...; ISO, written out, or Unix);
  the role may be under ``author``/``speaker``/``sender``, the text under ``text``/``parts``.
* ``json activity``: Google Takeout's My Activity JSON, ``[{"title": "Searched for ...", "titleUrl",
  "time"}, ...]``.
* ``transcript``: speaker-labelled lines (``User:`` / ``Assistant:`` and common variants).
* ``activity text``: Google My Activity as text: ``Searched for ...`` and ``Visited ...`` lines, dates
  such as ``Jul 5, 2025, 3:04:05 PM UTC`` (newest first, as Google writes them: the session's time is
  its earliest entry's).
* ``search lines``: ``Searched: ...`` / ``Search: ...`` / ``Query: ...`` lines, optionally after a
  bracketed time.
* ``plain text``: none of these; only URLs and a timestamp can come out of it.

Only what is unambiguous is extracted; anything else is left as None or an empty list, never guessed and
never an exception. Times are read as `timestamps` says (zones kept).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable
from typing import Any, TypedDict

from .timestamps import first_timestamp, instant, read_time

FORMS: tuple[str, ...] = ("json messages", "json activity", "transcript", "activity text", "search lines",
                          "plain text")
"""How a session's text was read, best structured first."""

_URL_CHAR = r"[^\s<>\"'()\[\]]"
_URL = re.compile(rf"https?://(?:{_URL_CHAR}|\({_URL_CHAR}*\)|\[{_URL_CHAR}*\])+")
"""A URL runs to whitespace, a quote or angle bracket, or a bracket it did not open itself."""
_TRAILING = ".,;:!?"
_CLOSERS = {")": "(", "]": "["}
_STAMP = r"(?:\[[^\]]*\]\s*)?"
_BRACKETED = re.compile(r"^\s*\[([^\]]*)\]")
_JSON_LINE = re.compile(r"^\s*([\[{])", re.MULTILINE)
_TRAILING_TIME = re.compile(r"\s*(?:[\u00b7|\t,-]|\s-\s|\s\u2013\s)\s*(\S.*\d:\d\d.*)$")
"""What follows a title's separator (``·``, ``|``, a tab, a dash, a comma) when it holds a clock time."""
"""An optional bracketed time before a labelled line: ``[2025-03-04 09:12] ...``."""
_TURN = re.compile(rf"^\s*{_STAMP}(User|Human|Me|Assistant|AI|ChatGPT|Bot|Gemini|Model)\s*:\s?(.*)$", re.IGNORECASE)
_SEARCH = re.compile(rf"^\s*{_STAMP}(?:Searched|Search|Query)\s*:\s*(.+?)\s*$", re.IGNORECASE)
_SEARCHED_FOR = re.compile(rf"^\s*{_STAMP}Searched for\s+(.+?)\s*$")
_VISITED = re.compile(rf"^\s*{_STAMP}Visited\s+\S")
_USER_ROLES = frozenset(("user", "human", "me"))
_KEEP_ROLES = frozenset(("system", "tool"))
_ROLE_KEYS = ("role", "author", "speaker", "sender", "from")
_CONTENT_KEYS = ("content", "text", "message", "parts")
_TIME_KEYS = ("timestamp", "time", "create_time", "created_at", "createdAt", "created", "date", "datetime",
              "start_time", "started_at", "sent_at")
_LIST_KEYS = ("messages", "conversation", "turns")


class Turn(TypedDict):
    role: str
    content: str


class Parsed(TypedDict):
    timestamp: str | None
    turns: list[Turn]
    urls: list[str]
    search_queries: list[str]


def clean_url(url: str) -> str:
    """`url` without the punctuation that ends the sentence around it: trailing ``.,;:!?``, and a closing
    ``)`` or ``]`` unless it closes a bracket opened inside the URL (``.../Foo_(bar)`` keeps its ``)``)."""
    while url:
        last = url[-1]
        if last in _TRAILING or (last in _CLOSERS and url.count(last) > url.count(_CLOSERS[last])):
            url = url[:-1]
        else:
            break
    return url


def urls(text: str) -> list[str]:
    """The distinct http(s) URLs in the text, in order of first appearance, trailing punctuation removed."""
    found = (clean_url(url) for url in _URL.findall(text))
    return list(dict.fromkeys(url for url in found if not url.endswith("://")))


# ---------------------------------------------------------------- JSON sessions

def _role(message: dict[str, Any]) -> str | None:
    for key in _ROLE_KEYS:
        value = message.get(key)
        if isinstance(value, dict):  # ChatGPT's export: "author": {"role": "user"}
            value = value.get("role")
        if isinstance(value, str) and value.strip():
            role = value.strip().lower()
            return "user" if role in _USER_ROLES else role if role in _KEEP_ROLES else "assistant"
    return None


def _content(value: Any) -> str | None:
    """Message text: a string, a list of strings or of ``{"text": ...}`` parts, or ``{"parts": [...]}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return _content(value.get("parts", value.get("text")))
    if isinstance(value, list) and all(isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str))
                                       for p in value):
        return "\n".join(p if isinstance(p, str) else p["text"] for p in value)
    return None


def _time_of(item: dict[str, Any]) -> str | None:
    return next((t for key in _TIME_KEYS if key in item and (t := read_time(item[key])) is not None), None)


def _earliest(times: Iterable[str | None]) -> str | None:
    readable = [t for t in times if t is not None]
    return min(readable, key=instant) if readable else None


def _json_messages(data: Any) -> tuple[list[Turn], str | None] | None:
    """Turns and the earliest time of a JSON chat; None if `data` is not one."""
    session_time = None
    if isinstance(data, dict):
        session_time = _time_of(data)
        data = next((data[key] for key in _LIST_KEYS if isinstance(data.get(key), list)), None)
    if not isinstance(data, list) or not data or not all(isinstance(m, dict) for m in data):
        return None
    turns: list[Turn] = []
    times: list[str | None] = [session_time]
    for message in data:
        role = _role(message)
        content = next((c for key in _CONTENT_KEYS if key in message and (c := _content(message[key])) is not None), None)
        if role is None or content is None:
            return None
        turns.append(Turn(role=role, content=content))
        times.append(_time_of(message))
    return turns, _earliest(times)


Entry = tuple["str | None", "str | None"]
"""One activity entry: its search query (None for a visit) and its time (None when it has none)."""


def _oldest_first(entries: list[Entry], google: bool) -> list[Entry]:
    """Entries in time order. Their times decide where they can: entries whose times run down are turned
    around, entries whose times run up are kept. Otherwise (fewer than two distinct times, or out of order)
    Google's activity (`google`) is taken as newest first, as Google writes it, and other lines as given."""
    times = [instant(time) for _, time in entries if time is not None]
    pairs = list(itertools.pairwise(times))
    if times and times[0] != times[-1] and all(a >= b for a, b in pairs):
        return entries[::-1]
    if times and times[0] != times[-1] and all(a <= b for a, b in pairs):
        return entries
    return entries[::-1] if google else entries


def _json_activity(data: Any) -> tuple[list[Entry], list[str]] | None:
    """The entries and URLs of Takeout's My Activity JSON; None if `data` is not that."""
    if not isinstance(data, list) or not data or not all(isinstance(a, dict) and isinstance(a.get("title"), str)
                                                         for a in data):
        return None
    if not any(key in a for a in data for key in ("time", "titleUrl", "header", "products")):
        return None
    entries = [(m.group(1) if (m := _SEARCHED_FOR.match(a["title"])) else None, _time_of(a)) for a in data]
    links = [a["titleUrl"] for a in data if isinstance(a.get("titleUrl"), str)]
    return entries, links


def _load_json(text: str) -> Any:
    """The JSON that the text is, or that follows its header lines (``Conversation started: ...`` then a
    JSON chat); None when there is none."""
    stripped = text.strip()
    starts = [0] if stripped[:1] in ("[", "{") else []
    starts += [m.start(1) for m in _JSON_LINE.finditer(stripped) if m.start(1) > 0][:1]
    for start in starts:
        try:
            return json.loads(stripped[start:])
        except ValueError:
            continue
    return None


# ---------------------------------------------------------------- text sessions

def _labelled_turns(text: str) -> list[Turn]:
    """Speaker-labelled lines (``User:`` / ``Assistant:`` and common variants, optionally after a bracketed
    time) as turns; continuation lines join the turn above. Text without any label gives no turns."""
    turns: list[Turn] = []
    for line in text.splitlines():
        match = _TURN.match(line)
        if match:
            role = "user" if match.group(1).lower() in _USER_ROLES else "assistant"
            turns.append(Turn(role=role, content=match.group(2).strip()))
        elif turns and line.strip():
            turns[-1]["content"] = f"{turns[-1]['content']}\n{line.strip()}".strip()
    return turns


def _inline_time(title: str) -> tuple[str, str | None]:
    """A title with a date and time written after it (``running shoes · Jul 5, 2025, 3:04:05 PM UTC``): the
    title without it, and the time; the title as it is when it ends in no date and time."""
    match = _TRAILING_TIME.search(title)
    time = first_timestamp(match.group(1)) if match else None
    return (title[:match.start()].rstrip(), time) if match and time and ":" in match.group(1) else (title, None)


def _search_entries(text: str) -> tuple[list[Entry], str]:
    """The entries of a search session's text and the form they show: ``Searched for ...`` / ``Visited ...``
    lines, each timed by the date line under it, or ``Searched: ...`` lines, timed by a bracketed time."""
    entries: list[list[str | None]] = []
    activity = labelled = False
    for line in text.splitlines():
        stamp = _BRACKETED.match(line)
        own_time = first_timestamp(stamp.group(1)) if stamp else None
        if match := _SEARCHED_FOR.match(line):
            query, inline = _inline_time(match.group(1))
            entries.append([query, own_time or inline])
            activity = True
        elif match := _SEARCH.match(line):
            entries.append([match.group(1), own_time])
            labelled = True
        elif _VISITED.match(line):
            entries.append([None, own_time or _inline_time(line)[1]])
            activity = True
        elif activity and entries and entries[-1][1] is None:
            entries[-1][1] = first_timestamp(line)
    form = "activity text" if activity else "search lines" if labelled else "plain text"
    return [(query, time) for query, time in entries], form


def read_history(text: str, source: str) -> tuple[Parsed, str]:
    """Parse one session's raw text (`source` is ``"chat"`` or ``"search"``) and say which of `FORMS` it
    was read as. A search session's queries come oldest first, and its time is its earliest entry's."""
    data = _load_json(text)
    if source == "chat":
        messages = _json_messages(data)
        if messages is not None:
            turns, timestamp = messages
            return (Parsed(timestamp=timestamp or first_timestamp(text), turns=turns, urls=urls(text), search_queries=[]),
                    "json messages")
        turns = _labelled_turns(text)
        return (Parsed(timestamp=first_timestamp(text), turns=turns, urls=urls(text), search_queries=[]),
                "transcript" if turns else "plain text")
    activity = _json_activity(data)
    if activity is not None:
        entries, links = activity
        found, form = list(dict.fromkeys(links + urls(text))), "json activity"
    else:
        entries, form = _search_entries(text)
        found = urls(text)
    entries = _oldest_first(entries, google=form != "search lines")
    timestamp = _earliest(time for _, time in entries) or first_timestamp(text)  # no entry timed: any date in it
    return Parsed(timestamp=timestamp, turns=[], urls=found,
                  search_queries=[query for query, _ in entries if query is not None]), form
