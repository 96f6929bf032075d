"""Response guards: cheap checks that catch a response no judge should be asked about.

A policy trained against a judge drifts to whatever the judge overrates; an embedding proxy or a lenient
LLM can overrate an empty answer, a string of random letters or the query echoed back. These checks run
before every judge (see `guarded_judge`), so scoring, the `evaluate` metric and the training reward agree
on them. `check_response(response, query)` is pure: it returns the first guard that fires, or None;
`check_context_echo(response, context)` is the echo guard against the context a system was given, run where
that context is known.

The guards read the response as a reader would: URLs, citation markers (`[1]`, `[^2]`, `【3†source】`) and
link targets left out (`readable`), so an answer that ends with its sources is judged by its words. In the
order they are tried, with their thresholds:

- `empty`: fewer than `MIN_TOKENS` (3) distinct word tokens (letter or digit runs; in scripts written
  without spaces, each character counts as one), and those distinct tokens hold fewer than
  `MIN_LANGUAGE_LETTERS` (40) letters. "ok", "ok ok ok", `"ok " * 25`, "", a line of punctuation;
  "Feed it more." has three and passes.
- `echo`: at least `ECHO_SHARE` (80%) of the response's word tokens occur in the query: the query, or
  most of it, handed back; or, where the context the system was given is known (the user's history or
  profile as its prompt held it: `context`), at least `CONTEXT_ECHO_SHARE` (50%) of the response's words
  lie in runs of `ECHO_SPAN` (8) or more words copied from it: the context handed back. Copied runs, not
  shared words: an answer that draws on a long history shares most of its words with it.
- `repetition`: from `MIN_REPETITION_TOKENS` (12) word tokens on, at least `MAX_REPEATED_SHARE` (70%) of
  them repeat what the response said before: a line said again (its list marker aside), or a word
  trigram said again within its line; or a line of `MIN_COMPRESSION_CHARS` (300) characters or more that
  zlib compresses below `MIN_COMPRESSION_RATIO` (12%) of its size. Lines are a response's records: the
  rows of a schedule that differ only in the week number are each said once, while one sentence said 40
  times (on one line or forty) repeats 97% of its words.
- `no_words`: no word at all (only digits and symbols); or fewer than `MIN_KNOWN_LETTER_SHARE` (50%) of
  the letters in runs of two or more (single letters tell nothing) belong to words of the `wordfreq`
  word list of the query's language or English (English for code and technical terms), a word of two or
  three letters only when it is common (`MIN_SHORT_WORD_FREQUENCY`, Zipf 3). Random letters and random
  printable characters score under 40%; prose, code and jargon-heavy answers over 70%. Skipped for
  languages `wordfreq` does not cover and for scripts written without spaces.
- `language`: the response's prose (code blocks, inline code, URLs and table rules left out), from
  `MIN_LANGUAGE_LETTERS` (40) letters on, is in another language than the query: `py3langid` gives the
  response's language at least `LANGUAGE_CONFIDENCE` (0.9) and the query's language below
  `LANGUAGE_DOUBT` (0.01), while the query's own language is itself at least 0.9 sure. A query in any
  language answered in that language passes; code and tables, which no detector reads confidently, pass.
  A question and an answer that are both `ENGLISH_SHARE` (90%) English words pass without the detector,
  whose model takes most of a second to load.
- `refusal`: the response declines to answer and says little else: one of its first `REFUSAL_OPENING` (2)
  clauses (split at sentence ends, semicolons and a `but`/`however`) is a refusal (`REFUSAL`: "I'm sorry,
  but I can't ...", "I'm not equipped to provide ...", "As an AI ...", "I am unable to ..."; English only),
  and its clauses that are neither a refusal nor a referral ("consult a professional") hold fewer than
  `MIN_ANSWER_TOKENS` (15) word tokens. A proxy judge reads a refusal that repeats the query's words as an
  answer (a cut-off "I'm sorry ... I'm not equipped to provide ..." scored 4/5); an answer that declines one
  part and answers the rest, or opens with "I'm sorry to hear that", is judged.

A guarded response gets the lowest score on every dimension and conveys no claim, without a judge call;
its item records the guard and the reason. The `repetition` guard alone (`check_repetition`) also reads
what a system writes for itself before answering (a profile, a rewrite's queries): a small model that
loops on one line to its token limit.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GUARDS_VERSION = "guards-5"
"""Version of the checks and thresholds; recorded with every judge block that used them."""

MIN_TOKENS = 3
ECHO_SHARE = 0.8
CONTEXT_ECHO_SHARE = 0.5
ECHO_SPAN = 8
"""Words in a row that must match the context for them to count as copied from it."""
MIN_REPETITION_TOKENS = 12
MAX_REPEATED_SHARE = 0.7
MIN_COMPRESSION_CHARS = 300
MIN_COMPRESSION_RATIO = 0.12
MIN_KNOWN_LETTER_SHARE = 0.5
MIN_LANGUAGE_LETTERS = 40
MIN_SHORT_WORD_FREQUENCY = 1e-6
"""A word of two or three letters counts as known only this common (Zipf 3: once per million words):
the word lists hold nearly every short string, which random characters produce by the dozen."""
LANGUAGE_CONFIDENCE = 0.9
LANGUAGE_DOUBT = 0.01
ENGLISH_SHARE = 0.9
"""A question and an answer both this English (share of letters in English words) are taken to be in one
language without running the detector."""

MIN_ANSWER_TOKENS = 15
REFUSAL_OPENING = 2
"""The clauses a refusal must stand among: one that declines further on follows an answer."""

GUARD_NAMES: tuple[str, ...] = ("empty", "echo", "repetition", "no_words", "language", "refusal")

# Scripts written without spaces between words: each character is a token, and the word list is not used.
_UNSEGMENTED = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_UNSEGMENTED}]|[^\W_]+")
_UNSEGMENTED_CHAR = re.compile(rf"[{_UNSEGMENTED}]")
_LETTERS = re.compile(rf"(?:(?![{_UNSEGMENTED}])[^\W\d_])+")
_CODE_BLOCK = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"https?://\S+|www\.\S+")
_TABLE_RULE = re.compile(r"^[\s|:+-]*$", re.MULTILINE)
_MARKDOWN_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*(?:https?://|www\.)[^)\s]*\s*\)")
_CITATION = re.compile(r"\[\^?\d+(?:\s*[,\u2013-]\s*\d+)*(?:†[^\]\n]*)?\]|【[^】\n]*】")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|\[[ xX]\])\s+")
_CLAUSE_END = re.compile(r"(?<=[.!?;:])\s+|\n+|,?\s+\b(?=but\b|however\b)", re.IGNORECASE)
_I = r"(?:i|i'm|i’m|i am|as an ai\b[^,.]*,\s*i)"
REFUSAL = re.compile(
    rf"\b(?:as an ai\b|{_I}\s*(?:'m|’m|am)?\s*(?:sorry,?\s+(?:but\s+)?(?:i\s+)?(?:can(?:not|'t|’t)|am not|'m not|’m not)"
    r"|not (?:able|equipped|allowed|permitted|in a position) to|unable to|(?:can(?:not|'t|’t)|won['’]t|will not)"
    r"\s+(?:help|assist|provide|answer|give|offer|comply|fulfil|fulfill|recommend|share)))",
    re.IGNORECASE)
"""A clause that declines: "I'm sorry, but I can't", "I'm not equipped to", "I cannot provide", "As an AI"."""
REFERRAL = re.compile(r"\b(?:consult|seek|ask|contact|speak (?:to|with)|reach out to)\b.{0,40}\b(?:professional|expert|"
                      r"doctor|physician|lawyer|advisor|adviser|specialist|pharmacist)", re.IGNORECASE)
"""A clause that sends the user elsewhere: what a refusal says instead of an answer."""
APOLOGY = re.compile(r"^\W*(?:i'm|i’m|i am)?\s*(?:sorry|so sorry|apologies|unfortunately)\W*$", re.IGNORECASE)
"""A clause that only apologises ("I'm sorry", before "but I can't ...")."""


@dataclass(frozen=True)
class GuardHit:
    """A guard that fired: its name (one of `GUARD_NAMES`) and why, with the numbers."""

    guard: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"guard": self.guard, "reason": self.reason, "version": GUARDS_VERSION}


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens: letter/digit runs, and single characters of unsegmented scripts."""
    return _TOKEN.findall(text.lower())


def readable(response: str) -> str:
    """The response as the guards read it: link targets, URLs and citation markers left out (a link's
    text kept), since a list of sources says nothing about the answer's own words."""
    text = _MARKDOWN_LINK.sub(r"\1", response)
    return _URL.sub(" ", _CITATION.sub(" ", text))


def check_response(response: str, query: str) -> GuardHit | None:
    """The first guard that fires for `response` to `query`, or None when the response may be judged."""
    text = readable(response)
    words = tokens(text)
    for check in (_empty, _echo, _repetition, _no_words, _language, _refusal):
        hit = check(text, words, query)
        if hit is not None:
            return hit
    return None


def check_context_echo(response: str, context: str) -> GuardHit | None:
    """The `echo` guard against `context`, what the system was given besides the query (its history or
    profile block, its prompt), run where a response is made (`bespoke generate`, the reward's prompts): the
    context is not kept for later, so its hit is (`JudgeItem.guard`)."""
    text = readable(response)
    words = tokens(text)
    return _echo(text, words, "", context=context) if words else None


def check_repetition(text: str) -> GuardHit | None:
    """The `repetition` guard alone, for a text that answers no query (a profile, a rewrite's queries)."""
    readable_text = readable(text)
    return _repetition(readable_text, tokens(readable_text), "")


def _empty(response: str, words: list[str], query: str) -> GuardHit | None:
    # A long run of letters without spaces is not empty (the word-list check names it better), but one
    # short word said 25 times is: the letters that count are those of the distinct words.
    distinct = set(words)
    if len(distinct) >= MIN_TOKENS or sum(map(len, distinct)) >= MIN_LANGUAGE_LETTERS:
        return None
    shown = "nothing but whitespace, URLs or citation markers" if not response.strip() else f"{len(distinct)} distinct word token(s)"
    return GuardHit("empty", f"the response has {shown}; at least {MIN_TOKENS} are needed")


def _echo(response: str, words: list[str], query: str, context: str = "") -> GuardHit | None:
    asked = set(tokens(query))
    share = sum(word in asked for word in words) / len(words)
    if share >= ECHO_SHARE:
        return GuardHit("echo", f"{share:.0%} of the response's words are the query's (echo threshold {ECHO_SHARE:.0%})")
    copied = _copied_share(words, tokens(readable(context))) if context else 0.0
    if copied >= CONTEXT_ECHO_SHARE:
        return GuardHit("echo", f"{copied:.0%} of the response's words are copied from the context it was given, in runs "
                                f"of {ECHO_SPAN} or more words (echo threshold {CONTEXT_ECHO_SHARE:.0%})")
    return None


def _copied_share(words: list[str], source: list[str]) -> float:
    """Share of `words` inside a run of `ECHO_SPAN` or more consecutive words that `source` holds too."""
    spans = {tuple(source[i : i + ECHO_SPAN]) for i in range(len(source) - ECHO_SPAN + 1)}
    copied = [False] * len(words)
    for start in range(len(words) - ECHO_SPAN + 1):
        if tuple(words[start : start + ECHO_SPAN]) in spans:
            copied[start : start + ECHO_SPAN] = [True] * ECHO_SPAN
    return sum(copied) / len(words) if words else 0.0


def _repetition(response: str, words: list[str], query: str) -> GuardHit | None:
    said = repeated = 0
    lines: set[tuple[str, ...]] = set()
    compressed = 1.0  # the smallest compression ratio of a long line
    for line in response.splitlines():
        line_words = tokens(_LIST_MARKER.sub("", line))
        if not line_words:
            continue
        said += len(line_words)
        if tuple(line_words) in lines:  # the whole line said before
            repeated += len(line_words)
            continue
        lines.add(tuple(line_words))
        # within a line only: rows of a table share most of their trigrams with each other by design
        trigrams = list(zip(line_words, line_words[1:], line_words[2:], strict=False))  # shifted copies: shorter by design
        repeated += len(trigrams) - len(set(trigrams))
        raw = line.encode("utf-8")
        if len(raw) >= MIN_COMPRESSION_CHARS:
            compressed = min(compressed, len(zlib.compress(raw, 9)) / len(raw))
    if said >= MIN_REPETITION_TOKENS and repeated / said >= MAX_REPEATED_SHARE:
        return GuardHit("repetition", f"{repeated / said:.0%} of its words repeat what it said before, as lines said "
                                      f"again or trigrams said again within a line (threshold {MAX_REPEATED_SHARE:.0%})")
    if compressed < MIN_COMPRESSION_RATIO:
        return GuardHit("repetition", f"a line of it compresses to {compressed:.0%} of its size "
                                      f"(threshold {MIN_COMPRESSION_RATIO:.0%})")
    return None


def _known_share(letters: list[str], vocabularies: list[Vocabulary]) -> float:
    """Share of the letters in runs of two or more that belong to known words of one of the vocabularies
    (a single letter, an initial or a unit, tells nothing either way)."""
    runs = [word for word in letters if len(word) >= 2]
    total = sum(map(len, runs))
    known = sum(len(word) for word in runs if any(vocabulary.knows(word) for vocabulary in vocabularies))
    return known / total if total else 1.0


def _mostly_english(text: str) -> bool:
    """Nearly every letter in English words: the language detector need not be loaded (most of a
    second) to tell that an English answer to an English question is in the same language."""
    letters = _LETTERS.findall(_prose(text).lower())
    return bool(letters) and _known_share(letters, [_vocabulary("en")]) >= ENGLISH_SHARE


def _no_words(response: str, words: list[str], query: str) -> GuardHit | None:
    letters = _LETTERS.findall(response.lower())
    total = sum(len(word) for word in letters)
    if total == 0:
        if _UNSEGMENTED_CHAR.search(response):  # a script without spaces: nothing to look up
            return None
        return GuardHit("no_words", "the response has no word at all, only numbers or symbols")
    if _known_share(letters, [_vocabulary("en")]) >= MIN_KNOWN_LETTER_SHARE:
        return None  # English words alone suffice; the languages below can only add known words
    languages = {"en"}
    for text in (query, response):
        language, confidence = _language_of(text)
        if confidence >= 0.5 and language != "zxx":  # zxx: the detector's "no linguistic content"
            if language not in _wordfreq_lists():
                return None  # a language the word list does not cover: cannot tell
            languages.add(language)
    share = _known_share(letters, [_vocabulary(language) for language in sorted(languages)])
    if share >= MIN_KNOWN_LETTER_SHARE:
        return None
    return GuardHit("no_words", f"only {share:.0%} of its letters are in known words of {'/'.join(sorted(languages))} "
                                f"(threshold {MIN_KNOWN_LETTER_SHARE:.0%})")


def _language(response: str, words: list[str], query: str) -> GuardHit | None:
    prose = _prose(response)
    if sum(map(len, _LETTERS.findall(prose))) + len(_UNSEGMENTED_CHAR.findall(prose)) < MIN_LANGUAGE_LETTERS:
        return None
    if _mostly_english(query) and _mostly_english(response):
        return None
    asked, asked_confidence = _language_of(query)
    if asked_confidence < LANGUAGE_CONFIDENCE or asked == "zxx":
        return None
    ranked = dict(_identifier().rank(prose))
    answered = max(ranked, key=ranked.__getitem__)
    if answered == asked or ranked[answered] < LANGUAGE_CONFIDENCE or ranked.get(asked, 0.0) >= LANGUAGE_DOUBT:
        return None
    return GuardHit("language", f"the response is in {answered} (p={ranked[answered]:.2f}) but the query is in {asked} "
                                f"(p={asked_confidence:.2f})")


def _refusal(response: str, words: list[str], query: str) -> GuardHit | None:
    clauses = [clause for clause in _CLAUSE_END.split(response.strip()) if tokens(clause)]
    if not any(REFUSAL.search(clause) for clause in clauses[:REFUSAL_OPENING]):
        return None
    answer = sum(len(tokens(clause)) for clause in clauses
                 if not any(pattern.search(clause) for pattern in (REFUSAL, REFERRAL, APOLOGY)))
    if answer >= MIN_ANSWER_TOKENS:
        return None
    return GuardHit("refusal", f"the response declines to answer, with {answer} word token(s) besides its refusal and "
                               f"referrals (at least {MIN_ANSWER_TOKENS} are needed)")


def _prose(text: str) -> str:
    """The text without code, URLs and table rules: what a language detector should read."""
    for pattern in (_CODE_BLOCK, _INLINE_CODE, _URL, _TABLE_RULE):
        text = pattern.sub(" ", text)
    return text.replace("|", " ")


def _language_of(text: str) -> tuple[str, float]:
    language, confidence = _identifier().classify(_prose(text))
    return str(language), float(confidence)


@functools.lru_cache(maxsize=1)
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@dataclass(frozen=True)
class Vocabulary:
    """The words of one language's `wordfreq` list, split at `MIN_SHORT_WORD_FREQUENCY`: a word of two or
    three letters is known only among the `common` ones."""

    common: set[str]
    rare: set[str]

    def knows(self, word: str) -> bool:
        return word in self.common or (len(word) > 3 and word in self.rare)


CB_FORMAT = {"format": "cB", "version": 1}
"""The header of a `wordfreq` list (`wordfreq.read_cBpack`): then one list of words per centibel of
frequency, the i-th at 10 ** (-i / 100)."""


@functools.lru_cache(maxsize=1)
def _wordfreq_lists() -> dict[str, Path]:
    """`wordfreq`'s best list of each language (`large_`, else `small_`), as `wordfreq.available_languages()`
    finds them: read from its data folder without importing wordfreq, whose own imports (ftfy, langcodes)
    take longer than reading a list, and would come before a run's first judge call."""
    spec = importlib.util.find_spec("wordfreq")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the response guards need wordfreq's word lists: pip install wordfreq")
    folder = Path(next(iter(spec.submodule_search_locations))) / "data"
    return {path.name.split(".")[0].split("_", 1)[1]: path
            for size in ("small", "large") for path in sorted(folder.glob(f"{size}_*.msgpack.gz"))}


@functools.lru_cache(maxsize=None)
def _vocabulary(language: str) -> Vocabulary:
    import msgpack  # wordfreq's own format

    path = _wordfreq_lists()[language]
    with gzip.open(path, "rb") as packed:
        header, *lists = msgpack.unpackb(packed.read(), raw=False)
    if header != CB_FORMAT:
        raise ValueError(f"{path}: not a wordfreq word list of the format the guards read ({CB_FORMAT}), got {header!r}")
    common: set[str] = set()
    rare: set[str] = set()
    for centibels, words in enumerate(lists):
        (common if 10 ** (-centibels / 100) >= MIN_SHORT_WORD_FREQUENCY else rare).update(words)
    return Vocabulary(common, rare)
