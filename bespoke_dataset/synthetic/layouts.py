"""The same release in the other layouts the real one plausibly has: for tests, benchmarks, and for checking
that a pipeline of your own reads them all.

`rewrite(source, target, variant)` copies a Hub-layout release (a synthetic one: its texts are parsed back
from the generator's formats) and rewrites its tables, keeping every record's content:

* ``per_response``: shots and meta-test one row per judged response (a `response_list` of one, with the
  query and need), UUID row ids; query ids written ``query_id_N``; claims as a JSON list; rubrics as JSON
  strings; search history as Google My Activity text (``Searched for ...``, ``Visited ...``, dates written
  out in UTC, newest first); chats as JSON message lists with a time per message.
* ``response_objects``: one row per judged response whose payload is the response object itself, integer
  row ids, scores as digit strings and whole floats; query ids written ``qN`` in one table and
  ``query-id_N`` in another; claims one a line with list markers; rubrics as JSON lists of their lines;
  search history as Takeout's My Activity JSON; chats as ``{"messages": [...], "create_time": <Unix>}``.
* ``per_item``: as ``per_response``, but gold information one row per claim and rubrics one row per line (a
  UUID row id each, the claim or line as plain text), as the Hub card's "UUID per gold info item" and "UUID
  per rubric item" read.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

VARIANTS = ("per_response", "response_objects", "per_item")
SHOTS = "evaluation_shot/evaluation_shot.parquet"
META = "meta_test/meta_test_set.parquet"
CLAIMS = "gold_information/gold_information.parquet"
RUBRICS = "personalized_rubric/personalized_rubric.parquet"
QUERIES = "queries/query_table.parquet"
CHATS = "chat_history/chat_history.parquet"
SEARCHES = "search_history/search_history.parquet"

_BARE_ID = re.compile(r"(\d+)$")
_CHAT_START = re.compile(r"^Conversation started: (\d{4}-\d{2}-\d{2} \d{2}:\d{2})$")
_TURN = re.compile(r"^(User|Assistant): (.*)$")
_SEARCH = re.compile(r"^(?:\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\] )?Searched: (.+)$")
_LINK = re.compile(r"^\s+-> (\S+)$")


def _rows(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def _write(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    pq.write_table(pa.table({c: [r[c] for r in rows] for c in columns}), path)


def _digits(query_id: str) -> str:
    return _BARE_ID.search(query_id).group(1)


def _query_id(query_id: str, spelling: str) -> str:
    return spelling.format(n=_digits(query_id))


def _scores_as(item: dict[str, Any], variant: str, counter: list[int]) -> dict[str, Any]:
    if variant != "response_objects":
        return item
    out = dict(item)
    for key, judgment in item.items():
        if isinstance(judgment, dict) and "score" in judgment:
            counter[0] += 1
            score = int(judgment["score"])
            out[key] = {**judgment, "score": float(score) if counter[0] % 2 else str(score)}
    return out


def _judged(path: Path, column: str, variant: str, spelling: str) -> None:
    rows, counter = [], [0]
    for number, row in enumerate(_rows(path)):
        payload = json.loads(row[column])
        for item in payload["response_list"]:
            item = _scores_as(item, variant, counter)
            if variant == "per_response":
                body = {"query": payload["query"], "gold_information_need": payload["gold_information_need"],
                        "response_list": [item]}
                row_id: Any = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{path.name}/{number}/{len(rows)}"))
            else:
                body, row_id = item, len(rows)
            rows.append({"user": row["user"], "query-id": _query_id(row["query-id"], spelling), "id": row_id,
                         column: json.dumps(body)})
    _write(path, rows, ["user", "query-id", "id", column])


def _claims(path: Path, variant: str, spelling: str) -> None:
    rows = _rows(path)
    for row in rows:
        claims = json.loads(row["gold_information_value"])["gold_information"]
        row["gold_information_value"] = (json.dumps(claims) if variant == "per_response"
                                         else "\n".join(f"{i}. {c}" if i % 2 else f"- {c}" for i, c in enumerate(claims)))
        row["query-id"] = _query_id(row["query-id"], spelling)
    _write(path, rows, ["user", "query-id", "id", "gold_information_value"])


def _rubrics(path: Path, variant: str, spelling: str) -> None:
    rows = _rows(path)
    for row in rows:
        text = row["personalized_rubric_value"]
        row["personalized_rubric_value"] = json.dumps(text if variant == "per_response" else text.split("\n"))
        row["query-id"] = _query_id(row["query-id"], spelling)
    _write(path, rows, ["user", "query-id", "id", "personalized_rubric_value"])


def _per_item(path: Path, column: str, items_of: Any) -> None:
    """The table at `path` rewritten one row per item, in row order (`items_of(value)`: a row's items), each
    with a UUID row id."""
    rows = [{**row, "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{path.name}/{number}/{offset}")), column: item}
            for number, row in enumerate(_rows(path)) for offset, item in enumerate(items_of(row[column]))]
    _write(path, rows, ["user", "query-id", "id", column])


def _written_out(iso: str) -> str:
    """``2025-03-03 07:00:00`` as Google writes it: ``Mar 3, 2025, 7:00:00 AM UTC``."""
    moment = datetime.fromisoformat(iso)
    return f"{moment:%b} {moment.day}, {moment.year}, {moment.hour % 12 or 12}:{moment:%M:%S} {moment:%p} UTC"


def _search_entries(text: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for line in text.split("\n"):
        if match := _SEARCH.match(line):
            entries.append({"query": match.group(2), "time": match.group(1), "links": []})
        elif match := _LINK.match(line):
            entries[-1]["links"].append(match.group(1))
    return entries


def _search_text(text: str, variant: str) -> str:
    entries = _search_entries(text)
    if not entries:
        return text
    if variant == "per_response":  # My Activity text, newest first
        lines: list[str] = []
        for entry in reversed(entries):
            for link in entry["links"]:
                lines += [f"Visited {link}"] + ([_written_out(entry["time"])] if entry["time"] else [])
            lines += [f"Searched for {entry['query']}"] + ([_written_out(entry["time"])] if entry["time"] else [])
            lines.append("Search")
        return "\n".join(lines)
    activity = []
    for entry in reversed(entries):
        time = {"time": datetime.fromisoformat(entry["time"]).replace(tzinfo=timezone.utc).isoformat()
                .replace("+00:00", "Z")} if entry["time"] else {}
        activity.append({"header": "Search", "title": f"Searched for {entry['query']}", **time, "products": ["Search"]})
        activity += [{"header": "Search", "title": f"Visited {link}", "titleUrl": link, **time} for link in entry["links"]]
    return json.dumps(activity)


def _chat_text(text: str, variant: str) -> str:
    lines = text.split("\n")
    start = _CHAT_START.match(lines[0]) if lines else None
    turns = [m.groups() for line in lines[1:] if (m := _TURN.match(line))]
    if start is None or not turns:
        return text  # free-form notes stay plain text
    moment = datetime.fromisoformat(start.group(1))
    messages = [{"role": role.lower(), "content": content} for role, content in turns]
    if variant == "per_response":
        for number, message in enumerate(messages):
            message["timestamp"] = moment.replace(second=number).isoformat()
        return json.dumps(messages)
    return json.dumps({"create_time": moment.replace(tzinfo=timezone.utc).timestamp(), "messages": messages})


def _histories(path: Path, variant: str, rewrite_text: Any) -> None:
    rows = _rows(path)
    for row in rows:
        row["history"] = rewrite_text(row["history"], variant)
    _write(path, rows, ["user", "id", "history"])


def rewrite(source: Path, target: Path, variant: str) -> Path:
    """A copy of the Hub-layout release `source` at `target`, rewritten as `variant` (see the module)."""
    if variant not in VARIANTS:
        raise ValueError(variant)
    if variant == "per_item":
        rewrite(source, target, "per_response")
        _per_item(target / CLAIMS, "gold_information_value", json.loads)
        _per_item(target / RUBRICS, "personalized_rubric_value", lambda value: json.loads(value).split("\n"))
        return target
    shutil.copytree(source, target)
    spellings = ({"shots": "query_id_{n}", "other": "query_id_{n}"} if variant == "per_response"
                 else {"shots": "q{n}", "other": "query-id_{n}"})
    _judged(target / SHOTS, "evaluation_shot_value", variant, spellings["shots"])
    _judged(target / META, "meta_test_set_value", variant, spellings["other"])
    _claims(target / CLAIMS, variant, spellings["other"])
    _rubrics(target / RUBRICS, variant, spellings["shots"])
    queries = _rows(target / QUERIES)
    for row in queries:
        row["query-id"] = _query_id(row["query-id"], spellings["other"])
    _write(target / QUERIES, queries, ["user", "query-id", "query", "gold_information_need"])
    _histories(target / SEARCHES, variant, _search_text)
    _histories(target / CHATS, variant, _chat_text)
    return target
