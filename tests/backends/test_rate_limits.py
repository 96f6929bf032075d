"""Calls under a provider's limits (`backends.limits`, `backends.retries.Caller`): paced under the rates the user
gives or the provider's headers state, a 429 held back and sent again without spending the retry budget meant for
dead endpoints, a spent quota stopping the run at once with every paid answer kept. Over real HTTP against the
test servers enforcing the limits as each provider documents them (`bespoke_metric.testing.provider_limits`), at
rates scaled down so a test takes seconds; counts are asserted with the slack a loaded machine needs, never times."""

from __future__ import annotations

import asyncio
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes.anthropic_server import serve_anthropic
from fakes.provider_servers import gemini_responder, root_url, serve_provider
from output_lines import own_lines

from bespoke_metric.backends.base import CallError, Completion, Request
from bespoke_metric.backends.limits import (
    INPUT_TOKENS,
    REQUESTS,
    TOKENS,
    Cost,
    QuotaExhaustedError,
    Reading,
    Tier,
    parse_duration,
    read_headers,
)
from bespoke_metric.backends.pacing import AdaptiveLimit, Pacer
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.calls.progress import LONG_RUN_S, LogLines, batch_note, limit_line
from bespoke_metric.testing.provider_limits import Limits, Meter
from bespoke_metric.testing.server import Fault, serve

KEY = "sk-test-limits-0123456789"


def asks(n: int, words: int = 20, max_tokens: int = 16) -> list[Request]:
    return [Request(messages=({"role": "user", "content": " ".join(["word"] * words) + f" question {i}"},),
                    max_tokens=max_tokens) for i in range(n)]


def run(backend, requests: list[Request]) -> list[object]:
    outcomes: dict[int, object] = {}
    asyncio.run(asyncio.wait_for(backend.complete(requests, outcomes.__setitem__), 120))
    return [outcomes.get(i) for i in range(len(requests))]


def refused(server) -> int:
    return sum(call.status == 429 for call in server.calls)


# -- what a provider says -----------------------------------------------------------------------------------


@pytest.mark.parametrize("text, seconds", [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1.5s", 1.5),
                                           ("1h2m3.5s", 3723.5), ("0.25", 0.25), ("soon", None), ("1s2x", None)])
def test_resets_are_read_as_openai_writes_them(text, seconds):
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_the_headers_of_openai_and_anthropic_say_each_limit():
    openai = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "59",
              "x-ratelimit-reset-requests": "1s", "x-ratelimit-limit-tokens": "150000",
              "x-ratelimit-remaining-tokens": "149984", "x-ratelimit-reset-tokens": "6m0s"}
    assert read_headers(openai) == [Reading(REQUESTS, 60, 59, 1.0), Reading(TOKENS, 150000, 149984, 360.0)]
    now = time.time()
    at = datetime.datetime.fromtimestamp(now + 30, datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    anthropic = {"anthropic-ratelimit-input-tokens-limit": "40000", "anthropic-ratelimit-input-tokens-remaining": "39000",
                 "anthropic-ratelimit-input-tokens-reset": at, "anthropic-ratelimit-requests-limit": "50"}
    [requests, tokens] = read_headers(anthropic, now=now)
    assert requests == Reading(REQUESTS, 50, None, None)
    assert (tokens.kind, tokens.limit, tokens.remaining) == (INPUT_TOKENS, 40000, 39000)
    assert tokens.reset_s == pytest.approx(30, abs=1)
    assert read_headers({"content-type": "application/json", "x-ratelimit-limit-requests": "zero"}) == []


def test_a_call_costs_its_prompt_and_its_output_cap_as_the_provider_counts():
    [request] = asks(1, words=99, max_tokens=500)
    cost = Cost.of_request(request, 500)
    assert cost.prompt_tokens == pytest.approx(len(request.messages[0]["content"]) / 4, abs=1)
    assert (cost.of(REQUESTS), cost.of(TOKENS)) == (1.0, cost.prompt_tokens + 500)
    assert cost.of(INPUT_TOKENS, calibration=2.0) == 2 * cost.prompt_tokens
    assert Cost.of_request(request, None).of(TOKENS) == cost.prompt_tokens  # no cap sent: none charged


def test_a_limit_s_window_is_read_off_its_resets():
    pacer = Pacer()
    # per minute, as OpenAI documents: 1800 RPM refills 30 a second
    pacer.learn([Reading(REQUESTS, 1800, 1790, 10 / 30)])
    assert pacer.rates()[REQUESTS] == pytest.approx(30)
    # a bucket more than half spent that is whole again within a second: a limit of 30 per second
    pacer.learn([Reading(TOKENS, 30, 10, 20 / 30)])
    assert pacer.rates()[TOKENS] == pytest.approx(30)
    given = Pacer(Tier(rpm=600))
    given.learn([Reading(REQUESTS, 6000, 5999, 0.01)])
    assert given.rates()[REQUESTS] == pytest.approx(10)  # the user's lower rate stands: the account may be shared


def test_calls_in_flight_halve_on_a_refusal_and_come_back_as_answers_flow():
    limit = AdaptiveLimit(32)
    limit.lower()
    limit.lower()  # within a second of the first: one signal
    assert limit.limit == 16
    for _ in range(16):
        limit.raise_()
    assert limit.limit == pytest.approx(17, abs=0.1)  # one more per round of answers


# -- paced under the limits, over HTTP ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("limits, tier", [(Limits(rpm=2400), {}), (Limits(tpm=120_000), {}),
                                          (Limits(rpm=2400), {"rpm": 2400})])
def test_a_run_at_the_limit_loses_no_call_and_is_rarely_refused(limits, tier):
    # 120 calls at 32 in flight against 40 requests (or 2,000 tokens, some 50 calls) a second: unpaced, most would be
    # refused (the test below); the first 32 fit in the server's second, the rest go at the pace its headers state
    with serve(latency=0.05, limits=limits) as server:
        backend = make_backend("openai:test-model", base_url=server.base_url, api_key=KEY, concurrency=32, **tier)
        outcomes = run(backend, asks(120))
        assert all(isinstance(outcome, Completion) for outcome in outcomes)
        assert refused(server) <= 12  # at most a tenth of the calls
        if tier:  # the user's rate paces from the first call: nothing is refused
            assert refused(server) == 0
        assert backend.retries_made == 0


@pytest.mark.slow
def test_unpaced_the_same_limit_refuses_most_calls():
    # the yardstick of the test above: the server enforces the limit, and a client that does not pace meets it
    with serve(latency=0.05, limits=Limits(rpm=2400)) as server:
        from openai import AsyncOpenAI

        async def flood() -> None:
            client = AsyncOpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
            calls = [client.chat.completions.create(model="test-model", messages=[{"role": "user", "content": f"q{i}"}])
                     for i in range(120)]
            await asyncio.gather(*calls, return_exceptions=True)
            await client.close()

        asyncio.run(flood())
        assert refused(server) > 60


@pytest.mark.slow
def test_a_rate_limit_never_spends_the_retry_budget_meant_for_dead_endpoints():
    # a budget of no retry at all: each call is still sent again after its refusal, and answered
    with serve(faults=[Fault(status=429, retry_after="0.2")] * 6) as server:
        backend = make_backend("openai:test-model", base_url=server.base_url, api_key=KEY, retry_budget=0, max_retries=0)
        outcomes = run(backend, asks(4))
        assert all(isinstance(outcome, Completion) for outcome in outcomes)
        assert (backend.retries_made, backend.pacer.refusals) == (0, 6)
    with serve(faults=[Fault(status=503)]) as server:  # a dead endpoint's failure still spends it
        backend = make_backend("openai:test-model", base_url=server.base_url, api_key=KEY, retry_budget=0, max_retries=0)
        [failed] = run(backend, asks(1))
        assert isinstance(failed, CallError)


def test_a_refusal_holds_every_call_back_for_the_wait_the_provider_asks():
    # one refusal asking 0.5 s: the calls behind it are not sent into the limit meanwhile
    with serve(faults=[Fault(status=429, headers=(("retry-after-ms", "500"),))]) as server:
        backend = make_backend("openai:test-model", base_url=server.base_url, api_key=KEY, concurrency=1)
        outcomes = run(backend, asks(3))
        assert all(isinstance(outcome, Completion) for outcome in outcomes)
        first, second = server.calls[:2]
        assert first.status == 429 and second.received - first.finished >= 0.5


# -- a spent quota --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_spent_openai_quota_stops_the_run_at_once_and_is_never_retried():
    with serve(latency=0.05, limits=Limits(quota_calls=10)) as server:
        backend = make_backend("openai:test-model", base_url=server.base_url, api_key=KEY, concurrency=4)
        landed: dict[int, object] = {}
        with pytest.raises(QuotaExhaustedError) as stopped:
            asyncio.run(backend.complete(asks(200), landed.__setitem__))
        assert "You exceeded your current quota" in str(stopped.value) and "insufficient_quota" in str(stopped.value)
        assert "billing" in stopped.value.remedy and KEY not in str(stopped.value)
        # the ten answered calls landed, in flight ones too; what was refused was never sent again
        assert sum(isinstance(outcome, Completion) for outcome in landed.values()) == 10
        bodies = [json.dumps(call.body, sort_keys=True) for call in server.calls if call.status == 429]
        assert len(bodies) == len(set(bodies)) <= 4  # at most the calls in flight, each refused once
        assert len(server.calls) <= 14


def test_a_spent_anthropic_credit_balance_stops_the_run():
    with serve_anthropic(limits=Limits(quota_calls=2)) as server:
        backend = make_backend("anthropic:claude-sonnet-5-5", base_url=server.root_url, api_key=KEY, concurrency=1)
        landed: dict[int, object] = {}
        with pytest.raises(QuotaExhaustedError, match="credit balance is too low"):
            asyncio.run(backend.complete(asks(5), landed.__setitem__))
        assert len(landed) == 2


def test_anthropic_s_headers_pace_its_calls():
    with serve_anthropic(limits=Limits(rpm=600)) as server:
        backend = make_backend("anthropic:claude-sonnet-5-5", base_url=server.root_url, api_key=KEY)
        outcomes = run(backend, asks(3))
        assert all(isinstance(outcome, Completion) for outcome in outcomes)
        assert backend.pacer.rates()[REQUESTS] == pytest.approx(10)  # 600 a minute, as its headers state


@pytest.mark.slow
def test_gemini_s_quota_errors_hold_calls_and_a_daily_one_stops_the_run():
    with serve_provider(gemini_responder()) as server:
        server.meter = Meter(Limits(rpm=120))  # 2 a second: a burst of 8 meets RESOURCE_EXHAUSTED
        backend = make_backend("gemini:gemini-3.8-flash", base_url=root_url(server), api_key=KEY)
        outcomes = run(backend, asks(8))
        assert all(isinstance(outcome, Completion) for outcome in outcomes)
        assert backend.retries_made == 0 and backend.pacer.refusals >= 1
        assert backend.pacer.rates()[REQUESTS] == pytest.approx(2 * 0.85, rel=0.2)  # its quotaValue, slowed by refusals
        server.meter = Meter(Limits(quota_calls=1))
        with pytest.raises(QuotaExhaustedError, match="PerDay"):
            run(backend, asks(3, words=3))


# -- what the user sees -------------------------------------------------------------------------------------


def test_a_held_run_s_progress_says_which_limit_holds_it_and_for_how_long():
    pacer = Pacer(spec="openai:test-model")
    pacer.refused(5.0)

    async def held() -> str:
        waiting = asyncio.create_task(pacer.admit(Cost(10, 10)))
        await asyncio.sleep(0.3)
        line = LogLines(10, "judging", "call", {"done": 2, "cached": 0, "failed": 0}, every_s=3600).line()
        waiting.cancel()
        return line

    line = asyncio.run(held())
    assert "rate limit: holding 1 call for 0s" in line  # the log line, from whichever limit holds calls now
    assert limit_line(pacer) == "openai:test-model rate limit: holding 0 calls for 0s (0s held in all, 1 refused)" \
        or limit_line(pacer).startswith("openai:test-model rate limit: pacing (0s held in all, 1 refused)")
    assert limit_line(Pacer(spec="openai:idle")) is None  # a limit that never held a call is not shown


def test_a_run_the_limit_makes_long_is_told_what_batch_would_cost():
    pacer = Pacer(Tier(rpm=1), spec="openai:gpt-4o-mini")
    pacer.refused(0.0)
    pacer.answered(1000, 100, Cost(1000, 100))
    note = batch_note(500, "call", LONG_RUN_S * 2, pacer)
    assert note is not None and note.startswith("note: openai:gpt-4o-mini's rate limit leaves this run about 2h00m more")
    assert "the 500 calls left go through the provider's Batch API" in note and "$" in note
    assert batch_note(500, "call", LONG_RUN_S / 2, pacer) is None  # a run done within the hour is told nothing
    gemini = Pacer(Tier(rpm=1), spec="gemini:gemini-3.8-flash")
    gemini.refused(0.0)
    assert batch_note(500, "call", LONG_RUN_S * 2, gemini) is None  # no Batch API to offer


# -- the command line ---------------------------------------------------------------------------------------


def bespoke(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bespoke_cli.cli", *args], capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_score_out_of_credit_stops_in_one_line_and_a_rerun_after_top_up_pays_only_the_rest(
        synthetic_hub: Path, tmp_path: Path):
    import bespoke_dataset
    from bespoke_metric.testing.judge_responder import judge_answer

    predictions = tmp_path / "preds.jsonl"
    rows = bespoke_dataset.load("benchmark", source=synthetic_hub)
    predictions.write_text("".join(json.dumps({"user": row["user"], "query_id": row["query_id"],
                                               "response": row["shots"][-1]["response"]}) + "\n" for row in rows))
    cache = tmp_path / "judge.sqlite"
    with serve(judge_answer, latency=0.02, limits=Limits(quota_calls=8)) as server:
        command = ["score", "--predictions", str(predictions), "--source", str(synthetic_hub), "--judge",
                   "openai:gpt-4o-mini", "--base-url", server.base_url, "--api-key", KEY, "--cache", str(cache),
                   "--output", str(tmp_path / "results.json")]
        started = time.monotonic()
        stopped = bespoke(*command)
        assert time.monotonic() - started < 120  # seconds, not minutes of retries (a loaded machine: slack)
        assert stopped.returncode != 0
        [error] = [line for line in own_lines(stopped.stderr) if line.startswith("error:")]
        assert "quota is spent" in error and "You exceeded your current quota" in error and KEY not in stopped.stderr
        assert not (tmp_path / "results.json").exists()
        paid = sum(call.status == 200 for call in server.calls)
        assert paid == 8
        server.meter = Meter(Limits(quota_calls=10_000))  # topped up
        before = len(server.calls)
        rerun = bespoke(*command)
        assert rerun.returncode == 0, rerun.stderr
        again = [call for call in server.calls[before:] if call.status == 200]
        total = json.loads((tmp_path / "results.json").read_text())["usage"]
        assert total["cached"] >= 8 and len(again) == total["calls"]  # the paid answers came from the cache


@pytest.mark.slow
def test_generate_at_the_system_model_s_limit_answers_every_query(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # the system under test meets limits too: `generate --rpm` paces it, `run --model-rpm` and the judge's `--rpm` too
    from bespoke_cli.cli import main
    from bespoke_metric.testing.system_responder import answer_any

    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    with serve(answer_any, latency=0.02, limits=Limits(rpm=300)) as server:  # 5 calls a second, for the account
        endpoint = ["--base-url", server.base_url, "--api-key", KEY]
        common = ["--source", "sample", "--limit", "6", "--model", "openai:gpt-4o-mini", "--context", "none"]
        predictions = tmp_path / "generated.jsonl"
        assert main(["generate", *common, *endpoint, "--rpm", "300", "--output", str(predictions)]) == 0
        assert len(predictions.read_text().splitlines()) == 6
        assert sum(call.status == 429 for call in server.calls) == 0  # paced from the first call
        assert main(["run", *common, "--model-base-url", server.base_url, "--model-api-key", KEY, "--model-rpm", "150",
                     "--judge", "openai:judge", *endpoint, "--rpm", "150", "--recall", "none",
                     "--output", str(tmp_path / "run.json")]) == 0
        run = json.loads((tmp_path / "run.json").read_text())
        assert not any(run["summary"]["failures"].values())
        assert sum(call.status == 429 for call in server.calls) <= 2


@pytest.mark.slow
def test_generate_out_of_credit_stops_in_one_line_keeping_what_was_answered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                             capsys: pytest.CaptureFixture):
    from bespoke_cli.cli import main
    from bespoke_metric.testing.system_responder import answer_any

    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    with serve(answer_any, limits=Limits(quota_calls=3)) as server:
        command = ["generate", "--source", "sample", "--limit", "8", "--model", "openai:gpt-4o-mini", "--context", "none",
                   "--base-url", server.base_url, "--api-key", KEY, "--output", str(tmp_path / "generated.jsonl")]
        assert main(command) != 0
        errors = [line for line in own_lines(capsys.readouterr().err) if line.startswith("error:")]
        assert len(errors) == 1 and "quota is spent" in errors[0] and "3 answer(s) saved" in errors[0]
        server.meter = Meter(Limits(quota_calls=100))  # topped up
        before = len(server.calls)
        assert main(command) == 0
        assert len(server.calls) - before == 5  # the three paid answers are not paid again
