"""The input folder of `bespoke build`: your users' data as JSONL files, read and checked as a whole.

| file | one line per | fields |
|---|---|---|
| `histories.jsonl` | history session | `user`, `id`, `source` (`chat` or `search`), `text`, optional `timestamp` |
| `queries.jsonl` | query | `user`, `query_id`, `query`, `gold_information_need` |
| `judgments.jsonl` | judged response | `user`, `query_id`, `response`, and per dimension `{"score": 1-5, "feedback"}` |
| `claims.jsonl` | query | `user`, `query_id`, `claims` (a list of strings) |
| `gold_responses.jsonl` | query | `user`, `query_id`, `response` (claims are extracted from it by a model) |
| `rubrics.jsonl` | query | `user`, `query_id`, `rubric` (unless a model writes them) |

Every problem is collected, one line each naming the file and line (``judgments.jsonl line 4: unknown
user 'user9'``), and raised together as a `BuildInputError`: nothing is built from input with a problem.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..keys import natural_key, normalise_query_id, query_key
from ..reading.timestamps import read_time
from ..vocabulary import DIMENSIONS, SCORE_RANGE

HISTORIES = "histories.jsonl"
QUERIES = "queries.jsonl"
JUDGMENTS = "judgments.jsonl"
CLAIMS = "claims.jsonl"
GOLD_RESPONSES = "gold_responses.jsonl"
RUBRICS = "rubrics.jsonl"
SOURCES = ("chat", "search")
MIN_JUDGMENTS = 2
"""Judged responses a query needs: at least one example for the judge and one held out."""
SHOWN_PROBLEMS = 50

Key = tuple[str, str]


class BuildInputError(UserError):
    """The input of a build has problems; `problems` holds one line per problem (file and line first)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:SHOWN_PROBLEMS]
        more = [f"... and {len(problems) - SHOWN_PROBLEMS} more"] if len(problems) > SHOWN_PROBLEMS else []
        super().__init__("\n".join(shown + more))


@dataclass(frozen=True)
class Line:
    """One JSON object of an input file, and where it is."""

    where: str
    """``DIR/judgments.jsonl line 4``."""
    data: dict[str, Any]


_LINE_NUMBER = re.compile(r"^(.*) line (\d+)$")


class Problems:
    """Problems found so far; raised in file and line order."""

    def __init__(self) -> None:
        self.found: list[tuple[str, int, str]] = []

    def add(self, where: str, message: str) -> None:
        numbered = _LINE_NUMBER.match(where)
        file, line = (numbered.group(1), int(numbered.group(2))) if numbered else (where, 0)
        self.found.append((file, line, f"{where}: {message}"))

    def raise_any(self) -> None:
        if self.found:
            raise BuildInputError([text for _, _, text in sorted(self.found, key=lambda p: (p[0], p[1]))])


def read_jsonl(path: Path, problems: Problems) -> list[Line]:
    """The JSON objects of a JSONL file (blank lines skipped); a line that is not one is a problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        problems.add(str(path), f"cannot be read ({error})")
        return []
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{path} line {number}"
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as error:
            problems.add(where, f"not JSON ({error.msg})")
            continue
        if not isinstance(data, dict):
            problems.add(where, f"expected a JSON object, got {type(data).__name__}")
            continue
        lines.append(Line(where, data))
    return lines


def text_of(line: Line, name: str, problems: Problems) -> str | None:
    """A required, non-empty text field (None, and a problem, otherwise)."""
    value = line.data.get(name)
    if not isinstance(value, str) or not value.strip():
        problems.add(line.where, f"'{name}' must be non-empty text, got {value!r}")
        return None
    return value


def key_of(line: Line, problems: Problems) -> Key | None:
    """``(user, query_id)`` of a line, the query id normalised; None (and a problem) if unreadable."""
    user = text_of(line, "user", problems)
    try:
        query_id = normalise_query_id(line.data.get("query_id"))
    except ValueError as error:
        problems.add(line.where, f"'query_id': {error}")
        return None
    return None if user is None else (user.strip(), query_id)


@dataclass(frozen=True)
class Query:
    where: str
    user: str
    query_id: str
    query: str
    gold_information_need: str


@dataclass(frozen=True)
class Session:
    where: str
    user: str
    id: str
    source: str
    text: str
    timestamp: str | None


@dataclass(frozen=True)
class Judged:
    """One judged response: `record` is ``{"response", dim: {"score", "feedback"}, ...}``."""

    where: str
    record: dict[str, Any]


@dataclass
class Inputs:
    """The checked input of a build."""

    folder: Path
    queries: dict[Key, Query]
    sessions: list[Session]
    judgments: dict[Key, list[Judged]]
    claims: dict[Key, list[str]] = field(default_factory=dict)
    """From `claims.jsonl`; empty when claims come from gold responses."""
    gold_responses: dict[Key, str] = field(default_factory=dict)
    rubrics: dict[Key, str] = field(default_factory=dict)
    """From `rubrics.jsonl`; empty when a model writes them."""
    accepted: tuple[dict[Key, list[str]], dict[Key, list[bool]]] | None = None
    """From a reviewed claims file (`--accept`): every query's claims, and which are kept."""

    @property
    def keys(self) -> list[Key]:
        """Every query, users in natural order, queries by number."""
        return sorted(self.queries, key=lambda k: (natural_key(k[0]), int(k[1])))


def per_query(lines: list[Line], problems: Problems, queries: Mapping[Key, object], read: Callable[[Line], Any],
              what: str) -> dict[Key, Any]:
    """`read(line)` by query for a file of one line per query: the query must be known and given once."""
    found: dict[Key, Any] = {}
    first: dict[Key, str] = {}
    for line in lines:
        key = known_key(line, problems, queries)
        if key is None:
            continue
        if key in first:
            problems.add(line.where, f"a second {what} for {query_key(*key)} (the first is at {first[key]})")
            continue
        value = read(line)
        if value is not None:
            found[key], first[key] = value, line.where
    return found


def known_key(line: Line, problems: Problems, queries: Mapping[Key, object]) -> Key | None:
    """The line's query key, when queries.jsonl has that user and query (else a problem naming which)."""
    key = key_of(line, problems)
    if key is None:
        return None
    if key not in queries:
        users = {user for user, _ in queries}
        problems.add(line.where, f"unknown user {key[0]!r} (not in {QUERIES})" if key[0] not in users
                     else f"unknown query {query_key(*key)} (not in {QUERIES})")
        return None
    return key


def _queries(lines: list[Line], problems: Problems) -> dict[Key, Query]:
    found: dict[Key, Query] = {}
    for line in lines:
        key = key_of(line, problems)
        query, need = text_of(line, "query", problems), text_of(line, "gold_information_need", problems)
        if key is None or query is None or need is None:
            continue
        if key in found:
            problems.add(line.where, f"duplicate query {query_key(*key)} (also at {found[key].where})")
            continue
        found[key] = Query(line.where, key[0], key[1], query, need)
    return found


def _sessions(lines: list[Line], problems: Problems, users: set[str]) -> list[Session]:
    sessions: list[Session] = []
    seen: dict[tuple[str, str], str] = {}
    for line in lines:
        user, text = text_of(line, "user", problems), line.data.get("text")
        raw_id, source, given = line.data.get("id"), line.data.get("source"), line.data.get("timestamp")
        ok = user is not None
        if user is not None and user.strip() not in users:
            problems.add(line.where, f"unknown user {user!r} (not in {QUERIES})")
            ok = False
        if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or not str(raw_id).strip():
            problems.add(line.where, f"'id' must be text or an integer, got {raw_id!r}")
            ok = False
        if source not in SOURCES:
            problems.add(line.where, f"'source' must be 'chat' or 'search', got {source!r}")
            ok = False
        if not isinstance(text, str):
            problems.add(line.where, f"'text' must be text, got {text!r}")
            ok = False
        timestamp = None if given is None else read_time(given)
        if given is not None and timestamp is None:
            problems.add(line.where, f"'timestamp' {given!r} cannot be read as a date and time")
            ok = False
        if not ok or user is None:
            continue
        session_key = (user.strip(), str(raw_id).strip())
        if session_key in seen:
            problems.add(line.where, f"duplicate session id {session_key[1]!r} for {session_key[0]} "
                                     f"(also at {seen[session_key]})")
            continue
        seen[session_key] = line.where
        sessions.append(Session(line.where, session_key[0], session_key[1], str(source), str(text), timestamp))
    return sessions


def _judgment(line: Line, problems: Problems) -> dict[str, Any] | None:
    response = text_of(line, "response", problems)
    record: dict[str, Any] = {"response": response}
    ok = response is not None
    low, high = SCORE_RANGE
    for dim in DIMENSIONS:
        judgment = line.data.get(dim)
        if not isinstance(judgment, dict):
            problems.add(line.where, f"'{dim}' must be an object {{\"score\": {low}-{high}, \"feedback\": ...}}, "
                                     f"got {judgment!r}")
            ok = False
            continue
        score, feedback = judgment.get("score"), judgment.get("feedback")
        if isinstance(score, bool) or not isinstance(score, int):
            problems.add(line.where, f"'{dim}.score' must be an integer {low}-{high}, got {score!r}")
            ok = False
        elif not low <= score <= high:
            problems.add(line.where, f"'{dim}.score' {score} is out of range {low}-{high}")
            ok = False
        if not isinstance(feedback, str):
            problems.add(line.where, f"'{dim}.feedback' must be text, got {feedback!r}")
            ok = False
        record[dim] = {"score": score, "feedback": feedback}
    return record if ok else None


def _judgments(lines: list[Line], problems: Problems, queries: dict[Key, Query]) -> dict[Key, list[Judged]]:
    found: dict[Key, list[Judged]] = {}
    for line in lines:
        key = known_key(line, problems, queries)
        record = _judgment(line, problems)
        if key is not None and record is not None:
            found.setdefault(key, []).append(Judged(line.where, record))
    return found


def _claims(line: Line, problems: Problems) -> list[str] | None:
    claims = line.data.get("claims")
    if not isinstance(claims, list) or not claims or not all(isinstance(c, str) and c.strip() for c in claims):
        problems.add(line.where, f"'claims' must be a non-empty list of non-empty strings, got {claims!r}")
        return None
    return [c.strip() for c in claims]


def _require_every_query(queries: dict[Key, Query], found: dict[Key, Any], problems: Problems, what: str) -> None:
    for key, query in queries.items():
        if key not in found:
            problems.add(query.where, f"query {query_key(*key)} has no {what}")


def read_inputs(folder: str | Path, *, rubrics_by_model: bool, claims_by_model: bool,
                accept: str | Path | None = None) -> Inputs:
    """Read and check the input folder. `rubrics_by_model`: a model writes the rubrics (so `rubrics.jsonl`
    must not be there); `claims_by_model`: a model extracts claims from `gold_responses.jsonl`; `accept`: a
    reviewed claims file whose kept claims are used (`read_accepted`; the gold responses then only say which
    queries have claims). Raises BuildInputError listing every problem."""
    folder = Path(folder)
    problems = Problems()
    if not folder.is_dir():
        problems.add(str(folder), "no such folder")
        problems.raise_any()
    files = {name: folder / name for name in (HISTORIES, QUERIES, JUDGMENTS, CLAIMS, GOLD_RESPONSES, RUBRICS)}
    present = {name for name, path in files.items() if path.is_file()}
    for name in (HISTORIES, QUERIES, JUDGMENTS):
        if name not in present:
            problems.add(str(files[name]), "missing (see `bespoke build --help` for the input files)")
    claims_from_responses = claims_by_model or accept is not None
    if CLAIMS in present and GOLD_RESPONSES in present:
        problems.add(str(folder), f"give {CLAIMS} or {GOLD_RESPONSES}, not both")
    elif CLAIMS in present and claims_from_responses:
        problems.add(str(files[CLAIMS]), f"claims are given, but --claim-model/--accept read them from {GOLD_RESPONSES}")
    elif GOLD_RESPONSES in present and not claims_from_responses:
        problems.add(str(files[GOLD_RESPONSES]), "extracting claims from gold responses needs --claim-model "
                                                  "(or --accept FILE with reviewed claims)")
    elif CLAIMS not in present and GOLD_RESPONSES not in present:
        problems.add(str(folder), f"missing {CLAIMS} (or {GOLD_RESPONSES} with --claim-model)")
    if rubrics_by_model and RUBRICS in present:
        problems.add(str(files[RUBRICS]), "rubrics are given, but --rubric-model writes them: drop one")
    elif not rubrics_by_model and RUBRICS not in present:
        problems.add(str(files[RUBRICS]), "missing (or pass --rubric-model to have a model write the rubrics)")
    if QUERIES not in present:
        problems.raise_any()
    read = {name: read_jsonl(files[name], problems) if name in present else [] for name in files}
    queries = _queries(read[QUERIES], problems)
    inputs = Inputs(folder, queries, _sessions(read[HISTORIES], problems, {user for user, _ in queries}),
                    _judgments(read[JUDGMENTS], problems, queries))
    for key, query in queries.items():
        count = len(inputs.judgments.get(key, []))
        if count < MIN_JUDGMENTS:
            problems.add(query.where, f"query {query_key(*key)} has {count} judged response(s) in {JUDGMENTS}; "
                                      f"at least {MIN_JUDGMENTS} are needed (examples for the judge and held-out ones)")
    if CLAIMS in present and GOLD_RESPONSES not in present:
        inputs.claims = per_query(read[CLAIMS], problems, queries, lambda line: _claims(line, problems), "claims line")
        _require_every_query(queries, inputs.claims, problems, f"claims in {CLAIMS}")
    if GOLD_RESPONSES in present and CLAIMS not in present:
        inputs.gold_responses = per_query(read[GOLD_RESPONSES], problems, queries,
                                          lambda line: text_of(line, "response", problems), "gold response")
        _require_every_query(queries, inputs.gold_responses, problems, f"gold response in {GOLD_RESPONSES}")
    if RUBRICS in present and not rubrics_by_model:
        inputs.rubrics = read_rubrics(read[RUBRICS], problems, queries)
        _require_every_query(queries, inputs.rubrics, problems, f"rubric in {RUBRICS}")
    if accept is not None:
        inputs.accepted = read_accepted(accept, queries, problems)
    problems.raise_any()
    return inputs


def read_rubrics(lines: list[Line], problems: Problems, queries: Mapping[Key, object]) -> dict[Key, str]:
    """Rubrics by query from the lines of a rubrics file (`user`, `query_id`, `rubric`)."""
    return per_query(lines, problems, queries, lambda line: text_of(line, "rubric", problems), "rubric")


def read_rubrics_file(path: str | Path, queries: Mapping[Key, object]) -> dict[Key, str]:
    """A rubrics file on its own (the `rubrics.jsonl` format, as `bespoke build --rubrics-only` writes it),
    for the queries given: every one of them must have a rubric. Raises BuildInputError."""
    problems = Problems()
    path = Path(path)
    if not path.is_file():
        problems.add(str(path), "no such file")
        problems.raise_any()
    rubrics = read_rubrics(read_jsonl(path, problems), problems, queries)
    for key in queries:
        if key not in rubrics:
            problems.add(str(path), f"no rubric for {query_key(*key)}")
    problems.raise_any()
    return rubrics


def rubrics_text(rubrics: Mapping[Key, str]) -> str:
    """Rubrics as a rubrics file: one `{"user", "query_id", "rubric"}` line per query."""
    return "".join(json.dumps({"user": user, "query_id": query_id, "rubric": rubric}, ensure_ascii=False) + "\n"
                   for (user, query_id), rubric in rubrics.items())


def read_accepted(path: str | Path, queries: Mapping[Key, object],
                  problems: Problems) -> tuple[dict[Key, list[str]], dict[Key, list[bool]]]:
    """Every query's claims in a reviewed file and which are kept (`keep: true`), in file order. Problems: a
    line without a readable `claim` and boolean `keep`, an unknown query, a query of `queries` with no line
    or with none kept."""
    path = Path(path)
    if not path.is_file():
        problems.add(str(path), "no such file (--accept takes the claims_review.jsonl of an earlier build)")
        return {}, {}
    claims: dict[Key, list[str]] = {}
    keep: dict[Key, list[bool]] = {}
    for line in read_jsonl(path, problems):
        key = known_key(line, problems, queries)
        claim, kept = text_of(line, "claim", problems), line.data.get("keep")
        if not isinstance(kept, bool):
            problems.add(line.where, f"'keep' must be true or false, got {kept!r}")
            continue
        if key is None or claim is None:
            continue
        claims.setdefault(key, []).append(claim.strip())
        keep.setdefault(key, []).append(kept)
    for key in queries:
        if key not in claims:
            problems.add(str(path), f"no claims of {query_key(*key)}")
        elif not any(keep[key]):
            problems.add(str(path), f"no claim of {query_key(*key)} is kept")
    return claims, keep
