"""Degenerate completions a policy might drift to when the reward overrates them: the reward's acceptance
check (`tests/hub/test_reward.py`, `benchmarks/reward_guards.py`) scores these against real answers."""

from __future__ import annotations

import random
import string
from typing import Any

FLOOR = 0.16
"""The lowest judged reward on the default (paper) scale: 1 on every dimension (0.2 each), no claim."""
FILLER_SENTENCE = "This is a really helpful and detailed answer to your question."


def degenerate_completions(query: str, rng: random.Random) -> dict[str, str]:
    """Degenerate completions for one query, by name: the issue's six (empty, "ok", 300 random letters, the
    query echoed, one sentence repeated 40 times, a line of punctuation) and four more a policy finds next
    ("ok ok ok", "ok" said 25 times, 300 random printable characters, 60 random numbers)."""
    printable = string.ascii_letters + string.digits + string.punctuation
    return {
        "empty": "",
        "ok": "ok",
        "random letters": "".join(rng.choice(string.ascii_letters) for _ in range(300)),
        "query echoed": query,
        "sentence x40": " ".join([FILLER_SENTENCE] * 40),
        "punctuation": "!?.,;:-*" * 10,
        "ok ok ok": "ok ok ok",
        "ok x25": "ok " * 25,
        "random printable": "".join(rng.choice(printable) for _ in range(300)),
        "random numbers": " ".join(str(rng.randint(0, 9999)) for _ in range(60)),
    }


def acceptance_rewards(source: str, judge: str, *, guards: bool, seed: int = 0) -> dict[str, list[float]]:
    """Rewards by completion name ("real" for the real answers: every R-J example and held-out meta-test
    response) over every query of `source`, all scored in one batch by `make_reward_fn(judge)`."""
    import bespoke_dataset

    from ..reward import make_reward_fn

    rng = random.Random(seed)
    rows = list(bespoke_dataset.load("benchmark", source=source))
    meta = list(bespoke_dataset.load("meta_test", source=source))
    kinds: list[str] = []
    completions: list[str] = []
    users: list[str] = []
    query_ids: list[str] = []

    def add(kind: str, text: str, row: dict[str, Any]) -> None:
        kinds.append(kind)
        completions.append(text)
        users.append(row["user"])
        query_ids.append(row["query_id"])

    by_key = {(row["user"], row["query_id"]): row for row in rows}
    for row in rows:
        for kind, text in degenerate_completions(row["query"], rng).items():
            add(kind, text, row)
        for shot in row["shots"]:
            add("real", shot["response"], row)
    for response in meta:
        add("real", response["response"], by_key[(response["user"], response["query_id"])])
    reward = make_reward_fn(judge, source=source, guards=guards)
    values = reward([""] * len(completions), completions, user=users, query_id=query_ids)
    table: dict[str, list[float]] = {}
    for kind, value in zip(kinds, values, strict=True):
        table.setdefault(kind, []).append(value)
    return table
