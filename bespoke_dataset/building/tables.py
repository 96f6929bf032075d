"""Writing a built release: the seven tables of the public Hub layout, with the payloads it has.

Shot and meta-test rows are one per query, ``{"query", "gold_information_need", "response_list": [...]}``;
claims are ``{"gold_information": [...]}``; rubrics are text; histories are the sessions' texts, with their
given time in an extra `timestamp` column (the reader takes it before any time in the text). Row ids are
UUIDs derived from what the row is, so the same input builds the same files.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..reading.raw import TABLES
from .inputs import Inputs, Key

_ID_NAMESPACE = uuid.UUID("6f1f3c2e-2f4b-4b8e-9d59-1b0f4c9a7e21")


@dataclass(frozen=True)
class Split:
    """Each query's judged responses (``{"response", dim: {...}}``), as examples and held out."""

    shots: dict[Key, list[dict[str, Any]]]
    meta_test: dict[Key, list[dict[str, Any]]]


def _row_id(table: str, user: str, query_id: str) -> str:
    return str(uuid.uuid5(_ID_NAMESPACE, f"{table}/{user}/{query_id}"))


def _judged_payload(inputs: Inputs, key: Key, responses: list[dict[str, Any]]) -> str:
    query = inputs.queries[key]
    items = [{"contents": r["response"], **{k: v for k, v in r.items() if k != "response"}} for r in responses]
    return json.dumps({"query": query.query, "gold_information_need": query.gold_information_need,
                       "response_list": items}, ensure_ascii=False)


def table_rows(inputs: Inputs, split: Split, rubrics: Mapping[Key, str],
               claims: Mapping[Key, list[str]]) -> dict[str, list[dict[str, Any]]]:
    """Every table's rows, queries in `inputs.keys` order, sessions in input order."""
    keys = inputs.keys
    payloads = {
        "gold_information": lambda key: json.dumps({"gold_information": claims[key]}, ensure_ascii=False),
        "personalized_rubric": lambda key: rubrics[key],
        "meta_test": lambda key: _judged_payload(inputs, key, split.meta_test[key]),
        "evaluation_shot": lambda key: _judged_payload(inputs, key, split.shots[key]),
    }
    rows: dict[str, list[dict[str, Any]]] = {"queries": [
        {"user": u, "query-id": q, "query": inputs.queries[u, q].query,
         "gold_information_need": inputs.queries[u, q].gold_information_need} for u, q in keys]}
    for source in ("chat", "search"):
        rows[f"{source}_history"] = [{"user": s.user, "id": s.id, "history": s.text, "timestamp": s.timestamp}
                                     for s in inputs.sessions if s.source == source]
    for table, payload in payloads.items():
        column = TABLES[table].payload
        rows[table] = [{"user": u, "query-id": q, "id": _row_id(table, u, q), column: payload((u, q))}
                       for u, q in keys if table != "meta_test" or split.meta_test[u, q]]
    return {table: rows[table] for table in TABLES}


def _columns(table: str) -> list[str]:
    spec = TABLES[table]
    if spec.payload is not None and "query-id" in spec.columns:  # a payload per query: with a row id, as released
        return ["user", "query-id", "id", spec.payload]
    return [*spec.columns, *spec.optional]


def write_tables(folder: Path, rows: Mapping[str, list[dict[str, Any]]]) -> dict[str, int]:
    """Write each table as `folder/<table folder>/<its Hub file>` (every column a string); its rows by table."""
    for table, found in rows.items():
        spec = TABLES[table]
        columns = _columns(table)
        path = folder / spec.folder / spec.hub_file
        path.parent.mkdir(parents=True, exist_ok=True)
        schema = pa.schema([(column, pa.string()) for column in columns])
        pq.write_table(pa.table({c: [row[c] for row in found] for c in columns}, schema=schema), path)
    return {table: len(found) for table, found in rows.items()}
