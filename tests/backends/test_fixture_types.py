"""Every answer body our provider test servers send, validated against the installed SDK's own response
types (issue 43): `openai.types.chat.ChatCompletion`, `openai.types.responses.Response`,
`anthropic.types.Message`, `google.genai.types.GenerateContentResponse`, with pydantic's `model_validate`
(which, unlike the SDKs' lenient `construct`, fails on a missing required field), so an SDK whose types
moved fails here instead of in a user's run; the refusals of a provider's limits and quota
(`provider_limits`) as the SDKs' errors (`openai.types.shared.ErrorObject`, `anthropic.types.ErrorResponse`,
google-genai's `errors.ClientError`). Over real HTTP: the bodies as the servers send them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Callable, Iterator

import anthropic
import openai
import pytest
from fakes.anthropic_server import OVERLOADED, REFUSE_WORD, serve_anthropic
from fakes.batch_server import serve_batches
from fakes.provider_servers import gemini_responder, openai_responder, root_url, serve_provider, serve_strict
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from openai.types.chat import ChatCompletion
from openai.types.responses import Response
from openai.types.shared import ErrorObject
from pydantic import ValidationError

from bespoke_metric.testing.provider_limits import Limits
from bespoke_metric.testing.server import Cutoff, serve, tool_call

SDK_TYPES: dict[str, Callable[[dict[str, Any]], Any]] = {
    "chat": ChatCompletion.model_validate,
    "responses": Response.model_validate,
    "messages": anthropic.types.Message.model_validate,
    "gemini": genai_types.GenerateContentResponse.model_validate,
    "openai error": lambda body: ErrorObject.model_validate(body["error"]),
    "anthropic error": anthropic.types.ErrorResponse.model_validate,
}
"""The SDK type each kind of answer body must be."""

USER = [{"role": "user", "content": "hiking near Seoul"}]
SEARCH_TOOL = {"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {}}}}


def post(url: str, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json", **headers})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def refused(url: str, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    """The error body a server answers `body` with (an HTTP error status)."""
    try:
        post(url, body, **headers)
    except urllib.error.HTTPError as error:
        return json.loads(error.read())
    raise AssertionError(f"{url} answered {body}")


def openai_bodies(base_url: str, model: str = "gpt-5") -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(what, kind, body) for a plain answer, a search and a tool call on both of OpenAI's APIs."""
    chat, responses = f"{base_url}/chat/completions", f"{base_url}/responses"
    yield "chat", "chat", post(chat, {"model": model, "messages": USER})
    yield "chat with tools", "chat", post(chat, {"model": model, "messages": USER, "tools": [SEARCH_TOOL]})
    yield "chat search", "chat", post(chat, {"model": "gpt-4o-search-preview", "messages": USER, "web_search_options": {}})
    yield "responses", "responses", post(responses, {"model": model, "input": USER})
    yield "responses search", "responses", post(responses, {"model": model, "input": USER, "tools": [{"type": "web_search"}],
                                                            "include": ["web_search_call.action.sources"]})
    yield "responses with tools", "responses", post(responses, {"model": model, "input": USER, "tools": [
        {"type": "function", "name": "search", "parameters": {"type": "object", "properties": {}}}]})


def every_body() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(server and what, kind, body) for every kind of answer each provider test server sends."""
    with serve() as server:
        for what, kind, body in openai_bodies(server.base_url):
            yield f"server.serve: {what}", kind, body
        server.responder = lambda body: Cutoff("cut short")
        yield "server.serve: cut off", "chat", post(f"{server.base_url}/chat/completions", {"model": "m", "messages": USER})
        yield "server.serve: cut off", "responses", post(f"{server.base_url}/responses", {"model": "m", "input": USER})
        server.responder = lambda body: tool_call(body, "search", {"query": "x"})
        yield "server.tool_call", "chat", post(f"{server.base_url}/chat/completions", {"model": "m", "messages": USER})
    with serve_provider(openai_responder()) as server:
        for what, kind, body in openai_bodies(server.base_url):
            yield f"provider_servers.openai_responder: {what}", kind, body
    with serve_strict() as server:
        for what, kind, body in openai_bodies(server.base_url, "gpt-6-luna"):
            yield f"provider_servers.serve_strict: {what}", kind, body
        gemini = f"{root_url(server)}/v1beta/models/gemini-3.8-flash:generateContent"
        contents = [{"role": "user", "parts": [{"text": "hiking near Seoul"}]}]
        yield "gemini", "gemini", post(gemini, {"contents": contents})
        yield "gemini search", "gemini", post(gemini, {"contents": contents, "tools": [{"googleSearch": {}}]})
    with serve_batches() as server:
        yield "batch_server: chat", "chat", post(f"{server.base_url}/chat/completions", {"model": "gpt-4.1", "messages": USER})
        yield "batch_server: responses", "responses", post(f"{server.base_url}/responses", {"model": "gpt-4.1", "input": USER})
    with serve_anthropic() as server:
        headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
        url = f"{server.root_url}/v1/messages"
        base = {"model": "claude-sonnet-5-5", "max_tokens": 200, "messages": USER}
        web = {"type": "web_search_20250305", "name": "web_search", "max_uses": 1}
        schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
                  "additionalProperties": False}
        yield "anthropic", "messages", post(url, base, **headers)
        yield "anthropic search", "messages", post(url, {**base, "tools": [web]}, **headers)
        yield "anthropic cut off", "messages", post(url, {**base, "max_tokens": 2}, **headers)
        yield "anthropic refusal", "messages", post(url, {**base, "messages": [{"role": "user", "content": REFUSE_WORD}]},
                                                    **headers)
        yield "anthropic format", "messages", post(url, {**base, "output_config": {"format": {"type": "json_schema",
                                                                                              "schema": schema}}}, **headers)
        server.responder = lambda body: json.dumps({"answer": "yes"})
        yield "anthropic forced tool", "messages", post(url, {**base, "model": "claude-3-5-sonnet-20241022", "tools": [
            {"name": "answer", "input_schema": schema}], "tool_choice": {"type": "tool", "name": "answer"}}, **headers)
    yield from limit_refusals()


def limit_refusals() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Every refusal of a provider's limits and quota the servers send (`provider_limits`)."""
    user = {"model": "gpt-5", "messages": USER}
    with serve(limits=Limits(rpm=60, tpm=100, quota_calls=2)) as server:
        chat = f"{server.base_url}/chat/completions"
        post(chat, user)
        yield "limits: requests", "openai error", refused(chat, user)
        yield "limits: too large", "openai error", refused(chat, {**user, "max_completion_tokens": 200})
    with serve(limits=Limits(tpm=600)) as server:  # 10 tokens a second: the second call's 8 do not fit
        responses = {"model": "gpt-5", "input": USER, "max_output_tokens": 5}
        post(f"{server.base_url}/responses", responses)
        yield "limits: tokens", "openai error", refused(f"{server.base_url}/responses", responses)
    with serve(limits=Limits(quota_calls=0)) as server:
        yield "limits: quota", "openai error", refused(f"{server.base_url}/chat/completions", user)
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    base = {"model": "claude-sonnet-5-5", "max_tokens": 200, "messages": USER}
    for what, limits in (("rate", Limits(rpm=60, output_tpm=6000)), ("credit", Limits(quota_calls=0)),
                         ("spend limit", Limits(quota_calls=0, spend_limit=True))):
        with serve_anthropic(limits=limits) as server:
            url = f"{server.root_url}/v1/messages"
            if what == "rate":
                post(url, base, **headers)
            yield f"anthropic limits: {what}", "anthropic error", refused(url, base, **headers)
    with serve_anthropic(faults=[OVERLOADED]) as server:
        yield "anthropic overloaded", "anthropic error", refused(f"{server.root_url}/v1/messages", base, **headers)


@pytest.fixture(scope="module")
def bodies() -> list[tuple[str, str, dict[str, Any]]]:
    return list(every_body())


def test_every_fixture_body_is_the_installed_sdks_type(bodies):
    failures = []
    for what, kind, body in bodies:
        try:
            SDK_TYPES[kind](body)
        except ValidationError as error:  # names the field that moved
            failures.append(f"{what} ({kind}): {error}")
    assert failures == []
    assert {kind for _, kind, _ in bodies} == set(SDK_TYPES) and len(bodies) >= 38


def test_the_limits_refusals_are_the_sdks_errors_with_the_providers_codes(bodies):
    """What a client reads off them: the SDK's error class, OpenAI's `code` and `type`, Anthropic's error type."""
    openai_errors = {what: body["error"] for what, kind, body in bodies if kind == "openai error"}
    assert {what: (error["code"], error["type"]) for what, error in openai_errors.items()} == {
        "limits: requests": ("rate_limit_exceeded", "requests"), "limits: too large": ("rate_limit_exceeded", "tokens"),
        "limits: tokens": ("rate_limit_exceeded", "tokens"), "limits: quota": ("insufficient_quota", "insufficient_quota")}
    anthropic_errors = {what: anthropic.types.ErrorResponse.model_validate(body).error
                        for what, kind, body in bodies if kind == "anthropic error"}
    assert {what: error.type for what, error in anthropic_errors.items()} == {
        "anthropic limits: rate": "rate_limit_error", "anthropic limits: credit": "invalid_request_error",
        "anthropic limits: spend limit": "invalid_request_error", "anthropic overloaded": "overloaded_error"}
    with serve(limits=Limits(quota_calls=0)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.RateLimitError) as spent:
            client.chat.completions.create(model="gpt-5", messages=USER)
    assert (spent.value.code, spent.value.type) == ("insufficient_quota", "insufficient_quota")
    with serve_anthropic(limits=Limits(rpm=60)) as server:
        client = anthropic.Anthropic(base_url=server.root_url, api_key="k", max_retries=0)
        client.messages.create(model="claude-sonnet-5-5", max_tokens=5, messages=USER)
        with pytest.raises(anthropic.RateLimitError):
            client.messages.create(model="claude-sonnet-5-5", max_tokens=5, messages=USER)
        server.meter = None
        server.faults.append(OVERLOADED)
        with pytest.raises(anthropic.APIStatusError) as overloaded:
            client.messages.create(model="claude-sonnet-5-5", max_tokens=5, messages=USER)
    assert overloaded.value.status_code == 529


def test_a_gemini_quota_refusal_is_google_genais_client_error_with_its_details():
    """google-genai keeps the whole body as `details` and reads `code`, `status`, `message` off it (errors.py)."""
    with serve_provider(gemini_responder(), limits=Limits(rpm=60, quota_calls=1)) as server:
        url = f"{root_url(server)}/v1beta/models/gemini-3.8-flash:generateContent"
        body = {"contents": [{"role": "user", "parts": [{"text": "hiking"}]}]}
        SDK_TYPES["gemini"](post(url, body))
        errors = [genai_errors.ClientError(429, refused(url, body))]  # the day's one call is spent
        server.meter.top_up()
        errors.append(genai_errors.ClientError(429, refused(url, body)))  # the per-minute limit: 1 a second
    for error in errors:
        assert (error.code, error.status) == (429, "RESOURCE_EXHAUSTED") and error.message
        kinds = [detail["@type"].rsplit(".", 1)[-1] for detail in error.details["error"]["details"]]
        assert kinds[:2] == ["QuotaFailure", "Help"]
    [daily], [minute] = (error.details["error"]["details"][0]["violations"] for error in errors)
    assert daily["quotaId"].startswith("GenerateRequestsPerDay") and minute["quotaId"].startswith("GenerateRequestsPerMinute")
    assert [detail.get("retryDelay") for detail in errors[1].details["error"]["details"]][-1] == "1s"


def without(body: dict[str, Any], path: str) -> dict[str, Any]:
    """A copy of `body` lacking the field at dotted `path`."""
    copy = json.loads(json.dumps(body))
    *parents, name = path.split(".")
    part = copy
    for parent in parents:
        part = part[parent]
    del part[name]
    return copy


@pytest.mark.parametrize("kind, path", [
    ("responses", "usage.input_tokens_details.cache_write_tokens"),  # openai 3.63
    ("responses", "created_at"),
    ("chat", "created"),
    ("messages", "usage.server_tool_use.web_fetch_requests"),  # anthropic 2.17
    ("messages", "usage.input_tokens"),
])
def test_a_fixture_lacking_a_field_the_sdk_requires_fails(bodies, kind, path):
    """What the test above would say of a fixture cited from an older SDK: the check has teeth."""
    body = next(body for what, found, body in bodies if found == kind and (kind != "messages" or "search" in what))
    SDK_TYPES[kind](body)
    with pytest.raises(ValidationError, match=path.rsplit(".", 1)[-1]):
        SDK_TYPES[kind](without(body, path))


def test_a_gemini_fixture_with_a_field_the_sdk_does_not_name_fails(bodies):
    """google-genai's types forbid unknown fields (every field is optional), so a renamed field fails."""
    body = next(body for _, kind, body in bodies if kind == "gemini")
    with pytest.raises(ValidationError, match="groundingMetadatum"):
        SDK_TYPES["gemini"]({**body, "groundingMetadatum": {}})


def test_cache_write_tokens_are_read_into_usage_where_the_provider_reports_them(bodies):
    """OpenAI's `cache_write_tokens` (both APIs) and Anthropic's `cache_creation_input_tokens` come back in the
    completion, the cache and the usage block (only where some were written)."""
    from bespoke_metric.backends.base import Completion, Request, Usage
    from bespoke_metric.backends.registry import make_backend
    from bespoke_metric.calls.scheduler import run_requests_sync

    responses = next(body for _, kind, body in bodies if kind == "responses")
    chat = next(body for _, kind, body in bodies if kind == "chat")
    responses = {**responses, "usage": {**responses["usage"], "input_tokens_details": {"cached_tokens": 1, "cache_write_tokens": 7}}}
    chat = {**chat, "usage": {**chat["usage"], "prompt_tokens_details": {"cached_tokens": 1, "cache_write_tokens": 5}}}
    SDK_TYPES["responses"](responses), SDK_TYPES["chat"](chat)
    usage = Usage()
    with serve(lambda body: responses if "input" in body else chat) as server:
        for api, written in (("responses", 7), ("chat", 5)):
            backend = make_backend("openai:gpt-5", base_url=server.base_url, api_key="k", api=api)
            [result] = run_requests_sync(backend, [Request(tuple(USER))], usage=usage)
            assert result.completion.cache_write_tokens == written
            assert Completion.from_parts("t", 1, 1, False, result.completion.extras()).cache_write_tokens == written
    assert usage.counts()["cache_write_tokens"] == 12
    assert "cache_write_tokens" not in Usage(calls=1).counts()

    message = next(body for what, kind, body in bodies if what == "anthropic")
    message = {**message, "usage": {**message["usage"], "cache_creation_input_tokens": 9}}
    from bespoke_metric.backends.providers.anthropic import message_completion

    completion = message_completion(SDK_TYPES["messages"](message))
    assert completion.cache_write_tokens == 9
    assert completion.input_tokens == message["usage"]["input_tokens"] + 9 + message["usage"]["cache_read_input_tokens"]
