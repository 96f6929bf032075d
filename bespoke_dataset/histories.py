"""Structure that raw history text reliably yields: a timestamp, chat turns, URLs, search queries.

The release stores each session as free text. Only what is unambiguous is extracted; anything else is
left as None or an empty list, never guessed and never an exception.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any, TypedDict

_TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)")
_URL_CHAR = r"[^\s<>\"'()\[\]]"
_URL = re.compile(rf"https?://(?:{_URL_CHAR}|\({_URL_CHAR}*\)|\[{_URL_CHAR}*\])+")
"""A URL runs to whitespace, a quote or angle bracket, or a bracket it did not open itself."""
_TRAILING = ".,;:!?"
_CLOSERS = {")": "(", "]": "["}
_TURN = re.compile(r"^\s*(User|Human|Me|Assistant|AI|ChatGPT|Bot)\s*:\s?(.*)$", re.IGNORECASE)
_SEARCH = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?(?:Searched|Search|Query)\s*:\s*(.+?)\s*$", re.IGNORECASE)
_ROLES = {"user": "user", "human": "user", "me": "user"}


class Turn(TypedDict):
    role: str
    content: str


class Parsed(TypedDict):
    timestamp: str | None
    turns: list[Turn]
    urls: list[str]
    search_queries: list[str]


def first_timestamp(text: str) -> str | None:
    """The first valid ``YYYY-MM-DD HH:MM[:SS]`` in the text, as an ISO string (seconds kept)."""
    for date, time in _TIMESTAMP.findall(text):
        try:
            return datetime.fromisoformat(f"{date}T{time}").isoformat()
        except ValueError:
            continue
    return None


def _json_turns(text: str) -> list[Turn] | None:
    """Turns from a JSON list of ``{"role", "content"}`` messages, if the text is exactly that."""
    stripped = text.strip()
    if not stripped.startswith("["):
        return None
    try:
        messages: Any = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(messages, list) or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in messages):
        return None
    return [Turn(role=m["role"], content=m["content"]) for m in messages]


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


def chat_turns(text: str) -> list[Turn]:
    """Speaker-labelled turns (``User:`` / ``Assistant:`` and common variants); continuation lines join
    the turn above. Text without any label gives no turns."""
    json_turns = _json_turns(text)
    if json_turns is not None:
        return json_turns
    turns: list[Turn] = []
    for line in text.splitlines():
        match = _TURN.match(line)
        if match:
            role = _ROLES.get(match.group(1).lower(), "assistant")
            turns.append(Turn(role=role, content=match.group(2).strip()))
        elif turns and line.strip():
            turns[-1]["content"] = f"{turns[-1]['content']}\n{line.strip()}".strip()
    return turns


def parse_history(text: str, source: str) -> Parsed:
    """Parse one session's raw text; `source` is ``"chat"`` or ``"search"``."""
    return Parsed(
        timestamp=first_timestamp(text),
        turns=chat_turns(text) if source == "chat" else [],
        urls=urls(text),
        search_queries=[m.group(1) for line in text.splitlines() if (m := _SEARCH.match(line))]
        if source == "search" else [],
    )
