"""Search-augmented runs from the command line, as a user runs them: `bespoke generate` and `bespoke run`
with a fake SearXNG and Tavily and an OpenAI-compatible system model on 127.0.0.1; the search cache, a
replay with the search server down, `bespoke search freeze`; noise; a dead engine; no key in any file;
and `score` and the `evaluate` metric on the predictions."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fakes.search_servers import made_up_results, serve_search
from output_lines import own_lines

from bespoke_cli.cli import main
from bespoke_metric.results import ItemResult
from bespoke_metric.scoring.pipeline import score
from bespoke_metric.systems import GenerationSettings, generate
from bespoke_metric.systems.prompts import SYSTEM_PROMPT
from bespoke_metric.systems.search import SearchOptions
from bespoke_metric.systems.search.cache import cached_searches
from bespoke_metric.testing.doubles import ScriptedBackend
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import Fault, messages_of, tool_call

MODEL_KEY = "sk-model-secret-4f9a1c2e"
SEARCH_KEY = "tvly-search-secret-7d3b5a"
LIMIT = 4


def system_or_judge(body: dict[str, Any]) -> str | dict[str, Any]:
    """The system under test (an agent speaking the plain-text protocol) or, for judge prompts, the judge."""
    messages = messages_of(body)
    if messages[0]["content"] != SYSTEM_PROMPT:
        return judge_answer(body)
    question = re.search(r"Question: (.+)$", messages[1]["content"], re.S).group(1).strip()
    if not any(m["role"] == "assistant" for m in messages) and ("tools" in body or "search" in messages[1]["content"].lower()):
        query = f"{question} guide"
        if "tools" in body:  # offered the search tool (an openai: model takes tools): call it, as the API does
            return tool_call(body, "search", {"query": query})
        return f"SEARCH: {query}"
    return (f"For {question.rstrip('?')}, start with the basics and adjust to your situation [1]. "
            "Most people find the second method easier to keep up week after week [2].\n\nSources:\n"
            "- https://example.org/a\n- https://example.org/b")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def model(openai_server):
    openai_server.responder = system_or_judge
    return openai_server


def generate_args(model, synthetic_hub: Path, output: Path, *extra: str) -> list[str]:
    return ["generate", "--model", "openai:gpt-4o", "--base-url", model.base_url, "--api-key", MODEL_KEY,
            "--source", str(synthetic_hub), "--limit", str(LIMIT), "--output", str(output), *extra]


@pytest.mark.slow
def test_a_replayed_run_with_the_search_server_down_gives_identical_predictions(model, synthetic_hub: Path, tmp_path: Path) -> None:
    cache = tmp_path / "run.cache.sqlite"
    with serve_search("searxng") as searxng:
        spec = f"searxng:{searxng.base_url}"
        flags = ["--search", spec, "--search-policy", "agent", "--search-noise", "0.6", "--seed", "7", "--generation-cache", str(cache)]
        assert main(generate_args(model, synthetic_hub, tmp_path / "live.jsonl", *flags)) == 0
        searched = len(searxng.calls)
    assert searched == LIMIT  # one search per question (the agent asked once)
    calls = len(model.calls)
    assert main(generate_args(model, synthetic_hub, tmp_path / "replay.jsonl", *flags, "--search-replay")) == 0
    assert len(model.calls) == calls  # the model's answers came from the generation cache
    live, replay = read_jsonl(tmp_path / "live.jsonl"), read_jsonl(tmp_path / "replay.jsonl")
    assert live == replay and len(live) == LIMIT
    run = json.loads((tmp_path / "live.run.json").read_text(encoding="utf-8"))["search"]
    assert {name: run[name] for name in ("engine", "k", "policy", "rounds", "noise", "seed")} == {
        "engine": spec, "k": 5, "policy": "agent", "rounds": 3, "noise": 0.6, "seed": 7}
    assert [engine for engine, _, _ in cached_searches(cache)] == [spec] * LIMIT


def test_a_replay_that_misses_fails_at_once_naming_the_query(model, synthetic_hub: Path, tmp_path: Path, capsys) -> None:
    args = generate_args(model, synthetic_hub, tmp_path / "p.jsonl", "--search", "searxng:http://127.0.0.1:9",
                         "--search-cache", str(tmp_path / "empty.sqlite"), "--search-replay")
    assert main(args) == 2
    [line] = own_lines(capsys.readouterr().err)
    assert re.fullmatch(r"error: --search-replay: .*empty\.sqlite holds no searxng:http://127\.0\.0\.1:9 search for '.+' "
                        r"\(4 search\(es\) missing\); run without --search-replay to make them", line)
    assert len(model.calls) == 0
    assert not (tmp_path / "p.jsonl").exists() and not (tmp_path / "p.run.json").exists()  # no run was made


def test_a_replay_of_a_docs_search_needs_no_folder(model, synthetic_hub: Path, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "habits.txt").write_text("Start with the basics and keep a simple routine every week.", encoding="utf-8")
    flags = ["--search", f"docs:{folder}", "--search-cache", str(tmp_path / "searches.sqlite")]
    assert main(generate_args(model, synthetic_hub, tmp_path / "live.jsonl", *flags)) == 0
    folder.rename(tmp_path / "elsewhere")  # replayed on a machine without the collection
    assert main(generate_args(model, synthetic_hub, tmp_path / "replay.jsonl", *flags, "--search-replay")) == 0
    assert read_jsonl(tmp_path / "replay.jsonl") == read_jsonl(tmp_path / "live.jsonl")


def test_freeze_writes_every_cached_result_as_a_docs_collection(model, synthetic_hub: Path, tmp_path: Path, capsys) -> None:
    cache = tmp_path / "searches.sqlite"
    with serve_search("searxng") as searxng:
        args = generate_args(model, synthetic_hub, tmp_path / "p.jsonl", "--search", f"searxng:{searxng.base_url}", "--search-cache", str(cache))
        assert main(args) == 0
        queries = searxng.queries()
    capsys.readouterr()
    assert main(["search", "freeze", str(cache), "--out", str(tmp_path / "frozen")]) == 0
    assert capsys.readouterr().out.startswith(f"{LIMIT * 5} document(s) from {cache} written to {tmp_path / 'frozen' / 'frozen.jsonl'}")
    frozen = read_jsonl(tmp_path / "frozen" / "frozen.jsonl")
    documents = [d for query in queries for d in made_up_results(query)[:5]]
    assert sorted(frozen, key=lambda d: d["url"]) == sorted(documents, key=lambda d: d["url"])
    # every system can now search the frozen corpus
    assert main(generate_args(model, synthetic_hub, tmp_path / "docs.jsonl", "--search", f"docs:{tmp_path / 'frozen'}")) == 0
    found = read_jsonl(tmp_path / "docs.jsonl")[0]["search"]["results"]
    assert {r["url"] for r in found} <= {d["url"] for d in frozen} and found
    assert main(["search", "freeze", str(tmp_path / "missing.sqlite"), "--out", str(tmp_path / "x")]) == 2
    assert own_lines(capsys.readouterr().err) == [f"error: search cache {tmp_path / 'missing.sqlite'} does not exist"]


@pytest.mark.slow
def test_a_dead_search_engine_fails_its_queries_and_none_is_answered_unsearched(model, synthetic_hub: Path, tmp_path: Path, capsys) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    output = tmp_path / "p.jsonl"
    assert main(generate_args(model, synthetic_hub, output, "--search", f"searxng:{dead}")) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"0 generated, 0 already there, {LIMIT} failed")
    failures = [line for line in out.splitlines() if line.startswith("  failed ")]
    assert 1 <= len(failures) <= 2 and all(f"search failed (searxng:{dead}): connection error" in line for line in failures)
    assert read_jsonl(output) == [] and len(model.calls) == 0  # nothing answered without its search


def test_a_searxng_whose_engines_are_all_down_fails_every_query_and_none_is_answered(tmp_path: Path, synthetic_hub: Path) -> None:
    rows = read_jsonl_queries(synthetic_hub)
    down = [("google", "timeout"), ("bing", "too many requests")]  # SearXNG's `unresponsive_engines`: [name, reason] pairs
    asked: list[Any] = []
    with serve_search("searxng", results=lambda query: [], unresponsive=down) as searxng:
        settings = GenerationSettings(search=f"searxng:{searxng.base_url}", search_options=SearchOptions(max_retries=1, backoff_base=0.01))
        report = generate(ScriptedBackend(lambda request: asked.append(request) or "An answer."), tmp_path / "p.jsonl", settings,
                          queries=rows, progress=False)
    assert len(report.failed) == LIMIT and all(
        f"search failed (searxng:{searxng.base_url}): no result, and its engines did not answer: google (timeout), "
        "bing (too many requests)" in failure["reason"] for failure in report.failed)
    assert read_jsonl(tmp_path / "p.jsonl") == [] and asked == []  # nothing answered without its search


def test_a_search_that_fails_after_retries_fails_only_its_query(model, synthetic_hub: Path, tmp_path: Path) -> None:
    rows = read_jsonl_queries(synthetic_hub)
    victim = rows[1]["query"]
    failing = lambda call: Fault(status=503) if parse_qs(urlsplit(call.path).query)["q"] == [victim] else None  # noqa: E731
    with serve_search("searxng", rule=failing) as searxng:
        settings = GenerationSettings(search=f"searxng:{searxng.base_url}", search_options=SearchOptions(max_retries=1, backoff_base=0.01))
        report = generate(ScriptedBackend(lambda request: "An answer that used the results [1]."), tmp_path / "p.jsonl", settings,
                          queries=rows, progress=False)
    assert [(f["query_id"], f["reason"].split(":")[0]) for f in report.failed] == [(rows[1]["query_id"], "search failed (searxng")]
    assert "HTTP 503" in report.failed[0]["reason"] and "gave up after 1 retries" in report.failed[0]["reason"]
    assert [p["query_id"] for p in read_jsonl(tmp_path / "p.jsonl")] == [rows[0]["query_id"], *[r["query_id"] for r in rows[2:]]]


def read_jsonl_queries(source: Path) -> list[dict[str, Any]]:
    import bespoke_dataset

    return list(bespoke_dataset.load("queries", source=source))[:LIMIT]


def test_noise_replaces_its_share_with_other_queries_results_the_same_way_for_the_same_seed(tmp_path: Path, synthetic_hub: Path) -> None:
    rows = read_jsonl_queries(synthetic_hub)
    seen: list[str] = []

    def answer(request) -> str:
        seen.append(request.messages[1]["content"])
        return "An answer [1]."

    def noisy(seed: int, name: str) -> list[dict[str, Any]]:
        settings = GenerationSettings(search=f"searxng:{searxng.base_url}", search_noise=0.6, seed=seed, cache=tmp_path / f"{name}.sqlite")
        generate(ScriptedBackend(answer), tmp_path / f"{name}.jsonl", settings, queries=rows, progress=False)
        return read_jsonl(tmp_path / f"{name}.jsonl")

    with serve_search("searxng") as searxng:
        first, again, other = noisy(1, "first"), noisy(1, "again"), noisy(2, "other")
    own = {row["query"]: {d["url"] for d in made_up_results(row["query"])[:5]} for row in rows}
    for prediction, row in zip(first, rows, strict=True):
        results = prediction["search"]["results"]
        noise = [r for r in results if r["noise"]]
        assert len(results) == 5 and len(noise) == round(0.6 * 5) == 3
        assert all(r["url"] not in own[row["query"]] and any(r["url"] in urls for urls in own.values()) for r in noise)
        assert {r["url"] for r in results if not r["noise"]} <= own[row["query"]]
        assert [r["rank"] for r in results] == [1, 2, 3, 4, 5]
    assert all(noise["url"] in seen[0] for noise in first[0]["search"]["results"])  # the model saw the noise
    assert [p["search"] for p in first] == [p["search"] for p in again]
    assert [p["search"] for p in first] != [p["search"] for p in other]


@pytest.mark.slow
def test_bespoke_run_scores_search_predictions_and_keeps_no_key_anywhere(model, synthetic_hub: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", SEARCH_KEY)
    with serve_search("tavily", key=SEARCH_KEY) as tavily:
        args = ["run", "--model", "openai:gpt-4o", "--model-base-url", model.base_url, "--model-api-key", MODEL_KEY,
                "--search", "tavily", "--search-base-url", tavily.base_url, "--search-policy", "agent",
                "--judge", "openai:judge-model", "--base-url", model.base_url, "--api-key", "sk-judge-secret-99",
                "--cache", str(tmp_path / "judge.sqlite"), "--source", str(synthetic_hub), "--limit", str(LIMIT),
                "--output", str(tmp_path / "results.json")]
        assert main(args) == 0
        assert len(tavily.calls) == LIMIT
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    made = read_jsonl(tmp_path / "results" / "predictions.jsonl")
    assert results["summary"]["items"] == LIMIT and not any(results["summary"]["failures"].values())
    assert [item["search"] for item in results["items"]] == [p["search"] for p in made]
    assert all(item["search"]["engine"] == "tavily" and item["search"]["calls"] == 1 for item in results["items"])
    assert all("https://" not in p["response"] and "[1]" not in p["response"] and "[1]" in p["response_raw"] for p in made)
    assert results["system"]["search"]["engine"] == "tavily"
    assert results["system"]["name"] == "openai:gpt-4o (none, tavily agent)"  # a system is model, context and search
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert any(path.name.endswith("-wal") for path in written) or any(path.suffix == ".sqlite" for path in written)
    for path in written:  # results, predictions, run file, caches with their -wal and -shm
        data = path.read_bytes()
        for secret in (MODEL_KEY, SEARCH_KEY, "sk-judge-secret-99"):
            assert secret.encode() not in data, (secret, path.name)

    # `bespoke score` and the metric take the predictions as they are
    again = score(tmp_path / "results" / "predictions.jsonl", "openai:judge-model", source=synthetic_hub, base_url=model.base_url,
                  api_key="sk-judge-secret-99", cache=str(tmp_path / "judge.sqlite"))
    assert again.summary == results["summary"] and [i.search for i in again.items] == [p["search"] for p in made]
    from bespoke_metric.hub.evaluate_metric import Bespoke

    metric = Bespoke(judge="openai:judge-model", source=str(synthetic_hub), base_url=model.base_url, api_key="sk-judge-secret-99",
                     cache=str(tmp_path / "judge.sqlite"))
    figures = metric.compute(predictions=[p["response"] for p in made], references=[f"{p['user']}/{p['query_id']}" for p in made])
    assert figures["average"] == pytest.approx(results["summary"]["average"])


def test_results_items_of_older_versions_load_without_a_search_block() -> None:
    old = {"user": "user1", "query_id": "1", "scores": {}, "recall": None}
    item = ItemResult.from_json(old)
    assert item.search is None and "search" not in item.to_json()
    searched = ItemResult.from_json({**old, "search": {"engine": "tavily", "calls": 1}})
    assert searched.to_json()["search"] == {"engine": "tavily", "calls": 1}


def test_search_mistakes_on_the_command_line_are_one_error_line_each(model, synthetic_hub: Path, tiny_model_dir: Path, tmp_path: Path,
                                                                     capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    output = tmp_path / "p.jsonl"
    cases = {
        ("--search", "bing"): "error: unknown search engine 'bing'; known: docs:DIR, searxng:URL, tavily, brave, exa, serper, native, none",
        ("--search", "brave"): "error: search engine brave needs an API key: set BRAVE_API_KEY",
        ("--search", "tavily", "--search-docs", str(tmp_path)): f"error: --search-docs is --search docs:{tmp_path}; give one of --search and --search-docs",
        ("--search", "native", "--search-noise", "0.7"): "error: --search-noise does not apply to native search: the provider's results cannot be changed",
        ("--search-policy", "agent"): "error: --search-policy agent needs a search engine, and --search none turns search off",
        ("--search", "searxng:http://127.0.0.1:9", "--search-k", "0"): "error: --search-k must be a positive integer, got 0",
        ("--search", "brave", "--search-k", "25"): "error: --search-k 25 is more than search engine brave gives for one search: at most 20 (its count)",
    }
    for flags, line in cases.items():
        assert main(generate_args(model, synthetic_hub, output, *flags)) == 2, flags
        assert own_lines(capsys.readouterr().err) == [line]
    assert not output.exists() and len(model.calls) == 0
    local = ["generate", "--model", f"hf:{tiny_model_dir}", "--search", "native", "--source", str(synthetic_hub), "--output", str(output)]
    assert main(local) == 2
    assert own_lines(capsys.readouterr().err) == [
        f"error: --search native: hf:{tiny_model_dir} cannot search by itself (its hf engine has no web search); "
        "give it a search engine instead (--search searxng:URL, tavily, ...)"]
    assert not output.exists()


def test_a_dry_run_plans_searches_only_from_the_cache_and_writes_nothing(model, synthetic_hub: Path, tmp_path: Path, capsys) -> None:
    """A search is a call: `run --dry-run` with a web engine is refused unless it replays from the search
    cache; with `--search-replay` (or a local collection) it plans, and no file of the run is written."""
    cache = tmp_path / "searches.sqlite"
    with serve_search("searxng") as searxng:
        spec = f"searxng:{searxng.base_url}"
        assert main(generate_args(model, synthetic_hub, tmp_path / "live.jsonl", "--search", spec, "--search-cache", str(cache))) == 0
        searched, calls = len(searxng.calls), len(model.calls)
        run = ["run", "--model", "openai:gpt-4o", "--model-base-url", model.base_url, "--model-api-key", MODEL_KEY,
               "--judge", "openai:judge-model", "--base-url", model.base_url, "--api-key", "sk-judge",
               "--source", str(synthetic_hub), "--limit", str(LIMIT), "--search", spec, "--search-cache", str(cache),
               "--output", str(tmp_path / "out" / "run.json"), "--dry-run"]
        capsys.readouterr()
        assert main(run) == 2
        assert own_lines(capsys.readouterr().err) == [
            f"error: --dry-run makes no call, and every search of {spec} is one: plan from the searches cached with "
            "--search-replay, or leave out --search"]
        before = {path: path.stat().st_mtime_ns for path in tmp_path.glob("searches.sqlite*")}
        assert main([*run, "--search-replay"]) == 0
        assert (len(searxng.calls), len(model.calls)) == (searched, calls)  # nothing searched, nothing asked
    assert not (tmp_path / "out").exists()
    assert {path: path.stat().st_mtime_ns for path in tmp_path.glob("searches.sqlite*")} == before
