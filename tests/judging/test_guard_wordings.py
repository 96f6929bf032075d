"""The refusal guard holds to what its docstring claims (`judging.guards`): every way of declining it names is
caught, written with the straight apostrophe or the typographic one that most assistants and word processors
write ("I’m sorry, but I can’t help with that."); a referral ("consult a qualified professional ...") is never
counted as answer words, however long; and what it claims to let through (an answer that declines one part and
answers the rest, an apology for the user's trouble, a refusal after the answer's opening) is judged."""

from __future__ import annotations

import pytest

from bespoke_metric.judging.guards import GUARDS_VERSION, MIN_ANSWER_TOKENS, check_context_echo, check_response, tokens

QUERY = "How should I change the hydration of my sourdough when the rye starter rises slowly?"
APOSTROPHES = {"straight": "'", "typographic": "\u2019"}

DECLINES = (
    "I'm sorry, but I can't help with that.",
    "I'm sorry, but I cannot provide that.",
    "I'm sorry, I'm not able to answer this.",
    "Sorry, but I'm not able to recommend anything here.",
    "I'm not equipped to provide personalized baking advice.",
    "I am not allowed to share recommendations on this.",
    "I'm not permitted to give that kind of guidance.",
    "I am not in a position to offer an opinion on this.",
    "I am unable to answer questions about baking.",
    "I'm unable to comply with this request.",
    "As an AI language model, I don't bake bread.",
    "I can't assist with that request.",
    "I won't fulfil this request.",
    "I won't fulfill this request.",
    "I will not give advice on that.",
)
"""The refusals the guard names: "I'm sorry, but I can't ...", "I'm not equipped to provide ...", "As an AI ...",
"I am unable to ...", and the other forms its pattern spells out (each verb and each way of saying "not able")."""

REFERRALS = ("consult", "seek advice from", "ask", "contact", "speak to", "speak with", "reach out to")
EXPERTS = ("professional", "expert", "doctor", "physician", "lawyer", "advisor", "adviser", "specialist", "pharmacist")


def guard_of(response: str) -> str | None:
    hit = check_response(response, QUERY)
    return None if hit is None else hit.guard


@pytest.mark.parametrize("apostrophe", APOSTROPHES.values(), ids=APOSTROPHES.keys())
@pytest.mark.parametrize("declined", DECLINES)
def test_every_refusal_wording_is_caught_with_either_apostrophe(declined: str, apostrophe: str) -> None:
    assert guard_of(declined.replace("'", apostrophe)) == "refusal"


@pytest.mark.parametrize("apostrophe", APOSTROPHES.values(), ids=APOSTROPHES.keys())
def test_a_typographic_refusal_gets_the_straight_one_s_verdict_and_reason(apostrophe: str) -> None:
    # the same words, told apart only by the apostrophe, are the same refusal with the same count of answer words
    straight = check_response("I'm sorry, but I can't help with that. Keep it warm.", QUERY)
    written = check_response(f"I{apostrophe}m sorry, but I can{apostrophe}t help with that. Keep it warm.", QUERY)
    assert straight is not None and written == straight


@pytest.mark.parametrize("expert", EXPERTS)
@pytest.mark.parametrize("referral", REFERRALS)
def test_a_referral_is_no_answer_however_long(referral: str, expert: str) -> None:
    sent_elsewhere = (f"Please {referral} a qualified {expert}, who can look at your whole situation, everything you have "
                      "told me and the details of your own circumstances, before you change anything at all.")
    assert len(tokens(sent_elsewhere)) > MIN_ANSWER_TOKENS  # counted as answer words, it alone would pass
    for apostrophe in APOSTROPHES.values():
        assert guard_of(f"I{apostrophe}m sorry, but I can{apostrophe}t give advice on this. {sent_elsewhere}") == "refusal"


def test_an_answer_beside_a_referral_is_judged() -> None:
    declined = "I'm sorry, but I can't give medical advice. Please consult your doctor. "
    answered = "Keep the rye starter near 26 degrees, feed it twice a day and lower the dough to 70 percent hydration."
    assert len(tokens(answered)) >= MIN_ANSWER_TOKENS
    assert guard_of(declined + answered) is None
    assert guard_of(declined.replace("'", APOSTROPHES["typographic"]) + answered) is None


@pytest.mark.parametrize("apostrophe", APOSTROPHES.values(), ids=APOSTROPHES.keys())
def test_what_the_guard_lets_through_passes_with_either_apostrophe(apostrophe: str) -> None:
    answers = (
        "I'm sorry to hear that! Keep the starter warm and feed it twice daily with rye flour.",
        "I can't see your starter, but keep it near 26 degrees, feed it twice a day with whole rye and lower the "
        "dough's hydration to 70 percent until it doubles again.",
        # declining further on than the opening two clauses follows an answer
        "Keep the starter near 26 degrees. Feed it twice a day with whole rye. I can't promise it will double.",
    )
    for answer in answers:
        assert guard_of(answer.replace("'", apostrophe)) is None, answer


@pytest.mark.parametrize(("response", "guard", "reason"), [
    ("Feed more.", "empty", "the response has 2 distinct word token(s); at least 3 are needed"),
    ("   [1] https://example.com/a ", "empty", "the response has nothing but whitespace, URLs or citation markers; at least 3 are needed"),
    ("How should I change the hydration of my sourdough starter?", "echo",
     "100% of the response's words are the query's (echo threshold 80%)"),
    ("Feed the starter with rye flour every morning please.\n" * 12, "repetition",
     "92% of its words repeat what it said before, as lines said again or trigrams said again within a line (threshold 70%)"),
    ("ab" * 400, "repetition", "a line of it compresses to 2% of its size (threshold 12%)"),
    ("12 34 56 78 90 12 34 56 78 90 11 22 33", "no_words", "the response has no word at all, only numbers or symbols"),
    ("qzxv kplm wrtb nnqz vvbx qpmz trkq xwvb", "no_words", "only 0% of its letters are in known words of en (threshold 50%)"),
    ("Dein Sauerteig braucht häufigere Fütterungen bei wärmerer Temperatur. Beginne mit etwa siebzig Prozent Hydratation "
     "und achte auf das Volumen.", "language", "the response is in de (p=1.00) but the query is in en (p=1.00)"),
    ("I'm sorry, but I can't help with that.", "refusal",
     "the response declines to answer, with 0 word token(s) besides its refusal and referrals (at least 15 are needed)"),
])
def test_each_guard_says_why_with_its_numbers(response: str, guard: str, reason: str) -> None:
    # the reason is what a results file's item and the guard counts show a reader
    hit = check_response(response, QUERY)
    assert hit is not None and (hit.guard, hit.reason) == (guard, reason)
    assert hit.to_dict() == {"guard": guard, "reason": reason, "version": GUARDS_VERSION}


def test_an_echo_of_the_context_says_why() -> None:
    context = "Profile: hikes near Seoul most weekends, usually Bukhansan, and prefers trails under four hours by subway. More."
    hit = check_context_echo("Hikes near Seoul most weekends usually Bukhansan and prefers trails under four hours by subway.", context)
    assert hit is not None and hit.reason == ("100% of the response's words are copied from the context it was given, in runs "
                                              "of 8 or more words (echo threshold 50%)")
    assert check_context_echo("", context) is None
