"""The BESPOKE judging protocol: the prompts a judge receives and the answers it must give.

Our own wording of the paper's protocol (docs/protocol.md says what the judge is asked). Three kinds of request:

- `personalization_request`: the four 1-5 scores with feedback for one response. The judge sees the
  query, the user's gold information need, the personalized rubric and the first `max_shots`
  response-judgment pairs of that query as calibration examples; never the user's history.
- `claim_request`: one true/false question per gold claim (the paper's recall protocol).
- `batched_recall_request`: every claim of a query in one structured call (cheaper).

Every request puts what is shared first and what varies last, so engines with prefix caching reuse
the work: the personalization prompt ends with the response to score (one prefix per query, shared
by all systems' responses), the claim prompt ends with the claim (one prefix per response, shared by
all its claims). `repair_request` re-asks a judge whose answer could not be parsed.

A structured request carries its JSON schema (`Request.json_schema`); how an engine holds the answer to
it (`GRAMMAR`, `JSON_SCHEMA`, `bounded_schema`) is `bespoke_metric.backends.schema`'s, re-exported here.

The prompt texts are templates in `bespoke_metric.judging.prompts` (where `PROTOCOL_VERSION` is derived from
them); this module only fills them. Parsers live in `bespoke_metric.judging.parsing` and are re-exported here.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from bespoke_dataset.vocabulary import DIMENSION_LABELS, DIMENSIONS
from bespoke_metric.backends.base import Request
from bespoke_metric.backends.schema import GRAMMAR, JSON_SCHEMA, REASONING_SHARE, bounded_schema, skeleton_chars

from . import prompts
from .parsing import (
    Judgment,
    ParseError,
    parse_batched_recall,
    parse_claim_verdict,
    parse_personalization,
)
from .prompts import PROTOCOL_VERSION

RECALL_MODES: tuple[str, ...] = ("per-claim", "batched", "none")
"""How claim recall is judged: one call per gold claim (the paper's protocol), one structured call for all
claims of a query, or not at all (meta-evaluation compares only the four dimensions)."""

__all__ = [
    "PROTOCOL_VERSION",
    "GRAMMAR",
    "JSON_SCHEMA",
    "REASONING_SHARE",
    "bounded_schema",
    "skeleton_chars",
    "DIMENSION_LABELS",
    "PERSONALIZATION_SCHEMA",
    "CLAIM_SCHEMA",
    "batched_recall_schema",
    "personalization_request",
    "claim_request",
    "batched_recall_request",
    "repair_request",
    "Judgment",
    "ParseError",
    "parse_personalization",
    "parse_claim_verdict",
    "parse_batched_recall",
]


# --- JSON schemas (structured output) ------------------------------------------------------------

_SCORE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        # An enum rather than minimum/maximum: every guided-decoding engine and OpenAI's strict mode
        # support it.
        "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
        "feedback": {"type": "string"},
    },
    "required": ["score", "feedback"],
    "additionalProperties": False,
}

PERSONALIZATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, **{dim: _SCORE_SCHEMA for dim in DIMENSIONS}},
    "required": ["reasoning", *DIMENSIONS],
    "additionalProperties": False,
}
"""`{"reasoning": str, "need_alignment": {"score": 1..5, "feedback": str}, ...}`; reasoning comes first so
that a constrained judge still thinks before it scores."""

CLAIM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "verdict": {"type": "boolean"}},
    "required": ["reasoning", "verdict"],
    "additionalProperties": False,
}
"""`{"reasoning": str, "verdict": bool}` for one claim."""


def batched_recall_schema(n_claims: int) -> dict[str, Any]:
    """`{"verdicts": [{"claim": 1, "verdict": bool}, ...]}` with exactly one entry per claim."""
    entry = {
        "type": "object",
        "properties": {
            "claim": {"type": "integer", "enum": list(range(1, n_claims + 1))},
            "verdict": {"type": "boolean"},
        },
        "required": ["claim", "verdict"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"verdicts": {"type": "array", "items": entry, "minItems": n_claims, "maxItems": n_claims}},
        "required": ["verdicts"],
        "additionalProperties": False,
    }


# --- filling the templates ------------------------------------------------------------------------


def delimit(tag: str, text: str) -> str:
    """`text` between `<tag>` lines, with a numbered tag when the text itself contains the closing tag,
    so that no response can end its own block early."""
    name, n = tag, 1
    while f"</{name}>".lower() in text.lower():
        n += 1
        name = f"{tag}-{n}"
    return f"<{name}>\n{text.strip()}\n</{name}>"


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _judgment_lines(scores: Mapping[str, Any], feedback: Mapping[str, Any] | None) -> str:
    """The official output lines for given scores (and feedback, unless None)."""
    lines = []
    for dim in DIMENSIONS:
        label = DIMENSION_LABELS[dim]
        lines.append(prompts.ANSWER_LINE.format(label=label, score=scores[dim]))
        if feedback is not None:
            lines.append(prompts.FEEDBACK_LINE.format(label=label, feedback=_one_line(feedback[dim])))
    return "\n".join(lines)


def _message(system: str, user: str) -> tuple[dict[str, str], ...]:
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


# --- personalization ------------------------------------------------------------------------------


def _judge_system(*, personalized: bool, with_feedback: bool, has_shots: bool, structured: bool) -> str:
    if not personalized:
        sees = prompts.SEES_QUESTION_ONLY
    elif has_shots:
        graded = "scores and comments" if with_feedback else "scores"
        sees = prompts.SEES_PERSONALIZED + " " + prompts.SEES_EXAMPLES.format(graded=graded)
    else:
        sees = prompts.SEES_PERSONALIZED
    if structured:
        answer_format = prompts.ANSWER_AS_JSON.format()
    else:
        template = {dim: "<integer 1-5>" for dim in DIMENSIONS}
        why = {dim: "<one or two sentences on why>" for dim in DIMENSIONS}
        answer_format = prompts.ANSWER_AS_LINES.format(answer_lines=_judgment_lines(template, why))
    guide = "\n".join(f"- {DIMENSION_LABELS[dim]}: {prompts.DIMENSION_GUIDE[dim]}" for dim in DIMENSIONS)
    return prompts.JUDGE_SYSTEM.format(dimension_guide=guide, what_you_see=sees, answer_format=answer_format)


def example_block(number: int, shot: Mapping[str, Any], with_feedback: bool = True) -> str:
    """One judged example as the judge sees it (and as a rubric writer does): the response between tags, then
    the human judgment in the official lines."""
    scores = {dim: shot[dim]["score"] for dim in DIMENSIONS}
    feedback = {dim: shot[dim]["feedback"] for dim in DIMENSIONS} if with_feedback else None
    return prompts.EXAMPLE.format(number=number, response=delimit("example_response", str(shot["response"])),
                                  judgment=_judgment_lines(scores, feedback))


def personalization_request(
    row: Mapping[str, Any],
    response: str,
    *,
    max_shots: int = 5,
    with_feedback: bool = True,
    personalized: bool = True,
    structured: bool = False,
    max_tokens: int = 2048,
) -> Request:
    """The judge request scoring `response` on the four dimensions for the query in `row` (a
    `benchmark` record: query, gold_information_need, rubric, shots, ...).

    Ablations: `with_feedback=False` shows the examples' scores without their feedback;
    `personalized=False` drops the gold need, the rubric and the examples. `structured=True` asks for
    JSON (`PERSONALIZATION_SCHEMA`, also set as `Request.json_schema`) instead of the official lines."""
    if max_shots < 0:
        raise ValueError(f"max_shots must be >= 0, got {max_shots}")
    shots = list(row.get("shots") or [])[:max_shots] if personalized else []
    personal = ""
    if personalized:
        examples = ""
        if shots:
            blocks = "\n\n".join(example_block(i, shot, with_feedback) for i, shot in enumerate(shots, 1))
            examples = prompts.EXAMPLES.format(shots=blocks)
        personal = prompts.PERSONAL_CONTEXT.format(need=str(row["gold_information_need"]).strip(),
                                                   rubric=str(row["rubric"]).strip(), examples=examples)
    user = prompts.JUDGE_USER.format(query=str(row["query"]).strip(), personal_context=personal,
                                     response=delimit("response", response),
                                     closing=prompts.CLOSING_JSON if structured else prompts.CLOSING_LINES)
    system = _judge_system(personalized=personalized, with_feedback=with_feedback, has_shots=bool(shots),
                           structured=structured)
    return Request(messages=_message(system, user), max_tokens=max_tokens,
                   json_schema=PERSONALIZATION_SCHEMA if structured else None)


# --- claim recall ---------------------------------------------------------------------------------


def claim_request(claim: str, response: str, *, structured: bool = False, max_tokens: int = 512) -> Request:
    """One true/false question: does `response` convey `claim`? With `structured=True` the answer is
    JSON per `CLAIM_SCHEMA`; otherwise a final line `Answer: True` or `Answer: False`."""
    answer_format = (prompts.CLAIM_AS_JSON if structured else prompts.CLAIM_AS_LINE).format()
    system = prompts.CLAIM_SYSTEM.format(claim_rule=prompts.CLAIM_RULE, answer_format=answer_format)
    user = prompts.CLAIM_USER.format(response=delimit("response", response), claim=_one_line(claim))
    return Request(messages=_message(system, user), max_tokens=max_tokens,
                   json_schema=CLAIM_SCHEMA if structured else None)


def batched_recall_request(claims: Sequence[str], response: str, *, max_tokens: int | None = None) -> Request:
    """All claims of a query in one structured call: one verdict per numbered claim
    (`batched_recall_schema(len(claims))`, also set as `Request.json_schema`)."""
    if not claims:
        raise ValueError("batched_recall_request needs at least one claim")
    numbered = "\n".join(f"{i}. {_one_line(claim)}" for i, claim in enumerate(claims, 1))
    system = prompts.CLAIMS_SYSTEM.format(claim_rule=prompts.CLAIM_RULE)
    user = prompts.CLAIMS_USER.format(response=delimit("response", response), count=len(claims),
                                      numbered_claims=numbered)
    return Request(messages=_message(system, user),
                   max_tokens=max_tokens if max_tokens is not None else 256 + 24 * len(claims),
                   json_schema=batched_recall_schema(len(claims)))


# --- repair ---------------------------------------------------------------------------------------


def repair_request(request: Request, bad_output: str, reason: str) -> Request:
    """Re-ask after an unparseable answer: the conversation so far, the bad answer as the assistant's
    turn, and a short user turn that names the problem and asks for the final answer alone, in the exact
    format. The messages differ from the original, so the repair has its own cache key."""
    wanted = prompts.REPAIR_WANTS_JSON if request.json_schema is not None else prompts.REPAIR_WANTS_LINES
    turn = prompts.REPAIR.format(reason=re.sub(r"\s+", " ", reason).strip().rstrip("."), wanted=wanted)
    return Request(
        messages=request.messages + ({"role": "assistant", "content": bad_output}, {"role": "user", "content": turn}),
        max_tokens=request.max_tokens,
        json_schema=request.json_schema,
    )
