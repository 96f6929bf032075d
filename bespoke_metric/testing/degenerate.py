"""Degenerate completions a policy might drift to when the reward overrates them: the reward's acceptance
check (`tests/test_reward.py`, `benchmarks/reward_guards.py`) scores these against real answers."""

from __future__ import annotations

import random
import string

FILLER_SENTENCE = "This is a really helpful and detailed answer to your question."


def degenerate_completions(query: str, rng: random.Random) -> dict[str, str]:
    """Six degenerate completions for one query, by name: empty, "ok", 300 random letters, the query
    echoed, one sentence repeated 40 times, a line of punctuation."""
    return {
        "empty": "",
        "ok": "ok",
        "random letters": "".join(rng.choice(string.ascii_letters) for _ in range(300)),
        "query echoed": query,
        "sentence x40": " ".join([FILLER_SENTENCE] * 40),
        "punctuation": "!?.,;:-*" * 10,
    }
