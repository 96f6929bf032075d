"""From raw rows to the typed records of each config, validating as it goes.

Error policy (documented in the card): a problem that makes the release ambiguous or unreadable -- a
missing table or column, a malformed JSON payload, a wrong payload shape, an unreadable query id, a
duplicate (user, query_id) -- raises BespokeDataError naming the table/file, the row and the field.
A problem confined to one judged example (a judgment that is not an object, a score that is not an integer
1-5) drops that example with a BespokeDataWarning; missing or non-text feedback keeps the example with empty
feedback and a warning; a query that lacks shots, a rubric or claims is left out of `benchmark` with a
warning (the other configs keep what exists). Every warning names the table/file, the row and the field.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from .errors import BespokeDataError, BespokeDataWarning
from .vocabulary import DIMENSIONS, SCORE_RANGE
from .histories import parse_history
from .keys import natural_key, normalise_query_id, query_key
from .raw import TABLES, RawRelease, RawRow, typed_rows

Record = dict[str, Any]
Key = tuple[str, str]


def _text(row: RawRow, column: str) -> str:
    value = row.fields.get(column)
    if not isinstance(value, str):
        raise BespokeDataError(row.where, f"expected text, got {type(value).__name__}", field=column)
    return value


def _key(row: RawRow) -> Key:
    user = _text(row, "user").strip()
    try:
        query_id = normalise_query_id(row.fields.get("query-id"))
    except ValueError as error:
        raise BespokeDataError(row.where, str(error), field="query-id") from error
    return user, query_id


def _json(row: RawRow, column: str) -> Any:
    try:
        return json.loads(_text(row, column))
    except json.JSONDecodeError as error:
        raise BespokeDataError(row.where, f"malformed JSON payload ({error})", field=column) from error


def _unique(rows: Iterable[RawRow]) -> dict[Key, RawRow]:
    """Rows by (user, query_id); a second row with the same key is an error naming both."""
    seen: dict[Key, RawRow] = {}
    for row in rows:
        key = _key(row)
        if key in seen:
            raise BespokeDataError(row.where, f"duplicate (user, query_id) {query_key(*key)!r}, "
                                   f"already given by {seen[key].where}", field="query-id")
        seen[key] = row
    return seen


def _ordered(by_key: dict[Key, Any]) -> list[Any]:
    """Values in (user, query_id) order: user2 before user10, query 6 before query 12."""
    return [by_key[k] for k in sorted(by_key, key=lambda k: (natural_key(k[0]), int(k[1])))]


# ---------------------------------------------------------------- payloads

def _score(value: Any) -> int | None:
    """An integer score in 1-5 from an int, an integral float or a digit string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, float):
        if not value.is_integer():
            return None
        value = int(value)
    if isinstance(value, int) and SCORE_RANGE[0] <= value <= SCORE_RANGE[1]:
        return value
    return None


_MISSING: Any = object()


def _member(judgment: dict[str, Any], name: str) -> Any:
    """`judgment[name]`, else the value of a key equal to `name` but for case (``Feedback``), else _MISSING."""
    if name in judgment:
        return judgment[name]
    return next((v for k, v in judgment.items() if isinstance(k, str) and k.strip().lower() == name), _MISSING)


def _judged(row: RawRow) -> list[Record]:
    """The valid responses of a shot/meta-test row, each with `index` = its position in the list."""
    column = TABLES[row.table].payload
    assert column is not None
    payload = _json(row, column)
    items = payload.get("response_list") if isinstance(payload, dict) else None
    if not isinstance(items, list):
        raise BespokeDataError(row.where, "expected a JSON object with a 'response_list' list",
                               field=f"{column}.response_list")
    responses: list[Record] = []
    for index, item in enumerate(items):
        path = f"{column}.response_list[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("contents"), str):
            raise BespokeDataError(row.where, "expected an object with a 'contents' string", field=f"{path}.contents")
        record: Record = {"index": index, "response": item["contents"]}
        for dim in DIMENSIONS:
            judgment = item.get(dim)
            if not isinstance(judgment, dict):
                warnings.warn(f"{row.where}, field {path}.{dim}: dropped this example: judgment {judgment!r} "
                              "is not an object with a score and feedback", BespokeDataWarning, stacklevel=2)
                break
            raw_score = _member(judgment, "score")
            score = _score(raw_score)
            if score is None:
                warnings.warn(f"{row.where}, field {path}.{dim}.score: dropped this example: score {raw_score!r} "
                              f"is not an integer {SCORE_RANGE[0]}-{SCORE_RANGE[1]}", BespokeDataWarning, stacklevel=2)
                break
            feedback = _member(judgment, "feedback")
            if not isinstance(feedback, str):
                what = "missing" if feedback is _MISSING else f"{feedback!r} is not a string"
                warnings.warn(f"{row.where}, field {path}.{dim}.feedback: feedback {what}; kept the example with "
                              "empty feedback", BespokeDataWarning, stacklevel=2)
                feedback = ""
            record[dim] = {"score": score, "feedback": feedback}
        else:
            responses.append(record)
    return responses


def _claims(row: RawRow) -> list[str]:
    payload = _json(row, "gold_information_value")
    claims = payload.get("gold_information") if isinstance(payload, dict) else None
    if not isinstance(claims, list) or not all(isinstance(c, str) for c in claims):
        raise BespokeDataError(row.where, "expected a JSON object with a 'gold_information' list of strings",
                               field="gold_information_value.gold_information")
    return claims


# ---------------------------------------------------------------- configs

def queries(release: RawRelease) -> list[Record]:
    """From the query table (Hub layout) or from the shot files (GitHub layout)."""
    if release.layout == "hub":
        rows = _unique(release.rows("queries"))
        return _ordered({k: {"user": k[0], "query_id": k[1], "query": _text(r, "query"),
                            "gold_information_need": _text(r, "gold_information_need")} for k, r in rows.items()})
    records: dict[Key, Record] = {}
    for key, row in _unique(release.rows("evaluation_shot")).items():
        payload = _json(row, "evaluation_shot_value")
        fields = {f: payload.get(f) if isinstance(payload, dict) else None for f in ("query", "gold_information_need")}
        for name, value in fields.items():
            if not isinstance(value, str):
                raise BespokeDataError(row.where, "expected a string", field=f"evaluation_shot_value.{name}")
        records[key] = {"user": key[0], "query_id": key[1], **fields}
    return _ordered(records)


SESSION_TABLES: tuple[tuple[str, str], ...] = (("chat_history", "chat"), ("search_history", "search"))


def _sessions(release: RawRelease, columns: tuple[str, ...]) -> list[tuple[str, str, str, RawRow]]:
    """``(user, session id, source, row)`` for every row of both history tables, chat first, then sorted by
    user (stably: table and row order kept per user). `columns` are read (they include user and id).

    The one place session ids are decided, so `histories` and `benchmark.history_ids` agree: the raw id as
    text, except for a user whose raw ids collide across the two tables (a release that numbers each table
    from 0): all that user's ids become ``chat:<raw>`` / ``search:<raw>``. Two sessions of a user with the
    same final id (a repeated row) raise BespokeDataError naming both rows.
    """
    raw: list[tuple[str, str, str, RawRow]] = []
    ids_by_table: dict[tuple[str, str], set[str]] = {}
    for table, source in SESSION_TABLES:
        for row in release.rows(table, columns=columns):
            user = _text(row, "user").strip()
            raw_id = row.fields.get("id")
            if raw_id is None or isinstance(raw_id, bool):
                raise BespokeDataError(row.where, "missing session id", field="id")
            raw.append((user, str(raw_id), source, row))
            ids_by_table.setdefault((user, source), set()).add(str(raw_id))
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


def histories(release: RawRelease) -> list[Record]:
    """Both history tables, chat first; parsed structure added to each session (ids: see `_sessions`)."""
    records: list[Record] = []
    for user, session_id, source, row in _sessions(release, TABLES["chat_history"].columns):
        text = _text(row, "history")
        records.append({"user": user, "id": session_id, "source": source, "text": text,
                        **parse_history(text, source)})
    return records


def _judged_config(table: str) -> Callable[[RawRelease], list[Record]]:
    def build(release: RawRelease) -> list[Record]:
        records: dict[Key, list[Record]] = {}
        for key, row in _unique(release.rows(table)).items():
            records[key] = [{"user": key[0], "query_id": key[1], **r} for r in _judged(row)]
        return [r for group in _ordered(records) for r in group]
    build.__doc__ = f"One row per judged response of the {table} table."
    return build


def gold_claims(release: RawRelease) -> list[Record]:
    rows = _unique(release.rows("gold_information"))
    return _ordered({k: {"user": k[0], "query_id": k[1], "claims": _claims(r)} for k, r in rows.items()})


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def normalise_rubric(text: str) -> str:
    """A rubric as the same string from either layout (a parquet cell or a .txt file, CRLF or LF, with or
    without a final newline): lines joined with LF, trailing whitespace stripped from each line and the end."""
    return "\n".join(line.rstrip() for line in _LINE_BREAK.split(text)).rstrip()


def rubrics(release: RawRelease) -> list[Record]:
    rows = _unique(release.rows("personalized_rubric"))
    return _ordered({k: {"user": k[0], "query_id": k[1], "rubric": normalise_rubric(_text(r, "personalized_rubric_value"))}
                    for k, r in rows.items()})


def _history_ids(release: RawRelease) -> dict[str, list[str]]:
    """Each user's session ids, in `histories` order (the same ids: both come from `_sessions`)."""
    if release.layout == "github":
        return {}
    ids: dict[str, list[str]] = {}
    for user, session_id, _, _ in _sessions(release, ("user", "id")):
        ids.setdefault(user, []).append(session_id)
    return ids


def benchmark(release: RawRelease) -> list[Record]:
    """One row per query with everything needed to judge it; incomplete queries dropped with a warning.

    In the GitHub layout, which has no histories, `history_ids` is empty.
    """
    shots: dict[Key, list[Record]] = {}
    for key, row in _unique(release.rows("evaluation_shot")).items():
        shots[key] = [{k: v for k, v in r.items() if k != "index"} for r in _judged(row)]
    rubric = {(r["user"], r["query_id"]): r["rubric"] for r in rubrics(release)}
    claims = {(r["user"], r["query_id"]): r["claims"] for r in gold_claims(release)}
    history_ids = _history_ids(release)
    query_records = queries(release)
    records: list[Record] = []
    for query in query_records:
        key = (query["user"], query["query_id"])
        missing = [name for name, found in (("shots (evaluation_shot)", shots.get(key)),
                                            ("rubric (personalized_rubric)", key in rubric),
                                            ("claims (gold_information)", claims.get(key))) if not found]
        if missing:
            warnings.warn(f"benchmark: dropped query {query_key(*key)!r}: no {', no '.join(missing)}",
                          BespokeDataWarning, stacklevel=2)
            continue
        records.append({**query, "rubric": rubric[key], "shots": shots[key], "claims": claims[key],
                        "history_ids": history_ids.get(query["user"], [])})
    known = {(r["user"], r["query_id"]) for r in query_records}
    orphans = sorted(query_key(*k) for k in (set(shots) | set(rubric) | set(claims)) - known)
    if orphans:
        warnings.warn(f"benchmark: ignored shots/rubrics/claims of {len(orphans)} query(ies) missing from the "
                      f"query table: {', '.join(orphans[:10])}", BespokeDataWarning, stacklevel=2)
    return records


BUILDERS: dict[str, Callable[[RawRelease], list[Record]]] = {
    "queries": queries,
    "histories": histories,
    "rj_pairs": _judged_config("evaluation_shot"),
    "meta_test": _judged_config("meta_test"),
    "gold_claims": gold_claims,
    "rubrics": rubrics,
    "benchmark": benchmark,
}


def build_records(config: str, release: RawRelease) -> list[Record]:
    """The records of `config` (one of `features.CONFIGS`) from a raw release, or as an export holds them."""
    if release.layout == "typed":
        return typed_rows(release.path, config)
    return BUILDERS[config](release)
