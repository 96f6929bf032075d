"""Every text the systems under test send a model, as whole templates with named placeholders.

The system model gets `SYSTEM_PROMPT` and a user message made from `ANSWER_TEMPLATE`: the user-context
block (a heading from `HEADINGS`, then history sessions written with `SESSION_TEMPLATE`, a profile, or the
gold need), the search results, and the question. A system that searches may first write its search
queries (`REWRITE_TEMPLATE`) or search as it goes (`AGENT_TEMPLATE`, with the `search` tool or the
plain-text protocol of `AGENT_TEXT_INSTRUCTIONS`). The profiler model gets `PROFILER_SYSTEM_PROMPT` and
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
SEARCH_RESULTS_FOR_HEADING = 'Search results for "{query}":'
"""The heading of one search's results, where several searches are shown (rewrite, agent)."""
SEARCH_RESULT_TEMPLATE = "[{number}] {title} ({url})\n{text}"
SEARCH_RESULT_WITHOUT_URL_TEMPLATE = "[{number}] {title}\n{text}"
NO_SEARCH_RESULTS = "(nothing found)"
UNTITLED = "(untitled)"

REWRITE_TEMPLATE = (
    "{context}"
    'This person asks: "{query}"\n'
    "The web will be searched before the question is answered. Write up to {count} search queries that would "
    "find what this person in particular needs to know, given what you know about them. Write one query per "
    "line and nothing else."
)
"""`rewrite`: the system model writes the queries searched for a question, from the question and the context."""

AGENT_TEMPLATE = "{context}{instructions}\n\nQuestion: {query}"
"""`agent`: the first message; `instructions` is `AGENT_TOOL_INSTRUCTIONS` or `AGENT_TEXT_INSTRUCTIONS`."""

AGENT_TOOL_INSTRUCTIONS = (
    "Before you answer, you may search the web with the search tool, in up to {rounds} rounds of at most "
    "{queries} searches each. Search for what you need to answer this person well; once you know enough, "
    "write your answer."
)
"""For a model that takes tools (`Backend.takes_tools`)."""

AGENT_TEXT_INSTRUCTIONS = (
    "Before you answer, you may search the web, in up to {rounds} rounds of at most {queries} searches each. "
    "To search, reply with nothing but one line per search, written as\n"
    "SEARCH: what to search for\n"
    "and the results will come back in the next message. Once you know enough, reply with your answer "
    "alone, without any SEARCH line."
)
"""The plain-text protocol, for a model whose chat template takes no tools."""

AGENT_SEARCH_LINE = "SEARCH:"
"""How a line of the plain-text protocol asking for a search starts."""

AGENT_CONTINUE = "You may search again ({left} round(s) left) or write your answer."
AGENT_LAST_CALL = "You have no searches left. Write your answer now."

SEARCH_TOOL_DESCRIPTION = (
    "Search the web. Returns the best results for the query, each with its title, URL and text, numbered so "
    "that they can be cited as [n]."
)
SEARCH_QUERY_DESCRIPTION = "What to search for, as you would type it into a search engine."

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
    "SEARCH_RESULTS_FOR_HEADING": SEARCH_RESULTS_FOR_HEADING,
    "SEARCH_RESULT_TEMPLATE": SEARCH_RESULT_TEMPLATE,
    "SEARCH_RESULT_WITHOUT_URL_TEMPLATE": SEARCH_RESULT_WITHOUT_URL_TEMPLATE,
    "NO_SEARCH_RESULTS": NO_SEARCH_RESULTS,
    "UNTITLED": UNTITLED,
    "REWRITE_TEMPLATE": REWRITE_TEMPLATE,
    "AGENT_TEMPLATE": AGENT_TEMPLATE,
    "AGENT_TOOL_INSTRUCTIONS": AGENT_TOOL_INSTRUCTIONS,
    "AGENT_TEXT_INSTRUCTIONS": AGENT_TEXT_INSTRUCTIONS,
    "AGENT_SEARCH_LINE": AGENT_SEARCH_LINE,
    "AGENT_CONTINUE": AGENT_CONTINUE,
    "AGENT_LAST_CALL": AGENT_LAST_CALL,
    "SEARCH_TOOL_DESCRIPTION": SEARCH_TOOL_DESCRIPTION,
    "SEARCH_QUERY_DESCRIPTION": SEARCH_QUERY_DESCRIPTION,
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


def answer_request(query: str, context: str, search_results: str, max_tokens: int, *, native_search: bool = False) -> Request:
    """The system under test's request: instructions, then the context block, search results and question.
    `native_search`: the model searches by itself (its engine's own web search)."""
    user = ANSWER_TEMPLATE.format(context=_block(context), search_results=_block(search_results), query=query)
    return Request(_system_and_user(user), max_tokens=max_tokens, native_search=native_search)


def _system_and_user(user: str) -> tuple[dict[str, str], ...]:
    return ({"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user})


def rewrite_request(query: str, context: str, count: int, max_tokens: int) -> Request:
    """`rewrite`: ask the system model for up to `count` search queries for `query`, given the context."""
    return Request(_system_and_user(REWRITE_TEMPLATE.format(context=_block(context), query=query, count=count)),
                   max_tokens=max_tokens)


def agent_messages(query: str, context: str, *, tools: bool, rounds: int, queries: int) -> tuple[dict[str, str], ...]:
    """`agent`: the conversation's first messages, for the tool (`tools`) or the plain-text protocol."""
    instructions = (AGENT_TOOL_INSTRUCTIONS if tools else AGENT_TEXT_INSTRUCTIONS).format(rounds=rounds, queries=queries)
    return _system_and_user(AGENT_TEMPLATE.format(context=_block(context), instructions=instructions, query=query))


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
