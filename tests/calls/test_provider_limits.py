"""The test servers enforce a provider's rate limits and quota as the provider documents them
(`bespoke_metric.testing.provider_limits`): through the real SDKs over real HTTP, on a clock the test moves
(`Clock`), so what is admitted and refused follows from the limits, not from the machine's speed."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import openai
import pytest

from bespoke_metric.testing.provider_limits import Limits, Meter, go_duration
from bespoke_metric.testing.server import TestServer, serve

USER = [{"role": "user", "content": "three words here"}]


class Clock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def limited(limits: Limits, clock: Clock, **options: Any) -> TestServer:
    server = serve(**options)
    server.meter = Meter(limits, clock=clock)
    return server


def client(server: TestServer, retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=retries)


def chat(api: openai.OpenAI, **options: Any) -> Any:
    """One chat call's raw response, or the SDK's error for it."""
    try:
        return api.chat.completions.with_raw_response.create(model="gpt-5", messages=USER, **options)
    except openai.APIStatusError as error:
        return error


def statuses(server: TestServer) -> list[int | None]:
    return [call.status for call in server.calls]


# -- OpenAI ---------------------------------------------------------------------------------------------------


def test_the_request_bucket_refuses_past_its_window_and_refills_at_the_limits_rate() -> None:
    clock = Clock()
    with limited(Limits(rpm=120, window_s=1.5), clock) as server:  # 2 per second, 3 at once
        api = client(server)
        assert [chat(api).status_code for _ in range(4)] == [200, 200, 200, 429]
        clock.advance(0.5)  # one request's worth back (the refusal took what had refilled: nothing)
        assert chat(api).status_code == 200
        assert chat(api).status_code == 429
        clock.advance(1.5)
        assert [chat(api).status_code for _ in range(4)] == [200, 200, 200, 429]
    assert statuses(server) == [200, 200, 200, 429, 200, 429, 200, 200, 200, 429]
    assert server.meter is not None and server.meter.refused == ["requests"] * 3


def test_a_refused_call_counts_against_the_limit_so_resending_does_not_get_through() -> None:
    clock = Clock()
    with limited(Limits(rpm=60), clock) as server:  # 1 per second
        api = client(server)
        assert chat(api).status_code == 200
        for _ in range(5):  # resent every 0.6 s: each refusal takes what refilled since the last
            clock.advance(0.6)
            assert chat(api).status_code == 429
        clock.advance(1.0)
        assert chat(api).status_code == 200  # a client that waits what it was told gets through


def test_a_call_is_charged_its_prompt_and_the_output_cap_it_asks_for() -> None:
    clock = Clock()
    with limited(Limits(tpm=6000), clock) as server:  # 100 tokens per second
        api = client(server)
        first = chat(api, max_completion_tokens=50)  # 3 prompt tokens (words, as the usage counts them) + 50
        assert first.headers["x-ratelimit-remaining-tokens"] == str(6000 - 53)
        refused = chat(api, max_tokens=48)  # 51 more do not fit the 47 left of the second's bucket
        assert refused.status_code == 429 and refused.type == "tokens" and refused.code == "rate_limit_exceeded"
        assert "on tokens per min (TPM): Limit 6000, Used 53, Requested 51. Please try again in 40ms." in refused.message
        clock.advance(0.04)
        assert chat(api, max_tokens=48).status_code == 200
        clock.advance(1)
        both = chat(api, max_completion_tokens=10, n=3)  # the cap of each of the n answers
        assert both.headers["x-ratelimit-remaining-tokens"] == str(6000 - 33)
        clock.advance(1)
        response = api.responses.with_raw_response.create(model="gpt-5", input="two words", max_output_tokens=20)
        assert response.headers["x-ratelimit-remaining-tokens"] == str(6000 - 22)
    assert server.meter is not None and server.meter.refused == ["tokens"]


def test_a_call_larger_than_a_minutes_limit_is_refused_with_no_wait_that_helps() -> None:
    with serve(limits=Limits(tpm=100)) as server:
        error = chat(client(server), max_completion_tokens=200)
    assert error.status_code == 429 and error.code == "rate_limit_exceeded" and error.type == "tokens"
    assert error.message.startswith("Error code: 429 - Request too large for gpt-5 in organization org-test on "
                                    "tokens per min (TPM): Limit 100, Requested 203.")
    assert "retry-after-ms" not in error.response.headers and "retry-after" not in error.response.headers


def test_every_answer_carries_the_per_minute_view_and_a_refusal_says_how_long_to_wait() -> None:
    clock = Clock()
    with limited(Limits(rpm=1800, tpm=180_000), clock) as server:  # 30 requests and 3,000 tokens per second
        api = client(server)
        answers = [chat(api, max_completion_tokens=97) for _ in range(31)]
    *admitted, refused = answers
    for number, answer in enumerate(admitted, 1):
        assert answer.status_code == 200
        assert answer.headers["x-ratelimit-limit-requests"] == "1800"
        assert answer.headers["x-ratelimit-remaining-requests"] == str(1800 - number)
        assert answer.headers["x-ratelimit-reset-requests"] == go_duration(number / 30)  # back to 1800 at 30 per second
        assert answer.headers["x-ratelimit-limit-tokens"] == "180000"
        assert answer.headers["x-ratelimit-remaining-tokens"] == str(180_000 - 100 * number)
        assert answer.headers["x-ratelimit-reset-tokens"] == go_duration(100 * number / 3000)
    assert refused.status_code == 429 and refused.code == "rate_limit_exceeded" and refused.type == "requests"
    headers = refused.response.headers
    assert headers["retry-after-ms"] == "34" and headers["retry-after"] == "1"  # one request's worth: 1/30 s
    assert headers["x-ratelimit-remaining-requests"] == str(1800 - 31)  # the refusal counted
    assert headers["x-ratelimit-remaining-tokens"] == str(180_000 - 3000)  # and took no tokens
    assert refused.message == (
        "Error code: 429 - Rate limit reached for gpt-5 in organization org-test on requests per min (RPM): Limit 1800, "
        "Used 30, Requested 1. Please try again in 34ms. Visit https://platform.openai.com/account/rate-limits to learn more.")


def test_the_sdks_own_retry_waits_what_retry_after_ms_says() -> None:
    """openai-python reads `retry-after-ms` before `retry-after` (openai/_base_client.py
    `_parse_retry_after_header`): its retry comes no sooner than the milliseconds sent, on the real clock."""
    with serve(limits=Limits(rpm=30, window_s=2)) as server:  # one request per 2 s
        api = client(server, retries=1)
        assert chat(api).status_code == 200
        assert chat(api).status_code == 200  # refused once, then retried after the wait it was told
    first, refused, retried = server.calls
    assert (first.status, refused.status, retried.status) == (200, 429, 200)
    waited = retried.received - (refused.finished or 0)
    assert waited >= 0.9 * (2 - (refused.received - first.received))  # a lower bound: a slow machine only waits longer


def test_a_burst_of_concurrent_calls_gets_the_windows_worth_and_the_rest_is_refused() -> None:
    clock = Clock()
    with limited(Limits(rpm=300, window_s=1), clock) as server:  # 5 at once
        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            codes = list(pool.map(lambda _: chat(client(server)).status_code, range(12)))
    assert sorted(codes) == [200] * 5 + [429] * 7
    assert sorted(statuses(server)) == sorted(codes)  # the server recorded every refusal as a call


def test_a_spent_account_refuses_every_call_until_topped_up() -> None:
    with serve(limits=Limits(quota_calls=3)) as server:
        api = client(server)
        assert [chat(api).status_code for _ in range(3)] == [200] * 3
        for _ in range(2):
            spent = chat(api)
            assert isinstance(spent, openai.RateLimitError)
            assert (spent.status_code, spent.code, spent.type) == (429, "insufficient_quota", "insufficient_quota")
            assert "You exceeded your current quota, please check your plan and billing details." in spent.message
            assert "retry-after" not in spent.response.headers and "retry-after-ms" not in spent.response.headers
        assert server.meter is not None
        server.meter.top_up()
        assert chat(api).status_code == 200
    assert statuses(server) == [200, 200, 200, 429, 429, 200]
    assert server.meter.refused == ["quota", "quota"]


def test_a_dollar_quota_is_spent_by_what_the_answers_cost() -> None:
    # a dollar per million input tokens: each call's 3 prompt words cost $0.000003
    with serve(limits=Limits(quota_dollars=0.00001, prices=(1.0, 0.0))) as server:
        api = client(server)
        codes = [chat(api).status_code for _ in range(5)]
    assert codes == [200, 200, 200, 200, 429]  # 4 calls spend $0.000012, past the $0.00001


def test_no_limits_no_headers_and_limits_checked_where_given() -> None:
    with serve() as server:
        answer = chat(client(server))
    assert answer.status_code == 200 and not any(name.startswith("x-ratelimit") for name in answer.headers)
    assert server.meter is None
    with pytest.raises(ValueError, match="rpm must be above 0"):
        Limits(rpm=0)
    with pytest.raises(ValueError, match="Anthropic limits input and output tokens apart"):
        Limits(tpm=10).per_minute("anthropic")


@pytest.mark.parametrize("seconds, written", [(0, "0s"), (0.02, "20ms"), (0.0334, "34ms"), (1, "1s"), (1.5, "1.5s"),
                                              (59.105, "59.105s"), (360, "6m0s"), (3723, "1h2m3s")])
def test_durations_are_written_as_openai_writes_them(seconds: float, written: str) -> None:
    assert go_duration(seconds) == written


def test_a_latency_may_be_drawn_per_call() -> None:
    drawn = iter([0.0, 0.2])
    with serve(latency=lambda: next(drawn)) as server:
        api = client(server)
        chat(api), chat(api)
    first, second = server.calls
    assert (second.finished or 0) - second.received >= 0.2 > 0
    assert first.status == second.status == 200
