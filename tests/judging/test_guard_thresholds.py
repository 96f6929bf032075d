"""Each guard's thresholds at their exact values, read off the module's own constants (`judging.guards` says "at least",
"fewer than", "from ... on": the value itself is on a stated side), and the parts of a guard a response's wording
alone does not reach: what counts as a word, a line and a repeated phrase, which letters the word lists judge, and the
language guard's conditions on what the detector says.

The detector (py3langid) gives probabilities that no chosen text pins to a threshold, so the language guard's
conditions are tested with a stand-in that answers its two calls (`classify`, `rank`) with given probabilities."""

from __future__ import annotations

import random
import string
import zlib
from collections.abc import Iterator

import pytest

from bespoke_metric.judging import guards
from bespoke_metric.judging.guards import (
    CONTEXT_ECHO_SHARE,
    ECHO_SPAN,
    ENGLISH_SHARE,
    LANGUAGE_CONFIDENCE,
    LANGUAGE_DOUBT,
    MAX_REPEATED_SHARE,
    MIN_COMPRESSION_CHARS,
    MIN_COMPRESSION_RATIO,
    MIN_KNOWN_LETTER_SHARE,
    MIN_LANGUAGE_LETTERS,
    MIN_REPETITION_TOKENS,
    MIN_TOKENS,
    Vocabulary,
    check_context_echo,
    check_repetition,
    check_response,
    tokens,
)

QUERY = "How should I change the hydration of my sourdough when the rye starter rises slowly?"
GERMAN = "Füttere den Sauerteig zweimal am Tag mit frischem Roggenmehl und halte ihn schön warm."
NONSENSE = ("qx", "zq", "xj", "jq", "kq", "vq", "zx", "jx", "qj")
"""Runs of two letters in no word list (neither English's nor German's): letters no reader knows."""


def guard_of(response: str, query: str = QUERY) -> str | None:
    hit = check_response(response, query)
    return None if hit is None else hit.guard


def letters(text: str) -> int:
    return sum(map(len, guards._LETTERS.findall(text)))


def test_tokens_are_lower_cased_runs_of_letters_or_digits() -> None:
    # and each character of a script written without spaces
    assert tokens("Füße SIND 3-mal_größer: 東京") == ["füße", "sind", "3", "mal", "größer", "東", "京"]


# -- empty, echo -----------------------------------------------------------------------------------------------------


def test_distinct_words_of_exactly_the_letters_needed_are_not_empty() -> None:
    # fewer than MIN_TOKENS distinct words is empty unless they hold MIN_LANGUAGE_LETTERS letters: a long word is a word
    assert MIN_TOKENS > 2
    half = MIN_LANGUAGE_LETTERS // 2
    assert guard_of(f"{'a' * half} {'b' * (MIN_LANGUAGE_LETTERS - half)}") != "empty"
    assert guard_of(f"{'a' * half} {'b' * (MIN_LANGUAGE_LETTERS - half - 1)}") == "empty"


def test_a_response_copied_from_its_context_for_exactly_the_echo_share_is_an_echo() -> None:
    context = "Profile: the user hikes near Seoul most weekends and prefers trails under four hours by subway."
    copied = " ".join(tokens(context)[1:1 + ECHO_SPAN])  # a run of ECHO_SPAN words from the context
    own = ["bring", "rain", "gear", "water", "snacks", "maps", "poles", "boots", "hats", "gloves"]
    assert CONTEXT_ECHO_SHARE == 0.5  # the runs below: ECHO_SPAN copied words of 2 * ECHO_SPAN, then of one more
    at_share = f"{copied} {' '.join(own[:ECHO_SPAN])}"
    hit = check_context_echo(at_share, context)
    assert hit is not None and hit.guard == "echo"
    assert check_context_echo(f"{copied} {' '.join(own[:ECHO_SPAN + 1])}", context) is None


# -- repetition ------------------------------------------------------------------------------------------------------


def test_repetition_is_judged_from_its_least_number_of_words_on() -> None:
    # one word said again and again: too short to judge below MIN_REPETITION_TOKENS words, repetition at it
    assert check_repetition(" ".join(["again"] * (MIN_REPETITION_TOKENS - 1))) is None
    hit = check_repetition(" ".join(["again"] * MIN_REPETITION_TOKENS))
    assert hit is not None and hit.guard == "repetition"


def test_a_line_said_again_is_the_same_line_with_or_without_its_list_marker() -> None:
    # said four times, twice as a list item: three of its four sayings repeat it, over MAX_REPEATED_SHARE
    line = "Feed the starter daily."
    assert 3 / 4 >= MAX_REPEATED_SHARE > 2 / 4 and 4 * len(tokens(line)) >= MIN_REPETITION_TOKENS
    for marker in ("- ", "* ", "1. ", "[ ] "):
        hit = check_repetition("\n".join([line, marker + line, line, marker + line]))
        assert hit is not None and hit.guard == "repetition", marker
    # a one-word item on every line: each line holds one word, however it is marked
    assert check_repetition("\n".join(["- again"] * (MIN_REPETITION_TOKENS - 1))) is None


def test_repetition_is_read_past_a_blank_line() -> None:
    looped = "\n".join(["Feed the starter with rye flour every morning."] * 12)
    assert guard_of(f"Here is what to do.\n\n{looped}") == "repetition"
    assert guard_of(f"Here is what to do.\n\n\n{looped}\n\nThat is all.") == "repetition"


def test_lines_said_again_count_whatever_line_comes_last() -> None:
    looped = ["Feed the starter with rye flour every morning."] * 12
    assert guard_of("\n".join([*looped, "Keep the jar near 26 degrees and check that it doubles."])) == "repetition"
    assert guard_of("\n".join(["Keep the jar near 26 degrees and check that it doubles.", *looped])) == "repetition"


def test_only_phrases_of_three_words_said_again_count() -> None:
    # a record of coin flips: two words in an order where pairs recur at every step but most runs of three do not
    flips = "H H H H H T T H H H H T H T H T H T T T H T T T".split()
    record = " ".join("heads" if flip == "H" else "tails" for flip in flips)
    words = tokens(record)
    trigrams = list(zip(words, words[1:], words[2:], strict=False))
    assert (len(trigrams) - len(set(trigrams))) / len(words) < 0.7  # the guard's share, under its threshold
    assert check_repetition(record) is None


def test_a_line_is_compressed_from_its_least_length_on() -> None:
    # one token, so no trigram repeats: only the compression check can fire
    assert check_repetition("ab" * (MIN_COMPRESSION_CHARS // 2)) is not None
    assert check_repetition("ab" * (MIN_COMPRESSION_CHARS // 2 - 1) + "a") is None


def test_a_line_that_compresses_to_exactly_the_threshold_is_not_repetition() -> None:
    # "below MIN_COMPRESSION_RATIO": found with this machine's zlib, a line of noise then one letter over and over
    target = round(MIN_COMPRESSION_CHARS * MIN_COMPRESSION_RATIO)
    draw = random.Random(0)
    noise = "".join(draw.choice(string.ascii_lowercase) for _ in range(MIN_COMPRESSION_CHARS))
    sized = {len(zlib.compress(line.encode(), 9)): line
             for line in (noise[:k] + "a" * (MIN_COMPRESSION_CHARS - k) for k in range(MIN_COMPRESSION_CHARS))}
    assert {target - 1, target} <= sized.keys()
    assert target / MIN_COMPRESSION_CHARS == MIN_COMPRESSION_RATIO
    assert check_repetition(sized[target]) is None
    below = check_repetition(sized[target - 1])
    assert below is not None and below.guard == "repetition"


# -- no_words --------------------------------------------------------------------------------------------------------


def test_short_words_are_known_only_when_common() -> None:
    vocabulary = Vocabulary(common={"ox", "the"}, rare={"oud", "quay", "zq"})
    assert vocabulary.knows("ox") and vocabulary.knows("the") and vocabulary.knows("quay")
    assert not vocabulary.knows("oud") and not vocabulary.knows("zq") and not vocabulary.knows("qat")


def test_runs_of_two_letters_are_read_single_letters_are_not() -> None:
    # a few words among two-letter nonsense is no words; a formula of single letters and numbers is judged
    hit = check_response(f"Feed it {' '.join(NONSENSE[:8])}", QUERY)
    assert hit is not None and hit.guard == "no_words"
    assert guard_of("x = 3, y = 4, z = 5") is None
    assert guard_of("Let x = 3 and y = 4, so z = 5.") is None


class Detector:
    """A stand-in for py3langid's identifier: `rank` gives the query's probabilities for the query and the response's
    for any other text (each ranking holds every language named, as py3langid's holds all it knows), `classify` the
    first of them. `read` keeps every text it was given."""

    def __init__(self, query: dict[str, float], response: dict[str, float]) -> None:
        self.query, self.response = query, response
        self.read: list[str] = []

    def rank(self, text: str) -> list[tuple[str, float]]:
        self.read.append(text)
        given = self.query if text.strip() == QUERY else self.response
        languages = {**dict.fromkeys(self.query.keys() | self.response.keys(), 0.0), **given}
        return sorted(languages.items(), key=lambda item: item[1], reverse=True)

    def classify(self, text: str) -> tuple[str, float]:
        return self.rank(text)[0]


@pytest.fixture
def detector(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Detector]]:
    """Set `detector[0]` to the stand-in the guards use."""
    chosen: list[Detector] = []
    monkeypatch.setattr(guards, "_identifier", lambda: chosen[0])
    yield chosen


def test_a_language_the_detector_gives_half_its_weight_is_read(detector: list[Detector]) -> None:
    # German words are known only once the response is taken for German: from 0.5 on
    answer = f"Sauerteig füttern {' '.join(NONSENSE[:2])}"
    detector.append(Detector({"en": 0.99}, {"de": 0.5, "en": 0.0}))
    assert guard_of(answer) is None
    detector[0] = Detector({"en": 0.99}, {"de": 0.49, "en": 0.0})
    assert guard_of(answer) == "no_words"


def test_exactly_half_the_letters_in_known_words_is_enough(detector: list[Detector]) -> None:
    detector.append(Detector({"en": 0.99}, {"de": 0.99, "en": 0.0}))
    known = "Sauerteig füttern"  # German words, in no English list
    half = f"{known} {' '.join(NONSENSE[:letters(known) // 2])}"
    assert letters(half) < MIN_LANGUAGE_LETTERS and MIN_KNOWN_LETTER_SHARE == 0.5
    assert guard_of(half) is None
    hit = check_response(f"{half} {NONSENSE[-1]}", QUERY)
    assert hit is not None and hit.reason == "only 47% of its letters are in known words of de/en (threshold 50%)"


def test_english_answers_to_english_questions_are_judged_without_the_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    # the detector's model takes most of a second to load: English words alone settle both guards
    def never() -> None:
        raise AssertionError("the language detector was loaded")

    monkeypatch.setattr(guards, "_identifier", never)
    assert guard_of("Feed the starter twice a day with whole rye flour and keep it warm until it doubles.") is None
    # exactly ENGLISH_SHARE of the letters in English words, enough letters for the language guard to read
    english = "Feed the starter twice daily with rye flour"
    mostly = f"{english} {' '.join(NONSENSE[:2])}"
    assert letters(english) / letters(mostly) == ENGLISH_SHARE and letters(mostly) >= MIN_LANGUAGE_LETTERS
    assert guard_of(mostly) is None
    # exactly MIN_KNOWN_LETTER_SHARE of them, too few letters for the language guard
    english = "Feed the starter"
    half = f"{english} {' '.join(NONSENSE[:letters(english) // 2])}"
    assert letters(english) / letters(half) == MIN_KNOWN_LETTER_SHARE and letters(half) < MIN_LANGUAGE_LETTERS
    assert guard_of(half) is None


# -- language --------------------------------------------------------------------------------------------------------


def test_an_answer_in_a_script_without_spaces_is_in_another_language() -> None:
    japanese = "スターターを暖かい場所に置き、毎日二回ライ麦粉と水を与えてください。生地の加水率は七十パーセントに下げます。"
    assert letters(japanese) == 0  # its characters count toward MIN_LANGUAGE_LETTERS one by one
    assert guard_of(japanese) == "language"


def test_the_language_guard_reads_its_least_number_of_letters_on(detector: list[Detector]) -> None:
    detector.append(Detector({"en": 0.99}, {"de": 0.99, "en": 0.0}))
    at_count, below = "Füttere den Sauerteig zweimal täglich mit Mehl", "Füttere den Sauerteig zweimal täglich mit Mus"
    assert (letters(at_count), letters(below)) == (MIN_LANGUAGE_LETTERS, MIN_LANGUAGE_LETTERS - 1)
    assert guard_of(at_count) == "language"
    assert guard_of(below) is None


@pytest.mark.parametrize(("query", "response", "guarded"), [
    ({"en": 0.99}, {"de": 0.99, "en": 0.001}, True),
    # the query's language must be sure: LANGUAGE_CONFIDENCE and up
    ({"en": LANGUAGE_CONFIDENCE}, {"de": 0.99, "en": 0.001}, True),
    ({"en": 0.89}, {"de": 0.99, "en": 0.001}, False),
    # a query with no linguistic content (py3langid's "zxx") has no language to answer in
    ({"zxx": 0.99}, {"de": 0.99, "zxx": 0.0}, False),
    # the response's language must be sure too
    ({"en": 0.99}, {"de": LANGUAGE_CONFIDENCE, "en": 0.001}, True),
    ({"en": 0.99}, {"de": 0.89, "en": 0.001}, False),
    # and the query's language all but ruled out for the response: below LANGUAGE_DOUBT
    ({"en": 0.99}, {"de": 0.97, "en": LANGUAGE_DOUBT}, False),
    ({"en": 0.99}, {"de": 0.97, "en": 0.02}, False),
    ({"en": 0.99}, {"de": 0.97, "en": 0.009}, True),
    # an answer in the query's language passes however sure
    ({"de": 0.99}, {"de": 0.99, "en": 0.0}, False),
])
def test_the_language_guard_fires_only_when_the_detector_is_sure_of_both(
        detector: list[Detector], query: dict[str, float], response: dict[str, float], guarded: bool) -> None:
    detector.append(Detector(query, response))
    assert guard_of(GERMAN) == ("language" if guarded else None)


def test_code_urls_and_table_markup_are_no_letters_of_the_language_guard(detector: list[Detector]) -> None:
    detector.append(Detector({"en": 0.99}, {"de": 0.99, "en": 0.0}))
    answer = ("Füttere den Sauerteig `feed()`:\n```python\nstarter.feed(rye=50)\n```\n"
              "| Tag | Mehl |\n|---|---|\n| eins | Roggen |\nhttps://example.org/sauerteig")
    prose = "Füttere den Sauerteig Tag Mehl eins Roggen"
    assert letters(prose) < MIN_LANGUAGE_LETTERS <= letters(guards.readable(answer))
    assert guard_of(answer) is None
    assert guard_of(prose + " zweimal") == "language"


def test_the_detector_reads_the_prose_alone(detector: list[Detector]) -> None:
    # what py3langid is given is the answer's words, without its code, URLs or a table's markup
    detector.append(Detector({"en": 0.99}, {"de": 0.99, "en": 0.0}))
    answer = (f"{GERMAN} `feed()`\n```python\nstarter.feed(rye=50)\n```\n| Tag | Mehl |\n|---|---|\n| eins | Roggen |\n"
              "Siehe https://example.org/sauerteig")
    assert guard_of(answer) == "language"
    read = [text.split() for text in detector[0].read if text.strip() != QUERY]
    assert read and all(words == [*GERMAN.split(), "Tag", "Mehl", "eins", "Roggen", "Siehe"] for words in read)
