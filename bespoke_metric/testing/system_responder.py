"""A deterministic stand-in for the system under test and its profiler, to put behind the test server
beside the judge stand-in: one server then answers every prompt of `bespoke generate`, `run`, `score`,
`meta-eval` and `build` (`bespoke stand-in` serves it).

    with serve(answer_any) as server:   # bespoke_metric.testing.server
        ...  # OPENAI_BASE_URL=server.base_url: openai: systems and judges both answer

An answer repeats the words of what the system was told about the user (its context block), so a
richer context earns a higher score from `judge_responder`, and the oracle context the highest; a
profile repeats the start of the activity log it was asked about. A `rewrite` gets the question and the
question with the first words of the context as its queries; an `agent` searches for the question once
(with the `search` tool when it is offered, else a `SEARCH:` line) and then answers citing `[1]`.
Crude, but a function of the input.
"""

from __future__ import annotations

import os
from typing import Any

from bespoke_metric.systems.prompts import (
    AGENT_SEARCH_LINE,
    AGENT_TEMPLATE,
    AGENT_TEXT_INSTRUCTIONS,
    AGENT_TOOL_INSTRUCTIONS,
    EXPANSION_TEMPLATES,
    PROFILER_SYSTEM_PROMPT,
    REWRITE_TEMPLATE,
    SYSTEM_PROMPT,
)

from .authoring_responder import author_answer
from .bodies import messages_of
from .server import tool_call

QUESTION_MARK = "Question: "
"""Where the question starts in the system's user message (`ANSWER_TEMPLATE`)."""
LOG_END = "\n\n"
"""The activity log of a profiler prompt ends at its first blank line."""
WORDS_KEPT = 60


def _first_words(text: str, count: int = WORDS_KEPT) -> str:
    return " ".join(text.split()[:count])


def _answer(user: str) -> str:
    context, _, query = user.rpartition(QUESTION_MARK)
    # the context block's first line is its heading; what follows is what the system knows of the user
    known = _first_words(context.strip().partition("\n")[2])
    lines = [f"Here is an answer to your question: {query.strip()}"]
    if known:
        lines.append(f"Going by what I know of you: {known}")
    lines.append("In short, compare the options that fit your situation, start with the one that matches your "
                 "constraints, and check the details before you decide.")
    return "\n\n".join(lines)


def _profile(user: str) -> str:
    log = user.partition(":\n")[2].partition(LOG_END)[0]
    return f"This person's activity shows: {_first_words(log)}"


REWRITE_ASKS = REWRITE_TEMPLATE.partition("{count}")[0].rpartition("\n")[2]
"""The words of a rewrite request before its count: "The web will be searched ... Write up to "."""
REWRITE_QUESTION = REWRITE_TEMPLATE.partition("{query}")[0].partition("}")[2]
"""Where the question starts in a rewrite request: 'This person asks: "'."""
AGENT_QUESTION = AGENT_TEMPLATE.partition("{query}")[0].rpartition("}")[2]
"""Where the question starts in an agent's first message."""
AGENT_ASKS = os.path.commonprefix([AGENT_TOOL_INSTRUCTIONS, AGENT_TEXT_INSTRUCTIONS])
"""The words both agent protocols start their instructions with."""


def _rewrite(user: str) -> str:
    before, _, after = user.partition(REWRITE_QUESTION)
    query = after.partition('"\n')[0]
    context = before.strip().partition("\n")[2]
    return "\n".join(filter(None, [query, f"{query} {_first_words(context, 6)}".strip() if context else ""]))


def _agent(body: dict[str, Any], first: str, messages: list[dict[str, Any]]) -> str | dict[str, Any]:
    question = first.rpartition(AGENT_QUESTION)[2].strip()
    searched = any(m["role"] == "tool" or (m["role"] == "assistant" and AGENT_SEARCH_LINE in str(m.get("content") or ""))
                   for m in messages)
    if not searched:
        return tool_call(body, "search", {"query": question}) if body.get("tools") else f"{AGENT_SEARCH_LINE} {question}"
    return _answer(f"{QUESTION_MARK}{question}") + " [1]"


def system_answer(body: dict[str, Any]) -> str | dict[str, Any] | None:
    """The answer to a system-under-test (answer, rewrite, agent turn), profiler or query-expansion request;
    None for any other request (a judge's). An agent's search by tool is a whole chat-completions body."""
    messages = messages_of(body)
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = messages[-1]["content"] if messages else ""
    first = next((str(m["content"]) for m in messages if m["role"] == "user"), "")
    if system == SYSTEM_PROMPT and REWRITE_ASKS in user:
        return _rewrite(user)
    if system == SYSTEM_PROMPT and AGENT_ASKS in first:
        return _agent(body, first, messages)
    if system == SYSTEM_PROMPT:
        return _answer(user)
    if system == PROFILER_SYSTEM_PROMPT:
        return _profile(user)
    for template in EXPANSION_TEMPLATES.values():
        if user.startswith(template.partition("{query}")[0]):
            return f"They want practical advice.\nSearch terms: {_first_words(user, 20)}"
    return None


def answer_any(body: dict[str, Any]) -> str | dict[str, Any]:
    """A system's answer to a system's request (`system_answer`), a rubric writer's or claim extractor's to
    theirs and a judge's to a judge's (`author_answer`, which leaves judges to `judge_answer`)."""
    answer = system_answer(body)
    return author_answer(body) if answer is None else answer


if __name__ == "__main__":
    import sys

    sys.exit("this module is a responder, not a server: `bespoke stand-in` serves it")
