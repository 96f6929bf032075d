"""Batch mode at the backend: real HTTP against the fake Files + Batch API server (`fakes.batch_server`).

What the server received is what is asserted: the files uploaded, the batches created, the direct calls
(none, unless a batch failed a request for good enough to send it direct).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from backend_outcomes import cancel_once
from fakes.batch_server import serve_batches

from bespoke_metric.backends.base import Request, Usage
from bespoke_metric.backends.providers.batch_ledger import ledger_path, running_batches
from bespoke_metric.backends.providers.openai_batch import BatchUnsupported
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.pricing import PriceTable
from bespoke_metric.calls.scheduler import run_requests, run_requests_sync
from bespoke_metric.calls.spending import SpendingLimit
from bespoke_metric.testing.server import messages_of, serve

KEY = "sk-batch-secret-0123456789"


def answer(body):
    return "answer to " + messages_of(body)[-1]["content"]


@pytest.fixture
def server():
    with serve_batches(answer) as running:
        yield running


def requests_for(n: int, prefix: str = "q") -> list[Request]:
    return [Request(messages=({"role": "user", "content": f"{prefix}{i}"},), max_tokens=16) for i in range(n)]


def batched(server, tmp_path: Path, model: str = "gpt-4o-mini", **options):
    options = {"batch_poll": 0.01, "batch_poll_max": 0.05, "batch_ledger": str(ledger_path(tmp_path / "c.sqlite")), **options}
    return make_backend(f"openai:{model}", base_url=server.base_url, api_key=KEY, backoff_base=0.01, batch=True, **options)


def direct(server, model: str = "gpt-4o-mini"):
    return make_backend(f"openai:{model}", base_url=server.base_url, api_key=KEY, backoff_base=0.01)


def input_lines(server) -> list[list[dict]]:
    """The lines of every batch input file uploaded, per file in upload order."""
    files = [f for f in server.files.values() if f.purpose == "batch"]
    return [[json.loads(line) for line in f.content.decode().splitlines()] for f in files]


@pytest.mark.slow
@pytest.mark.parametrize("model, endpoint", [("gpt-4o-mini", "/v1/chat/completions"), ("gpt-5-mini", "/v1/responses")])
def test_a_batch_answers_as_the_direct_calls_would_and_sends_none(server, tmp_path, model, endpoint):
    requests = requests_for(5)
    with Cache(tmp_path / "c.sqlite") as cache:
        backend, usage = batched(server, tmp_path, model), Usage()
        results = run_requests_sync(backend, requests, cache=cache, usage=usage)
        assert server.direct_calls == []
        [batch] = server.batches.values()
        assert batch.endpoint == endpoint and batch.status == "completed"
        [lines] = input_lines(server)
        direct_backend = direct(server, model)
        for line, request in zip(lines, requests, strict=True):  # the documented line, holding the very body a direct call sends
            assert set(line) == {"custom_id", "method", "url", "body"}
            assert line["method"] == "POST" and line["url"] == endpoint
            path, body = direct_backend.path_and_body(request)
            assert "/v1" + path == endpoint and line["body"] == json.loads(body)
        # the same answers as direct calls, under the same cache keys: a direct rerun makes no call
        fresh = run_requests_sync(direct_backend, requests)
        assert [(r.text, r.ok) for r in results] == [(r.text, r.ok) for r in fresh]
        calls = len(server.direct_calls)
        again = run_requests_sync(direct_backend, requests, cache=cache)
        assert len(server.direct_calls) == calls and all(r.cached for r in again)
        assert backend.batch_usage.calls == 5
        assert backend.batch_usage.input_tokens == usage.input_tokens > 0  # every token was a batch token


def test_large_runs_are_split_under_the_limits(server, tmp_path):
    results = run_requests_sync(batched(server, tmp_path, batch_max_requests=3), requests_for(7))
    assert [len(lines) for lines in input_lines(server)] == [3, 3, 1]
    assert all(r.ok for r in results)
    line_bytes = max(len(f.content.splitlines()[0]) + 1 for f in server.files.values() if f.purpose == "batch")
    server.files.clear()
    server.batches.clear()
    run_requests_sync(batched(server, tmp_path, batch_max_bytes=2 * line_bytes + 2), requests_for(5, "r"))
    sizes = [len(f.content) for f in server.files.values() if f.purpose == "batch"]
    assert len(sizes) >= 3 and max(sizes) <= 2 * line_bytes + 2


def test_expired_requests_go_in_a_next_batch(server, tmp_path):
    server.fates.append("expired")
    results = run_requests_sync(batched(server, tmp_path), requests_for(6))
    first, second = server.batches.values()
    assert first.status == "expired" and first.completed == 3 and first.failed == 3
    assert second.status == "completed" and len(second.lines) == 3
    assert [r.text for r in results] == [f"answer to q{i}" for i in range(6)]
    assert server.direct_calls == []


def test_what_every_round_failed_is_sent_directly(server, tmp_path):
    server.fates.extend(["cancelled", "cancelled"])
    results = run_requests_sync(batched(server, tmp_path, batch_retries=1), requests_for(8))
    assert [b.status for b in server.batches.values()] == ["cancelled", "cancelled"]
    assert len(server.direct_calls) == 2  # 8 -> 4 answered, 4 resubmitted -> 2 answered, 2 direct
    assert all(r.ok for r in results)


def test_a_request_the_batch_fails_ends_answered_or_recorded(server, tmp_path):
    # q1 fails for good (400: not retried), q2 once with a 500 (retried in the next batch, then answered)
    failures = {"q2": 1}

    def fault(body):
        text = messages_of(body)[-1]["content"]
        if text == "q1":
            return 400
        if failures.get(text):
            failures[text] -= 1
            return 500
        return None

    server.line_fault = fault
    usage = Usage()
    results = run_requests_sync(batched(server, tmp_path), requests_for(4), usage=usage)
    assert results[1].error.startswith("the batch failed it: HTTP 400")
    assert [r.ok for r in results] == [True, False, True, True]
    assert results[2].text == "answer to q2"
    assert len(server.batches) == 2 and server.direct_calls == []
    assert usage.failed == 1


def test_a_batch_that_fails_validation_is_recorded_on_every_request(server, tmp_path):
    server.fates.append("failed")
    results = run_requests_sync(batched(server, tmp_path), requests_for(3))
    assert all(r.error.startswith("batch batch_1 failed: invalid_request: scripted validation failure") for r in results)
    assert len(server.batches) == 1 and server.direct_calls == []


def in_progress(server) -> bool:
    """Whether the server has a batch in progress (a run killed then leaves it running)."""
    return any(batch.status == "in_progress" for batch in server.batches.values())


def test_a_rerun_collects_the_batches_a_dead_run_left(server, tmp_path):
    server.hold_batches = True
    requests = requests_for(5)
    with Cache(tmp_path / "c.sqlite") as cache:
        cancel_once(run_requests(batched(server, tmp_path), requests, cache=cache), lambda: in_progress(server))
        assert running_batches(ledger_path(cache.path)) == ["batch_1"]
        server.hold_batches = False
        results = run_requests_sync(batched(server, tmp_path), requests, cache=cache)
    assert len(server.batch_creations) == 1 and len(input_lines(server)) == 1  # nothing submitted again
    assert [r.text for r in results] == [f"answer to q{i}" for i in range(5)]
    assert running_batches(ledger_path(tmp_path / "c.sqlite")) == []


def test_answers_the_rerun_did_not_ask_for_stay_in_the_ledger(server, tmp_path):
    server.hold_batches = True
    cancel_once(run_requests(batched(server, tmp_path), requests_for(4)), lambda: in_progress(server))
    server.hold_batches = False
    first = run_requests_sync(batched(server, tmp_path), requests_for(4)[:2])  # a smaller rerun
    later = run_requests_sync(batched(server, tmp_path), requests_for(4)[2:])
    assert [r.text for r in first + later] == [f"answer to q{i}" for i in range(4)]
    assert len(server.batch_creations) == 1


def test_a_file_uploaded_by_a_run_that_died_before_its_batch_is_made_into_one(server, tmp_path):
    server.api_fault = lambda record: 500 if record.method == "POST" and record.path.endswith("/batches") else None
    results = run_requests_sync(batched(server, tmp_path, max_retries=1), requests_for(3))
    assert all("rerun to submit it" in r.error for r in results)
    assert server.batches == {} and len(input_lines(server)) == 1
    server.api_fault = None
    again = run_requests_sync(batched(server, tmp_path), requests_for(3))
    assert [r.text for r in again] == [f"answer to q{i}" for i in range(3)]
    assert len(input_lines(server)) == 1  # the file uploaded before, not a new one
    assert server.direct_calls == []


def test_an_endpoint_without_a_batch_api_is_said_in_one_line(tmp_path):
    with serve(answer) as plain:
        backend = make_backend("openai:gpt-4o-mini", base_url=plain.base_url, api_key=KEY, batch=True,
                               batch_ledger=str(tmp_path / "l.sqlite"))
        with pytest.raises(BatchUnsupported, match=r"offers no Batch API \(POST /files: HTTP 404"):
            run_requests_sync(backend, requests_for(2))
        assert [call.path for call in plain.calls] == ["/v1/files"]  # no completion was asked


def test_a_spending_limit_admits_requests_into_a_batch_while_they_fit(server, tmp_path):
    prices = PriceTable()
    one = prices.price("gpt-4o-mini")
    limit = SpendingLimit(1e-5, prices)  # a few requests' worth at batch prices
    results = run_requests_sync(batched(server, tmp_path, spending=limit), requests_for(20))
    sent = [r for r in results if r.ok]
    assert 0 < len(sent) < 20
    assert all(r.error == limit.refusal for r in results if not r.ok)
    assert limit.stopped and limit.not_sent == 20 - len(sent)
    assert 0 < limit.spent <= 1e-5 and limit.reserved == pytest.approx(0.0, abs=1e-12)
    assert one.rates(batch=True)[0] == one.input / 2
    assert sum(len(lines) for lines in input_lines(server)) == len(sent)


def test_no_key_in_the_cache_or_the_ledger(server, tmp_path):
    with Cache(tmp_path / "c.sqlite") as cache:
        run_requests_sync(batched(server, tmp_path), requests_for(3), cache=cache)  # its ledger stays open
    written = [p for p in tmp_path.iterdir() if p.is_file()]
    assert {p.name for p in written} >= {"c.sqlite", "c.batches.sqlite", "c.batches.sqlite-wal", "c.batches.sqlite-shm"}
    for path in written:  # the SQLite files and their -wal/-shm
        assert KEY.encode() not in path.read_bytes(), path
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in server.requests)  # it was sent, though


def test_batch_errors_are_call_errors_not_exceptions(server, tmp_path):
    server.api_fault = lambda record: 400 if record.path.endswith("/content") else None
    results = run_requests_sync(batched(server, tmp_path, max_retries=0), requests_for(2))
    assert all(isinstance(r.error, str) and "could not read the results of batch batch_1" in r.error for r in results)
    assert running_batches(ledger_path(tmp_path / "c.sqlite")) == ["batch_1"]  # kept, to collect later


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-5-mini"])  # chat completions; Responses API
def test_batch_answers_record_the_model_that_served_them(server, tmp_path, model):
    # a Batch API output line's `response.body` is the endpoint's own answer, `model` and all
    server.answer_fields = {"model": f"{model}-2025-08-07", "system_fingerprint": "fp_batch1", "service_tier": "default"}
    results = run_requests_sync(batched(server, tmp_path, model), requests_for(2))
    assert server.direct_calls == []
    assert {(r.completion.served_model, r.completion.system_fingerprint, r.completion.service_tier) for r in results} == {
        (f"{model}-2025-08-07", "fp_batch1", "default")}
