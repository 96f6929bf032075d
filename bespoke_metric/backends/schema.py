"""Holding an answer to its JSON schema: how an engine does it, and the schema an engine that compiles it takes.

A structured request carries its JSON schema (`base.Request.json_schema`). An engine that holds the answer to
it names how in `Backend.constraint`: `GRAMMAR` (it compiles the schema into a grammar masking the model's
next tokens) or `JSON_SCHEMA` (its server holds the answer to the schema); `LINES` says it can do neither. An engine that compiles the schema
itself (hf: with xgrammar, vllm:, a `vllm serve` or llama.cpp server behind `openai:`) compiles
`bounded_schema(schema, max_tokens)`: every free string gets a `maxLength`, so a model that loops inside one
is made to close it, and the whole answer ends within the request's output limit. Pure.
"""

from __future__ import annotations

import json
from typing import Any

from bespoke_metric.backends.base import Requirement

GRAMMAR = "grammar"
"""`Backend.constraint` of an engine that compiles a request's schema into a grammar masking the model's
next tokens (hf: with xgrammar, vllm: in process); results record it as `judge.constraint`."""
GRAMMAR_REQUIREMENT = Requirement("xgrammar", "grammar", "holds JSON answers to their schema", option=GRAMMAR)
"""What an `hf:` judge's grammar needs (`Engine.requires`): said missing before any call."""

JSON_SCHEMA = "json-schema"
"""`Backend.constraint` of an engine that sends the schema to its server, which holds the answer to it
(`response_format` of an OpenAI-compatible API, Gemini's `response_json_schema`)."""

LINES = "lines"
"""`Backend.constraint` of an engine that can hold no answer to a schema and must not be sent one (a Claude the
catalogue says takes neither structured outputs nor a forced tool): a judge asks it for the paper's lines
instead of JSON, and results record it as `judge.constraint`."""

REASONING_SHARE = 4
"""How many shares of an answer's string budget a `reasoning` string gets; every other free string gets one."""


def bounded_schema(schema: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """`schema` with a `maxLength` on every free string (no `enum`, no `maxLength` of its own), so that an
    answer held to it ends within `max_tokens`: what the JSON around the strings takes (`skeleton_chars`,
    written compactly as a grammar writes it) is set aside, and the strings share the rest,
    `REASONING_SHARE` shares for a `reasoning`, one for every other. A grammar allows no escape in a bounded
    string, so at one token or more per character the answer cannot run past its limit. Pure."""
    strings = _free_strings(schema)
    if not strings:
        return schema
    budget = max(0, max_tokens - 1 - skeleton_chars(schema))  # 1: the end-of-turn token
    share = budget // sum(REASONING_SHARE if name == "reasoning" else 1 for name in strings)
    return _bounded(schema, "", share)


def _free_strings(schema: dict[str, Any], name: str = "") -> list[str]:
    """The property names of the free strings of `schema`, one per string an answer holds."""
    if schema.get("type") == "string" and "enum" not in schema and "maxLength" not in schema:
        return [name]
    if schema.get("type") == "object":
        return [found for key, child in schema.get("properties", {}).items() for found in _free_strings(child, key)]
    if schema.get("type") == "array":
        return _free_strings(schema.get("items", {}), name) * int(schema.get("maxItems", 1))
    return []


def _bounded(schema: dict[str, Any], name: str, share: int) -> dict[str, Any]:
    if schema.get("type") == "string" and "enum" not in schema and "maxLength" not in schema:
        return {**schema, "maxLength": share * (REASONING_SHARE if name == "reasoning" else 1)}
    if schema.get("type") == "object":
        return {**schema, "properties": {key: _bounded(child, key, share) for key, child in schema.get("properties", {}).items()}}
    if schema.get("type") == "array":
        return {**schema, "items": _bounded(schema.get("items", {}), name, share)}
    return schema


def skeleton_chars(schema: dict[str, Any]) -> int:
    """The characters of the longest answer to `schema` whose free strings are empty, written with `": "`
    and `", "` between parts (a grammar's compact layout): what the JSON around the strings takes."""
    kind = schema.get("type")
    if "enum" in schema:
        return max(len(json.dumps(value)) for value in schema["enum"])
    if kind == "object":
        parts = [len(json.dumps(key)) + 2 + skeleton_chars(child) for key, child in schema.get("properties", {}).items()]
        return 2 + sum(parts) + 2 * max(0, len(parts) - 1)
    if kind == "array":
        count = int(schema.get("maxItems", 1))
        return 2 + count * skeleton_chars(schema.get("items", {})) + 2 * max(0, count - 1)
    return {"string": 2, "boolean": 5, "null": 4}.get(str(kind), 20)  # 20: any number
