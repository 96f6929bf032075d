"""A deterministic stand-in for the model `bespoke build` asks, to put behind the test server.

A rubric-writing prompt gets a rubric with one section per dimension, made of the user's information need
and the first comment the user wrote on that dimension; a claim-extraction prompt gets the reference
answer's sentences as a JSON list. Anything else is answered as a judge (`judge_responder.judge_answer`), so
one server can build a release and then score against it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bespoke_dataset.vocabulary import DIMENSION_LABELS, DIMENSIONS
from bespoke_metric.judging.prompts import REFERENCE_SECTION, RUBRIC_SECTION

from .bodies import messages_of
from .judge_responder import judge_answer, response_text, sections

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def stub_rubric(need: str, examples: str) -> str:
    """The stand-in's rubric for a query: per dimension, the need and the user's first comment on it."""
    lines = []
    for dim in DIMENSIONS:
        label = DIMENSION_LABELS[dim]
        comment = re.search(rf"^{label} Feedback: (.*)$", examples, re.MULTILINE)
        lines += [f"{label}:", f"Serve this need: {need}", f"This user said: {comment.group(1) if comment else 'nothing'}"]
    return "\n".join(lines)


def stub_claims(response: str) -> list[str]:
    """The stand-in's claims of a reference answer: its sentences."""
    return [sentence.strip() for sentence in _SENTENCE.split(response.strip()) if sentence.strip()]


def author_answer(body: dict[str, Any]) -> str:
    """The answer text for one request body (chat completions or Responses API)."""
    prompt = messages_of(body)[-1]["content"]
    found = sections(prompt)
    if REFERENCE_SECTION in found:
        return json.dumps(stub_claims(response_text(prompt)))
    if RUBRIC_SECTION in found:
        return stub_rubric(found["The user's information need"], found[RUBRIC_SECTION])
    return judge_answer(body)
