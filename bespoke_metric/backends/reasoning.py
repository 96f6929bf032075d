"""A model's answer without its reasoning: where the reasoning ends and the answer begins. Pure.

Models write their reasoning first and their answer last (`<think>`, `<thinking>`, `<reasoning>` blocks, a
gpt-oss `final` channel), and the reasoning may quote anything, a cited page or a score line of the response
under evaluation among them. So whatever reads an answer (a judge's parser, a system's answer, the citations
that point into it) reads only what follows the last closed reasoning block; a block that opens and never
closes leaves no answer, a `ParseError`. `answer_region` also cuts at a last `Final Answer:` marker line,
the separator the judge prompts ask for.
"""

from __future__ import annotations

import re

from .base import ParseError

# A reasoning block opens at the start of a line; a tag inside a sentence is a mention (a judge quoting
# a response that contains `<think>`).
_OPEN_TAG = re.compile(r"^[ \t]*<(think|thinking|reasoning)>", re.I | re.M)
_CLOSE_TAG = re.compile(r"</(think|thinking|reasoning)>", re.I)
# gpt-oss (harmony format): the answer follows the `final` channel header; decoded without special
# tokens, the header collapses to `assistantfinal`.
_HARMONY_FINAL = re.compile(r"<\|channel\|>\s*final\s*<\|message\|>|assistantfinal", re.I)
_SPECIAL_TOKEN = re.compile(r"<\|[a-z_]+\|>", re.I)
_FINAL_MARKER = re.compile(
    r"^[ \t>#*_-]*final[ \t]+(?:answer|evaluation|scores?|judge?ments?|output|assessment|verdicts?)"
    r"[ \t*_]*:?[ \t*_]*$",
    re.I | re.M,
)


def answer_start(text: str) -> int:
    """Where the answer begins in `text`: after its last closed reasoning block or final-channel header; 0
    when there is none. What lies before it (a citation inside the reasoning, say) is not the answer."""
    harmony = list(_HARMONY_FINAL.finditer(text))
    start = harmony[-1].end() if harmony else 0
    closes = list(_CLOSE_TAG.finditer(text, start))
    return closes[-1].end() if closes else start


def _after_reasoning(text: str) -> tuple[str, bool]:
    """The text after the last closed reasoning block or final-channel header, and whether one was found.

    Raises ParseError when the text left starts a reasoning block that never closes: the answer is
    missing."""
    start = answer_start(text)
    text = text[start:]
    if _OPEN_TAG.search(text):
        raise ParseError("a reasoning block was opened and never closed, so there is no final answer")
    return text, start > 0


def strip_reasoning(text: str) -> str:
    """A model's answer without its reasoning block (`<think>...</think>`, a gpt-oss analysis channel).

    Raises ParseError when the reasoning never closes (the answer was cut off or never written)."""
    return _SPECIAL_TOKEN.sub("", _after_reasoning(text)[0]).strip()


def answer_region(text: str) -> tuple[str, bool]:
    """The part of a judge output that holds its final answer, and whether a reasoning separator (a
    closed reasoning block, a final channel or a `Final Answer:` line) was found before it.

    Raises ParseError when a reasoning block is opened and never closed: the answer is then missing."""
    text, separated = _after_reasoning(text)
    markers = list(_FINAL_MARKER.finditer(text))
    if markers:
        text, separated = text[markers[-1].end():], True
    return _SPECIAL_TOKEN.sub("", text).strip(), separated
