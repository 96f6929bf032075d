"""Reading judge outputs: only the final answer counts, never the reasoning before it.

Judges write their reasoning first and their answer last, and the reasoning may quote the response
under evaluation, which can itself contain a line such as `Need Alignment Score: 5`. So every parser
here first cuts the output down to its *answer region* (`backends.reasoning.answer_region`): the text after the last
closed reasoning block (`<think>`, `<thinking>`, `<reasoning>`, a gpt-oss `final` channel) and after the
last `Final Answer:` marker line. Only that region is read.

Inside it, the personalization parser accepts the variants real models produce (markdown emphasis,
headings, bullets, `4/5`, `4.0`, case and spacing, JSON objects, fenced or bare) and rejects what is
ambiguous: a missing dimension, a score outside 1-5, a non-integer score, `4 or 5`, `3-4`, and two
different scores for one dimension. The last rule is what keeps a quoted score out of the result when
a judge forgets the separator: the quote and the real answer disagree, so the answer is refused (and
re-asked by the scheduler) instead of silently taking either. The one case no parser can catch is a
quoted score line for a dimension the judge then never states itself, with no separator between
reasoning and answer; the prompts ask for the `Final Answer:` marker, and structured (JSON) mode avoids
the question entirely.

All functions are pure. Failures raise `ParseError` whose `reason` is short enough to show the judge
in a repair turn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from bespoke_dataset.vocabulary import DIMENSION_LABELS, DIMENSIONS
from bespoke_metric.backends.base import ParseError  # raised by every parser; the scheduler repairs on it
from bespoke_metric.backends.reasoning import answer_region


@dataclass(frozen=True)
class Judgment:
    """A parsed personalization judgment: an integer 1-5 and non-empty feedback for every dimension."""

    scores: dict[str, int]
    feedback: dict[str, str]


# --- JSON ------------------------------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*(?:json)?\s*(.*?)```", re.I | re.S)
_LINE_START_BRACE = re.compile(r"^[ \t]*[{\[]", re.M)


def find_json(region: str) -> Any | None:
    """The last top-level JSON object or array in `region`: a fenced block (```json ... ```) or one that
    starts a line. Values nested in another candidate (the lines of a pretty-printed list) do not count.
    None when there is none."""
    decoder = json.JSONDecoder()
    found: list[tuple[int, int, Any]] = []  # (start, end, value)
    for fence in _FENCE.finditer(region):
        try:
            found.append((fence.start(), fence.end(), json.loads(fence.group(1))))
        except json.JSONDecodeError:
            continue
    for start in _LINE_START_BRACE.finditer(region):
        offset = start.end() - 1
        try:
            value, end = decoder.raw_decode(region, offset)
        except json.JSONDecodeError:
            continue
        found.append((offset, end, value))
    outer = [(start, value) for start, end, value in found if isinstance(value, (dict, list))
             and not any(s <= start and end <= e and (s, e) != (start, end) for s, e, _ in found)]
    return max(outer, key=lambda item: item[0])[1] if outer else None


def _norm_key(key: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


def _norm_keys(obj: dict[str, Any]) -> dict[str, Any]:
    return {_norm_key(str(k)): v for k, v in obj.items()}


def _json_expected(region: str) -> None:
    """Raise for output that is plainly meant as JSON but does not decode (e.g. cut off at max_tokens)."""
    if region.lstrip().startswith(("{", "```")):
        raise ParseError("the answer looks like JSON but is not a complete, valid JSON object")


# --- scores ----------------------------------------------------------------------------------------

_SCORE = re.compile(
    r"^[\[(]?\s*(?P<num>[+-]?\d+(?:\.\d+)?)\s*(?:(?:/|out\s+of)\s*(?P<den>\d+(?:\.\d+)?))?\s*[\])]?(?P<rest>.*)$",
    re.I | re.S,
)
# After the number: another number, alone or after `-`, `to`, `or`, ... means a range or a choice.
_SECOND_NUMBER = re.compile(r"^\s*(?:(?:-|–|—|~|to|or|and|/|,|\|)\s*)?\d", re.I)


def parse_score(value: Any, label: str) -> int:
    """An integer 1-5 from a JSON value or the text after `... Score:`. Integral floats (`4.0`) and
    `4/5` are accepted; `4.5`, `4 or 5`, `3-4`, `4/10` and anything outside 1-5 are not."""
    if isinstance(value, bool) or value is None:
        raise ParseError(f"{label} is {json.dumps(value)}, not a score from 1 to 5")
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        cleaned = re.sub(r"[*_`]", "", str(value)).strip()
        match = _SCORE.match(cleaned)
        if not cleaned or not match:
            raise ParseError(f"{label} {str(value).strip()!r} is not a score from 1 to 5")
        if match.group("den") is not None and float(match.group("den")) != 5:
            raise ParseError(f"{label} {cleaned!r} is not on the 1-5 scale")
        if _SECOND_NUMBER.match(match.group("rest")):
            raise ParseError(f"{label} {cleaned!r} is ambiguous: give one integer from 1 to 5")
        number = float(match.group("num"))
    if not number.is_integer():
        raise ParseError(f"{label} {number:g} is not an integer")
    if not 1 <= number <= 5:
        raise ParseError(f"{label} {number:g} is outside 1-5")
    return int(number)


# --- personalization: line format ----------------------------------------------------------------

_DIM_NAME = r"(?P<dim>need[ \t_-]*alignment|content[ \t_-]*depth|tone|explanation[ \t_-]*style)"
_PREFIX = r"^[ \t]*(?:(?:[-*+•]|\d+[.)])[ \t]+|\#{1,6}[ \t]*)?[*_]{0,3}[ \t]*"
_SEP = r"[ \t]*[*_]{0,3}[ \t]*[:=][ \t]*[*_]{0,3}"
# An optional parenthesis after the label, as in `Need Alignment Score (1-5): 4`.
_FIELD = re.compile(
    _PREFIX + _DIM_NAME + r"[ \t_-]*(?P<kind>score|feedback)(?:[ \t]*\([^)\n]*\))?" + _SEP + r"(?P<value>.*)$", re.I
)
# Section style: a heading that names a dimension, then bare `Score:` / `Feedback:` lines under it.
_SECTION = re.compile(_PREFIX + _DIM_NAME + r"[ \t]*[*_]{0,3}[ \t]*:?[ \t]*[*_]{0,3}[ \t]*$", re.I)
_BARE_FIELD = re.compile(_PREFIX + r"(?P<kind>score|feedback)" + _SEP + r"(?P<value>.*)$", re.I)


def _dimension(name: str) -> str:
    return re.sub(r"[ \t_-]+", "_", name.lower())


def _strip_emphasis(text: str) -> str:
    return text.strip().strip("*_").strip()


@dataclass
class _Field:
    dim: str
    kind: str  # "score" | "feedback"
    lines: list[str]
    """The text after the label, then every following line up to the next field or heading."""

    def score_text(self) -> str:
        # A score may sit on the line after its label (`**Need Alignment Score:**` then `4`).
        return next((_strip_emphasis(line) for line in self.lines if line.strip()), "")

    def feedback_text(self) -> str:
        return _strip_emphasis("\n".join(self.lines))


def _fields(region: str) -> list[_Field]:
    """Score and feedback fields in order, each with the lines that follow it up to the next field or
    dimension heading (feedback may run over several lines)."""
    fields: list[_Field] = []
    section: str | None = None
    current: _Field | None = None
    for line in region.splitlines():
        match = _FIELD.match(line)
        if match:
            section = None
            current = _Field(_dimension(match.group("dim")), match.group("kind").lower(), [match.group("value")])
            fields.append(current)
            continue
        match = _SECTION.match(line)
        if match:
            section, current = _dimension(match.group("dim")), None
            continue
        match = _BARE_FIELD.match(line)
        if match and section is not None:
            current = _Field(section, match.group("kind").lower(), [match.group("value")])
            fields.append(current)
            continue
        if current is not None:
            current.lines.append(line)
    return fields


def _from_lines(region: str, separated: bool) -> Judgment:
    fields = _fields(region)
    if not fields:
        _json_expected(region)
        raise ParseError("no score lines found (expected e.g. 'Need Alignment Score: 4')")
    scores: dict[str, int] = {}
    feedback: dict[str, str] = {}
    for dim in DIMENSIONS:
        label = DIMENSION_LABELS[dim]
        values = [parse_score(f.score_text(), f"{label} Score")
                  for f in fields if f.dim == dim and f.kind == "score"]
        if not values:
            raise ParseError(f"the final answer has no '{label} Score' line")
        if len(set(values)) > 1:
            hint = "" if separated else " (end the reasoning with a 'Final Answer:' line before the scores)"
            raise ParseError(f"conflicting {label} scores {', '.join(map(str, values))} in the final answer{hint}")
        texts = [f.feedback_text() for f in fields if f.dim == dim and f.kind == "feedback"]
        if not texts or not texts[-1]:
            raise ParseError(f"the final answer has no '{label} Feedback' text")
        scores[dim], feedback[dim] = values[0], texts[-1]
    return Judgment(scores, feedback)


# --- personalization: JSON -----------------------------------------------------------------------


def _from_json(obj: dict[str, Any]) -> Judgment:
    keys = _norm_keys(obj)
    scores: dict[str, int] = {}
    feedback: dict[str, str] = {}
    for dim in DIMENSIONS:
        label = DIMENSION_LABELS[dim]
        entry = keys.get(dim)
        if isinstance(entry, dict):
            entry = _norm_keys(entry)
            raw_score, raw_feedback = entry.get("score"), entry.get("feedback")
        else:  # flat keys: {"need_alignment_score": 4, "need_alignment_feedback": "..."}
            raw_score = keys.get(f"{dim}_score", entry)
            raw_feedback = keys.get(f"{dim}_feedback")
        if raw_score is None:
            raise ParseError(f"the JSON answer has no {label} score")
        scores[dim] = parse_score(raw_score, f"{label} score")
        if not isinstance(raw_feedback, str) or not raw_feedback.strip():
            raise ParseError(f"the JSON answer has no {label} feedback")
        feedback[dim] = raw_feedback.strip()
    return Judgment(scores, feedback)


def _mentions_dimension(obj: dict[str, Any]) -> bool:
    return any(key.startswith(dim) for key in _norm_keys(obj) for dim in DIMENSIONS)


def parse_personalization(text: str) -> Judgment:
    """Read the four scores and feedbacks from a judge output, in line format or as JSON.

    Only the answer region is read (see the module docstring). Raises ParseError on anything
    missing, out of range or ambiguous."""
    region, separated = answer_region(text)
    obj = find_json(region)
    if isinstance(obj, dict) and _mentions_dimension(obj):
        return _from_json(obj)
    return _from_lines(region, separated)


# --- claim verdicts --------------------------------------------------------------------------------

_POSITIVE = {"true", "yes"}
_NEGATIVE = {"false", "no"}
_NEGATION = {"not", "neither", "nor", "either"}
_ANSWER_LINE = re.compile(
    r"^[ \t>#*_-]*(?:final[ \t]+)?(?:answer|verdict|conveyed|judge?ment|decision)[ \t*_]*[:=][ \t]*(?P<value>.+)$",
    re.I | re.M,
)
_BARE_VERDICT = re.compile(r"^\W*(?:true|false|yes|no)\W*$", re.I)


def parse_verdict_word(value: Any) -> bool:
    """True for `true`/`yes`, False for `false`/`no`, in any case, emphasis or punctuation, possibly
    followed by a justification (`No, it does not say so`). ParseError when the answer holds both
    (`yes and no`), neither, or a negated verdict that does not lead (`not true`)."""
    if isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise ParseError(f"verdict {json.dumps(value)} is not true or false")
    words = re.findall(r"[a-z]+", value.lower())
    positive, negative = bool(_POSITIVE.intersection(words)), bool(_NEGATIVE.intersection(words))
    leads = bool(words) and words[0] in _POSITIVE | _NEGATIVE
    if positive == negative or (not leads and _NEGATION.intersection(words)):
        raise ParseError(f"verdict {value.strip()[:80]!r} is not clearly true or false")
    return positive


def parse_claim_verdict(text: str) -> bool:
    """Whether the judge says the response conveys the claim.

    Reads a JSON `{"verdict": ...}`; else the last line of the answer region when it is a bare verdict
    (`True`, `**No.**`) or when no line is labelled; else the last `Answer:` / `Verdict:` line (so a
    justification may follow the answer, and a quoted `Answer:` line in the reasoning is overruled by
    a bare final verdict). That answer must hold exactly one of true/yes or false/no."""
    region, _ = answer_region(text)
    obj = find_json(region)
    if isinstance(obj, dict) and "verdict" in _norm_keys(obj):
        return parse_verdict_word(_norm_keys(obj)["verdict"])
    lines = [line for line in region.splitlines() if line.strip()]
    if not lines:
        raise ParseError("the answer is empty: expected 'Answer: True' or 'Answer: False'")
    labelled = list(_ANSWER_LINE.finditer(region))
    if _BARE_VERDICT.match(lines[-1]) or not labelled:
        return parse_verdict_word(lines[-1])
    return parse_verdict_word(labelled[-1].group("value"))


def parse_batched_recall(text: str, n_claims: int) -> list[bool]:
    """One verdict per claim, in claim order, from a JSON answer
    `{"verdicts": [{"claim": 1, "verdict": true}, ...]}` (a plain list of booleans also works).

    Raises ParseError when the count differs from `n_claims`, a claim number is missing or repeated,
    or a verdict is unclear."""
    region, _ = answer_region(text)
    obj = find_json(region)
    if isinstance(obj, dict):
        obj = _norm_keys(obj).get("verdicts")
    if not isinstance(obj, list):
        raise ParseError('expected a JSON object {"verdicts": [...]} with one verdict per claim')
    if len(obj) != n_claims:
        raise ParseError(f"expected {n_claims} verdicts, got {len(obj)}")
    if not all(isinstance(entry, dict) for entry in obj):
        return [parse_verdict_word(entry) for entry in obj]
    by_number: dict[int, bool] = {}
    for entry in obj:
        entry = _norm_keys(entry)
        number = entry.get("claim")
        if isinstance(number, str) and number.strip().isdigit():
            number = int(number)
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= n_claims:
            raise ParseError(f"claim number {json.dumps(number)} is not one of 1..{n_claims}")
        if number in by_number:
            raise ParseError(f"claim {number} has more than one verdict")
        by_number[number] = parse_verdict_word(entry.get("verdict"))
    return [by_number[number] for number in range(1, n_claims + 1)]
