"""The test servers enforce a provider's rate limits and quota as the provider documents them
(`bespoke_metric.testing.provider_limits`): through the real SDKs over real HTTP, on a clock the test moves
(`Clock`), so what is admitted and refused follows from the limits, not from the machine's speed."""

from __future__ import annotations

import concurrent.futures
import datetime
import signal
import time
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from conftest import StandIn
from fakes.anthropic_server import serve_anthropic
from fakes.provider_servers import gemini_responder, root_url, serve_provider
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

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
        server.meter.top_up(calls=2)  # paid for two calls more
        assert [chat(api).status_code for _ in range(3)] == [200, 200, 429]
    assert statuses(server) == [200, 200, 200, 429, 429, 200, 200, 200, 429]
    assert server.meter.refused == ["quota", "quota", "quota"]


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


# -- Anthropic ------------------------------------------------------------------------------------------------


def anthropic_client(server: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.root_url, api_key="k", max_retries=0)


def message(api: anthropic.Anthropic, max_tokens: int = 50) -> Any:
    try:
        return api.messages.with_raw_response.create(model="claude-sonnet-5-5", max_tokens=max_tokens, messages=USER)
    except anthropic.APIStatusError as error:
        return error


def test_anthropic_limits_input_tokens_from_the_prompt_and_output_tokens_from_max_tokens() -> None:
    clock, wall = Clock(), datetime.datetime(2026, 12, 6, 12, 0, 0, tzinfo=datetime.timezone.utc)
    with serve_anthropic() as server:
        server.meter = Meter(Limits(rpm=600, input_tpm=6000, output_tpm=3000), clock=clock, now=lambda: wall)
        api = anthropic_client(server)
        first = message(api, max_tokens=40)  # 3 input tokens, 40 output tokens charged at the start
        headers = first.headers
        assert headers["anthropic-ratelimit-requests-limit"] == "600"
        assert headers["anthropic-ratelimit-requests-remaining"] == "599"
        assert headers["anthropic-ratelimit-requests-reset"] == "2026-12-06T12:00:01Z"  # 0.1 s: as a whole second
        assert headers["anthropic-ratelimit-input-tokens-remaining"] == str(6000 - 3)
        assert headers["anthropic-ratelimit-output-tokens-remaining"] == str(3000 - 40)
        assert headers["anthropic-ratelimit-output-tokens-reset"] == "2026-12-06T12:00:01Z"
        # the token headers are those of the token limit with the fewest tokens left
        assert (headers["anthropic-ratelimit-tokens-limit"], headers["anthropic-ratelimit-tokens-remaining"]) == (
            "3000", str(3000 - 40))
        refused = message(api, max_tokens=20)  # the 10 output tokens left of the second's 50 do not hold 20
        assert isinstance(refused, anthropic.RateLimitError) and refused.status_code == 429
        assert refused.body["error"]["type"] == "rate_limit_error"
        assert "would exceed the rate limit for your organization (org-test) of 3000 output tokens per minute" in (
            refused.body["error"]["message"])
        assert refused.response.headers["retry-after"] == "1"
        assert "anthropic-ratelimit-requests-remaining" in refused.response.headers
        clock.advance(0.2)
        assert message(api, max_tokens=20).status_code == 200
    assert statuses(server) == [200, 429, 200]


@pytest.mark.parametrize("spend_limit, words", [
    (False, "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or "
            "purchase credits."),
    (True, "You have reached your specified API usage limits. You will regain access on 2027-01-01 at 00:00 UTC."),
])
def test_a_spent_anthropic_account_is_a_400_until_topped_up(spend_limit: bool, words: str) -> None:
    wall = datetime.datetime(2026, 12, 6, 12, 0, 0, tzinfo=datetime.timezone.utc)
    with serve_anthropic() as server:
        server.meter = Meter(Limits(quota_calls=1, spend_limit=spend_limit), now=lambda: wall)
        api = anthropic_client(server)
        assert message(api).status_code == 200
        spent = message(api)
        assert isinstance(spent, anthropic.BadRequestError) and spent.status_code == 400
        assert spent.body["error"] == {"type": "invalid_request_error", "message": words}
        server.meter.top_up()
        assert message(api).status_code == 200


def test_limits_a_provider_does_not_have_are_refused_when_the_server_is_made() -> None:
    with pytest.raises(ValueError, match="Anthropic limits input and output tokens apart"):
        serve_anthropic(limits=Limits(tpm=100))
    with pytest.raises(ValueError, match="openai limits tokens in all"):
        serve(limits=Limits(input_tpm=100))


# -- Gemini ---------------------------------------------------------------------------------------------------


def gemini_client(server: TestServer) -> genai.Client:
    return genai.Client(api_key="k", http_options=genai_types.HttpOptions(
        base_url=root_url(server), retry_options=genai_types.HttpRetryOptions(attempts=1)))


def generate(api: genai.Client) -> Any:
    try:
        return api.models.generate_content(model="gemini-3.8-flash", contents="three words here")
    except genai_errors.APIError as error:
        return error


def violation(error: genai_errors.APIError) -> dict[str, Any]:
    [failure] = [detail for detail in error.details["error"]["details"] if detail["@type"].endswith("QuotaFailure")]
    [found] = failure["violations"]
    return found


def retry_delay(error: genai_errors.APIError) -> str | None:
    return next((detail["retryDelay"] for detail in error.details["error"]["details"]
                 if detail["@type"].endswith("RetryInfo")), None)


def test_gemini_per_minute_quotas_are_resource_exhausted_with_the_quota_and_its_retry_delay() -> None:
    clock = Clock()
    with serve_provider(gemini_responder()) as server:
        server.meter = Meter(Limits(rpm=120, tpm=240), clock=clock)  # 2 requests, 4 input tokens a second
        api = gemini_client(server)
        answered = generate(api)
        assert answered.text and not any("ratelimit" in name for name in answered.sdk_http_response.headers or {})
        by_tokens = generate(api)  # a request fits, its 3 prompt tokens do not: 1 is left of the second's 4
        assert isinstance(by_tokens, genai_errors.ClientError)
        assert (by_tokens.code, by_tokens.status) == (429, "RESOURCE_EXHAUSTED")
        assert by_tokens.message.startswith("You exceeded your current quota")
        assert violation(by_tokens) == {
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
            "quotaId": "GenerateContentInputTokensPerModelPerMinute-FreeTier",
            "quotaDimensions": {"location": "global", "model": "gemini-3.8-flash"}, "quotaValue": "240"}
        assert retry_delay(by_tokens) == "1s"
        clock.advance(1)
        assert generate(api).text
        clock.advance(1)
        server.meter = Meter(Limits(rpm=60), clock=clock)
        assert generate(api).text
        refused = generate(api)
        assert violation(refused)["quotaId"] == "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
        assert violation(refused)["quotaValue"] == "60" and retry_delay(refused) == "1s"
    assert statuses(server) == [200, 429, 200, 200, 429]


def test_a_spent_daily_gemini_quota_says_the_per_day_quota_and_no_wait() -> None:
    with serve_provider(gemini_responder(), limits=Limits(quota_calls=2)) as server:
        api = gemini_client(server)
        assert generate(api).text and generate(api).text
        spent = generate(api)
        assert isinstance(spent, genai_errors.ClientError) and spent.status == "RESOURCE_EXHAUSTED"
        assert violation(spent)["quotaId"] == "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
        assert violation(spent)["quotaValue"] == "2" and retry_delay(spent) is None
        assert server.meter is not None
        server.meter.top_up()
        assert generate(api).text


# -- the stand-in ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_stand_in_enforces_the_limits_it_is_given_and_tops_up_on_sigusr1(tmp_path: Path) -> None:
    server = StandIn(tmp_path, "--rpm", "60", "--window", "2", "--quota-calls", "3")
    try:
        api = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
        answers = [chat(api) for _ in range(3)]  # 2 at once, the third refused
        assert [answer.status_code for answer in answers] == [200, 200, 429]
        assert answers[0].headers["x-ratelimit-limit-requests"] == "60" and "x-ratelimit-limit-tokens" not in answers[0].headers
        assert answers[2].code == "rate_limit_exceeded" and int(answers[2].response.headers["retry-after-ms"]) > 0
        time.sleep(int(answers[2].response.headers["retry-after-ms"]) / 1000)
        assert chat(api).status_code == 200
        spent = chat(api)
        assert spent.status_code == 429 and spent.code == "insufficient_quota"
        server.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 60
        while (answer := chat(api)).status_code != 200 and time.monotonic() < deadline:
            time.sleep(1.1)  # a request's worth of the limit: sooner, each try would take what refilled
        assert answer.status_code == 200
    finally:
        code, _, err = server.stop()
    assert code == 0 and "the account is topped up" in err and "Traceback" not in err
