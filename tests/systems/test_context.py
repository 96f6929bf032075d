"""User-context assembly on in-memory records, with budgets counted by a real tokenizer."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from bespoke_metric.systems.context import (
    CONTEXTS,
    MIN_TRUNCATED_TOKENS,
    ContextSettings,
    ProfileTask,
    build_contexts,
    chunk_sessions,
    format_session,
    pack_sessions,
    recent_first,
)
from bespoke_metric.systems.prompts import HEADINGS
from bespoke_metric.systems.retrieval import BM25Retriever
from bespoke_metric.systems.search.protocol import render_search_results
from bespoke_metric.systems.tokens import TokenCounter
from bespoke_metric.testing.tiny_model import build_tiny_model

TOPICS = ["sourdough bread starter hydration", "trail running shoes for wide feet", "rust borrow checker lifetimes"]


@pytest.fixture(scope="module")
def counter(tmp_path_factory: pytest.TempPathFactory) -> TokenCounter:
    folder = build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
    return TokenCounter.from_hf(AutoTokenizer.from_pretrained(folder))


def make_sessions() -> list[dict]:
    sessions = []
    for user in ("alice", "bob"):
        for day in range(1, 13):
            topic = TOPICS[day % 3]
            sessions.append(
                {
                    "user": user,
                    "id": f"{user}-{day}",
                    "source": "search" if day % 2 else "chat",
                    "timestamp": f"2024-04-{day:02d}T09:00:00",
                    "text": f"{user} looked into {topic}. " + "Some more detail about it. " * 6,
                }
            )
    return sessions


ROWS = [
    {"user": "alice", "query_id": "1", "query": "how wet should my sourdough starter be", "gold_information_need": "Alice wants a hydration ratio."},
    {"user": "alice", "query_id": "2", "query": "rust lifetimes in structs", "gold_information_need": "Alice wants a struct example."},
    {"user": "bob", "query_id": "1", "query": "running shoes wide toe box", "gold_information_need": "Bob wants brands with wide fits."},
]


def recording_profiler(calls: list[list[ProfileTask]]):
    def profiler(tasks):
        calls.append(list(tasks))
        return [f"Profile for {task.key}: reads {len(task.session_ids)} sessions. " * 40 for task in tasks]

    return profiler


def test_recent_first_orders_by_timestamp_and_keeps_undated_last() -> None:
    sessions = [{"id": "a", "timestamp": "2024-01-02"}, {"id": "b", "timestamp": None}, {"id": "c", "timestamp": "2024-03-01"}, {"id": "d"}]
    assert [s["id"] for s in recent_first(sessions)] == ["c", "a", "b", "d"]


@pytest.mark.slow
def test_pack_sessions_respects_the_budget_and_truncates_the_overflowing_session(counter: TokenCounter) -> None:
    sessions = recent_first(make_sessions()[:12])
    sizes = [counter.count(format_session(s)) for s in sessions]
    budget = sizes[0] + sizes[1] + 2 * MIN_TRUNCATED_TOKENS
    packed = pack_sessions(sessions, budget, counter)
    assert packed.tokens == counter.count(packed.text) <= budget
    assert packed.included == (sessions[0]["id"], sessions[1]["id"], sessions[2]["id"])
    assert packed.truncated
    assert format_session(sessions[2]) not in packed.text
    assert packed.text.startswith(format_session(sessions[0]))
    # Room for less than MIN_TRUNCATED_TOKENS of the next session: it is left out, not shown as a stub.
    tight = pack_sessions(sessions, sizes[0] + 5, counter)
    assert tight.included == (sessions[0]["id"],)
    everything = pack_sessions(sessions, 100_000, counter)
    assert not everything.truncated
    assert len(everything.included) == len(sessions)


def test_chunks_cover_sessions_in_order_within_the_chunk_budget(counter: TokenCounter) -> None:
    sessions = make_sessions()[:12]
    chunks = chunk_sessions(sessions, 150, counter)
    assert all(counter.count(chunk.text) <= 150 for chunk in chunks)
    assert [i for chunk in chunks for i in chunk.included] == [s["id"] for s in sessions]
    assert len(chunk_sessions(sessions, 150, counter, max_chunks=2)) == 2
    # A chunk smaller than one session still makes progress: each session is cut to a chunk.
    tiny = chunk_sessions(sessions[:3], 10, counter)
    assert [chunk.included for chunk in tiny] == [(s["id"],) for s in sessions[:3]]
    assert all(counter.count(chunk.text) <= 10 for chunk in tiny)



def test_chunks_show_every_session_whole_when_each_fits_a_chunk(counter: TokenCounter) -> None:
    sessions = make_sessions()[:12]
    sizes = [counter.count(format_session(s)) for s in sessions]
    # One token short of the first two sessions: packing alone would show the second one cut.
    chunk_tokens = sizes[0] + counter.count("\n\n") + sizes[1] - 1
    assert max(sizes) <= chunk_tokens
    assert sizes[1] - 1 >= MIN_TRUNCATED_TOKENS
    cut = pack_sessions(sessions, chunk_tokens, counter)
    assert cut.included == (sessions[0]["id"], sessions[1]["id"])
    assert format_session(sessions[1]) not in cut.text

    chunks = chunk_sessions(sessions, chunk_tokens, counter)
    assert [i for chunk in chunks for i in chunk.included] == [s["id"] for s in sessions]  # each once, in order
    assert all(counter.count(chunk.text) <= chunk_tokens for chunk in chunks)
    for chunk in chunks:  # every session shown whole, in the chunk that lists it
        by_id = {s["id"]: s for s in sessions}
        assert chunk.text == "\n\n".join(format_session(by_id[i]) for i in chunk.included)
    # A session larger than a whole chunk is still cut to one chunk.
    single = chunk_sessions(sessions[:2], sizes[0] - 10, counter)
    assert [c.included for c in single] == [(sessions[0]["id"],), (sessions[1]["id"],)]
    assert single[0].truncated
    assert counter.count(single[0].text) <= sizes[0] - 10


@pytest.mark.parametrize("kind", CONTEXTS)
def test_every_context_fits_the_budget(kind: str, counter: TokenCounter) -> None:
    calls: list[list[ProfileTask]] = []
    budget = 120
    contexts = build_contexts(
        ROWS,
        kind,
        make_sessions(),
        counter,
        settings=ContextSettings(budget=budget, top_k=3, profile_chunk_tokens=200, max_profile_chunks=2),
        retriever=BM25Retriever(),
        profiler=recording_profiler(calls),
    )
    assert [c.key for c in contexts] == ["alice/1", "alice/2", "bob/1"]
    for context in contexts:
        assert context.kind == kind
        assert context.tokens == counter.count(context.text) <= budget
        if kind == "none":
            assert context.text == ""
        else:
            assert context.text.startswith(HEADINGS[kind])
    if kind == "oracle":
        assert "hydration ratio" in contexts[0].text
    if kind == "history":
        # Newest first: alice's last session leads, and the budget cut the rest.
        assert contexts[0].session_ids[0] == "alice-12"
        assert 0 < len(contexts[0].session_ids) < 12
        assert all(i.startswith("bob-") for i in contexts[2].session_ids)


def test_selected_history_retrieves_the_users_relevant_sessions(counter: TokenCounter) -> None:
    contexts = build_contexts(ROWS, "selected-history", make_sessions(), counter, settings=ContextSettings(budget=2000, top_k=4), retriever=BM25Retriever())
    # Sessions are about TOPICS[day % 3]: sourdough on days 3, 6, 9, 12; rust on 2, 5, 8, 11.
    assert set(contexts[0].session_ids) == {"alice-3", "alice-6", "alice-9", "alice-12"}
    assert set(contexts[1].session_ids) == {"alice-2", "alice-5", "alice-8", "alice-11"}
    assert set(contexts[2].session_ids) == {"bob-1", "bob-4", "bob-7", "bob-10"}
    assert contexts[0].retrieval_query == ROWS[0]["query"]


def test_expanded_queries_drive_retrieval(counter: TokenCounter) -> None:
    expanded = {"alice/1": "rust borrow checker"}
    contexts = build_contexts(ROWS[:1], "selected-history", make_sessions(), counter, settings=ContextSettings(budget=2000, top_k=4), retriever=BM25Retriever(), retrieval_queries=expanded)
    assert set(contexts[0].session_ids) == {"alice-2", "alice-5", "alice-8", "alice-11"}
    assert contexts[0].retrieval_query == "rust borrow checker"


def test_profile_tasks_per_kind(counter: TokenCounter) -> None:
    settings = ContextSettings(budget=300, top_k=3, profile_chunk_tokens=200, max_profile_chunks=2)
    calls: list[list[ProfileTask]] = []
    build_contexts(ROWS, "profile", make_sessions(), counter, settings=settings, profiler=recording_profiler(calls))
    (tasks,) = calls
    assert [t.key for t in tasks] == ["alice", "bob"]  # once per user, not per query
    assert all(t.query is None and 1 <= len(t.chunks) <= 2 for t in tasks)
    assert all(counter.count(chunk) <= 200 for t in tasks for chunk in t.chunks)
    assert tasks[0].session_ids[0] == "alice-12"  # the whole history, newest first, cut to 2 chunks

    calls.clear()
    build_contexts(ROWS, "query-profile", make_sessions(), counter, settings=settings, profiler=recording_profiler(calls))
    assert [(t.key, t.query) for t in calls[0]] == [(f"{r['user']}/{r['query_id']}", r["query"]) for r in ROWS]

    calls.clear()
    contexts = build_contexts(ROWS, "selected-profile", make_sessions(), counter, settings=settings, retriever=BM25Retriever(), profiler=recording_profiler(calls))
    assert set(calls[0][0].session_ids) <= {"alice-3", "alice-6", "alice-9", "alice-12"}
    assert len(calls[0][0].chunks) == 1
    assert contexts[0].profile.startswith("Profile for alice/1")
    assert contexts[0].session_ids == calls[0][0].session_ids


def test_bad_configurations_are_named(counter: TokenCounter) -> None:
    with pytest.raises(ValueError, match="unknown context 'everything'"):
        build_contexts(ROWS, "everything", make_sessions(), counter)
    with pytest.raises(ValueError, match="needs a retriever"):
        build_contexts(ROWS, "selected-history", make_sessions(), counter)
    with pytest.raises(ValueError, match="needs a profiler"):
        build_contexts(ROWS, "profile", make_sessions(), counter)
    with pytest.raises(ValueError, match="have none: bob"):
        build_contexts(ROWS, "history", [s for s in make_sessions() if s["user"] == "alice"], counter)
    with pytest.raises(ValueError, match="returned 1 profiles for 2 tasks"):
        build_contexts(ROWS, "profile", make_sessions(), counter, profiler=lambda tasks: ["only one"])
    # none and oracle need no history at all
    assert build_contexts(ROWS, "oracle", [], counter)[2].text.endswith("wide fits.")


def test_search_results_are_rendered_within_budget(counter: TokenCounter) -> None:
    results = [{"title": "Starter hydration", "url": "file:///docs/a.txt", "text": "Use 100% hydration. " * 30}, {"title": "", "url": "", "text": "second"}]
    text = render_search_results(results, 60, counter)
    assert text.startswith("Search results:\n\n[1] Starter hydration (file:///docs/a.txt)")
    assert counter.count(text) <= 60
    assert "[2] (untitled)\nsecond" in render_search_results(results, 10_000, counter)
    assert render_search_results([], 60, counter) == ""


def test_session_ids_numbered_per_user_stay_apart(counter: TokenCounter) -> None:
    sessions = [dict(s, id=s["id"].split("-")[1]) for s in make_sessions()]  # both users have ids "1".."12"
    contexts = build_contexts(ROWS, "selected-history", sessions, counter, settings=ContextSettings(budget=2000, top_k=4), retriever=BM25Retriever())
    assert set(contexts[2].session_ids) == {"1", "4", "7", "10"}
    assert "bob looked into trail running" in contexts[2].text
    assert "alice" not in contexts[2].text


def test_a_session_s_time_is_said_once():
    """The session's own first line says its time (a search log's `[2025-03-23 19:54:30] Searched: ...`, a chat's
    `Conversation started: ...`): the tag does not say it again; a session whose text holds no time keeps it."""
    search = {"source": "search", "timestamp": "2025-03-23T19:54:30", "text": "[2025-03-23 19:54:30] Searched: used EV"}
    chat = {"source": "chat", "timestamp": "2025-03-21T15:39:00", "text": "Conversation started: 2025-03-21 15:39\nUser: hi"}
    bare = {"source": "chat", "timestamp": "2025-03-21T15:39:00", "text": "User: hi"}
    assert format_session(search) == "[search] [2025-03-23 19:54:30] Searched: used EV"
    assert format_session(chat).startswith("[chat] Conversation started: 2025-03-21 15:39\n")
    assert format_session(bare) == "[chat, 2025-03-21T15:39:00] User: hi"


def test_a_local_model_writing_profiles_at_the_defaults_is_told_what_to_set(tiny_model_dir):
    """A profile per query at the defaults (8,192 history tokens read, 512 written) costs a small model on a CPU
    minutes a query (benchmarks/personalized_context.py): `bespoke generate` says what to set, once, before."""
    from bespoke_metric.systems import GenerationSettings
    from bespoke_metric.systems.settings import SMALL_LOCAL_PROFILE, small_local_note

    local = f"hf:{tiny_model_dir}"
    note = small_local_note(local, GenerationSettings(context="selected-profile"))
    assert note is not None and note.startswith(f"note: selected-profile has {local} write a profile for each query")
    assert "--profile-max-tokens 32 --profile-chunk-tokens 1024 --budget 1024" in note
    assert small_local_note(local, GenerationSettings(context="selected-profile", **SMALL_LOCAL_PROFILE)) is None
    second_try = small_local_note(local, GenerationSettings(context="selected-profile", profile_max_tokens=32))
    assert second_try is not None and "--profile-chunk-tokens 1024 --budget 1024 cut most" in second_try
    assert small_local_note(local, GenerationSettings(context="selected-history")) is None
    assert small_local_note("openai:gpt-4o-mini", GenerationSettings(context="profile")) is None
    assert small_local_note("openai:gpt-4o-mini", GenerationSettings(context="profile", profiler=local)) is not None
