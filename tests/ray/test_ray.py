"""`executor="ray"` end to end on a simulated two-node cluster: the `openai:` judge against the local
test server and the tiny `hf:` model on actors, compared with the in-process run.

Every test shares the session's one cluster (`ray_cluster`) and this module's one judge server, so the
cache keys (which name the endpoint) are the same for the in-process and the Ray runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from key_scan import calls_with_key

import bespoke_dataset
from bespoke_metric.backends.base import Request
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.scheduler import run_requests_sync
from bespoke_metric.scoring.pipeline import score
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import Fault, RecordedRequest, messages_of, serve

REJECTED = "REJECTED-BY-THE-ENGINE"
"""A response containing this is refused by the server (HTTP 400): its item's calls fail alone."""
WORKER_TITLE = "MapWorker(MapBatches(EngineWorker))"
"""How Ray titles the processes of our engine actors."""
RAY_OPTIONS = {"executor": "ray", "replicas": 2}


def rejecting(record: RecordedRequest) -> Fault | None:
    prompt = " ".join(m["content"] for m in messages_of(record.body or {}))
    return Fault(status=400, body={"error": {"message": "prompt refused", "type": "invalid_request_error"}}) if REJECTED in prompt else None


@pytest.fixture(scope="module")
def judge_server():
    with serve(responder=judge_answer, rule=rejecting) as server:
        yield server


@pytest.fixture(scope="module")
def predictions(tmp_path_factory, synthetic_hub) -> Path:
    """One prediction per query (its best example response); one of them is refused by the engine."""
    path = tmp_path_factory.mktemp("ray-preds") / "preds.jsonl"
    with path.open("w") as out:
        for number, row in enumerate(bespoke_dataset.load("benchmark", source=synthetic_hub)):
            response = row["shots"][-1]["response"] + (f" {REJECTED}" if number == 3 else "")
            out.write(json.dumps({"user": row["user"], "query_id": row["query_id"], "response": response}) + "\n")
    return path


def judge_options(server, cache: Path, **more: Any) -> dict[str, Any]:
    return {"base_url": server.base_url, "cache": str(cache), "concurrency": 4, **more}


@pytest.fixture(scope="module")
def in_process(judge_server, predictions, synthetic_hub, tmp_path_factory) -> dict[str, Any]:
    """The in-process run everything on Ray is compared with, and its server-side call count."""
    judge_server.reset()
    cache = tmp_path_factory.mktemp("in-process") / "judge.sqlite"
    results = score(predictions, "openai:judge", source=synthetic_hub, progress=False, **judge_options(judge_server, cache)).to_json()
    return {"results": results, "calls": len(judge_server.calls), "cache": cache}


def assert_same_judgments(ray_results: dict[str, Any], local_results: dict[str, Any]) -> None:
    assert ray_results["items"] == local_results["items"]
    assert ray_results["summary"] == local_results["summary"]
    assert ray_results["judge"] == local_results["judge"]


def engine_workers() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if WORKER_TITLE in " ".join(process.info["cmdline"] or ()):
            found.append(process)
    return found


def test_ray_judgments_equal_in_process_and_share_its_cache(ray_cluster, judge_server, predictions, synthetic_hub, in_process, tmp_path):
    reference = in_process["results"]
    assert reference["summary"]["failures"]["need_alignment"] == 1  # the refused response fails alone
    assert reference["summary"]["items"] == 20
    judge_server.reset()
    cache = tmp_path / "ray.sqlite"
    results = score(predictions, "openai:judge", source=synthetic_hub, progress=False, **judge_options(judge_server, cache, **RAY_OPTIONS)).to_json()
    assert_same_judgments(results, reference)
    assert results["usage"]["calls"] == in_process["calls"] == len(judge_server.calls)

    judge_server.reset()  # warm rerun on Ray: every answer from the cache; only failed calls are asked again
    again = score(predictions, "openai:judge", source=synthetic_hub, progress=False, **judge_options(judge_server, cache, **RAY_OPTIONS)).to_json()
    assert again["usage"]["calls"] == len(judge_server.calls) == reference["usage"]["failed"] == 5
    assert all(rejecting(call) is not None for call in judge_server.calls)
    assert_same_judgments(again, reference)

    # Same identity, same keys: in-process reads the Ray cache and Ray reads the in-process one.
    local_from_ray_cache = score(predictions, "openai:judge", source=synthetic_hub, progress=False, **judge_options(judge_server, cache)).to_json()
    ray_from_local_cache = score(predictions, "openai:judge", source=synthetic_hub, progress=False,
                                 **judge_options(judge_server, in_process["cache"], **RAY_OPTIONS)).to_json()
    assert local_from_ray_cache["usage"]["cached"] == ray_from_local_cache["usage"]["cached"] == in_process["calls"] - 5
    assert all(rejecting(call) is not None for call in judge_server.calls)
    assert_same_judgments(local_from_ray_cache, reference)
    assert_same_judgments(ray_from_local_cache, reference)


def test_a_worker_killed_mid_run_costs_no_item_and_few_calls(ray_cluster, judge_server, predictions, synthetic_hub, in_process, tmp_path):
    needed = in_process["calls"]
    killed: list[int] = []

    def kill_one_worker_part_way(record: RecordedRequest) -> Fault | None:
        if not killed and len(judge_server.calls) >= needed // 3:
            workers = engine_workers()
            if workers:
                killed.append(workers[0].pid)
                os.kill(workers[0].pid, signal.SIGKILL)
        return rejecting(record)

    judge_server.reset()
    judge_server.rule = kill_one_worker_part_way
    try:
        results = score(predictions, "openai:judge", source=synthetic_hub, progress=False,
                        **judge_options(judge_server, tmp_path / "ray.sqlite", **RAY_OPTIONS)).to_json()
    finally:
        judge_server.rule = rejecting
    assert killed, "no engine worker was found to kill"
    assert not psutil.pid_exists(killed[0]) or psutil.Process(killed[0]).status() == psutil.STATUS_ZOMBIE
    assert_same_judgments(results, in_process["results"])
    assert len(judge_server.calls) <= needed * 1.1


def test_hf_on_actors_answers_as_in_process(ray_cluster, tiny_model_dir):
    schema = {"type": "object", "properties": {"verdict": {"type": "boolean"}}, "required": ["verdict"]}
    requests = [Request(({"role": "user", "content": f"Question {i}: is {i} even?"},), max_tokens=4 + i % 3,
                        json_schema=schema if i % 2 else None) for i in range(12)]
    local = make_backend(f"hf:{tiny_model_dir}", batch_size=4)
    on_ray = make_backend(f"hf:{tiny_model_dir}", batch_size=4, **RAY_OPTIONS)
    assert on_ray.identity() == local.identity()
    expected = run_requests_sync(local, requests)
    got = run_requests_sync(on_ray, requests)
    assert [r.text for r in got] == [r.text for r in expected]
    assert [r.error for r in got] == [r.error for r in expected] == [None] * len(requests)


def test_api_engines_on_actors_keep_tool_calls_search_and_token_details(ray_cluster):
    """Tool calls, search records and token details travel back in the rows: an API engine on Ray takes
    tools and searches as in-process (`perplexity:` goes through the same actors as `openai:`)."""
    import asyncio

    from fakes.provider_servers import openai_responder, root_url, serve_perplexity, serve_provider

    tools = ({"type": "function", "function": {"name": "search", "parameters": {"type": "object",
                                                                                 "properties": {"query": {"type": "string"}}}}},)
    requests = [Request(({"role": "user", "content": f"trails near Seoul {i}"},), tools=tools if i % 2 else (),
                        native_search=not i % 2) for i in range(6)]

    def outcomes(backend) -> list:
        found: dict[int, Any] = {}
        asyncio.run(backend.complete(requests, found.__setitem__))
        return [found[i] for i in range(len(requests))]

    with serve_provider(openai_responder()) as openai_server, serve_perplexity() as perplexity_server:
        for spec, base_url, takes_tools in (("openai:gpt-4.1", openai_server.base_url, True),
                                            ("perplexity:sonar", root_url(perplexity_server), False)):
            local = make_backend(spec, base_url=base_url, api_key="test")
            on_ray = make_backend(spec, base_url=base_url, api_key="test", **RAY_OPTIONS)
            assert (on_ray.takes_tools, on_ray.searches) == (takes_tools, True)
            assert on_ray.identity() == local.identity()
            got = outcomes(on_ray)
            assert got == outcomes(local)
            assert all(outcome.search["results"] for outcome in got[::2])
            assert all(outcome.cached_input_tokens for outcome in got)
            if takes_tools:
                assert all(outcome.tool_calls[0].arguments == {"query": request.messages[-1]["content"]}
                           for outcome, request in zip(got[1::2], requests[1::2], strict=True))


def run_cli(*args: str) -> subprocess.Popen:
    command = [sys.executable, "-c", "import sys; from bespoke_cli.cli import main; sys.exit(main())", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_driver_killed_and_restarted_resumes_from_its_cache(ray_cluster, judge_server, predictions, synthetic_hub, in_process, tmp_path):
    needed = in_process["calls"]
    output, cache = tmp_path / "results.json", tmp_path / "judge.sqlite"
    args = ["score", "--predictions", str(predictions), "--judge", "openai:judge", "--source", str(synthetic_hub),
            "--base-url", judge_server.base_url, "--cache", str(cache), "--concurrency", "4",
            "--executor", "ray", "--ray-address", ray_cluster.address, "--replicas", "2", "--output", str(output)]
    # Each driver sends its own key (keys are never part of the cache key): the calls the dead driver's
    # actors still had in flight may land at any time and are told apart from the restarted driver's,
    # with no sleep to wait them out.
    judge_server.reset()
    judge_server.latency = 0.05  # slow enough to kill the driver part-way
    try:
        driver = run_cli(*args, "--api-key", "killed-driver")
        deadline = time.monotonic() + 120
        while len(judge_server.calls) < needed // 2 and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        driver.send_signal(signal.SIGKILL)
        driver.communicate(timeout=30)
        assert driver.returncode == -signal.SIGKILL, "the driver finished before it could be killed"
        assert not output.exists()
        with Cache(cache) as saved:
            saved_answers = len(saved)
        assert 0 < saved_answers < needed
    finally:
        judge_server.latency = 0.0
    resumed = run_cli(*args, "--api-key", "restarted-driver")
    log = resumed.communicate(timeout=300)[0]
    assert resumed.returncode == 3, log  # incomplete: the judge refuses some calls, whatever the run
    results = json.loads(output.read_text())
    assert results["incomplete"]["judgments_failed"] == 5 and "restarted-driver" not in log + output.read_text()
    assert_same_judgments(results, in_process["results"])
    # The restarted driver pays only for what the cache lacks...
    assert results["usage"]["cached"] == saved_answers
    assert results["usage"]["calls"] == needed - saved_answers == calls_with_key(judge_server, "restarted-driver")
    # ...and the dead one lost only what was in flight or on its way back (batches of 2 calls, two per
    # actor, and answers not yet read) besides the refused calls, which are never cached: counted after
    # the rerun, so any call of the dead driver that landed late is in it.
    assert calls_with_key(judge_server, "killed-driver") - saved_answers <= 0.2 * needed

    judge_server.reset()  # a warm rerun from the command line asks again only for what failed
    warm = run_cli(*args, "--api-key", "warm-rerun")
    log = warm.communicate(timeout=300)[0]
    assert warm.returncode == 3, log
    assert json.loads(output.read_text())["usage"]["calls"] == calls_with_key(judge_server, "warm-rerun") == 5
    assert all(rejecting(call) is not None for call in judge_server.calls)


def test_generate_on_ray_writes_the_in_process_predictions(ray_cluster, tiny_model_dir, synthetic_hub, tmp_path, monkeypatch):
    from bespoke_cli.cli import main

    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    common = ["generate", "--model", f"hf:{tiny_model_dir}", "--source", str(synthetic_hub), "--context", "oracle",
              "--max-new-tokens", "8", "--limit", "3"]
    assert main([*common, "--output", str(tmp_path / "local.jsonl")]) == 0
    assert main([*common, "--output", str(tmp_path / "ray.jsonl"), "--executor", "ray", "--replicas", "2"]) == 0

    def answers(path: Path) -> list[tuple[str, str, str]]:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return sorted((row["user"], row["query_id"], row["response"]) for row in rows)

    assert len(answers(tmp_path / "ray.jsonl")) == 3
    assert answers(tmp_path / "ray.jsonl") == answers(tmp_path / "local.jsonl")


def test_api_workers_on_ray_keep_to_one_account_limit_together(ray_cluster):
    # two actors, each pacing at the account's whole rate, would send twice it: each keeps to its share
    from bespoke_metric.testing.provider_limits import Limits

    with serve(latency=0.02, limits=Limits(rpm=600)) as server:  # 10 requests a second, for the account
        backend = make_backend("openai:test-model", base_url=server.base_url, api_key="sk-test-ray-limits-0123",
                               rpm=600, concurrency=8, **RAY_OPTIONS)
        requests = [Request(({"role": "user", "content": f"Question {i}"},), max_tokens=8) for i in range(40)]
        results = run_requests_sync(backend, requests)
        assert [result.error for result in results] == [None] * len(requests)
        assert sum(call.status == 429 for call in server.calls) <= 4
