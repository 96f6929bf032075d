"""The judging protocol's edges that the figures rest on, found by mutation testing (benchmarks/mutation.py): the
schema of batched recall holds a judge to exactly one boolean verdict per numbered claim and nothing else; each
request's output limit; the reasons a parse fails with (a judge reads them in its repair turn, so they must name
what to fix); the repetition guard over what a system writes for itself."""

from __future__ import annotations

import json

import jsonschema
import pytest

from bespoke_metric.judging.guards import check_repetition
from bespoke_metric.judging.protocol import (
    ParseError,
    batched_recall_request,
    batched_recall_schema,
    claim_request,
    parse_batched_recall,
    parse_claim_verdict,
    parse_personalization,
)

GOOD = {"verdicts": [{"claim": 1, "verdict": True}, {"claim": 2, "verdict": False}, {"claim": 3, "verdict": True}]}


def valid(answer: object, n_claims: int = 3) -> bool:
    try:
        jsonschema.validate(answer, batched_recall_schema(n_claims), cls=jsonschema.Draft202012Validator)
    except jsonschema.ValidationError:
        return False
    return True


def with_entry(index: int, entry: object) -> dict:
    return {"verdicts": [entry if i == index else one for i, one in enumerate(GOOD["verdicts"])]}


@pytest.mark.parametrize(("answer", "why"), [
    ([GOOD], "not an object"),
    ({}, "no verdicts"),
    ({**GOOD, "note": "x"}, "a key besides verdicts"),
    ({"verdicts": {"1": True}}, "verdicts not a list"),
    ({"verdicts": GOOD["verdicts"][:2]}, "a verdict missing"),
    ({"verdicts": [*GOOD["verdicts"], {"claim": 3, "verdict": True}]}, "a verdict too many"),
    (with_entry(1, True), "an entry not an object"),
    (with_entry(1, {"claim": 2}), "an entry without its verdict"),
    (with_entry(1, {"verdict": False}), "an entry without its claim"),
    (with_entry(1, {"claim": 2, "verdict": False, "why": "x"}), "an entry with another key"),
    (with_entry(1, {"claim": 0, "verdict": False}), "claim 0"),
    (with_entry(1, {"claim": 4, "verdict": False}), "a claim past the last"),
    (with_entry(1, {"claim": "2", "verdict": False}), "a claim number as text"),
    (with_entry(1, {"claim": 2, "verdict": "false"}), "a verdict as text"),
])
def test_the_batched_recall_schema_holds_one_verdict_per_claim_and_nothing_else(answer: object, why: str) -> None:
    assert valid(GOOD)
    assert not valid(answer), why


def test_the_batched_recall_schema_numbers_the_claims_it_is_given() -> None:
    assert valid({"verdicts": [{"claim": 1, "verdict": True}]}, n_claims=1)
    assert batched_recall_schema(3)["properties"]["verdicts"]["items"]["properties"]["claim"]["enum"] == [1, 2, 3]


def test_each_request_s_output_limit() -> None:
    assert batched_recall_request(["a", "b", "c"], "r").max_tokens == 256 + 24 * 3
    assert batched_recall_request(["a"], "r", max_tokens=90).max_tokens == 90
    assert claim_request("c", "r").max_tokens == 512 and claim_request("c", "r", max_tokens=64).max_tokens == 64
    with pytest.raises(ValueError, match="^batched_recall_request needs at least one claim$"):
        batched_recall_request([], "r")


@pytest.mark.parametrize(("parse", "answer", "reason"), [
    (parse_personalization, '  \n  {"need_alignment": {"score": 4, "feedback": "fits"',
     "the answer looks like JSON but is not a complete, valid JSON object"),
    (parse_personalization, '```json\n{"need_alignment": {"score": 4', "the answer looks like JSON but is not a complete, valid JSON object"),
    (parse_personalization, "The response is fine.", "no score lines found (expected e.g. 'Need Alignment Score: 4')"),
    (parse_claim_verdict, "  \n ", "the answer is empty: expected 'Answer: True' or 'Answer: False'"),
    (lambda text: parse_batched_recall(text, 2), "All claims are conveyed.",
     'expected a JSON object {"verdicts": [...]} with one verdict per claim'),
])
def test_a_failed_parse_names_what_to_fix(parse, answer: str, reason: str) -> None:
    with pytest.raises(ParseError) as failed:
        parse(answer)
    assert failed.value.reason == reason


def test_claim_numbers_written_as_text_are_read() -> None:
    answer = {"verdicts": [{"claim": "2", "verdict": "no"}, {"claim": " 1 ", "verdict": True}]}
    assert parse_batched_recall(json.dumps(answer), 2) == [True, False]


def test_the_repetition_guard_reads_what_a_system_writes_for_itself() -> None:
    looped = "\n".join(["- Likes hiking near Seoul on weekends [1]."] * 12)
    hit = check_repetition(looped)
    assert hit is not None and hit.guard == "repetition"
    # read as a reader reads it: the citation markers differ, the line does not
    assert check_repetition("\n".join(f"- Likes hiking near Seoul on weekends [{n}]." for n in range(12))) == hit
    profile = ("- Hikes near Seoul most weekends, usually Bukhansan.\n- Prefers trails under four hours.\n"
               "- Asked twice about rain gear this month.\n- Travels by subway, not by car.")
    assert check_repetition(profile) is None
