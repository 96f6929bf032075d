"""How requests and outcomes travel as rows of a Ray Data dataset: the one format the driver
(`ray_backend`) and the engines on the cluster (`workers`, `vllm_processor`) share."""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..base import CallError, Completion, Outcome, Request


def encode_request(request: Request) -> str:
    data: dict[str, Any] = {"messages": list(request.messages), "max_tokens": request.max_tokens,
                            "json_schema": request.json_schema}
    if request.tools:
        data["tools"] = list(request.tools)
    if request.native_search:
        data["native_search"] = True
    if request.reasoning_effort is not None:
        data["reasoning_effort"] = request.reasoning_effort
    return json.dumps(data)


def decode_request(text: str) -> Request:
    data = json.loads(text)
    return Request(tuple(data["messages"]), data["max_tokens"], data["json_schema"], tools=tuple(data.get("tools", ())),
                   native_search=bool(data.get("native_search")), reasoning_effort=data.get("reasoning_effort"))


def outcome_row(position: int, outcome: Outcome) -> dict[str, Any]:
    """One output row of a worker: an outcome in columns every row shares (`extras`: the completion's
    other fields as JSON text, `Completion.extras()`: tool calls, search record, token details)."""
    if isinstance(outcome, CallError):
        return {"position": position, "text": None, "input_tokens": 0, "output_tokens": 0, "truncated": False,
                "error": outcome.reason, "retryable": outcome.retryable, "extras": None}
    extras = outcome.extras()
    return {"position": position, "text": outcome.text, "input_tokens": outcome.input_tokens,
            "output_tokens": outcome.output_tokens, "truncated": outcome.truncated, "error": None, "retryable": False,
            "extras": json.dumps(extras) if extras else None}


def row_outcome(row: Mapping[str, Any]) -> Outcome:
    """The outcome an output row carries (the inverse of `outcome_row`)."""
    if row.get("error") is not None:
        return CallError(str(row["error"]), retryable=bool(row.get("retryable")))
    extras = json.loads(row["extras"]) if row.get("extras") else None
    return Completion.from_parts(str(row["text"]), int(row["input_tokens"]), int(row["output_tokens"]),
                                 bool(row["truncated"]), extras)
