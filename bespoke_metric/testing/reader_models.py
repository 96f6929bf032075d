"""Stand-in system models that differ by name, to put behind the test server when a sweep compares several.

A "reader" answers from what its prompt holds: a profile request with notes made of the activity log's
words, a question with a sentence of its own and the first content words of the prompt (the user
context, then the question). How many words it repeats is set by the model's name (`reader-12` repeats
12; 24 when the name ends in no number), so two models of one server score differently, and a context
that carries the user's need (`oracle`) scores higher than none under `judge_responder`. A function of
the request alone: the same request always gets the same answer, as the cache assumes.
"""

from __future__ import annotations

import re
from typing import Any

from bespoke_metric.systems.prompts import PROFILER_SYSTEM_PROMPT

from .bodies import messages_of

DEFAULT_WORDS = 24
_WORD = re.compile(r"[A-Za-z][a-z]{2,}")
_STOP = frozenset("the and are for from has have that this with your you what which when how should question".split())


def _content_words(text: str, limit: int) -> list[str]:
    words = [word.lower() for word in _WORD.findall(text) if word.lower() not in _STOP]
    return list(dict.fromkeys(words))[:limit]


def words_of(model: str) -> int:
    """How many words of its prompt a model repeats: the number its name ends in, else `DEFAULT_WORDS`."""
    match = re.search(r"(\d+)$", model)
    return int(match.group(1)) if match else DEFAULT_WORDS


def reader_answer(body: dict[str, Any]) -> str:
    """The answer text for one chat-completions or Responses API request body."""
    messages = messages_of(body)
    prompt = messages[-1]["content"]
    count = words_of(str(body.get("model", "")))
    if messages[0]["role"] == "system" and messages[0]["content"] == PROFILER_SYSTEM_PROMPT:
        return "Notes on this person: they often look into " + ", ".join(_content_words(prompt, count)) + "."
    return ("Here is an answer shaped around what matters to you, kept practical. The points to weigh: "
            + ", ".join(_content_words(prompt, count)) + ".")
