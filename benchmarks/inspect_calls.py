"""An inspect task that makes a given list of chat calls, one sample per call, each with its own output cap: what
`rate_limits.py` runs to put inspect_ai's adaptive connections against the same limit as `bespoke score`, with the
same calls (the judge's prompts, as `bespoke score` sends them, written one JSON object a line:
`{"messages": [{role, content}], "max_tokens": N}`).

    inspect eval benchmarks/inspect_calls.py@calls -T requests=calls.jsonl --model openai-api/bench/gpt-4.1
"""

from __future__ import annotations

import json
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageSystem, ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver

MESSAGES: dict[str, type[ChatMessage]] = {"system": ChatMessageSystem, "user": ChatMessageUser,
                                          "assistant": ChatMessageAssistant}  # type: ignore[dict-item]


@solver
def capped_generate() -> Solver:
    """The model's answer, asked with the sample's own output cap."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        return await generate(state, max_tokens=int(state.metadata["max_tokens"]))

    return solve


@task
def calls(requests: str) -> Task:
    """One sample per line of `requests`; no scorer: what is measured is the calls."""
    samples = []
    for number, line in enumerate(Path(requests).read_text(encoding="utf-8").splitlines(), 1):
        call = json.loads(line)
        messages = [MESSAGES[message["role"]](content=message["content"]) for message in call["messages"]]
        samples.append(Sample(input=messages, id=number, metadata={"max_tokens": call["max_tokens"]}))
    return Task(dataset=samples, solver=capped_generate())
