"""Responses and human judgments of the synthetic release (data generation for `synthetic`).

R-J examples (shots) are graded: a response of quality 1-5 whose four human scores are that quality
± 1, and whose gold claims grow with the quality. Held-out meta-test responses are of five kinds, built
so that the human scores do NOT follow word overlap with the examples, as in real data:

- `paraphrase`: a close rewording of one example, with that example's scores (the easy case);
- `off_need`: fluent and on-topic, in the user's tone and style, but about the topic's periphery: it
  misses the need (need alignment 1, depth 2, tone and style 4) while sharing the topic's vocabulary;
- `padded`: every gold claim, verbatim, buried in filler (need 3, depth 3, tone 3, style 1);
- `terse`: two claims reworded in two lines in the user's tone and style (need 5, depth 3, tone and
  style 5): little overlap with the long examples;
- `mismatched`: the right content in the wrong tone and style (need 4, depth 4, tone 1, style 2).

Each of those scores moves by one point with probability `NOISE`, as human raters do.
"""

from __future__ import annotations

import random
import re
from typing import Any, Protocol

from bespoke_dataset.vocabulary import DIMENSIONS

from .topics import STYLES, TONES, Topic

META_KINDS: tuple[str, ...] = ("paraphrase", "off_need", "padded", "terse", "mismatched")
"""The kinds of held-out meta-test response (see the module docstring)."""

KIND_SCORES: dict[str, tuple[int, int, int, int]] = {
    "off_need": (1, 2, 4, 4),
    "padded": (3, 3, 3, 1),
    "terse": (5, 3, 5, 5),
    "mismatched": (4, 4, 1, 2),
}
"""Human scores per kind (need alignment, content depth, tone, explanation style) before rater noise."""
NOISE = 0.25


class Asker(Protocol):
    """Who the response is for: the synthetic user."""

    persona: str
    tone: str
    style: str


_SWAPS = {
    "usually": "typically", "helps": "aids", "important": "crucial", "should": "ought to", "about": "roughly",
    "much": "far", "most": "the majority of", "reduces": "cuts", "keeps": "maintains", "makes": "renders",
    "better": "preferable", "first": "initially", "often": "frequently", "large": "big", "cheap": "inexpensive",
    "good": "solid", "matters": "counts", "needs": "requires", "avoid": "prevent", "great": "excellent",
}
_SWAP_RE = re.compile(r"\b(" + "|".join(_SWAPS) + r")\b")


def paraphrase(text: str) -> str:
    """A close paraphrase: the same sentences with common words replaced by synonyms."""
    changed = _SWAP_RE.sub(lambda m: _SWAPS[m.group(1)], text)
    return changed if changed != text else f"Put simply: {text}"


_OPENERS = {
    "casual and friendly": "Hey! Good question about {name}.",
    "concise and neutral": "Short answer on {name}:",
    "formal and precise": "Regarding your question on {name}, the key considerations are as follows.",
    "warm and encouraging": "Great that you are looking into {name}; you are on the right track.",
}
_CLOSINGS = {
    "casual and friendly": "Have fun with it!",
    "concise and neutral": "That covers the essentials.",
    "formal and precise": "These points should allow a well-founded decision.",
    "warm and encouraging": "You can do this, one step at a time.",
}
_FILLERS = (
    "There are many factors to consider and every situation is different.",
    "It really depends on your personal preferences.",
    "You may want to do more research online before deciding anything.",
    "Opinions on this vary a lot between experts.",
    "This is a popular subject with plenty of resources available.",
)
_PADDING = (
    "Before getting into it, it is worth saying that nobody has all the answers here.",
    "Different sources will tell you different things, which can be confusing at first.",
    "A lot has been written over the years, and not all of it agrees.",
    "It is also worth keeping in mind that circumstances change from one person to the next.",
    "Some people find this part easy while others take longer, and both are normal.",
    "Of course, you know your own situation better than any general advice can.",
    "Many forums and blogs discuss this at great length, often with strong opinions.",
    "With that in mind, here is one more point that tends to come up.",
    "In the end, a bit of patience and some trial and error go a long way.",
    "All of this is general information rather than advice tailored to your case.",
    "People who have been through it often say they wish they had started sooner.",
    "There is rarely a single right way to go about it.",
)
_PERIPHERY = (
    "{Term} has a long history and a loyal following.",
    "Many guides discuss {term} and {other} in great detail.",
    "Enthusiasts like to compare notes about {term} online.",
    "The vocabulary around {other} can feel overwhelming when you first meet it.",
    "Magazines regularly run features on {term}.",
)


def _format(sentences: list[str], style: str) -> str:
    if style.startswith("numbered"):
        return "\n".join(f"{i}. {s}" for i, s in enumerate(sentences, 1))
    if style.startswith("bullet"):
        return "\n".join(f"- {s}" for s in sentences)
    if style.startswith("a quick summary"):
        return sentences[0] + "\n\nDetails: " + " ".join(sentences[1:])
    return " ".join(sentences)


def _capitalised(text: str) -> str:
    return text[0].upper() + text[1:]


def graded_response(user: Asker, topic: Topic, quality: int, rng: random.Random) -> tuple[str, list[int]]:
    """A response of the given quality (1-5) and the indices of the gold claims it conveys."""
    other_tone = rng.choice([t for t in TONES if t != user.tone])
    other_style = rng.choice([s for s in STYLES if s != user.style])
    claims = list(range(len(topic.claims)))
    rng.shuffle(claims)
    fillers = rng.sample(_FILLERS, 3)
    extras = list(topic.extras)
    rng.shuffle(extras)
    term = rng.choice(topic.terms)
    if quality >= 5:
        used = sorted(claims)
        body = [f"As a {user.persona}, you will want an approach that fits your days."]
        body += [topic.claims[i] for i in used] + extras[:1]
        tone, style = user.tone, user.style
    elif quality == 4:
        used = sorted(claims[:3])
        body = [topic.claims[used[0]]] + [paraphrase(topic.claims[i]) for i in used[1:]] + extras[:1]
        tone, style = user.tone, user.style
    elif quality == 3:
        used = sorted(claims[:2])
        body = [paraphrase(topic.claims[i]) for i in used] + extras + fillers[:1]
        tone, style = other_tone, other_style
    elif quality == 2:
        used = claims[:1]
        body = [f"People often ask about {term}."] + extras + [paraphrase(topic.claims[used[0]])] + fillers[:2]
        tone, style = other_tone, other_style
    else:
        used = []
        body = [f"{_capitalised(term)} is something many people are curious about."] + fillers
        tone, style = other_tone, other_style
    sentences = [_OPENERS[tone].format(name=topic.name)] + body + [_CLOSINGS[tone]]
    return _format(sentences, style), used


def kind_response(user: Asker, topic: Topic, kind: str, rng: random.Random) -> tuple[str, list[int]]:
    """A held-out response of one of the `META_KINDS` other than `paraphrase`, and the gold claims it conveys."""
    claims = list(range(len(topic.claims)))
    rng.shuffle(claims)
    other_tone = rng.choice([t for t in TONES if t != user.tone])
    other_style = rng.choice([s for s in STYLES if s != user.style])
    if kind == "off_need":
        term, other = rng.sample(topic.terms, 2)
        body = [line.format(Term=_capitalised(term), term=term, other=other) for line in rng.sample(_PERIPHERY, 3)]
        body += list(topic.extras)
        rng.shuffle(body)
        sentences = [_OPENERS[user.tone].format(name=topic.name), *body, _CLOSINGS[user.tone]]
        return _format(sentences, user.style), []
    if kind == "padded":
        padding = rng.sample(_PADDING, 2 * len(topic.claims) + 1)
        body = [padding.pop()]
        for index in sorted(claims):
            body += [padding.pop(), topic.claims[index], padding.pop()]
        return " ".join([_OPENERS[other_tone].format(name=topic.name), *body]), sorted(claims)
    if kind == "terse":
        used = sorted(claims[:2])
        return _format([paraphrase(topic.claims[i]) for i in used], user.style), used
    if kind == "mismatched":
        used = sorted(claims[:3])
        body = [topic.claims[i] for i in used] + [rng.choice(topic.extras)]
        sentences = [_OPENERS[other_tone].format(name=topic.name), *body, _CLOSINGS[other_tone]]
        return _format(sentences, other_style), used
    raise ValueError(f"unknown response kind {kind!r}; one of {', '.join(META_KINDS[1:])}")


_FEEDBACK = {
    "need_alignment": ("Does not get at what I wanted to know about {name}.",
                       "Partly addresses what I needed, but misses part of it.",
                       "Answers what I actually needed: {need}."),
    "content_depth": ("Too shallow; nothing concrete about {term}.",
                      "Some useful points, but {term} is only touched on.",
                      "Covers the specifics I care about, like {term}."),
    "tone": ("The tone feels off; I prefer {tone}.", "The tone is acceptable but not quite {tone}.",
             "The {tone} tone suits me."),
    "explanation_style": ("Hard to follow; I wanted {style}.", "Readable, though I would rather have {style}.",
                          "Easy to follow; I like {style}."),
}


def _judged(dim: str, score: int, user: Asker, topic: Topic, rng: random.Random) -> dict[str, Any]:
    band = 0 if score <= 2 else 1 if score == 3 else 2
    feedback = _FEEDBACK[dim][band].format(name=topic.name, need=topic.need, term=rng.choice(topic.terms),
                                           tone=user.tone, style=user.style)
    return {"score": score, "feedback": feedback}


def graded_judgment(user: Asker, topic: Topic, quality: int, rng: random.Random) -> dict[str, dict[str, Any]]:
    """The human judgment of a graded example: per dimension its quality ± 1 and feedback in the user's
    words (score, then feedback, dimension by dimension: the release's random stream depends on it)."""
    return {dim: _judged(dim, min(5, max(1, quality + rng.choice((-1, 0, 0, 0, 1)))), user, topic, rng)
            for dim in DIMENSIONS}


def judgment(user: Asker, topic: Topic, scores: dict[str, int], rng: random.Random) -> dict[str, dict[str, Any]]:
    """The human judgment for given scores: per dimension the score and feedback in the user's words."""
    return {dim: _judged(dim, scores[dim], user, topic, rng) for dim in DIMENSIONS}


def kind_scores(kind: str, rng: random.Random) -> dict[str, int]:
    """Human scores of a held-out response of `kind` (not `paraphrase`), with rater noise."""
    scores = {}
    for dim, base in zip(DIMENSIONS, KIND_SCORES[kind], strict=True):
        shift = rng.choice((-1, 1)) if rng.random() < NOISE else 0
        scores[dim] = min(5, max(1, base + shift))
    return scores
