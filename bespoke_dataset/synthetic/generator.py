"""Synthetic BESPOKE releases: the public raw format, invented content, planted facts for tests.

`write_release` writes a release in the Hub layout (seven parquet tables, JSON payloads in string columns,
some scores as strings, query ids in mixed forms) or in the official GitHub layout (per-user files), and a
`synthetic_truth.json` beside it recording what was planted:

* per query (key ``"user/query_id"``): its topic, the ids of the user's history sessions written about that
  topic (the rest of the user's sessions are about other topics), the quality level and the gold-claim
  indices of each R-J example, and for each held-out meta-test response its kind
  (`responses.META_KINDS`: a paraphrase of an example, carrying its scores, or an answer whose
  human scores do not follow its word overlap with the examples), the example it paraphrases (None for
  the other kinds) and the gold claims it conveys;
* for the sample (`write_sample`): the quality level of each bundled prediction.

Everything is deterministic given the seed. Nothing here describes real people.
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from bespoke_dataset.atomic import FolderOwner, atomic_dir
from bespoke_dataset.errors import UserError
from bespoke_dataset.keys import query_key
from bespoke_dataset.reading.raw import Layout
from bespoke_dataset.source import SAMPLE_DIR, SYNTHETIC_MARKER
from bespoke_dataset.vocabulary import DIMENSIONS

from .responses import META_KINDS, graded_judgment, graded_response, judgment, kind_response, kind_scores, paraphrase
from .topics import PERSONAS, STYLES, TONES, TOPICS, Topic

SEARCH_SHARE = 2153 / 2870
"""Share of search sessions in the real release (2,153 search + 717 chat)."""
START = datetime(2025, 3, 3, 7, 0, 0)
HISTORY_DAYS = 21
TRUTH_FILE = "synthetic_truth.json"
SAMPLE_SETTINGS: dict[str, int | bool] = {"users": 3, "queries_per_user": 5, "sessions": 45, "shots_per_query": 5,
                                          "meta_test_per_query": 2, "seed": 7, "notes": False}
"""The bundled sample's settings: no free-form notes, so that it reads with no fallback (and no warning)."""

MARKER = "[SYNTHETIC DATA - not the real BESPOKE release]"
SYNTHETIC_RELEASE = FolderOwner(f"a synthetic release ({SYNTHETIC_MARKER})", lambda folder: (folder / SYNTHETIC_MARKER).is_file())
"""A folder `write_release` or `write_sample` wrote: one with the synthetic marker, which they may replace."""


# ---------------------------------------------------------------- plan: who asks what, which sessions matter

@dataclass
class Query:
    user: str
    query_id: str
    topic: Topic
    query: str
    need: str
    rubric: str
    relevant_sessions: list[str] = field(default_factory=list)
    shots: list[dict[str, Any]] = field(default_factory=list)
    shot_quality: list[int] = field(default_factory=list)
    shot_claims: list[list[int]] = field(default_factory=list)
    meta_test: list[dict[str, Any]] = field(default_factory=list)
    meta_test_kinds: list[str] = field(default_factory=list)
    meta_test_paraphrases: list[int | None] = field(default_factory=list)
    meta_test_claims: list[list[int]] = field(default_factory=list)


@dataclass
class Session:
    user: str
    id: str
    source: Literal["chat", "search"]
    text: str
    start: datetime


@dataclass
class User:
    name: str
    persona: str
    tone: str
    style: str
    queries: list[Query] = field(default_factory=list)
    sessions: list[Session] = field(default_factory=list)


@dataclass
class Release:
    users: list[User]

    @property
    def queries(self) -> list[Query]:
        return [q for u in self.users for q in u.queries]

    @property
    def sessions(self) -> list[Session]:
        return [s for u in self.users for s in u.sessions]


def _split(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def synthetic_release(*, users: int = 30, queries_per_user: int = 5, sessions: int = 2870, shots_per_query: int = 5,
                  meta_test_per_query: int = 2, seed: int = 0, notes: bool = True) -> Release:
    """The whole synthetic release in memory (see the module docstring for what is planted). With `notes`,
    about 3% of the chat sessions are free-form notes with no time or speaker labels, as exports hold: read,
    they fall back (and warn)."""
    if users < 1 or queries_per_user < 1 or shots_per_query < 1:
        raise UserError("--users, --queries-per-user and --shots-per-query must be at least 1")
    if queries_per_user > len(TOPICS) - 2:
        raise UserError(f"--queries-per-user must be at most {len(TOPICS) - 2} (there are {len(TOPICS)} topics)")
    if meta_test_per_query > shots_per_query:
        raise UserError("--meta-test-per-query cannot exceed --shots-per-query (a paraphrase rewords a distinct shot)")
    if meta_test_per_query > len(META_KINDS):
        raise UserError(f"--meta-test-per-query cannot exceed {len(META_KINDS)} (one held-out response of each kind: "
                         f"{', '.join(META_KINDS)})")
    if sessions < users:
        raise UserError("--sessions must be at least one per user")
    rng = random.Random(seed)
    # held-out responses of the new kinds draw from their own stream: the main one (users, queries, R-J
    # examples, histories) stays what retrieval and context tests have planted their facts in
    responses = random.Random(f"{seed}/responses")
    n_search = round(sessions * SEARCH_SHARE)
    search_counts = _split(n_search, users)
    chat_counts = _split(sessions - n_search, users)
    counters = {"chat": 0, "search": 0}
    result: list[User] = []
    for u in range(users):
        user = User(f"user{u + 1}", rng.choice(PERSONAS), rng.choice(TONES), rng.choice(STYLES))
        topics = rng.sample(TOPICS, len(TOPICS))
        query_topics, background = topics[:queries_per_user], topics[queries_per_user:]
        query_ids = sorted(rng.sample(range(1, 3 * queries_per_user + 1), queries_per_user))
        for qid, topic in zip(query_ids, query_topics, strict=True):
            user.queries.append(_make_query(user, str(qid), topic, shots_per_query, meta_test_per_query, rng,
                                           responses))
        sources = ["search"] * search_counts[u] + ["chat"] * chat_counts[u]
        rng.shuffle(sources)
        n_user = len(sources)
        per_query = max(1, int(0.8 * n_user / queries_per_user))
        plan: list[tuple[Topic, Query | None]] = []
        for query in user.queries:
            plan += [(query.topic, query)] * min(rng.randint(3, 5), per_query)
        plan = plan[:n_user]
        plan += [(rng.choice(background), None) for _ in range(n_user - len(plan))]
        rng.shuffle(plan)
        starts = sorted(START + timedelta(seconds=rng.randrange(HISTORY_DAYS * 86400)) for _ in range(n_user))
        for source, start, (topic, query) in zip(sources, starts, plan, strict=True):
            counters[source] += 1
            session_id = f"{source}_{counters[source]:04d}"
            text = _chat_text(topic, start, rng, notes) if source == "chat" else _search_text(topic, start, rng)
            user.sessions.append(Session(user.name, session_id, source, text, start))
            if query is not None:
                query.relevant_sessions.append(session_id)
        result.append(user)
    return Release(result)


# ---------------------------------------------------------------- history text

_CHAT_OPENERS = (
    "Quick question about {a}: is it normal that {b} takes so long?",
    "I keep reading about {a}. How does it relate to {b}?",
    "Can you explain {a} like I'm new to it? I also saw people mention {b}.",
    "What's the difference between {a} and {b}?",
    "I tried {a} yesterday and it didn't go well. Any tips on {b}?",
)
_CHAT_FOLLOWUPS = (
    "Thanks. And what about {a}?", "Makes sense. Is {a} worth paying for?",
    "Ok, how long before I see results with {a}?", "Got it. Any common mistakes with {a}?",
)
_SEARCH_FORMS = ("{a}", "{a} {b}", "best {a}", "{a} vs {b}", "how to {a}", "{a} for beginners", "{a} reddit",
                 "{a} cost")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _chat_text(topic: Topic, start: datetime, rng: random.Random, notes: bool) -> str:
    a, b, c = rng.sample(topic.terms, 3)
    facts = list(topic.claims + topic.extras)
    rng.shuffle(facts)
    if rng.random() < 0.03 and notes:  # a few free-form notes without timestamps or speaker labels
        return f"notes on {a} and {b}. {facts[0]} {facts[1]} Remember to look into {c}."
    lines = [f"Conversation started: {start:%Y-%m-%d %H:%M}",
             f"User: {rng.choice(_CHAT_OPENERS).format(a=a, b=b)}",
             f"Assistant: {facts[0]} When it comes to {b}, {facts[1][0].lower()}{facts[1][1:]}"]
    for turn in range(rng.randint(0, 2)):
        lines.append(f"User: {rng.choice(_CHAT_FOLLOWUPS).format(a=c if turn == 0 else a)}")
        lines.append(f"Assistant: {facts[2 + turn]} Many people who ask about {c} find this useful.")
    return "\n".join(lines)


def _search_text(topic: Topic, start: datetime, rng: random.Random) -> str:
    lines = []
    moment = start
    for _ in range(rng.randint(1, 4)):
        a, b = rng.sample(topic.terms, 2)
        query = rng.choice(_SEARCH_FORMS).format(a=a, b=b)
        if rng.random() < 0.03:  # a few entries lost their timestamp in the export
            lines.append(f"Searched: {query}")
        else:
            lines.append(f"[{moment:%Y-%m-%d %H:%M:%S}] Searched: {query}")
        for _ in range(rng.randint(0, 2)):
            lines.append(f"  -> https://{rng.choice(topic.sites)}/{_slug(rng.choice((a, b)))}")
        moment += timedelta(seconds=rng.randint(20, 600))
    return "\n".join(lines)


# ---------------------------------------------------------------- queries, responses, judgments

_QUERY_TAILS = ("Does {term} matter here?", "I keep seeing {term} mentioned.", "Where does {term} fit in?",
                "How important is {term}?")


def _make_query(user: User, query_id: str, topic: Topic, shots: int, meta: int, rng: random.Random,
                responses: random.Random) -> Query:
    # one distinctive term in the query, as people name what they have been reading about
    question = f"{topic.question} {rng.choice(_QUERY_TAILS).format(term=rng.choice(topic.terms))}"
    if rng.random() < 0.5:
        question = f"I'm a {user.persona}. {question}"
    need = (f"As a {user.persona}, the user wants {topic.need}. "
            f"They prefer {user.style} in a {user.tone} tone.")
    rubric = "\n".join((
        f"Need alignment: the answer must address {topic.need}, in a way that works for a {user.persona}.",
        f"Content depth: it should give concrete, correct specifics (for example about {topic.terms[0]} "
        f"and {topic.terms[1]}) rather than generic advice.",
        f"Tone: {user.tone}.",
        f"Explanation style: {user.style}.",
    ))
    query = Query(user.name, query_id, topic, question, need, rubric)
    levels = [5, 4, 3, 2, 1]
    rng.shuffle(levels)
    for i in range(shots):
        quality = levels[i % len(levels)]
        text, used = graded_response(user, topic, quality, rng)
        query.shots.append({"contents": text, **graded_judgment(user, topic, quality, rng)})
        query.shot_quality.append(quality)
        query.shot_claims.append(used)
    sources = sorted(rng.sample(range(shots), meta))  # the shot a paraphrase rewords
    for kind, shot_index in zip(responses.sample(META_KINDS, meta), sources, strict=True):
        if kind == "paraphrase":
            source: int | None = shot_index
            shot = query.shots[shot_index]
            query.meta_test.append({**shot, "contents": paraphrase(shot["contents"])})
            query.meta_test_claims.append(query.shot_claims[shot_index])
        else:
            source = None
            text, used = kind_response(user, topic, kind, responses)
            query.meta_test.append({"contents": text, **judgment(user, topic, kind_scores(kind, responses), responses)})
            query.meta_test_claims.append(used)
        query.meta_test_kinds.append(kind)
        query.meta_test_paraphrases.append(source)
    return query


# ---------------------------------------------------------------- writing the raw formats

def _payload(query: Query, responses: list[dict[str, Any]], rng: random.Random) -> str:
    """A shot/meta-test file body; some scores written as strings, as in the public release."""
    items = []
    for response in responses:
        item = {"contents": response["contents"]}
        for dim in DIMENSIONS:
            score = response[dim]["score"]
            item[dim] = {"score": str(score) if rng.random() < 0.3 else score, "feedback": response[dim]["feedback"]}
        items.append(item)
    return json.dumps({"query": query.query, "gold_information_need": query.need, "response_list": items},
                      ensure_ascii=False)


def _claims_payload(query: Query) -> str:
    return json.dumps({"gold_information": list(query.topic.claims)}, ensure_ascii=False)


def _raw_query_id(query_id: str, rng: random.Random) -> str:
    return rng.choice((query_id, f"query-id_{query_id}"))


def _write_parquet(path: Path, columns: dict[str, list[Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


def _write_hub(release: Release, out: Path, rng: random.Random) -> None:
    queries = release.queries
    _write_parquet(out / "queries" / "query_table.parquet", {
        "user": [q.user for q in queries], "query-id": [_raw_query_id(q.query_id, rng) for q in queries],
        "query": [q.query for q in queries], "gold_information_need": [q.need for q in queries]})
    for source in ("chat", "search"):
        rows = [s for s in release.sessions if s.source == source]
        _write_parquet(out / f"{source}_history" / f"{source}_history.parquet", {
            "user": [s.user for s in rows], "id": [s.id for s in rows], "history": [s.text for s in rows]})
    tables = {
        ("gold_information", "gold_information.parquet", "gold_information_value"): _claims_payload,
        ("personalized_rubric", "personalized_rubric.parquet", "personalized_rubric_value"): lambda q: q.rubric,
        ("evaluation_shot", "evaluation_shot.parquet", "evaluation_shot_value"): lambda q: _payload(q, q.shots, rng),
        ("meta_test", "meta_test_set.parquet", "meta_test_set_value"): lambda q: _payload(q, q.meta_test, rng),
    }
    for (folder, name, column), value in tables.items():
        _write_parquet(out / folder / name, {
            "user": [q.user for q in queries], "query-id": [_raw_query_id(q.query_id, rng) for q in queries],
            "id": list(range(len(queries))), column: [value(q) for q in queries]})


def _write_github(release: Release, out: Path, rng: random.Random) -> None:
    for q in release.queries:
        name = f"query-id_{q.query_id}"
        files = {
            out / "evaluation_shot" / q.user / f"{name}.json": _payload(q, q.shots, rng),
            out / "personalized_rubric" / q.user / f"{name}.txt": q.rubric,
            out / "gold_information" / q.user / f"{name}.json": _claims_payload(q),
        }
        if q.meta_test:
            files[out / "meta_test" / q.user / f"{name}.json"] = _payload(q, q.meta_test, rng)
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def _truth(release: Release, settings: dict[str, Any]) -> dict[str, Any]:
    return {
        "synthetic": True,
        "settings": settings,
        "queries": {query_key(q.user, q.query_id): {
            "topic": q.topic.name,
            "relevant_sessions": q.relevant_sessions,
            "shot_quality": q.shot_quality,
            "shot_claims": q.shot_claims,
            "meta_test_kinds": q.meta_test_kinds,
            "meta_test_paraphrases": q.meta_test_paraphrases,
            "meta_test_claims": q.meta_test_claims,
        } for q in release.queries},
    }


def _readme(settings: dict[str, Any]) -> str:
    return (f"# {MARKER}\n\nThis folder is a SYNTHETIC release in the public BESPOKE raw format, written by "
            "`bespoke_dataset.synthetic` for tests, benchmarks and offline demos. Its users, histories, queries, "
            "responses and judgments are invented from templates; it says nothing about real people or about "
            "the real benchmark's numbers.\n\n"
            f"Settings: `{json.dumps(settings, sort_keys=True)}`\n\n"
            f"`{TRUTH_FILE}` records the planted facts (relevant sessions per query, quality of each example, "
            "the kind of each meta-test response and which example it paraphrases, if any).\n")


def _write_into(folder: Path, release: Release, settings: dict[str, Any]) -> dict[str, Any]:
    """Write the raw files, the synthetic marker (SYNTHETIC.md) and the truth file; return the truth."""
    (_write_hub if settings["layout"] == "hub" else _write_github)(release, folder, random.Random(settings["seed"] + 1))
    (folder / SYNTHETIC_MARKER).write_text(_readme(settings), encoding="utf-8")
    truth = _truth(release, settings)
    (folder / TRUTH_FILE).write_text(json.dumps(truth, indent=1), encoding="utf-8")
    return truth


def write_release(out_dir: str | os.PathLike[str], *, users: int = 30, queries_per_user: int = 5,
                  sessions: int = 2870, shots_per_query: int = 5, meta_test_per_query: int = 2,
                  layout: Layout = "hub", seed: int = 0, force: bool = False) -> Path:
    """Write a synthetic raw release to `out_dir` (replaced atomically) and return its path.

    A non-empty `out_dir` that is not a synthetic release is refused (`FolderNotOursError`, nothing
    touched) unless `force`.

    `layout="hub"` writes the seven parquet tables of the Hub repo; `layout="github"` the per-user files of
    the official code repo (no histories, no query table). Defaults give the full size of the real release:
    30 users, 2,870 sessions (2,153 search + 717 chat), 150 queries, 5 R-J examples and 2 meta-test
    responses per query.
    """
    if layout not in ("hub", "github"):
        raise UserError(f"--layout must be 'hub' or 'github', not {layout!r}")
    settings = {"users": users, "queries_per_user": queries_per_user, "sessions": sessions,
                "shots_per_query": shots_per_query, "meta_test_per_query": meta_test_per_query,
                "layout": layout, "seed": seed}
    with atomic_dir(out_dir, SYNTHETIC_RELEASE, force=force) as tmp:
        release = synthetic_release(users=users, queries_per_user=queries_per_user, sessions=sessions,
                                shots_per_query=shots_per_query, meta_test_per_query=meta_test_per_query, seed=seed)
        _write_into(tmp, release, settings)
    return Path(out_dir)


def write_sample(out_dir: str | os.PathLike[str] = SAMPLE_DIR, *, force: bool = False) -> Path:
    """Write the bundled sample (3 users x 5 queries, Hub layout) and its `predictions.jsonl` (a non-empty
    `out_dir` that is not a synthetic release is refused unless `force`, as in `write_release`).

    The predictions are fresh responses of mixed quality (recorded as `prediction_quality` in the truth file).
    """
    settings = {**SAMPLE_SETTINGS, "layout": "hub"}
    with atomic_dir(out_dir, SYNTHETIC_RELEASE, force=force) as tmp:
        release = synthetic_release(**SAMPLE_SETTINGS)
        users = {u.name: u for u in release.users}
        rng = random.Random(SAMPLE_SETTINGS["seed"] + 2)
        truth = _write_into(tmp, release, settings)
        lines, quality = [], {}
        for q in release.queries:
            level = rng.randint(1, 5)
            text, _ = graded_response(users[q.user], q.topic, level, rng)
            lines.append(json.dumps({"user": q.user, "query_id": q.query_id, "response": text}, ensure_ascii=False))
            quality[query_key(q.user, q.query_id)] = level
        (tmp / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        truth["prediction_quality"] = quality
        (tmp / TRUTH_FILE).write_text(json.dumps(truth, indent=1), encoding="utf-8")
    return Path(out_dir)
