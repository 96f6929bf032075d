"""The `openai:` backend over real HTTP against the OpenAI-compatible test server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time

import openai
import pytest
from key_scan import stored_bytes

from bespoke_metric.backends.base import CallError, Completion, Request, Usage
from bespoke_metric.backends.http import parse_retry_after, scrub_url
from bespoke_metric.backends.providers.openai_backend import UNREACHABLE_RETRIES, is_reasoning_model
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.scheduler import run_requests_sync
from bespoke_metric.judging.parsing import ParseError
from bespoke_metric.judging.protocol import PERSONALIZATION_SCHEMA, bounded_schema
from bespoke_metric.testing.server import Fault, messages_of

KEY = "sk-test-SECRET-7f3a9c21e5b4d680"
SCHEMA = {
    "title": "verdict",
    "type": "object",
    "properties": {"verdict": {"type": "boolean"}},
    "required": ["verdict"],
    "additionalProperties": False,
}


def request(text: str, **kwargs) -> Request:
    return Request(messages=({"role": "system", "content": "be brief"}, {"role": "user", "content": text}), **kwargs)


def complete(backend, requests) -> dict[int, object]:
    outcomes: dict[int, object] = {}

    def on_done(index, outcome):
        assert index not in outcomes, f"on_done called twice for {index}"
        outcomes[index] = outcome

    asyncio.run(backend.complete(requests, on_done))
    assert sorted(outcomes) == list(range(len(requests)))
    return outcomes


def backend_for(server, model="test-model", **options):
    options.setdefault("backoff_base", 0.01)
    return make_backend(f"openai:{model}", base_url=server.base_url, api_key=KEY, **options)


def echo(body):
    return "echo: " + messages_of(body)[-1]["content"]


def test_chat_completion_success(openai_server):
    openai_server.responder = echo
    backend = backend_for(openai_server)
    outcomes = complete(backend, [request("alpha beta", max_tokens=77), request("gamma", json_schema=SCHEMA)])

    assert outcomes[0] == Completion(text="echo: alpha beta", input_tokens=4, output_tokens=3, served_model="test-model")
    assert outcomes[1].text == "echo: gamma"
    bodies = {call.body["messages"][-1]["content"]: call.body for call in openai_server.calls}
    assert all(call.path == "/v1/chat/completions" for call in openai_server.calls)
    plain, structured = bodies["alpha beta"], bodies["gamma"]
    assert plain["model"] == "test-model"
    assert plain["temperature"] == 0
    assert plain["max_tokens"] == 77
    assert plain["messages"][0] == {"role": "system", "content": "be brief"}
    assert "response_format" not in plain
    assert structured["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True},
    }
    assert backend.identity() == {
        "engine": "openai",
        "model": "test-model",
        "base_url": openai_server.base_url,
        "api": "chat",
        "settings": {"schema_format": True, "temperature": 0.0},
    }


def test_a_local_server_gets_the_schema_bounded_openai_its_own(openai_server):
    """`vllm serve` and llama.cpp's `llama-server` compile `response_format`'s `json_schema.schema` into a grammar
    (llama.cpp tools/server/utils.hpp, `oaicompat_chat_params_parse`: `response_format.json_schema.schema`;
    vLLM's OpenAI server: the same field), `maxLength` included: a server other than the provider's gets the
    bounded schema, so a small judge that loops in a string must close it. OpenAI's API gets the schema as written."""
    openai_server.responder = echo
    judged = request("score it", max_tokens=2048, json_schema=PERSONALIZATION_SCHEMA)
    backend = backend_for(openai_server, model="SmolLM2-135M-Instruct")
    complete(backend, [judged])
    sent = openai_server.calls[-1].body["response_format"]
    assert sent == {"type": "json_schema", "json_schema": {"name": "answer", "strict": True,
                                                           "schema": bounded_schema(PERSONALIZATION_SCHEMA, 2048)}}
    assert sent["json_schema"]["schema"]["properties"]["tone"]["properties"]["feedback"]["maxLength"] > 0
    assert backend.constraint == "json-schema"
    responses = backend_for(openai_server, model="SmolLM2-135M-Instruct", api="responses")
    complete(responses, [judged])
    assert openai_server.calls[-1].body["text"]["format"]["schema"] == bounded_schema(PERSONALIZATION_SCHEMA, 2048)
    provider = make_backend("openai:gpt-4o", api_key=KEY)  # nothing is sent: the body is only built
    _, body = provider.path_and_body(judged)
    assert json.loads(body)["response_format"]["json_schema"]["schema"] == PERSONALIZATION_SCHEMA
    assert backend_for(openai_server, schema_format=False).constraint is None


def test_responses_api_for_reasoning_models(openai_server):
    openai_server.responder = echo
    backend = backend_for(openai_server, model="gpt-5")
    outcomes = complete(backend, [request("one two three", json_schema=SCHEMA)])

    assert outcomes[0] == Completion(text="echo: one two three", input_tokens=5, output_tokens=4, served_model="gpt-5")
    (call,) = openai_server.calls
    assert call.path == "/v1/responses"
    body = call.body
    assert body["reasoning"] == {"effort": "high"}
    assert "temperature" not in body
    assert "max_output_tokens" not in body  # the reasoning needs its room
    assert body["input"][-1] == {"role": "user", "content": "one two three"}
    assert body["text"]["format"] == {"type": "json_schema", "name": "verdict", "schema": SCHEMA, "strict": True}
    assert backend.identity()["api"] == "responses"
    assert backend.identity()["settings"]["reasoning_effort"] == "high"


def test_responses_api_on_request_and_chat_override(openai_server):
    backend = backend_for(openai_server, api="responses", schema_format=False)
    complete(backend, [request("x", max_tokens=33, json_schema=SCHEMA)])
    body = openai_server.calls[-1].body
    assert openai_server.calls[-1].path == "/v1/responses"
    assert body["temperature"] == 0
    assert body["max_output_tokens"] == 33
    assert "text" not in body

    reasoning_on_chat = backend_for(openai_server, model="o3-mini", api="chat", reasoning_effort="low")
    complete(reasoning_on_chat, [request("y")])
    body = openai_server.calls[-1].body
    assert openai_server.calls[-1].path == "/v1/chat/completions"
    assert body["reasoning_effort"] == "low"
    assert "temperature" not in body
    assert "max_tokens" not in body
    with pytest.raises(ValueError, match="reasoning model"):
        backend_for(openai_server, model="gpt-5-mini", temperature=0.5)


@pytest.mark.parametrize(
    "model, reasoning",
    [("gpt-5", True), ("gpt-5-mini", True), ("o3", True), ("o4-mini", True), ("openai/o1", True),
     ("gpt-5-chat-latest", False), ("gpt-4o", False), ("Qwen/Qwen3-8B", False), ("olmo-2", False)],
)
def test_reasoning_model_detection(model, reasoning):
    assert is_reasoning_model(model) is reasoning


def test_concurrency_limit_is_reached_and_never_exceeded(openai_server):
    openai_server.latency = 0.25
    for limit in (32, 5):
        openai_server.reset()
        backend = backend_for(openai_server, concurrency=limit)
        outcomes = complete(backend, [request(f"q{i}") for i in range(2 * limit)])
        assert all(isinstance(o, Completion) for o in outcomes.values())
        # the limit is never exceeded and calls do overlap (how many at once depends on thread timing)
        assert openai_server.max_in_flight <= limit
        assert openai_server.max_in_flight > 1
        assert len(openai_server.calls) == 2 * limit


def test_429_waits_at_least_retry_after(openai_server):
    openai_server.faults.extend([Fault(status=429, retry_after="1")])
    backend = backend_for(openai_server)
    outcomes = complete(backend, [request("rate limited")])

    assert outcomes[0].text == "ok"
    first, second = openai_server.calls
    assert first.status == 429
    assert second.status == 200
    assert second.received - first.finished >= 1.0
    # a rate limit's wait is no retry: the budget meant for dead endpoints is untouched
    assert (backend.retries_made, backend.pacer.refusals) == (0, 1)
    # Ours are the only retries: exactly two calls reached the server.
    assert len(openai_server.calls) == 2


def test_retry_after_parsing():
    now = time.time()
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after(email.utils.formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30, abs=1)
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_5xx_retried_then_succeeds(openai_server):
    openai_server.faults.extend([Fault(status=500), Fault(status=503), Fault(status=502)])
    outcomes = complete(backend_for(openai_server), [request("flaky")])
    assert outcomes[0].text == "ok"
    assert [c.status for c in openai_server.calls] == [500, 503, 502, 200]


def test_malformed_success_body_is_retried(openai_server):
    # A proxy answering 200 with something that is not a completion.
    openai_server.faults.append(Fault(status=200, body={"detail": "upstream hiccup"}))
    outcomes = complete(backend_for(openai_server), [request("x")])
    assert outcomes[0].text == "ok"
    assert [c.status for c in openai_server.calls] == [200, 200]


def test_client_errors_are_not_retried(openai_server):
    openai_server.faults.append(Fault(status=400, body={"error": {"message": "bad parameter foo"}}))
    outcomes = complete(backend_for(openai_server), [request("bad")])
    assert isinstance(outcomes[0], CallError)
    assert not outcomes[0].retryable
    assert "HTTP 400" in outcomes[0].reason
    assert "bad parameter foo" in outcomes[0].reason
    assert "BadRequestError" in outcomes[0].reason  # named as the SDK names it
    assert len(openai_server.calls) == 1


def test_timeout_then_retry(openai_server):
    openai_server.faults.append(Fault(hang=3.0))
    backend = backend_for(openai_server, timeout=0.5)
    outcomes = complete(backend, [request("slow once")])
    assert outcomes[0].text == "ok"
    assert len(openai_server.calls) == 2
    assert backend.retries_made == 1


def test_retries_per_call_are_bounded(openai_server):
    openai_server.rule = lambda record: Fault(status=500)
    outcomes = complete(backend_for(openai_server, max_retries=2), [request("down")])
    assert isinstance(outcomes[0], CallError)
    assert outcomes[0].retryable
    assert "gave up after 2 retries" in outcomes[0].reason
    assert len(openai_server.calls) == 3


def test_retry_budget_exhausted_fails_fast(openai_server):
    openai_server.rule = lambda record: Fault(status=503)
    backend = backend_for(openai_server, concurrency=1, retry_budget=3, max_retries=10)
    outcomes = complete(backend, [request(f"q{i}") for i in range(6)])

    errors = [outcomes[i] for i in range(6)]
    assert all(isinstance(e, CallError) for e in errors)
    assert "retry budget of the run exhausted" in errors[0].reason
    assert sum("call not sent" in e.reason for e in errors) == 5
    assert len(openai_server.calls) == 4  # 1 call + 3 retries, then nothing more is sent


def test_a_dead_endpoint_warns_once_not_per_retry(openai_server, caplog):
    """A judge that is down: every call retried, one warning line for the run (the rest at DEBUG, shown by
    -v), so stderr holds the reason the run ends with rather than a line per retry."""
    openai_server.rule = lambda record: Fault(status=503)
    caplog.set_level(logging.DEBUG, logger="bespoke_metric.backends.providers.openai_backend")
    outcomes = complete(backend_for(openai_server, max_retries=2), [request(f"q{i}") for i in range(4)])
    assert all(isinstance(outcome, CallError) for outcome in outcomes.values())
    retries = [r for r in caplog.records if "; retry " in r.getMessage()]
    assert len(retries) == 8  # 4 calls x 2 retries, each still logged
    warnings = [r for r in retries if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert "HTTP 503" in warnings[0].getMessage()
    assert "-v" in warnings[0].getMessage()


def test_an_unreachable_endpoint_fails_every_call_in_seconds_with_no_warning(caplog):
    """Nothing listens on the port (a judge that is down, a wrong --base-url): the first calls retry twice,
    then every call fails at once, quietly, instead of backing off for minutes."""
    import socket

    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))  # bound, never listening: connections to it are refused
    backend = make_backend("openai:m", base_url=f"http://127.0.0.1:{refused.getsockname()[1]}/v1", api_key=KEY,
                           backoff_base=0.05)
    caplog.set_level(logging.DEBUG, logger="bespoke_metric.backends.providers.openai_backend")
    try:
        outcomes = complete(backend, [request(f"q{i}") for i in range(300)])
    finally:
        refused.close()
    assert all(isinstance(outcome, CallError) for outcome in outcomes.values())
    assert all("connection error" in outcome.reason for outcome in outcomes.values())
    # one cause, said alike by the calls that gave up and by those never sent
    [reason] = {outcome.reason for outcome in outcomes.values()}
    assert "the endpoint answered no call" in reason
    # at most the first wave of calls retried, twice each; the rest failed without a try
    assert backend.retries_made <= UNREACHABLE_RETRIES * backend.concurrency
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_unparseable_answer_is_repaired_through_the_scheduler(openai_server):
    def responder(body):
        last = messages_of(body)[-1]["content"]
        return '{"verdict": true}' if last.startswith("Fix:") else "I think it is true, probably."

    def parse(index, text):
        try:
            return json.loads(text)["verdict"]
        except (ValueError, KeyError) as err:
            raise ParseError(f"not JSON with a verdict ({type(err).__name__})") from None

    def repair(req, bad, reason):
        follow_up = ({"role": "assistant", "content": bad}, {"role": "user", "content": f"Fix: {reason}"})
        return Request(messages=req.messages + follow_up, max_tokens=req.max_tokens, json_schema=req.json_schema)

    openai_server.responder = responder
    usage = Usage()
    results = run_requests_sync(backend_for(openai_server), [request("claim?")], parse=parse, repair=repair, usage=usage)
    assert results[0].value is True
    assert results[0].error is None
    assert results[0].attempts == 2
    repaired = openai_server.calls[1].body["messages"]
    assert repaired[-2] == {"role": "assistant", "content": "I think it is true, probably."}
    assert repaired[-1]["content"].startswith("Fix: not JSON")
    assert usage.calls == 2

    openai_server.responder = lambda body: "never JSON"
    results = run_requests_sync(backend_for(openai_server), [request("claim 2?")], parse=parse, repair=repair, max_parse_retries=2)
    assert results[0].value is None
    assert results[0].attempts == 3
    assert results[0].error.startswith("unparseable answer after 3 attempt(s): not JSON")


def test_placeholder_key_for_local_servers_and_env_settings(openai_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    backend = make_backend("openai:test-model")
    complete(backend, [request("hi")])
    assert openai_server.calls[0].headers["authorization"] == "Bearer EMPTY"

    monkeypatch.delenv("OPENAI_BASE_URL")
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        make_backend("openai:gpt-5")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert make_backend("openai:gpt-5").identity()["base_url"] == "https://api.openai.com/v1"


def test_the_backend_survives_several_event_loops(openai_server):
    backend = backend_for(openai_server)
    for _ in range(2):  # run_requests_sync makes a new loop each time; the HTTP pool must follow
        results = run_requests_sync(backend, [request("a"), request("b")])
        assert [r.text for r in results] == ["ok", "ok"]
    backend.close()


def test_models_endpoint(openai_server):
    async def models():
        client = openai.AsyncOpenAI(base_url=openai_server.base_url, api_key=KEY, max_retries=0)
        return [m.id async for m in client.models.list()]

    assert asyncio.run(models()) == ["test-model"]


def test_scrub_url():
    assert scrub_url("https://user:pw@host.example:8443/v1/?api_key=x") == "https://host.example:8443/v1"
    assert scrub_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"


def test_api_key_never_leaks(openai_server, tmp_path, caplog):
    """Identity, cache file, logs and error messages stay free of the key, even when the server echoes
    the Authorization header back in its error bodies."""

    def rule(record):
        if "fail" in json.dumps(record.body):
            auth = record.headers.get("authorization", "")
            return Fault(status=500, body={"error": {"message": f"rejected {auth} for {KEY}", "type": "server_error"}})
        return None

    openai_server.rule = rule
    openai_server.responder = echo
    caplog.set_level(logging.DEBUG)
    cache_path = tmp_path / "cache.sqlite"
    backend = backend_for(openai_server, max_retries=1)
    with Cache(cache_path) as cache:
        results = run_requests_sync(backend, [request("fine"), request("fail please")], cache=cache)
        assert results[0].text == "echo: fine"
        assert results[1].error is not None
        assert "HTTP 500" in results[1].error
        # while the cache is open its latest writes sit in the -wal file: scanned too
        assert cache_path.with_name(cache_path.name + "-wal").is_file()
        assert KEY.encode() not in stored_bytes(cache_path)
    # The server did receive the key: the scan below is meaningful.
    assert any(KEY in c.headers.get("authorization", "") for c in openai_server.calls)

    stored = stored_bytes(cache_path)
    assert KEY.encode() not in stored
    assert b"SECRET" not in stored
    assert KEY not in json.dumps(backend.identity())
    assert KEY not in results[1].error
    assert "***" in results[1].error
    assert caplog.records
    assert not any(KEY in r.getMessage() for r in caplog.records)
    assert KEY not in caplog.text


@pytest.mark.parametrize("model", ["test-model", "gpt-5"])  # chat completions; Responses API
def test_cut_off_answers_are_marked_truncated_with_their_usage(openai_server, model):
    from bespoke_metric.testing.server import Cutoff

    openai_server.responder = lambda body: Cutoff("half an answer") if "cut" in messages_of(body)[-1]["content"] else "whole"
    outcomes = complete(backend_for(openai_server, model=model), [request("cut here"), request("go on")])
    reason = "max_output_tokens" if model == "gpt-5" else "length"  # incomplete_details.reason; finish_reason
    assert outcomes[0] == Completion(text="half an answer", input_tokens=4, output_tokens=3, truncated=True,
                                     truncation_reason=reason, served_model=model)
    assert outcomes[1] == Completion(text="whole", input_tokens=4, output_tokens=1, truncated=False, served_model=model)


def test_a_refused_or_dropped_connection_is_a_connection_error_not_a_timeout(openai_server):
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))  # bound, never listening: connections to it are refused
    stop = threading.Event()

    def hang_up() -> None:  # reads each request, then closes without answering
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            connection.recv(1 << 16)
            connection.close()

    thread = threading.Thread(target=hang_up, daemon=True)
    thread.start()
    try:
        for port in (refused.getsockname()[1], listener.getsockname()[1]):
            backend = make_backend("openai:m", base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=0)
            (outcome,) = complete(backend, [request("x")]).values()
            assert isinstance(outcome, CallError)
            assert outcome.retryable
            assert outcome.reason.startswith(f"connection error to http://127.0.0.1:{port}/v1: ")
    finally:
        stop.set()
        thread.join(5)
        listener.close()
        refused.close()

    openai_server.faults.append(Fault(hang=3.0))
    (outcome,) = complete(backend_for(openai_server, timeout=0.3, max_retries=0), [request("slow")]).values()
    assert outcome.reason.startswith("timed out after 0.3 s")


def test_429_waits_at_least_retry_after_ms(openai_server):
    openai_server.faults.append(Fault(status=429, headers=(("retry-after-ms", "600"),)))
    outcomes = complete(backend_for(openai_server), [request("rate limited")])
    assert outcomes[0].text == "ok"
    first, second = openai_server.calls
    assert first.status == 429
    assert second.received - first.finished >= 0.6


@pytest.mark.slow
@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422, 429, 500, 503, 418])
def test_error_reasons_read_as_the_sdks_own_errors(openai_server, status):
    # what our session says of an error answer is what the official client raises for it (its public
    # error class and message), without calling into the SDK's private parts
    from bespoke_metric.backends.providers.openai_session import sdk_error

    body = {"error": {"message": f"scripted {status}", "type": "invalid_request_error"}}
    openai_server.faults.append(Fault(status=status, body=body))
    client = openai.OpenAI(base_url=openai_server.base_url, api_key=KEY, max_retries=0)
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(model="test-model", messages=[{"role": "user", "content": "hi"}])
    assert sdk_error(status, json.dumps(body).encode()) == f"{type(raised.value).__name__}: {raised.value.message}"
    assert sdk_error(status, b"not json") == f"{type(raised.value).__name__}: Error code: {status}"
