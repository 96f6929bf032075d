"""How a system uses search, end to end through `generate`: the `query`, `rewrite` and `agent` policies
against a fake SearXNG over real HTTP, every round batched across questions; the agent with native tool
calls (an in-process backend speaking the tool-call contract), with the plain-text protocol through the
tiny random hf model and through an OpenAI-compatible server; and the model's own search (`native`)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fakes.search_servers import made_up_results, serve_search

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import Completion, Request, ToolCall
from bespoke_metric.backends.options import OpenAIOptions
from bespoke_metric.backends.registry import ENGINES, Engine, make_backend
from bespoke_metric.systems import GenerationError, GenerationSettings, generate
from bespoke_metric.systems.prompts import AGENT_LAST_CALL, AGENT_TEXT_INSTRUCTIONS, HEADINGS
from bespoke_metric.systems.search import SearchOptions
from bespoke_metric.systems.search.base import SearchEngineError
from bespoke_metric.testing.doubles import ScriptedBackend
from bespoke_metric.testing.server import messages_of

NEEDS = ["a starter for a cold kitchen", "bread at 2000 m", "a gluten-free loaf for a child", "rye on a budget"]
ROWS = [{"user": f"user{1 + i // 2}", "query_id": str(1 + i % 2), "query": f"how do I bake {topic}?",
         "gold_information_need": f"They need {NEEDS[i]}."} for i, topic in enumerate(["sourdough", "bagels", "brioche", "rye"])]


@pytest.fixture
def searxng():
    with serve_search("searxng") as server:
        yield server


def settings(server, **changes: Any) -> GenerationSettings:
    values: dict[str, Any] = {"search": f"searxng:{server.base_url}", "search_options": SearchOptions(k=3), "max_new_tokens": 64}
    return GenerationSettings(**{**values, **changes})


def predictions(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def user_text(request: Request) -> str:
    return next(m["content"] for m in request.messages if m["role"] == "user")


def test_query_policy_searches_each_question_and_records_what_it_found(searxng, tmp_path: Path) -> None:
    backend = ScriptedBackend(lambda request: "<think>\nplan\n</think>\nUse a warm spot [1], see [3] and https://example.org/extra.")
    report = generate(backend, tmp_path / "p.jsonl", settings(searxng), queries=ROWS, progress=False)
    assert report.failed == [] and backend.batches == [4]
    assert sorted(searxng.queries()) == sorted(row["query"] for row in ROWS)
    first = predictions(tmp_path / "p.jsonl")[0]
    shown = made_up_results(ROWS[0]["query"])[:3]
    assert first["response"] == "Use a warm spot, see and."
    assert first["response_raw"].startswith("<think>")
    assert first["search"] == {
        "engine": f"searxng:{searxng.base_url}", "policy": "query", "calls": 1, "failed": 0, "failures": [],
        "queries": [{"round": 1, "query": ROWS[0]["query"]}],
        "results": [{"round": 1, "rank": rank, "url": doc["url"], "title": doc["title"], "noise": False} for rank, doc in enumerate(shown, start=1)],
        "opened": [], "cited": [shown[0]["url"], shown[2]["url"], "https://example.org/extra"],
    }
    prompt = user_text(backend.requests[0])
    assert prompt.startswith("Search results:\n\n[1] ") and f"[3] {shown[2]['title']} ({shown[2]['url']})" in prompt
    assert report.system["search"] == {"engine": f"searxng:{searxng.base_url}", "url": searxng.base_url, "k": 3,
                                       "policy": "query", "rounds": 1, "queries": 1, "noise": 0.0, "seed": 0}


def test_rewrite_writes_queries_from_the_question_and_the_user_context(searxng, tmp_path: Path) -> None:
    def answer(request: Request) -> str:
        text = user_text(request)
        if "Write up to 2 search queries" in text:
            need = re.search(r"They need (.+)\.", text).group(1)
            return f"<think>\nwho is this\n</think>\nHere are the queries:\n1. {need}\n2. \"{need} tips\"\n3. one too many"
        return "An answer from [2]."

    backend = ScriptedBackend(answer)
    report = generate(backend, tmp_path / "p.jsonl", settings(searxng, context="oracle", search_policy="rewrite", search_queries=2),
                      queries=ROWS, progress=False)
    assert report.failed == [] and backend.batches == [4, 4]  # every rewrite at once, then every answer
    rewrite = user_text(backend.requests[0])
    assert rewrite.startswith(HEADINGS["oracle"] + "\nThey need a starter for a cold kitchen.") and ROWS[0]["query"] in rewrite
    assert sorted(searxng.queries()) == sorted(q for need in NEEDS for q in (need, f"{need} tips"))
    first = predictions(tmp_path / "p.jsonl")[0]["search"]
    assert first["queries"] == [{"round": 1, "query": NEEDS[0]}, {"round": 1, "query": f"{NEEDS[0]} tips"}]
    assert [r["rank"] for r in first["results"]] == [1, 2, 3, 1, 2, 3] and first["calls"] == 2
    # both queries' results in one numbered list: [2] is the second document shown
    assert first["cited"] == [made_up_results(NEEDS[0])[1]["url"]]
    assert report.system["search"]["policy"] == "rewrite" and report.system["search"]["queries"] == 2


def test_rewrite_that_writes_no_query_searches_the_question(searxng, tmp_path: Path) -> None:
    backend = ScriptedBackend(lambda request: "Queries:" if "Write up to" in user_text(request) else "Done.")
    generate(backend, tmp_path / "p.jsonl", settings(searxng, search_policy="rewrite"), queries=ROWS[:1], progress=False)
    assert searxng.queries() == [ROWS[0]["query"]]


def agent_answer(tools: bool, searches: int):
    """A model that searches `searches` times, one search a turn, then answers citing result [1]."""
    def answer(request: Request) -> Completion:
        turns = sum(1 for m in request.messages if m["role"] == "assistant")
        question = re.search(r"Question: (.+)$", user_text(request)).group(1)
        if turns < searches and AGENT_LAST_CALL not in request.messages[-1]["content"]:
            query = f"{question} step {turns + 1}"
            if tools:
                return Completion("", tool_calls=(ToolCall("search", {"query": query}, f"call-{turns}"),))
            return Completion(f"<think>\nI should look this up.\n</think>\nSEARCH: {query}")
        return Completion("Final answer citing [1] and [4].")
    return answer


@pytest.mark.parametrize("tools", [True, False], ids=["tool calls", "plain text"])
def test_agent_rounds_are_batched_across_questions(tools: bool, searxng, tmp_path: Path) -> None:
    backend = ScriptedBackend(agent_answer(tools, searches=2), takes_tools=tools)
    report = generate(backend, tmp_path / "p.jsonl", settings(searxng, search_policy="agent"), queries=ROWS, progress=False)
    assert report.failed == []
    assert backend.batches == [4, 4, 4]  # every question's round k goes to the model together
    calls = searxng.calls
    round_one = [c for c in calls if "step+1" in c.path or "step%201" in c.path]
    round_two = [c for c in calls if c not in round_one]
    assert len(round_one) == len(round_two) == 4
    assert max(c.finished for c in round_one) <= min(c.received for c in round_two)  # round 2 waited on all of round 1
    first = backend.requests[0]
    if tools:
        [search] = first.tools
        assert search["function"]["name"] == "search" and search["function"]["parameters"]["required"] == ["query"]
    else:
        assert first.tools == () and AGENT_TEXT_INSTRUCTIONS.format(rounds=3, queries=3) in user_text(first)
    last = next(r for r in backend.requests[8:] if ROWS[0]["query"] in user_text(r))
    if tools:
        assistant = [m for m in last.messages if m["role"] == "assistant"]
        assert assistant[0]["tool_calls"][0]["id"] == "call-0"
        assert json.loads(assistant[1]["tool_calls"][0]["function"]["arguments"]) == {"query": f"{ROWS[0]['query']} step 2"}
        replies = [m for m in last.messages if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in replies] == ["call-0", "call-1"]
        assert replies[1]["content"].startswith(f'Search results for "{ROWS[0]["query"]} step 2":\n\n[4] ')
    else:
        assert [m["content"] for m in last.messages if m["role"] == "assistant"] == [
            f"SEARCH: {ROWS[0]['query']} step 1", f"SEARCH: {ROWS[0]['query']} step 2"]
        assert "[4] " in last.messages[-1]["content"] and "(1 round(s) left)" in last.messages[-1]["content"]
    record = predictions(tmp_path / "p.jsonl")[0]
    step = lambda n: made_up_results(f"{ROWS[0]['query']} step {n}")  # noqa: E731
    assert record["search"]["queries"] == [{"round": 1, "query": f"{ROWS[0]['query']} step 1"}, {"round": 2, "query": f"{ROWS[0]['query']} step 2"}]
    assert [(r["round"], r["rank"]) for r in record["search"]["results"]] == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3)]
    assert record["search"]["cited"] == [step(1)[0]["url"], step(2)[0]["url"]]  # [4] is round 2's first
    assert record["response"] == "Final answer citing and."


def test_an_agent_that_never_stops_searching_is_cut_off_after_its_rounds(searxng, tmp_path: Path) -> None:
    stubborn = ScriptedBackend(lambda request: "SEARCH: more please")
    report = generate(stubborn, tmp_path / "p.jsonl", settings(searxng, search_policy="agent", search_rounds=2), queries=ROWS[:1], progress=False)
    assert len(stubborn.requests) == 3 and searxng.queries() == ["more please"] * 1  # searched once, then cached
    assert AGENT_LAST_CALL in stubborn.requests[-1].messages[-1]["content"]
    assert report.failed[0]["reason"] == "the model still asked to search after its 2 round(s)"
    assert predictions(tmp_path / "p.jsonl") == []


def test_agent_searches_per_round_are_capped(searxng, tmp_path: Path) -> None:
    greedy = ScriptedBackend(lambda request: "SEARCH: a\nSEARCH: b\nSEARCH: c" if len(request.messages) == 2 else "Answer.")
    generate(greedy, tmp_path / "p.jsonl", settings(searxng, search_policy="agent", search_queries=2), queries=ROWS[:1], progress=False)
    assert sorted(searxng.queries()) == ["a", "b"]


@pytest.mark.slow
def test_agent_with_the_tiny_hf_model_speaks_the_plain_text_protocol(tiny_model_dir: Path, searxng, tmp_path: Path) -> None:
    backend = make_backend(f"hf:{tiny_model_dir}")
    try:
        recorder_settings = settings(searxng, search_policy="agent", max_new_tokens=8, search_rounds=2)
        report = generate(backend, tmp_path / "p.jsonl", recorder_settings, queries=ROWS[:2], progress=False)
    finally:
        backend.close()
    assert backend.takes_tools is False
    made = predictions(tmp_path / "p.jsonl")
    assert len(made) + len(report.failed) == 2
    for record in made:  # gibberish never asks to search: an answer in round 1, recorded as such
        assert record["search"]["policy"] == "agent" and record["search"]["calls"] == len(record["search"]["queries"])
        assert record["response_raw"] and record["response"]


def test_agent_through_an_openai_compatible_server(openai_server, searxng, tmp_path: Path) -> None:
    """Tool calls where the backend takes tools (written in the content, as a `vllm serve` whose parser
    failed leaves them: the backend reads them there), else the plain-text protocol."""
    offered: list[bool] = []

    def responder(body: dict[str, Any]) -> str:
        messages = messages_of(body)
        offered.append(bool(body.get("tools")))
        if any(m["role"] == "assistant" for m in messages):
            return "Keep it near 24 C [2]."
        if body.get("tools"):
            return '<tool_call>{"name": "search", "arguments": {"query": "kitchen temperature for sourdough"}}</tool_call>'
        return "SEARCH: kitchen temperature for sourdough"

    openai_server.responder = responder
    backend = make_backend("openai:gpt-4o", base_url=openai_server.base_url, api_key="sk-model-key-123456")
    report = generate(backend, tmp_path / "p.jsonl", settings(searxng, search_policy="agent"), queries=ROWS[:2], progress=False)
    assert report.failed == [] and len(openai_server.calls) == 4
    assert offered == [backend.takes_tools] * 4
    record = predictions(tmp_path / "p.jsonl")[0]
    assert record["response"] == "Keep it near 24 C."
    assert record["search"]["queries"] == [{"round": 1, "query": "kitchen temperature for sourdough"}]
    assert record["search"]["cited"] == [made_up_results("kitchen temperature for sourdough")[1]["url"]]
    second_turn = messages_of(openai_server.calls[-1].body)
    assert second_turn[-1]["content"].startswith('Search results for "kitchen temperature for sourdough":\n\n[1] ')


# -- a model's own search ------------------------------------------------------------------------------

NATIVE_SEARCH = {"queries": ["cold kitchen sourdough"], "results": [
    {"url": "https://bakers.example/cold", "title": "Cold kitchens"}, {"url": "https://bakers.example/proof", "title": "Proofing"}],
    "cited": ["https://bakers.example/cold"]}


def native_answer(request: Request) -> Completion:
    if not request.native_search:
        return Completion("Without searching.")
    return Completion("Proof it longer [1]. Source: https://bakers.example/cold", search=NATIVE_SEARCH)


def test_native_search_is_asked_of_the_model_and_recorded_as_it_reported(tmp_path: Path) -> None:
    backend = ScriptedBackend(native_answer, searches=True)
    report = generate(backend, tmp_path / "p.jsonl", GenerationSettings(search="native"), queries=ROWS[:1], progress=False)
    assert [r.native_search for r in backend.requests] == [True]
    record = predictions(tmp_path / "p.jsonl")[0]
    assert record["response"] == "Proof it longer."
    assert record["search"] == {"engine": "native", "policy": "native", "calls": 1, "failed": 0, "failures": [],
                                "queries": [{"round": 1, "query": "cold kitchen sourdough"}], "opened": [],
                                "results": [{"round": 1, "rank": 1, "url": "https://bakers.example/cold", "title": "Cold kitchens", "noise": False},
                                            {"round": 1, "rank": 2, "url": "https://bakers.example/proof", "title": "Proofing", "noise": False}],
                                "cited": ["https://bakers.example/cold"]}
    assert report.system["search"]["engine"] == "native" and report.system["search"]["policy"] == "native"


def test_a_model_that_cannot_search_is_refused_native_search_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(GenerationError) as caught:
        generate(ScriptedBackend(native_answer), tmp_path / "p.jsonl", GenerationSettings(search="native"), queries=ROWS[:1], progress=False)
    assert str(caught.value).startswith("--search native: openai:gpt-4o cannot search by itself (its openai engine")
    with pytest.raises(SearchEngineError, match="^--search-noise does not apply to native search"):
        GenerationSettings(search="native", search_noise=0.7)
    with pytest.raises(SearchEngineError, match="^--search-policy agent needs a search engine, and --search none turns search off$"):
        GenerationSettings(search="none", search_policy="agent")


def test_an_engine_that_always_searches_does_so_by_default_and_none_turns_it_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    backend = ScriptedBackend(native_answer, searches=True, name="searching", model="gpt-4o")
    monkeypatch.setitem(ENGINES, "searching", Engine("searching", OpenAIOptions, backend=lambda model, options: backend, search_default="native"))
    generate("searching:gpt-4o", tmp_path / "default.jsonl", GenerationSettings(), queries=ROWS[:1], progress=False)
    generate("searching:gpt-4o", tmp_path / "off.jsonl", GenerationSettings(search="none"), queries=ROWS[:1], progress=False)
    assert [r.native_search for r in backend.requests] == [True, False]
    assert predictions(tmp_path / "default.jsonl")[0]["search"]["engine"] == "native"
    assert "search" not in predictions(tmp_path / "off.jsonl")[0]
    with pytest.raises(SearchEngineError, match="^--search-noise does not apply to native search"):
        generate("searching:gpt-4o", tmp_path / "noisy.jsonl", GenerationSettings(search_noise=0.5), queries=ROWS[:1], progress=False)


def test_native_search_answers_come_back_from_the_generation_cache(tmp_path: Path) -> None:
    first = ScriptedBackend(native_answer, searches=True)
    generate(first, tmp_path / "a.jsonl", GenerationSettings(search="native", cache=tmp_path / "c.sqlite"), queries=ROWS[:1], progress=False)
    again = ScriptedBackend(lambda request: pytest.fail("a cached call was made again"), searches=True)
    generate(again, tmp_path / "b.jsonl", GenerationSettings(search="native", cache=tmp_path / "c.sqlite"), queries=ROWS[:1], progress=False)
    assert predictions(tmp_path / "a.jsonl") == predictions(tmp_path / "b.jsonl")


def test_settings_are_checked_when_made() -> None:
    with pytest.raises(UserError, match="unknown --search-policy 'browse'"):
        GenerationSettings(search_policy="browse")
    with pytest.raises(UserError, match="^--search-noise must be a share between 0 and 1, got 1.5"):
        GenerationSettings(search_noise=1.5)
    with pytest.raises(UserError, match="^--search-rounds must be a positive integer"):
        GenerationSettings(search_rounds=0)
    with pytest.raises(SearchEngineError, match="unknown search engine 'google'"):
        GenerationSettings(search="google")
    assert replace(GenerationSettings(), search="tavily").search == "tavily"


def test_an_answer_given_as_a_list_of_parts_is_read_as_its_text(searxng, openai_server, tmp_path: Path) -> None:
    # OpenAI-compatible servers (Perplexity among them) may send `message.content` as a list of text parts
    def responder(body: dict[str, Any]) -> dict[str, Any]:
        parts = [{"type": "text", "text": "Keep it warm [1]. "}, {"type": "image_url", "image_url": {"url": "https://i.example/x.png"}},
                 {"type": "text", "text": "Feed it daily."}]
        return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": parts}}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}}

    openai_server.responder = responder
    backend = make_backend("openai:gpt-4o", base_url=openai_server.base_url, api_key="sk-model-key-123456")
    report = generate(backend, tmp_path / "p.jsonl", settings(searxng), queries=ROWS[:1], progress=False)
    assert report.failed == []
    [record] = predictions(tmp_path / "p.jsonl")
    assert (record["response_raw"], record["response"]) == ("Keep it warm [1]. Feed it daily.", "Keep it warm. Feed it daily.")
    assert record["search"]["cited"] == [made_up_results(ROWS[0]["query"])[0]["url"]]


def test_a_native_search_record_in_the_prediction_counts_searches_and_keeps_sources_and_opened_pages(tmp_path: Path) -> None:
    search = {"queries": ["cold kitchen sourdough", "cold kitchen sourdough"], "calls": 3,
              "results": [{"url": "https://bakers.example/cold", "title": "Cold kitchens"}, {"type": "api", "name": "oai-weather"}],
              "cited": ["https://bakers.example/cold"], "failed": 1, "failures": ["web_search_call failed"],
              "opened": ["https://bakers.example/cold?utm_source=openai"]}
    backend = ScriptedBackend(lambda request: Completion("Proof it longer [1].", search=search), searches=True)
    generate(backend, tmp_path / "p.jsonl", GenerationSettings(search="native"), queries=ROWS[:1], progress=False)
    block = predictions(tmp_path / "p.jsonl")[0]["search"]
    assert (block["calls"], block["failed"], block["failures"]) == (3, 1, ["web_search_call failed"])
    assert block["opened"] == ["https://bakers.example/cold?utm_source=openai"] and block["cited"] == ["https://bakers.example/cold"]
    assert block["results"][1] == {"round": 1, "rank": 2, "url": "", "title": "", "type": "api", "name": "oai-weather", "noise": False}
