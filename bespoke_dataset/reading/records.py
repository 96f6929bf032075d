"""From raw rows to the typed records of each config, validating as it goes.

Error policy (documented in the card): a problem that makes the release ambiguous or unreadable -- a
missing table or column, a malformed JSON payload, a wrong payload shape, an unreadable query id, a
duplicate (user, query_id) in the query table -- raises BespokeDataError naming the
table/file, the row and the field. Everything else is read, and what had to fall back is recorded in
`Notes` (see `payloads` and `histories` for the forms read): a judged example whose judgment or score
cannot be read is dropped, missing feedback is kept empty, an exact duplicate response (or claim or rubric
row) is dropped, a session without a readable time keeps its table order, a chat without turns and a search
session without a query are read as plain text, a query that lacks shots, a rubric or claims is left out of
`benchmark`.
`build_records` then warns once per table that fell back (`Notes.warn`).

Shot and meta-test tables may hold one row per query or one row per judged response: the rows of one query
are merged in table order. Gold information and rubric tables may hold one row per query or several (one per
claim or rubric item, as the Hub card's "UUID per gold info item" reads): a query's claims are those of its
rows in table order, each row's in its own order; its rubric is its rows' rubrics in table order, joined by
`RUBRIC_ITEM_SEPARATOR`. `bespoke info --check` counts the queries read so (`SEVERAL_ROWS`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..errors import BespokeDataError
from ..keys import natural_key, normalise_query_id, query_key
from .histories import read_history
from .notes import Notes
from .payloads import claims, json_field, judged_response, response_items, rubric, text_field
from .raw import TABLES, RawRelease, RawRow, typed_rows
from .timestamps import read_time

Record = dict[str, Any]
Key = tuple[str, str]
Part = TypeVar("Part")

RUBRIC_ITEM_SEPARATOR = "\n"
"""Between the rubrics of a query's rows: one item a line, as a rubric written as a JSON list reads."""
SEVERAL_ROWS = "queries in several rows"
"""The notes' name for the queries of a gold information or rubric table read from several rows."""


def _key(row: RawRow, notes: Notes) -> Key:
    user = text_field(row, "user").strip()
    raw = row.fields.get("query-id")
    try:
        query_id = normalise_query_id(raw)
    except ValueError as error:
        raise BespokeDataError(row.where, str(error), field="query-id") from error
    if raw != query_id:
        notes.count(row.table, "query ids normalised", f"{row.where}: {raw!r} -> {query_id!r}")
    return user, query_id


def _rows(release: RawRelease, table: str, notes: Notes, columns: tuple[str, ...] | None = None,
          unit: str = "rows") -> list[RawRow]:
    rows = release.rows(table, columns)
    for row in rows:
        notes.row(table, row.where, unit)
    return rows


def _unique(rows: Iterable[RawRow], notes: Notes) -> dict[Key, RawRow]:
    """Rows by (user, query_id); a second row with the same key is an error naming both."""
    seen: dict[Key, RawRow] = {}
    for row in rows:
        key = _key(row, notes)
        if key in seen:
            raise BespokeDataError(row.where, f"duplicate (user, query_id) {query_key(*key)!r}, "
                                   f"already given by {seen[key].where}", field="query-id")
        seen[key] = row
    return seen


def _by_query(rows: Iterable[RawRow], notes: Notes) -> dict[Key, list[RawRow]]:
    """Rows by (user, query_id): each query's rows in table order."""
    groups: dict[Key, list[RawRow]] = {}
    for row in rows:
        groups.setdefault(_key(row, notes), []).append(row)
    return groups


def _ordered(by_key: dict[Key, Any]) -> list[Any]:
    """Values in (user, query_id) order: user2 before user10, query 6 before query 12."""
    return [by_key[k] for k in sorted(by_key, key=lambda k: (natural_key(k[0]), int(k[1])))]


# ---------------------------------------------------------------- configs

def queries(release: RawRelease, notes: Notes) -> list[Record]:
    """From the query table (Hub layout) or from the shot files (GitHub layout)."""
    if release.layout == "hub":
        rows = _unique(_rows(release, "queries", notes), notes)
        return _ordered({k: {"user": k[0], "query_id": k[1], "query": text_field(r, "query"),
                            "gold_information_need": text_field(r, "gold_information_need")} for k, r in rows.items()})
    records: dict[Key, Record] = {}
    column = "evaluation_shot_value"
    for key, row in _unique(release.rows("evaluation_shot"), notes).items():
        payload = json_field(row, column)
        fields = {name: payload.get(name) if isinstance(payload, dict) else None
                  for name in ("query", "gold_information_need")}
        for name, value in fields.items():
            if not isinstance(value, str):
                raise BespokeDataError(row.where, "expected a string", field=f"{column}.{name}")
        records[key] = {"user": key[0], "query_id": key[1], **fields}
    return _ordered(records)


SESSION_TABLES: tuple[tuple[str, str], ...] = (("chat_history", "chat"), ("search_history", "search"))


def _session_id(row: RawRow, notes: Notes) -> str:
    """The row's `id` as text: a UUID or other string as it is, a number without a fractional ``.0``."""
    raw = row.fields.get("id")
    if isinstance(raw, str):
        return raw
    if isinstance(raw, (bytes, uuid.UUID)) and len(getattr(raw, "bytes", raw)) == 16:
        notes.count(row.table, "ids read from binary UUIDs", row.where)
        return str(raw if isinstance(raw, uuid.UUID) else uuid.UUID(bytes=raw))
    if isinstance(raw, float) and raw.is_integer():
        raw = int(raw)
    if isinstance(raw, int) and not isinstance(raw, bool):
        notes.count(row.table, "ids written as numbers", row.where)
        return str(raw)
    raise BespokeDataError(row.where, f"missing or unreadable session id {raw!r}", field="id")


def _sessions(release: RawRelease, notes: Notes, columns: tuple[str, ...] | None) -> list[tuple[str, str, str, RawRow]]:
    """``(user, session id, source, row)`` for every row of both history tables, chat first, then sorted by
    user (stably: table and row order kept per user). `columns` are read (None: all the table has).

    The one place session ids are decided, so `histories` and `benchmark.history_ids` agree: the raw id as
    text (`_session_id`), except for a user whose ids collide across the two tables (a release that numbers
    each table from 0): all that user's ids become ``chat:<id>`` / ``search:<id>``. Two sessions of a user
    with the same final id (a repeated row) raise BespokeDataError naming both rows.
    """
    raw: list[tuple[str, str, str, RawRow]] = []
    ids_by_table: dict[tuple[str, str], set[str]] = {}
    for table, source in SESSION_TABLES:
        for row in _rows(release, table, notes, columns, unit="sessions"):
            user = text_field(row, "user").strip()
            raw_id = _session_id(row, notes)
            raw.append((user, raw_id, source, row))
            ids_by_table.setdefault((user, source), set()).add(raw_id)
    users = {user for user, _ in ids_by_table}
    qualified = {user for user in users
                 if ids_by_table.get((user, "chat"), set()) & ids_by_table.get((user, "search"), set())}
    sessions: list[tuple[str, str, str, RawRow]] = []
    seen: dict[tuple[str, str], str] = {}
    for user, raw_id, source, row in raw:
        session_id = f"{source}:{raw_id}" if user in qualified else raw_id
        if (user, session_id) in seen:
            raise BespokeDataError(row.where, f"duplicate session id {session_id!r} for {user}, "
                                   f"already given by {seen[user, session_id]}", field="id")
        seen[user, session_id] = row.where
        sessions.append((user, session_id, source, row))
    sessions.sort(key=lambda s: natural_key(s[0]))  # stable: keeps table and row order per user
    return sessions


def _history(row: RawRow, source: str, notes: Notes) -> dict[str, Any]:
    """The parsed structure of one session, its fallbacks recorded."""
    parsed, form = read_history(text_field(row, "history"), source)
    notes.form(row.table, form, row.where)
    given = row.fields.get("timestamp")
    if given is not None:
        own = read_time(given)
        if own is None:
            notes.fallback(row.table, "timestamp column unreadable, time read from the text", row.where,
                           "timestamp", repr(given))
        else:
            parsed["timestamp"] = own
    if parsed["timestamp"] is None:
        notes.fallback(row.table, "no readable time, kept in table order", row.where)
    if source == "chat" and not parsed["turns"]:
        notes.fallback(row.table, "no speaker turns, read as plain text", row.where)
    if source == "search" and not parsed["search_queries"]:
        notes.fallback(row.table, "no search query found", row.where)
    return dict(parsed)


def histories(release: RawRelease, notes: Notes) -> list[Record]:
    """Both history tables, chat first; parsed structure added to each session (ids: see `_sessions`)."""
    return [{"user": user, "id": session_id, "source": source, "text": text_field(row, "history"),
             **_history(row, source, notes)}
            for user, session_id, source, row in _sessions(release, notes, None)]


def judged(release: RawRelease, table: str, notes: Notes) -> dict[Key, list[Record]]:
    """The judged responses of a shot/meta-test table by query, each with `index`, its position among the
    query's responses: the rows of one query merged in table order (one row per query or one per
    response), examples that cannot be read and exact repeats of an earlier response dropped."""
    column = TABLES[table].payload
    assert column is not None
    by_key: dict[Key, list[Record]] = {}
    for key, rows in _by_query(_rows(release, table, notes), notes).items():
        group = by_key[key] = []
        items = [(row, offset, item) for row in rows for offset, item in enumerate(response_items(row, column, notes))]
        for index, (row, offset, item) in enumerate(items):
            path = f"{column}.response_list[{offset}]"
            record = judged_response(row, path, item, notes)
            if record is None:
                continue
            if any({k: v for k, v in earlier.items() if k != "index"} == record for earlier in group):
                notes.fallback(table, "exact duplicate of an earlier response of its query, dropped", row.where, path)
                continue
            group.append({"index": index, **record})
        layout = ("queries in one row" if len(rows) == 1 else "queries in one row per response" if len(rows) == len(items)
                  else "queries in several rows of several responses")
        notes.form(table, layout, query_key(*key))
    return by_key


def _judged_config(table: str) -> Callable[[RawRelease, Notes], list[Record]]:
    def build(release: RawRelease, notes: Notes) -> list[Record]:
        records = {key: [{"user": key[0], "query_id": key[1], **r} for r in group]
                   for key, group in judged(release, table, notes).items()}
        return [r for group in _ordered(records) for r in group]
    build.__doc__ = f"One row per judged response of the {table} table."
    return build


def _joined(release: RawRelease, table: str, notes: Notes, field: str, read: Callable[[RawRow, str, Notes], Part],
            join: Callable[[list[Part]], Part]) -> list[Record]:
    """One record per query of `table`, its `field` the `join` of what `read` finds in each of the query's rows
    (table order); a query read from several rows is counted (`SEVERAL_ROWS`), and a row that repeats an
    earlier one of its query exactly is dropped (a fallback), so no claim counts twice."""
    column = TABLES[table].payload
    assert column is not None
    records: dict[Key, Record] = {}
    for key, rows in _by_query(_rows(release, table, notes), notes).items():
        if len(rows) > 1:
            notes.count(table, SEVERAL_ROWS, query_key(*key))
        kept: dict[Any, RawRow] = {}
        for row in rows:
            if row.fields[column] in kept:
                notes.fallback(table, "exact repeat of an earlier row of its query, dropped", row.where, column,
                               f"as {kept[row.fields[column]].where}")
                continue
            kept[row.fields[column]] = row
        records[key] = {"user": key[0], "query_id": key[1], field: join([read(row, column, notes) for row in kept.values()])}
    return _ordered(records)


def gold_claims(release: RawRelease, notes: Notes) -> list[Record]:
    """A query's claims: its rows' in table order, each row's in its own order."""
    return _joined(release, "gold_information", notes, "claims", claims, lambda parts: [c for part in parts for c in part])


def rubrics(release: RawRelease, notes: Notes) -> list[Record]:
    """A query's rubric: its rows' in table order, joined by `RUBRIC_ITEM_SEPARATOR`."""
    return _joined(release, "personalized_rubric", notes, "rubric", rubric, RUBRIC_ITEM_SEPARATOR.join)


def _history_ids(release: RawRelease, notes: Notes) -> dict[str, list[str]]:
    """Each user's session ids, in `histories` order (the same ids: both come from `_sessions`)."""
    if release.layout == "github":
        return {}
    ids: dict[str, list[str]] = {}
    for user, session_id, _, _ in _sessions(release, notes, ("user", "id")):
        ids.setdefault(user, []).append(session_id)
    return ids


BENCHMARK = "benchmark"
"""The notes' name for the joined config (its rows are queries, not rows of one table)."""


def benchmark(release: RawRelease, notes: Notes) -> list[Record]:
    """One row per query with everything needed to judge it; incomplete queries left out (a fallback).

    In the GitHub layout, which has no histories, `history_ids` is empty.
    """
    shots = {key: [{k: v for k, v in r.items() if k != "index"} for r in group]
             for key, group in judged(release, "evaluation_shot", notes).items()}
    rubric_of = {(r["user"], r["query_id"]): r["rubric"] for r in rubrics(release, notes)}
    claims_of = {(r["user"], r["query_id"]): r["claims"] for r in gold_claims(release, notes)}
    history_ids = _history_ids(release, notes)
    query_records = queries(release, notes)
    records: list[Record] = []
    for query in query_records:
        key = (query["user"], query["query_id"])
        notes.row(BENCHMARK, query_key(*key), unit="queries")
        missing = [name for name, found in (("shots (evaluation_shot)", shots.get(key)),
                                            ("rubric (personalized_rubric)", key in rubric_of),
                                            ("claims (gold_information)", claims_of.get(key))) if not found]
        if missing:
            notes.fallback(BENCHMARK, f"query left out, no {', no '.join(missing)}", query_key(*key))
            continue
        records.append({**query, "rubric": rubric_of[key], "shots": shots[key], "claims": claims_of[key],
                        "history_ids": history_ids.get(query["user"], [])})
    known = {(r["user"], r["query_id"]) for r in query_records}
    for key in sorted((set(shots) | set(rubric_of) | set(claims_of)) - known):
        notes.fallback(BENCHMARK, "shots, rubric or claims ignored, query missing from the query table", query_key(*key))
    return records


BUILDERS: dict[str, Callable[[RawRelease, Notes], list[Record]]] = {
    "queries": queries,
    "histories": histories,
    "rj_pairs": _judged_config("evaluation_shot"),
    "meta_test": _judged_config("meta_test"),
    "gold_claims": gold_claims,
    "rubrics": rubrics,
    "benchmark": benchmark,
}


def build_records(config: str, release: RawRelease, notes: Notes | None = None) -> list[Record]:
    """The records of `config` (one of `features.CONFIGS`) from a raw release, or as an export holds them
    (read back whole: they were built, checked and typed when the export was written). What fell back is
    recorded in `notes` when given; otherwise one BespokeDataWarning per table that fell back says so."""
    if release.layout == "typed":
        return typed_rows(release.path, config)
    own = notes is None
    notes = Notes() if notes is None else notes
    records = BUILDERS[config](release, notes)
    if own:
        notes.warn()
    return records
