"""Claude with `--batch`: Anthropic's Message Batches over real HTTP against the strict Messages API server
(`fakes.anthropic_server`), with the ledger OpenAI's batch mode keeps. What the server
received and ran is what is asserted: the batches created, the requests they ran (each billed once), the
direct calls (none)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from backend_outcomes import cancel_once
from fakes.anthropic_server import serve_anthropic

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import ModelUnavailableError, Request, Usage
from bespoke_metric.backends.providers.batch_ledger import ledger_path, running_batches
from bespoke_metric.backends.providers.batches import BatchUnsupported
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.pricing import ModelUse, PriceTable, Tokens, usage_models
from bespoke_metric.calls.scheduler import run_requests, run_requests_sync
from bespoke_metric.testing.server import messages_of, serve

KEY = "sk-ant-batch-SECRET-0123456789"
MODEL = "claude-haiku-5-5"


def answer(body):
    return "answer to " + messages_of(body)[-1]["content"]


@pytest.fixture
def server():
    with serve_anthropic(answer) as running:
        yield running


def requests_for(n: int, prefix: str = "q") -> list[Request]:
    return [Request(messages=({"role": "user", "content": f"{prefix}{i}"},), max_tokens=16) for i in range(n)]


def batched(server, tmp_path: Path, model: str = MODEL, **options):
    options = {"batch_poll": 0.01, "batch_poll_max": 0.05, "batch_ledger": str(ledger_path(tmp_path / "c.sqlite")), **options}
    return make_backend(f"anthropic:{model}", base_url=server.root_url, api_key=KEY, backoff_base=0.01, batch=True, **options)


def direct(server, model: str = MODEL):
    return make_backend(f"anthropic:{model}", base_url=server.root_url, api_key=KEY, backoff_base=0.01)


def submitted(server) -> list[list[dict]]:
    """The requests of every batch creation the server received, per creation."""
    return [call.body["requests"] for call in server.batch_creations]


def test_a_batch_answers_as_direct_calls_would_at_half_the_price_and_sends_none(server, tmp_path):
    requests = requests_for(5)
    with Cache(tmp_path / "c.sqlite") as cache:
        backend, usage = batched(server, tmp_path), Usage()
        results = run_requests_sync(backend, requests, cache=cache, usage=usage)
        assert server.direct_calls == []
        [batch] = server.batches.values()
        assert batch.status == "ended" and server.processed == 5
        [lines] = submitted(server)
        direct_backend = direct(server)
        for line, request in zip(lines, requests, strict=True):  # the SDK's batch Request: custom_id and the direct call's very body
            assert set(line) == {"custom_id", "params"}
            path, body = direct_backend.path_and_body(request)
            assert path == "/v1/messages" and line["params"] == json.loads(body)
        assert all(r.completion.service_tier == "batch" for r in results)
        # the same answers as direct calls, under the same cache keys: a direct rerun makes no call
        fresh = run_requests_sync(direct_backend, requests)
        assert [(r.text, r.ok) for r in results] == [(r.text, r.ok) for r in fresh]
        calls = len(server.direct_calls)
        again = run_requests_sync(direct_backend, requests, cache=cache)
        assert len(server.direct_calls) == calls and all(r.cached for r in again)
    assert backend.batch_usage.calls == 5 and backend.batch_usage.input_tokens == usage.input_tokens > 0
    prices = PriceTable()
    record = usage_models([ModelUse(f"anthropic:{MODEL}", ("judge",), usage, backend.batch_usage)], prices)["models"][f"anthropic:{MODEL}"]
    price = prices.price(f"anthropic:{MODEL}")
    assert record["batch_calls"] == 5 and record["cost"] == round(price.cost(Tokens.of(usage), batch=True), 6)
    assert price.rates(batch=True) == pytest.approx([rate / 2 for rate in price.rates(batch=False)])  # Message Batches: half price


def test_large_runs_are_split_under_the_limits(server, tmp_path):
    results = run_requests_sync(batched(server, tmp_path, batch_max_requests=3), requests_for(7))
    assert [len(lines) for lines in submitted(server)] == [3, 3, 1]
    assert all(r.ok for r in results) and server.processed == 7


def test_a_batch_killed_mid_run_is_collected_by_the_rerun_paying_nothing_twice(server, tmp_path):
    server.hold_batches = True
    requests = requests_for(5)
    with Cache(tmp_path / "c.sqlite") as cache:
        # killed once the batch is created and in the ledger (a kill between the two is the lost creation that a
        # rerun matches by time and count: test_a_creation_whose_answer_was_lost_is_found_not_submitted_again)
        cancel_once(run_requests(batched(server, tmp_path), requests, cache=cache),
                    lambda: bool(server.batches) and bool(running_batches(ledger_path(cache.path))))
        assert running_batches(ledger_path(cache.path)) == ["msgbatch_000001"]
        server.hold_batches = False
        results = run_requests_sync(batched(server, tmp_path), requests, cache=cache)
        assert [r.text for r in results] == [f"answer to q{i}" for i in range(5)]
        assert len(server.batch_creations) == 1 and server.processed == 5 and server.direct_calls == []
        again = run_requests_sync(batched(server, tmp_path), requests, cache=cache)  # and a third run: from the cache
    assert all(r.cached for r in again) and len(server.batch_creations) == 1 and server.processed == 5
    assert running_batches(ledger_path(tmp_path / "c.sqlite")) == []


def test_a_creation_whose_answer_was_lost_is_found_not_submitted_again(server, tmp_path):
    """The server made the batch and its answer never came (a 500 here; a driver killed before the answer
    on a real run): the creation is not retried, and the next poll finds the batch among the endpoint's."""
    server.lose_creations = 1
    results = run_requests_sync(batched(server, tmp_path), requests_for(4))
    assert [r.text for r in results] == [f"answer to q{i}" for i in range(4)]
    assert len(server.batch_creations) == 1 and server.processed == 4 and server.direct_calls == []
    assert any(call.method == "GET" and call.path.startswith("/v1/messages/batches?limit=") for call in server.requests)


def test_canceled_and_expired_requests_go_in_a_next_batch_then_directly(server, tmp_path):
    server.fates.extend(["expired", "canceled"])
    results = run_requests_sync(batched(server, tmp_path, batch_retries=1), requests_for(8))
    assert [len(lines) for lines in submitted(server)] == [8, 4]  # 8 -> 4 expired, resubmitted -> 2 canceled
    assert len(server.direct_calls) == 2 and server.processed == 6
    assert [r.text for r in results] == [f"answer to q{i}" for i in range(8)]


def test_a_request_the_api_refuses_ends_as_its_error_and_a_retired_model_stops_the_run(tmp_path):
    with serve_anthropic(answer, retired=("claude-3-opus-20240229",)) as server:
        refused = [Request(messages=({"role": "user", "content": "q"},), max_tokens=16)]
        backend = batched(server, tmp_path, "claude-opus-4-7")
        backend.direct.temperature = 0.5  # sent as if the check before any call were not there: the API refuses it
        [result] = run_requests_sync(backend, refused)
        assert result.error == ("the batch failed it: invalid_request_error: `temperature` is deprecated for this model.")
        with pytest.raises(ModelUnavailableError, match="'anthropic:claude-3-opus-20240229' is not served: model: claude-3-opus"):
            run_requests_sync(batched(server, tmp_path, "claude-3-opus-20240229"), requests_for(2))
        assert running_batches(ledger_path(tmp_path / "c.sqlite")) == []  # the batch is collected, not left to rerun


def test_an_effort_the_model_refuses_stops_a_batch_run_before_any_batch_is_made(server, tmp_path):
    # Claude Sonnet 4.5 takes no effort (Anthropic answers one with a 400): refused as a direct run refuses it
    asked = [Request(messages=({"role": "user", "content": "q"},), max_tokens=16, reasoning_effort="low")]
    with pytest.raises(UserError, match=r"^anthropic:claude-sonnet-4-5 \(Claude Sonnet and Haiku 4.5\) takes no "):
        run_requests_sync(batched(server, tmp_path, "claude-sonnet-4-5"), asked)
    assert server.requests == []  # no batch made, no call
    assert running_batches(ledger_path(tmp_path / "c.sqlite")) == []


def test_an_endpoint_without_message_batches_is_said_in_one_line(tmp_path):
    with serve(answer) as plain:
        backend = make_backend(f"anthropic:{MODEL}", base_url=plain.base_url.removesuffix("/v1"), api_key=KEY, batch=True,
                               batch_ledger=str(tmp_path / "l.sqlite"))
        with pytest.raises(BatchUnsupported, match=r"offers no Batch API \(POST /v1/messages/batches: HTTP 404"):
            run_requests_sync(backend, requests_for(2))
    assert running_batches(tmp_path / "l.sqlite") == []  # the refused submission is not left to collect


def test_no_key_in_the_cache_or_the_ledger(server, tmp_path):
    with Cache(tmp_path / "c.sqlite") as cache:
        run_requests_sync(batched(server, tmp_path), requests_for(3), cache=cache)
    written = [p for p in tmp_path.iterdir() if p.is_file()]
    assert {p.name for p in written} >= {"c.sqlite", "c.batches.sqlite"}
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path
    assert all(r.headers.get("x-api-key") == KEY for r in server.requests)  # it was sent, though


def _score_args(server, synthetic_hub, tmp_path) -> list[str]:
    """`bespoke score --batch` of two queries with a Claude judge against `server`."""
    import bespoke_dataset
    from bespoke_metric.testing.judge_responder import judge_answer

    server.responder = judge_answer
    rows = list(bespoke_dataset.load("benchmark", source=synthetic_hub))[:2]
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps({"user": r["user"], "query_id": r["query_id"], "response": r["shots"][0]["response"]})
                                   + "\n" for r in rows))
    return ["score", "--predictions", str(predictions), "--source", str(synthetic_hub), "--judge", f"anthropic:{MODEL}",
            "--base-url", server.root_url, "--api-key", KEY, "--recall", "batched", "--cache", str(tmp_path / "judge.sqlite"),
            "--output", str(tmp_path / "results.json"), "--batch", "--batch-poll", "0.05"]


def _kill_once(args: list[str], tmp_path: Path, ready) -> str:
    """Run `bespoke ARGS` as its own process and SIGKILL it once `ready(running batches of its ledger)`: the
    ledger file is what is waited on, not a time. The one batch the ledger then holds: its id, or its
    submission's key."""
    driver = subprocess.Popen([sys.executable, "-m", "bespoke_cli.cli", *args], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, cwd=tmp_path)
    ledger = ledger_path(tmp_path / "judge.sqlite")
    deadline = time.monotonic() + 300  # a bound on a broken run only: a working one is ready in seconds
    while not ready(running_batches(ledger)) and driver.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert driver.poll() is None and ready(running_batches(ledger)), (
        driver.stderr.read().decode() if driver.poll() is not None else "timed out")
    driver.send_signal(signal.SIGKILL)
    driver.wait(timeout=30)
    [held] = running_batches(ledger)
    assert not (tmp_path / "results.json").exists()
    return held


def _rerun_pays_nothing_twice(server, args: list[str], tmp_path: Path, capsys, caplog) -> None:
    """The rerun ends the batch the killed run left: one batch made in all, each request run (and paid) once,
    no direct call, every item scored; nothing holds the key."""
    from bespoke_cli.cli import main

    requested = len(submitted(server)[0])
    assert requested > 0 and len(server.batch_creations) == 1
    server.hold_batches, server.hold_creations = False, None
    caplog.set_level("INFO")
    assert main(args) == 0, capsys.readouterr().err
    assert len(server.batches) == 1 and server.processed == requested and server.direct_calls == []
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["summary"]["items"] == 2 and sum(results["summary"]["failures"].values()) == 0
    judge_use = results["usage"]["models"][f"anthropic:{MODEL}"]
    assert judge_use["batch_calls"] == judge_use["calls"] == requested
    assert running_batches(ledger_path(tmp_path / "judge.sqlite")) == []
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.slow
def test_score_batch_killed_by_sigkill_is_rerun_paying_nothing_twice(server, synthetic_hub, tmp_path, capsys, caplog):
    """`bespoke score --batch` with a Claude judge, its driver killed (SIGKILL) while its batch runs, once the
    batch's id is in the ledger: the rerun collects that batch."""
    args = _score_args(server, synthetic_hub, tmp_path)
    server.hold_batches = True
    held = _kill_once(args, tmp_path, lambda running: any(id_.startswith("msgbatch_") for id_ in running))
    assert held == "msgbatch_000001"
    _rerun_pays_nothing_twice(server, args, tmp_path, capsys, caplog)
    assert len(server.batch_creations) == 1
    assert "collecting 1 batch(es) submitted before: msgbatch_000001" in caplog.text


@pytest.mark.slow
def test_score_batch_killed_before_its_batch_id_is_recorded_finds_that_batch(server, synthetic_hub, tmp_path, capsys, caplog):
    """The driver killed after the API made its batch but before the answer naming it came: the ledger holds
    only the submission (its `submission-...` key, recorded before the creating call). The rerun looks for
    that batch among the endpoint's (made since, as many requests), finds it and collects it: it does not
    submit the requests again."""
    args = _score_args(server, synthetic_hub, tmp_path)
    server.hold_creations = "made"
    held = _kill_once(args, tmp_path, lambda running: bool(server.batches) and bool(running))
    assert held.startswith("submission-") and list(server.batches) == ["msgbatch_000001"]
    _rerun_pays_nothing_twice(server, args, tmp_path, capsys, caplog)
    assert len(server.batch_creations) == 1
    assert f"collecting 1 batch(es) submitted before: (unrecorded: {held})" in caplog.text
    assert "message batch msgbatch_000001 is the one a run that died submitted" in caplog.text


@pytest.mark.slow
def test_score_batch_killed_before_its_creation_reached_the_api_submits_it_once(server, synthetic_hub, tmp_path, capsys, caplog):
    """The driver killed after recording its submission but before the API made a batch of it (the request
    never arrived, as far as the API goes): the rerun looks for that batch among the endpoint's, finds none,
    and submits the requests under the same submission: one batch made, each request run once."""
    args = _score_args(server, synthetic_hub, tmp_path)
    server.hold_creations = "unmade"
    held = _kill_once(args, tmp_path, lambda running: bool(server.batch_creations) and bool(running))
    assert held.startswith("submission-") and server.batches == {}
    _rerun_pays_nothing_twice(server, args, tmp_path, capsys, caplog)
    assert len(server.batch_creations) == 2 and list(server.batches) == ["msgbatch_000001"]
    assert f"collecting 1 batch(es) submitted before: (unrecorded: {held})" in caplog.text
    assert "is the one a run that died submitted" not in caplog.text
