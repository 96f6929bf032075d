"""The judge block a BESPOKE score carries in a framework's log (`frameworks.importing.JUDGE_KEY`), as the tests
of `bespoke import` write it."""

from __future__ import annotations

from typing import Any

from bespoke_metric.judging.guards import GUARDS_VERSION

JUDGE = "openai:judge-model"


def judge_block(answered: int, **fields: Any) -> dict[str, Any]:
    """`JUDGE`'s block, its model having answered `answered` calls; `fields` added or replaced."""
    return {"spec": JUDGE, "engine": "openai", "model": "judge-model", "protocol_version": "2.x", "max_shots": 5,
            "guards": GUARDS_VERSION, "proxy": False, "served_models": {"judge-model": answered}, **fields}
