"""A deterministic stand-in for the system under test and its profiler, to put behind the test server
beside the judge stand-in: one server then answers every prompt of `bespoke generate`, `run`, `score`
and `meta-eval`.

    with serve(answer_any) as server:   # bespoke_metric.testing.server
        ...  # OPENAI_BASE_URL=server.base_url: openai: systems and judges both answer

An answer repeats the words of what the system was told about the user (its context block), so a
richer context earns a higher score from `judge_responder`, and the oracle context the highest; a
profile repeats the start of the activity log it was asked about. Crude, but a function of the input.
"""

from __future__ import annotations

from typing import Any

from bespoke_metric.systems.prompts import EXPANSION_TEMPLATES, PROFILER_SYSTEM_PROMPT, SYSTEM_PROMPT

from .judge_responder import judge_answer
from .server import messages_of

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


def system_answer(body: dict[str, Any]) -> str | None:
    """The answer to a system-under-test, profiler or query-expansion request; None for any other
    request (a judge's)."""
    messages = messages_of(body)
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = messages[-1]["content"] if messages else ""
    if system == SYSTEM_PROMPT:
        return _answer(user)
    if system == PROFILER_SYSTEM_PROMPT:
        return _profile(user)
    for template in EXPANSION_TEMPLATES.values():
        if user.startswith(template.partition("{query}")[0]):
            return f"They want practical advice.\nSearch terms: {_first_words(user, 20)}"
    return None


def answer_any(body: dict[str, Any]) -> str:
    """A system's answer to a system's request (`system_answer`), a judge's to a judge's (`judge_answer`)."""
    answer = system_answer(body)
    return judge_answer(body) if answer is None else answer
