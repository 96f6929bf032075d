"""`Prompter`: one query's messages exactly as `bespoke generate` sends them, for every context, the profile
ones written a sample at a time with generate's guard, store and budget."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bespoke_dataset.errors import UserError
from bespoke_metric import Prompter, QueryMessages
from bespoke_metric.backends.base import Request
from bespoke_metric.systems import GenerationSettings, generate
from bespoke_metric.systems.prompts import PROFILER_SYSTEM_PROMPT, SYSTEM_PROMPT
from bespoke_metric.testing.doubles import ScriptedBackend

OPTIONS = {"budget": 300, "top_k": 3, "retriever": "bm25", "profile_max_tokens": 40}


def profile_of(messages: list[dict[str, str]]) -> str:
    """The scripted profiler's profile: a function of its prompt, so both paths write the same one."""
    return f"Profile from {len(messages[-1]['content'])} characters of log: likes trains."


def scripted(request: Request) -> str:
    if request.messages[0]["content"] == PROFILER_SYSTEM_PROMPT:
        return profile_of(list(request.messages))
    return "An answer."


@pytest.mark.parametrize("context", ["none", "oracle", "history", "selected-history", "selected-profile", "profile"])
def test_the_messages_are_those_generate_sends(context: str, tmp_path: Path) -> None:
    system = ScriptedBackend(scripted)
    generate(system, tmp_path / "preds.jsonl", GenerationSettings(context=context, **OPTIONS), source="sample", progress=False)
    sent = {}
    for request in system.requests:
        if request.messages[0]["content"] == SYSTEM_PROMPT:
            sent[request.messages[1]["content"].rsplit("Question: ", 1)[1]] = [dict(m) for m in request.messages]

    async def profiler(messages: list[dict[str, str]], max_tokens: int) -> str:
        assert max_tokens == OPTIONS["profile_max_tokens"]
        return profile_of(messages)

    prompter = Prompter.load("sample", context, model="openai:gpt-4o", **OPTIONS)
    assert prompter.needs_profiler == (context in ("profile", "selected-profile"))

    async def every() -> list[QueryMessages]:
        return await asyncio.gather(*(prompter.messages(row, profiler=profiler) for row in prompter.rows))

    asked = asyncio.run(every())
    assert len(asked) == len(sent) == 15
    for row, messages in zip(prompter.rows, asked, strict=True):
        assert messages.messages == sent[row["query"]], row["query_id"]
        assert (messages.user, messages.query_id) == (str(row["user"]), str(row["query_id"]))
        assert (messages.context_block == "") == (context == "none")
        assert messages.context_block in messages.messages[1]["content"]
    if context in ("none", "oracle", "history", "selected-history"):
        assert [prompter.messages_now(row) for row in prompter.rows] == asked
    else:
        with pytest.raises(UserError, match=f"--context {context} writes a profile"):
            prompter.messages_now(prompter.rows[0])


def test_a_degenerate_profile_is_not_given_and_is_marked() -> None:
    prompter = Prompter.load("sample", "selected-profile", **OPTIONS)
    calls = []

    async def looping(messages: list[dict[str, str]], max_tokens: int) -> str:
        calls.append(1)
        return "the same line again " * 60

    asked = asyncio.run(prompter.messages(prompter.rows[0], profiler=looping))
    assert asked.context_block == "" and asked.context_tokens == 0
    assert asked.degenerate is not None and asked.degenerate["profile"]["guard"] == "repetition"
    again = asyncio.run(prompter.messages(prompter.rows[0], profiler=looping))  # written once: from the store
    assert again == asked and len(calls) == 1


def test_a_profile_that_cannot_be_written_names_the_query_and_unknown_options_are_refused() -> None:
    prompter = Prompter.load("sample", "query-profile", **OPTIONS)

    async def failing(messages: list[dict[str, str]], max_tokens: int) -> str:
        raise ConnectionError("the profiler is down")

    row = prompter.rows[1]
    with pytest.raises(UserError, match=f"{row['user']}/{row['query_id']}: profile notes failed: ConnectionError"):
        asyncio.run(prompter.messages(row, profiler=failing))
    with pytest.raises(UserError, match="search_policy: not among the options of a prompter"):
        Prompter.load("sample", "none", search_policy="agent")
