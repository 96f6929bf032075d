"""The scheduler: cache hits, resume after an interrupted run, repair rounds, failures, progress.

The backend is the real `openai:` one over HTTP against the test server, so "calls made" is counted where
it matters: at the server.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from bespoke_metric.backends.base import CallError, Request, Usage
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.progress import ProgressBar
from bespoke_metric.calls.scheduler import run_requests, run_requests_sync
from bespoke_metric.judging.parsing import ParseError
from bespoke_metric.testing.doubles import RecordingBackend, unretrieved_task_errors
from bespoke_metric.testing.server import Fault, messages_of


def requests_for(n: int, prefix: str = "q") -> list[Request]:
    return [Request(messages=({"role": "user", "content": f"{prefix}{i}"},), max_tokens=16) for i in range(n)]


def answer(body: dict[str, Any]) -> str:
    return "answer to " + messages_of(body)[-1]["content"]


def backend_for(server, **options):
    return make_backend("openai:test-model", base_url=server.base_url, api_key="local", backoff_base=0.01, **options)


def test_warm_cache_makes_no_calls(openai_server, tmp_path):
    openai_server.responder = answer
    requests = requests_for(20)
    with Cache(tmp_path / "c.sqlite") as cache:
        first_usage, second_usage = Usage(), Usage()
        first = run_requests_sync(backend_for(openai_server), requests, cache=cache, usage=first_usage)
        assert len(openai_server.calls) == 20
        assert first_usage.calls == 20
        assert first_usage.cached == 0
        assert first_usage.input_tokens == 20
        assert first_usage.output_tokens == 60
        second = run_requests_sync(backend_for(openai_server), requests, cache=cache, usage=second_usage)
        assert len(openai_server.calls) == 20  # nothing new reached the server
        assert second_usage.calls == 0
        assert second_usage.cached == 20
        assert second_usage.input_tokens == 0
        assert [r.text for r in second] == [r.text for r in first] == [f"answer to q{i}" for i in range(20)]
        assert all(r.cached for r in second)
        assert not any(r.cached for r in first)
        # A different key_extra (say, a new protocol version) is a different answer.
        run_requests_sync(backend_for(openai_server), requests[:3], cache=cache, key_extra={"protocol_version": 9})
        assert len(openai_server.calls) == 23


@pytest.mark.slow
def test_resume_after_a_crash_pays_only_for_unfinished_calls(openai_server, tmp_path, caplog):
    openai_server.responder = answer
    openai_server.latency = 0.05
    requests = requests_for(30)
    with Cache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(KeyboardInterrupt):
            run_requests_sync(RecordingBackend(backend_for(openai_server, concurrency=4), crash_after=11), requests, cache=cache)
        assert unretrieved_task_errors(caplog.records) == []  # the crashed run left no task behind
        assert len(cache) == 11
        settled(openai_server)
        openai_server.reset()
        results = run_requests_sync(backend_for(openai_server), requests, cache=cache)
        assert len(openai_server.calls) == 30 - 11
        assert [r.text for r in results] == [f"answer to q{i}" for i in range(30)]
        assert sum(r.cached for r in results) == 11


def settled(server, quiet: float = 0.5, limit: float = 30.0) -> None:
    """Wait until `server` has had no call in flight and no new request for `quiet` seconds: a request a
    cancelled run wrote just before it stopped may reach the server's thread later, on a busy machine."""
    seen, since, deadline = -1, time.monotonic(), time.monotonic() + limit
    while time.monotonic() < deadline:
        count = len(server.requests)
        if server.in_flight or count != seen:
            seen, since = count, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.02)
    raise AssertionError(f"the server did not settle in {limit} s")


def test_resume_after_cancellation(openai_server, tmp_path):
    openai_server.responder = answer
    openai_server.latency = 0.1
    requests = requests_for(40)

    async def interrupted(cache: Cache) -> None:
        task = asyncio.create_task(run_requests(backend_for(openai_server, concurrency=4), requests, cache=cache))
        while len(cache) < 8:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with Cache(tmp_path / "c.sqlite") as cache:
        asyncio.run(interrupted(cache))
        done_before = len(cache)
        assert 8 <= done_before < 40
        settled(openai_server)  # the cancelled run's last requests counted before the reset, not after
        openai_server.reset()
        results = run_requests_sync(backend_for(openai_server), requests, cache=cache)
        assert len(openai_server.calls) == 40 - done_before
        assert all(r.ok for r in results)
        assert len(cache) == 40


def test_identical_requests_are_sent_once(openai_server):
    openai_server.responder = answer
    requests = requests_for(3) + requests_for(3)
    results = run_requests_sync(backend_for(openai_server), requests)
    assert len(openai_server.calls) == 3
    assert [r.text for r in results] == [f"answer to q{i}" for i in (0, 1, 2, 0, 1, 2)]


def parse_number(index: int, text: str) -> int:
    try:
        return int(json.loads(text)["n"])
    except (ValueError, KeyError, TypeError):
        raise ParseError("expected a JSON object with an integer n") from None


def repair(request: Request, bad: str, reason: str) -> Request:
    extra = ({"role": "assistant", "content": bad}, {"role": "user", "content": f"REPAIR {reason}"})
    return Request(messages=request.messages + extra, max_tokens=request.max_tokens)


def test_repair_rounds_only_for_what_failed_to_parse(openai_server, tmp_path):
    def responder(body):
        messages = messages_of(body)
        index = int(messages[0]["content"][1:])
        repairs = sum(m["content"].startswith("REPAIR") for m in messages)
        if index % 3 == 0 and repairs < index % 2 + 1:  # 0, 6: one repair needed; 3, 9: two
            return "no idea"
        return json.dumps({"n": index})

    openai_server.responder = responder
    counts: dict[str, int] = {}
    usage = Usage()

    def hook(kind: str, n: int) -> None:
        counts[kind] = counts.get(kind, 0) + n

    with Cache(tmp_path / "c.sqlite") as cache:
        results = run_requests_sync(
            backend_for(openai_server), requests_for(10), cache=cache, parse=parse_number, repair=repair,
            max_parse_retries=1, progress=hook, usage=usage,
        )
        assert [r.value for r in results] == [0, 1, 2, None, 4, 5, 6, 7, 8, None]
        assert [r.attempts for r in results] == [2, 1, 1, 2, 1, 1, 2, 1, 1, 2]
        assert results[3].error == "unparseable answer after 2 attempt(s): expected a JSON object with an integer n"
        assert results[3].text == "no idea"
        assert len(openai_server.calls) == 10 + 4
        assert counts == {"done": 8, "failed": 2}
        assert usage.failed == 2
        assert usage.calls == 14

        # Rerun: every answer, repairs included, comes from the cache.
        openai_server.reset()
        counts.clear()
        again = run_requests_sync(
            backend_for(openai_server), requests_for(10), cache=cache, parse=parse_number, repair=repair,
            max_parse_retries=1, progress=hook,
        )
        assert len(openai_server.calls) == 0
        assert [r.value for r in again] == [r.value for r in results]
        assert counts == {"cached": 8, "failed": 2}


def test_without_repair_an_unparseable_answer_fails_at_once(openai_server):
    openai_server.responder = lambda body: "garbage"
    results = run_requests_sync(backend_for(openai_server), requests_for(2), parse=parse_number)
    assert all(r.attempts == 1 and r.error.startswith("unparseable answer after 1") for r in results)
    assert len(openai_server.calls) == 2


def test_call_errors_become_results_and_are_not_cached(openai_server, tmp_path):
    openai_server.rule = lambda record: Fault(status=404) if "q1" in json.dumps(record.body) else None
    usage = Usage()
    with Cache(tmp_path / "c.sqlite") as cache:
        results = run_requests_sync(backend_for(openai_server), requests_for(3), cache=cache, usage=usage)
        assert results[1].error.startswith("HTTP 404")
        assert results[1].text is None
        assert results[1].attempts == 1
        assert results[0].ok
        assert results[2].ok
        assert usage.failed == 1
        assert usage.calls == 3
        assert len(cache) == 2


def test_a_backend_that_forgets_a_request_yields_an_error():
    class Forgetful:
        name, model = "fake", "m"

        def identity(self):
            return {"engine": "fake"}

        async def complete(self, requests, on_done):
            on_done(0, CallError("boom"))

        def close(self):
            pass

    results = run_requests_sync(Forgetful(), requests_for(2))
    assert results[0].error == "boom"
    assert results[1].error == "fake backend returned no outcome"


def test_progress_bar_counts(openai_server):
    with ProgressBar(total=4, disable=True) as bar:
        run_requests_sync(backend_for(openai_server), requests_for(4), progress=bar)
        assert bar.counts == {"done": 4, "cached": 0, "failed": 0}


def test_sync_wrapper_inside_a_running_loop(openai_server):
    async def notebook_cell():
        return run_requests_sync(backend_for(openai_server), requests_for(2))

    assert [r.text for r in asyncio.run(notebook_cell())] == ["ok", "ok"]
