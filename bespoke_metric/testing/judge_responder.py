"""A deterministic stand-in for an LLM judge, to put behind the test server: it answers the
protocol's three kinds of prompt in the official formats, from what is visible in the prompt.

Scores follow how many words of the user's information need the response repeats; a claim is
conveyed when most of its content words appear in the response; a feedback-accuracy grader prompt gets
"agree" where the evaluator's critique repeats most content words of the user's (`feedback_agrees`).
Crude, but a function of the input, so tests and benchmarks can tell a good response from a bad one and
check the arithmetic end to end.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bespoke_metric.judging.prompts import FEEDBACK_SECTION

from .bodies import messages_of

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by for from has have in is it of on or that the this to with your you".split())
_SECTION = re.compile(r"^# (.+)$", re.MULTILINE)


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if word not in _STOP and len(word) > 2}


def sections(prompt: str) -> dict[str, str]:
    """`# Heading` -> text under it, for the user message of a judge prompt."""
    parts = _SECTION.split(prompt)
    return {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def response_text(prompt: str) -> str:
    match = re.search(r"<response[^>]*>\n?(.*?)\n?</response[^>]*>", prompt, re.DOTALL)
    return match.group(1) if match else ""


def conveys(claim: str, response: str) -> bool:
    """The stand-in judge's claim verdict: at least 60% of the claim's content words are in the response."""
    words = _words(claim)
    return bool(words) and len(words & _words(response)) / len(words) >= 0.6


def score_for(need: str, response: str) -> int:
    """1-5 from the share of the information need's words that the response repeats."""
    words = _words(need)
    share = len(words & _words(response)) / len(words) if words else 0.0
    return 1 + min(4, int(share * 5))


def feedback_agrees(user_feedback: str, evaluator_feedback: str) -> bool:
    """The stand-in grader's verdict: the evaluator repeats at least half the user's content words."""
    words = _words(user_feedback)
    return bool(words) and len(words & _words(evaluator_feedback)) / len(words) >= 0.5


def _grade_feedback(section: str) -> str:
    lines = ["The critiques are compared dimension by dimension.", "Verdicts:"]
    for block in re.split(r"^## ", section, flags=re.MULTILINE)[1:]:
        label, _, body = block.partition("\n")
        user = re.search(r"^User's critique: (.*)$", body, re.MULTILINE).group(1)
        evaluator = re.search(r"^Evaluator's critique: (.*)$", body, re.MULTILINE).group(1)
        lines.append(f"{label.strip()}: {'agree' if feedback_agrees(user, evaluator) else 'disagree'}")
    return "\n".join(lines)


def judge_answer(body: dict[str, Any]) -> str:
    """The answer text for one request body (chat completions or Responses API)."""
    prompt = messages_of(body)[-1]["content"]
    found = sections(prompt)
    if FEEDBACK_SECTION in found:
        return _grade_feedback(found[FEEDBACK_SECTION])
    response = response_text(prompt)
    if any(title.startswith("Claims (") for title in found):
        listed = next(v for t, v in found.items() if t.startswith("Claims ("))
        claims = [match.group(1) for match in re.finditer(r"^\d+\.\s*(.+)$", listed, re.MULTILINE)]
        return json.dumps({"verdicts": [{"claim": i + 1, "verdict": conveys(c, response)} for i, c in enumerate(claims)]})
    if "Claim" in found:
        verdict = conveys(found["Claim"].split("\n\n")[0], response)
        return f"The answer is checked against the claim.\nAnswer: {verdict}"
    score = score_for(found.get("The user's information need", found.get("The user's question", "")), response)
    lines = ["Reasoning:", "The answer is compared with the information need.", "Final Answer:"]
    for label in ("Need Alignment", "Content Depth", "Tone", "Explanation Style"):
        lines += [f"{label} Score: {score}", f"{label} Feedback: Scored {score} from the need's words it covers."]
    return "\n".join(lines)


KNOWN_QUALITY = ("close", "noisy", "long")
"""The models `known_quality_judges` answers as, each of a known quality."""


def _draw(*parts: object) -> float:
    """A number in [0, 1) fixed by `parts`: the stand-ins' noise, the same on every run."""
    import hashlib

    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16) / 2**32


def known_quality_judges(meta_test: list[dict[str, Any]]) -> Any:
    """A responder answering judge prompts about the meta-test responses (`meta_test` rows) per model asked,
    each of a known quality: `close` gives the human score (one point off on a twentieth of them), `noisy`
    moves it by up to two points, anew on every call (so its repeats differ), `long` adds one point to a
    response longer than the median (in words, as the table's length bias counts them). Its answers are the
    protocol's lines (`Need Alignment Score: n` ...); a feedback-grader prompt gets `judge_answer`'s."""
    from bespoke_dataset.vocabulary import DIMENSIONS
    from bespoke_metric.analysis.judges_table import words

    humans = {row["response"].strip(): row for row in meta_test}
    lengths = sorted(words(text) for text in humans)
    median = (lengths[(len(lengths) - 1) // 2] + lengths[len(lengths) // 2]) / 2
    seen: dict[tuple[str, str], int] = {}
    labels = dict(zip(DIMENSIONS, ("Need Alignment", "Content Depth", "Tone", "Explanation Style"), strict=True))

    def respond(body: dict[str, Any]) -> str:
        prompt = messages_of(body)[-1]["content"]
        if FEEDBACK_SECTION in sections(prompt):
            return judge_answer(body)
        response = re.search(r"<response>\n(.*)\n</response>", prompt, re.S).group(1).strip()  # type: ignore[union-attr]
        row, model = humans[response], body["model"]
        count = seen[model, response] = seen.get((model, response), 0) + 1
        lines = ["Reasoning: compared with the examples.", "Final Answer:"]
        for dimension in DIMENSIONS:
            score = int(row[dimension]["score"])
            if model == "close" and _draw(response, dimension) < 0.05:
                score += 1 if score < 5 else -1
            elif model == "noisy":
                score += round(4 * _draw(response, dimension, count) - 2)
            elif model == "long" and words(response) > median:
                score += 1
            lines += [f"{labels[dimension]} Score: {min(5, max(1, score))}", f"{labels[dimension]} Feedback: fine."]
        return "\n".join(lines)

    return respond
