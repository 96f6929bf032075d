"""Every text the systems under test send a model, as whole templates with named placeholders.

The system model gets `SYSTEM_PROMPT` and a user message made from `ANSWER_TEMPLATE`: the user-context
block (a heading from `HEADINGS`, then history sessions written with `SESSION_TEMPLATE`, a profile, or the
gold need), the search results, and the question. The profiler model gets `PROFILER_SYSTEM_PROMPT` and
one of the profile, merge or expansion templates.

`GENERATION_PROMPT_VERSION` is a hash of all of them: it goes into every cache key and the `settings` of
a run, so a changed prompt can never reuse an answer, a profile or a resumed run made under the old one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from bespoke_metric.backends.base import Request

SYSTEM_PROMPT = (
    "You are answering a question for one particular person. When you are told something about them "
    "(their past searches and conversations, a profile, or what they are after), use it: fit the answer "
    "to their situation, to what they already know, and to how they like information presented. Do not "
    "remark that you were given this information. When search results are provided, rely on them where "
    "they help and do not invent sources."
)

ANSWER_TEMPLATE = "{context}{search_results}Question: {query}"
"""`context` and `search_results` each end in a blank line, or are empty when there is none."""

HEADINGS: Mapping[str, str] = {
    "history": "The user's recent activity, newest first (search queries and chats):",
    "selected-history": "Past activity of this user that relates to the question:",
    "profile": "What is known about this user:",
    "query-profile": "What is known about this user that bears on the question:",
    "selected-profile": "What is known about this user that bears on the question:",
    "oracle": "What the user actually wants from the answer:",
}
"""The first line of each user-context block (`none` has no block)."""

SESSION_TEMPLATE = "[{tags}] {text}"
"""One history session; `tags` is its source and timestamp, comma-separated."""

SEARCH_RESULTS_HEADING = "Search results:"
SEARCH_RESULT_TEMPLATE = "[{number}] {title} ({url})\n{text}"
SEARCH_RESULT_WITHOUT_URL_TEMPLATE = "[{number}] {title}\n{text}"
UNTITLED = "(untitled)"

PROFILER_SYSTEM_PROMPT = (
    "You read a person's activity log (their web searches and their conversations with a chatbot) and "
    "describe that person for an assistant who will answer their questions. State only what the log "
    "supports; do not guess beyond it."
)

LOG_PART = ", part {number} of {total}"
"""Appended to "Activity log" in `{part}` when a history takes more than one profiler call."""

STATIC_PROFILE_TEMPLATE = (
    "Activity log{part}:\n"
    "{log}\n\n"
    "Describe this person in at most 200 words: background or occupation where it shows, interests and "
    "ongoing projects, how expert they are in each, constraints they mention (budget, place, time, health), "
    "and how they seem to like answers (length, tone, structure)."
)

QUERY_PROFILE_TEMPLATE = (
    "Activity log{part}:\n"
    "{log}\n\n"
    'This person now asks: "{query}"\n'
    "In at most 200 words, describe only what in the log helps answer that question well for them: "
    "related searches and conversations, what they already know or have tried, constraints and preferences "
    "that apply. If nothing in the log relates to the question, say so in one sentence."
)

NOTES_TEMPLATE = "Notes from part {number} of the log:\n{notes}"
"""One chunk's notes, as the merge request shows them (blank-line separated, in `{notes}` below)."""

STATIC_MERGE_TEMPLATE = (
    "{notes}\n\n"
    "Merge these notes into one description of the person, at most 250 words, without repeating yourself."
)

QUERY_MERGE_TEMPLATE = (
    "{notes}\n\n"
    "Merge these notes into one description of the person, at most 250 words, without repeating yourself. "
    'Keep only what helps answer: "{query}"'
)

EXPANSION_TEMPLATES: Mapping[str, str] = {
    "cot": (
        'A person asked a search assistant: "{query}"\n'
        "Think briefly about what they are most likely trying to find out, then end with one line that "
        "starts with 'Search terms:' and lists the words, products and topics their earlier searches and "
        "conversations about this would contain."
    ),
    "pseudo-history": (
        'Before asking "{query}", a person searched the web and chatted with an assistant about related '
        "things. Write five entries of such a history, one per line: short web searches or chat questions "
        "in their own words."
    ),
}
"""Query expansion before retrieval, by kind; the answer is appended to the query text."""

TEMPLATES: Mapping[str, str | Mapping[str, str]] = {
    "SYSTEM_PROMPT": SYSTEM_PROMPT,
    "ANSWER_TEMPLATE": ANSWER_TEMPLATE,
    "HEADINGS": HEADINGS,
    "SESSION_TEMPLATE": SESSION_TEMPLATE,
    "SEARCH_RESULTS_HEADING": SEARCH_RESULTS_HEADING,
    "SEARCH_RESULT_TEMPLATE": SEARCH_RESULT_TEMPLATE,
    "SEARCH_RESULT_WITHOUT_URL_TEMPLATE": SEARCH_RESULT_WITHOUT_URL_TEMPLATE,
    "UNTITLED": UNTITLED,
    "PROFILER_SYSTEM_PROMPT": PROFILER_SYSTEM_PROMPT,
    "LOG_PART": LOG_PART,
    "STATIC_PROFILE_TEMPLATE": STATIC_PROFILE_TEMPLATE,
    "QUERY_PROFILE_TEMPLATE": QUERY_PROFILE_TEMPLATE,
    "NOTES_TEMPLATE": NOTES_TEMPLATE,
    "STATIC_MERGE_TEMPLATE": STATIC_MERGE_TEMPLATE,
    "QUERY_MERGE_TEMPLATE": QUERY_MERGE_TEMPLATE,
    "EXPANSION_TEMPLATES": EXPANSION_TEMPLATES,
}
"""Every template above, by name: what `GENERATION_PROMPT_VERSION` is computed from."""


def prompt_version(templates: Mapping[str, str | Mapping[str, str]]) -> str:
    """The first 12 hex digits of the SHA-256 of the templates as canonical JSON."""
    canonical = json.dumps(templates, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


GENERATION_PROMPT_VERSION = prompt_version(TEMPLATES)


def _block(text: str) -> str:
    return f"{text}\n\n" if text else ""


def answer_request(query: str, context: str, search_results: str, max_tokens: int) -> Request:
    """The system under test's request: instructions, then the context block, search results and question."""
    user = ANSWER_TEMPLATE.format(context=_block(context), search_results=_block(search_results), query=query)
    return Request(({"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}), max_tokens=max_tokens)


def _profiler_request(user: str, max_tokens: int) -> Request:
    return Request(({"role": "system", "content": PROFILER_SYSTEM_PROMPT}, {"role": "user", "content": user}), max_tokens=max_tokens)


def notes_request(chunks: Sequence[str], index: int, query: str | None, max_tokens: int) -> Request:
    """Profiler request for chunk `index` of a history: a static profile (`query` None) or a query-aware one."""
    part = LOG_PART.format(number=index + 1, total=len(chunks)) if len(chunks) > 1 else ""
    if query is None:
        user = STATIC_PROFILE_TEMPLATE.format(part=part, log=chunks[index])
    else:
        user = QUERY_PROFILE_TEMPLATE.format(part=part, log=chunks[index], query=query)
    return _profiler_request(user, max_tokens)


def merge_request(notes: Sequence[str], query: str | None, max_tokens: int) -> Request:
    """Profiler request merging per-chunk notes into one profile."""
    shown = "\n\n".join(NOTES_TEMPLATE.format(number=number, notes=text.strip()) for number, text in enumerate(notes, start=1))
    if query is None:
        return _profiler_request(STATIC_MERGE_TEMPLATE.format(notes=shown), max_tokens)
    return _profiler_request(QUERY_MERGE_TEMPLATE.format(notes=shown, query=query), max_tokens)


def expansion_request(query: str, kind: str, max_tokens: int) -> Request:
    return Request(({"role": "user", "content": EXPANSION_TEMPLATES[kind].format(query=query)},), max_tokens=max_tokens)
