"""How long a failed call waits before its retry: a server's `Retry-After` is kept as given, beyond the backoff
cap (`RetryPolicy.backoff_max`, 60 s), up to the limit (`RetryPolicy.max_retry_wait`, 600 s); one past the limit
fails the call at once. A rate limit's wait (a 429) is bounded instead by how long a call waits on limits
(`RetryPolicy.max_limit_wait`, `--rate-limit-wait`, an hour). Over real HTTP against the OpenAI-compatible test
server, with the policy's numbers scaled down where waiting them out would take minutes."""

from __future__ import annotations

import asyncio

import pytest

from bespoke_metric.backends.base import CallError, Request
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.backends.retries import RetryPolicy
from bespoke_metric.testing.server import Fault

KEY = "sk-test-retries-0123456789"


def complete_one(server, **options) -> object:
    backend = make_backend("openai:test-model", base_url=server.base_url, api_key=KEY, **options)
    outcomes: list[object] = []
    request = Request(messages=({"role": "user", "content": "rate limited"},))
    # bounded: a call that waits out a Retry-After it should have refused fails the test instead of hanging it
    asyncio.run(asyncio.wait_for(backend.complete([request], lambda index, outcome: outcomes.append(outcome)), 30))
    [outcome] = outcomes
    return outcome


def test_the_documented_cap_and_limit():
    policy = RetryPolicy()
    assert (policy.backoff_max, policy.max_retry_wait) == (60.0, 600.0)
    assert max(policy.backoff(attempt, None) for attempt in range(20)) <= 60.0 + 0.25  # the cap, plus jitter


@pytest.mark.parametrize("asked", [61.0, 120.0, 599.0, 600.0])
def test_a_retry_after_beyond_the_cap_and_within_the_limit_is_waited_as_given(asked):
    wait = RetryPolicy().backoff(0, asked)
    assert wait is not None and asked <= wait <= asked + 0.25  # kept as given, spread by the jitter only


@pytest.mark.parametrize("asked", [600.5, 601.0, 3600.0])
def test_a_retry_after_past_the_limit_is_not_waited(asked):
    assert RetryPolicy().backoff(0, asked) is None


def test_a_retry_after_longer_than_the_cap_is_honoured_over_http(openai_server):
    # the cap scaled down to 0.05 s: the server's 0.6 s is waited, not cut to the cap
    openai_server.faults.append(Fault(status=429, retry_after="0.6"))
    outcome = complete_one(openai_server, backoff_base=0.01, backoff_max=0.05)
    assert outcome.text == "ok"
    first, second = openai_server.calls
    assert (first.status, second.status) == (429, 200)
    assert second.received - first.finished >= 0.6


def test_a_retry_after_past_the_limit_fails_the_call_at_once(openai_server):
    openai_server.faults.append(Fault(status=503, retry_after="601"))  # the default limit: 600 s
    outcome = complete_one(openai_server, backoff_base=0.01)
    assert isinstance(outcome, CallError) and outcome.retryable
    assert "server asks to wait 601 s, longer than the 600 s a call waits at most" in outcome.reason
    assert [call.status for call in openai_server.calls] == [503]  # not retried


def test_a_retry_after_at_the_limit_is_waited(openai_server):
    # the limit scaled down to 0.5 s: a Retry-After of exactly the limit is waited and retried, one past it is not
    openai_server.faults.append(Fault(status=503, retry_after="0.5"))
    first = complete_one(openai_server, backoff_base=0.01, max_retry_wait=0.5)
    assert first.text == "ok"
    assert [call.status for call in openai_server.calls] == [503, 200]
    openai_server.faults.append(Fault(status=503, retry_after="0.6"))
    second = complete_one(openai_server, backoff_base=0.01, max_retry_wait=0.5)
    assert isinstance(second, CallError) and "server asks to wait 0.6 s, longer than the 0.5 s" in second.reason
    assert [call.status for call in openai_server.calls] == [503, 200, 503]


def test_a_rate_limit_is_waited_past_the_retry_wait_and_bounded_by_the_limit_wait(openai_server):
    # a 429's wait is not a dead endpoint's: max_retry_wait does not cut it, --rate-limit-wait does
    openai_server.faults.append(Fault(status=429, retry_after="0.6"))
    first = complete_one(openai_server, backoff_base=0.01, max_retry_wait=0.1, max_limit_wait=5)
    assert first.text == "ok"
    assert [call.status for call in openai_server.calls] == [429, 200]
    openai_server.faults.append(Fault(status=429, retry_after="601"))
    second = complete_one(openai_server, max_limit_wait=600)
    assert isinstance(second, CallError) and "provider asks to wait 601 s more, past the 600 s a call waits on limits" in second.reason
    assert [call.status for call in openai_server.calls] == [429, 200, 429]
