"""Models that search for themselves, over real HTTP against provider-shaped fakes on 127.0.0.1: OpenAI's
Responses API and chat search models, Perplexity, and Gemini through the real `google-genai` SDK. What each
searched, found and cited lands in `Completion.search`, token details in every completion, and a cached
call gives back all of it without a call and without the key."""

from __future__ import annotations

import json
import logging

import pytest
from backend_outcomes import QUESTION, ask, complete
from fakes.provider_servers import (
    CACHED_TOKENS,
    REASONING_TOKENS,
    gemini_redirect,
    gemini_responder,
    openai_responder,
    root_url,
    search_pages,
    serve_perplexity,
    serve_provider,
)
from output_lines import own_lines

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import CallError, Completion
from bespoke_metric.backends.options import OptionError
from bespoke_metric.backends.registry import ENGINES, make_backend
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.scheduler import run_requests_sync
from bespoke_metric.judging.factory import make_judge
from bespoke_metric.testing.server import Fault

KEY = "sk-test-SECRET-3b9d7e1f24c68a05"
PAGES = search_pages(QUESTION)


@pytest.fixture(scope="module")
def openai_server():
    with serve_provider(openai_responder()) as server:
        yield server


@pytest.fixture(scope="module")
def perplexity_server():
    with serve_perplexity() as server:
        yield server
        assert server.unknown_fields == []  # the strict Agent API never had to reject one of our fields


@pytest.fixture(scope="module")
def gemini_server():
    with serve_provider(gemini_responder()) as server:
        yield server


def last_body(server) -> dict:
    return server.calls[-1].body


# -- OpenAI ----------------------------------------------------------------------------------------------


def test_openai_native_search_goes_through_the_responses_api_with_its_options(openai_server):
    backend = make_backend("openai:gpt-4.1", base_url=openai_server.base_url, api_key=KEY, search_context_size="high",
                           search_location="country=KR,city=Seoul", search_domains="trails.example, docs.example")
    (searched,) = complete(backend, [ask(native_search=True)])
    call = openai_server.calls[-1]
    assert call.path == "/v1/responses"
    assert call.body["tools"] == [{"type": "web_search", "search_context_size": "high",
                                   "user_location": {"type": "approximate", "country": "KR", "city": "Seoul"},
                                   "filters": {"allowed_domains": ["trails.example", "docs.example"]}}]
    assert call.body["include"] == ["web_search_call.action.sources"]
    assert call.body["temperature"] == 0
    assert searched.search == {
        "queries": [QUESTION],
        # the search's sources in order, the cited one with its title; the page it opened after
        "results": [{"url": PAGES[0].url, "title": PAGES[0].title},
                    {"url": PAGES[1].url, "title": ""}, {"url": PAGES[2].url, "title": ""}],
        "cited": [PAGES[0].url],
        "calls": 1, "failed": 0, "failures": [], "opened": [PAGES[0].url],
    }
    assert searched.text.startswith(f"On {QUESTION!r}: {PAGES[0].snippet}")
    assert searched.cached_input_tokens == CACHED_TOKENS
    assert searched.reasoning_tokens == REASONING_TOKENS
    assert backend.identity()["settings"]["web_search"] == {
        "search_context_size": "high", "user_location": {"country": "KR", "city": "Seoul"},
        "allowed_domains": ["trails.example", "docs.example"]}

    # without native search the same model stays on chat completions, without any search field
    (plain,) = complete(backend, [ask()])
    call = openai_server.calls[-1]
    assert call.path == "/v1/chat/completions"
    assert not {"tools", "web_search_options", "include"} & call.body.keys()
    assert plain.search is None
    assert plain.cached_input_tokens == CACHED_TOKENS


def test_openai_search_without_citations_keeps_its_sources():
    with serve_provider(openai_responder(cite=False)) as server:
        (searched,) = complete(make_backend("openai:gpt-5", base_url=server.base_url, api_key=KEY), [ask(native_search=True)])
    assert server.calls[0].body["reasoning"] == {"effort": "high"}
    assert searched.search["cited"] == []
    assert [r["url"] for r in searched.search["results"]] == [page.url for page in PAGES]
    assert searched.search["queries"] == [QUESTION]


def test_chat_search_models_search_through_chat_completions(openai_server):
    backend = make_backend("openai:gpt-4o-search-preview", base_url=openai_server.base_url, api_key=KEY,
                           search_context_size="low", search_location="country=GB")
    (searched,) = complete(backend, [ask(native_search=True)])
    call = openai_server.calls[-1]
    assert call.path == "/v1/chat/completions"
    assert call.body["web_search_options"] == {"search_context_size": "low",
                                               "user_location": {"type": "approximate", "approximate": {"country": "GB"}}}
    assert "temperature" not in call.body  # search models take none
    assert searched.search == {
        "queries": [],
        "results": [{"url": page.url, "title": page.title} for page in PAGES[:2]],
        "cited": [page.url for page in PAGES[:2]],
    }
    assert searched.reasoning_tokens == REASONING_TOKENS


def test_openai_search_options_are_checked():
    with pytest.raises(UserError, match="--search-location takes KEY=VALUE"):
        make_backend("openai:gpt-4.1", base_url="http://127.0.0.1:9/v1", search_location="planet=Mars")
    with pytest.raises(UserError, match="--search-context-size must be one of low, medium, high"):
        make_backend("openai:gpt-4.1", base_url="http://127.0.0.1:9/v1", search_context_size="huge")
    with pytest.raises(UserError, match="--search-domains needs the Responses API"):
        make_backend("openai:gpt-4o-search-preview", base_url="http://127.0.0.1:9/v1", search_domains="a.org")
    with pytest.raises(OptionError, match="--search-recency-filter does not apply to the openai engine"):
        make_backend("openai:gpt-4.1", base_url="http://127.0.0.1:9/v1", search_recency_filter="month")


def test_openai_identity_without_search_options_is_unchanged(openai_server):
    """The cache keys of every earlier call stay the same: no search setting, no new identity field."""
    backend = make_backend("openai:test-model", base_url=openai_server.base_url, api_key=KEY)
    assert backend.identity() == {"engine": "openai", "model": "test-model", "base_url": openai_server.base_url,
                                  "api": "chat", "settings": {"schema_format": True, "temperature": 0.0}}
    assert backend.searches is True
    assert backend.takes_tools is True


# -- Perplexity -----------------------------------------------------------------------------------------


def test_perplexity_sends_the_agent_api_body_with_filters_inside_the_web_search_tool(perplexity_server):
    backend = make_backend("perplexity:perplexity/sonar", base_url=root_url(perplexity_server), api_key=KEY,
                           search_domain_filter="trails.example,-pinterest.com", search_recency_filter="month",
                           search_context_size="medium")
    (searched,) = complete(backend, [ask(native_search=True)])
    call = perplexity_server.calls[-1]
    assert call.path == "/v1/agent"
    assert call.headers["authorization"] == f"Bearer {KEY}"
    assert call.body == {
        "model": "perplexity/sonar",
        "input": [{"type": "message", "role": "system", "content": "be brief"},
                  {"type": "message", "role": "user", "content": QUESTION}],
        "max_output_tokens": 2048,
        "tools": [{"type": "web_search", "search_context_size": "medium",
                   "filters": {"search_domain_filter": ["trails.example", "-pinterest.com"], "search_recency_filter": "month"}}],
    }
    pages = search_pages(QUESTION)
    assert searched.search == {
        "queries": [QUESTION, f"{QUESTION} reviews"],  # one `search_results` item per search
        "results": [{"url": p.url, "title": p.title, "snippet": p.snippet, "date": p.date, "last_updated": p.date,
                     "source": "web"} for p in pages],
        "cited": [pages[0].url],  # from the answer's one url_citation annotation only
        "calls": 2,  # usage.tool_calls_details.search_web.invocation
    }
    assert searched.text.endswith(pages[2].snippet)  # both output_text parts read
    assert searched.text.startswith(f"On {QUESTION!r}: {pages[0].snippet}")
    assert (searched.served_model, searched.cached_input_tokens) == ("perplexity/sonar", CACHED_TOKENS)
    assert searched.provider_cost is not None and searched.provider_cost > 0
    identity = backend.identity()
    assert (identity["engine"], identity["api"], identity["settings"]["agent_model"]) == ("perplexity", "agent", "perplexity/sonar")
    assert identity["settings"]["search"] == {
        "search_context_size": "medium",
        "filters": {"search_domain_filter": ["trails.example", "-pinterest.com"], "search_recency_filter": "month"}}


def test_perplexity_without_native_search_sends_no_tool(perplexity_server):
    """A Perplexity judge (or `--search none`) must not search: no `web_search` tool (search is not
    automatic), a preset's own tools stopped with `max_tool_calls: 0`, and nothing recorded."""
    backend = make_backend("perplexity:sonar", base_url=root_url(perplexity_server), api_key=KEY)
    (plain,) = complete(backend, [ask()])
    assert "tools" not in perplexity_server.calls[-1].body
    assert plain.search is None
    assert plain.text == f"On {QUESTION!r}: no search. answer to {QUESTION}"
    preset = make_backend("perplexity:preset/fast", base_url=root_url(perplexity_server), api_key=KEY)
    (unsearched,) = complete(preset, [ask()])
    body = perplexity_server.calls[-1].body
    assert (body["preset"], body["max_tool_calls"], "model" in body) == ("fast", 0, False)
    assert unsearched.search is None


def test_perplexity_a_preset_is_named_as_a_model_and_its_served_model_recorded(perplexity_server):
    backend = make_backend("perplexity:preset/medium", base_url=root_url(perplexity_server), api_key=KEY)
    (searched,) = complete(backend, [ask(native_search=True)])
    body = perplexity_server.calls[-1].body
    assert (body["preset"], "model" in body, "max_tool_calls" in body, "max_output_tokens" in body) == ("medium", False, False, False)
    assert searched.served_model == "openai/gpt-5.1"  # what the preset resolved to
    assert searched.search["calls"] == 2
    capped = make_backend("perplexity:preset/medium", base_url=root_url(perplexity_server), api_key=KEY, reasoning_max_tokens=8000)
    complete(capped, [ask()])
    assert perplexity_server.calls[-1].body["max_output_tokens"] == 8000
    for spec, cap in (("perplexity:openai/gpt-5.1", None), ("perplexity:anthropic/claude-sonnet-4-5", 2048)):
        complete(make_backend(spec, base_url=root_url(perplexity_server), api_key=KEY), [ask()])
        assert perplexity_server.calls[-1].body.get("max_output_tokens") == cap  # a reasoning model: none; Anthropic's: required
    with pytest.raises(UserError, match="presets are fast, low, medium, high, xhigh"):
        make_backend("perplexity:preset/pro-search", base_url=root_url(perplexity_server), api_key=KEY)


def test_perplexity_a_200_failed_names_the_providers_error_and_incomplete_is_truncated(perplexity_server):
    backend = make_backend("perplexity:perplexity/sonar", base_url=root_url(perplexity_server), api_key=KEY)
    perplexity_server.reset()
    failed, cut = complete(backend, [ask("FAILRUN please", native_search=True), ask("CUTOFF please")])
    assert isinstance(failed, CallError) and not failed.retryable
    assert failed.reason == ("perplexity:perplexity/sonar answered status failed: server_error: model_error: "
                             "upstream model error: the model produced no output")
    assert "empty answer" not in failed.reason
    assert len(perplexity_server.calls) == 2  # the failed run is not resent
    assert isinstance(cut, Completion)
    assert (cut.truncated, cut.truncation_reason) == (True, "max_output_tokens")


def test_perplexity_an_unknown_model_stops_the_run(perplexity_server):
    from bespoke_metric.backends.base import ModelUnavailableError

    backend = make_backend("perplexity:perplexity/sonar-pro", base_url=root_url(perplexity_server), api_key=KEY)
    with pytest.raises(ModelUnavailableError, match="'perplexity:perplexity/sonar-pro' is not served: .*not found"):
        complete(backend, [ask(native_search=True)])
    perplexity_server.rule = lambda record: Fault(status=404, body={"error": {"message": "model not found", "type": "not_found"}})
    try:
        with pytest.raises(ModelUnavailableError, match="is not served: model not found"):
            complete(make_backend("perplexity:openai/gpt-5.1", base_url=root_url(perplexity_server), api_key=KEY), [ask()])
    finally:
        perplexity_server.rule = None


def test_the_strict_test_server_rejects_the_old_sonar_fields(perplexity_server):
    """The server our requests pass is strict: the chat API's leftovers are 400s there, as on the real API."""
    import urllib.error
    import urllib.request

    for body, field in (({"model": "perplexity/sonar", "input": "x", "disable_search": True}, "disable_search"),
                        ({"model": "perplexity/sonar", "input": "x", "tools": [{"type": "web_search", "filters": {"search_mode": "academic"}}]},
                         "tools[].filters.search_mode"),
                        ({"model": "perplexity/sonar", "input": [{"role": "user", "content": "x", "name": "a"}]}, "input[].name")):
        request = urllib.request.Request(root_url(perplexity_server) + "/v1/agent", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(request)
        assert answer.value.code == 400
        assert json.loads(answer.value.read())["error"]["param"] == field
    assert perplexity_server.unknown_fields[-3:] == ["disable_search", "tools[].filters.search_mode", "input[].name"]
    del perplexity_server.unknown_fields[-3:]


def test_perplexity_searches_by_default_and_takes_no_tools():
    engine = ENGINES["perplexity"]
    assert engine.search_default == "native"
    assert ENGINES["openai"].search_default == "none"
    assert ENGINES["gemini"].search_default == "none"
    backend = make_backend("perplexity:sonar", base_url="http://127.0.0.1:9", api_key=KEY)
    assert (backend.searches, backend.takes_tools) == (True, False)


def test_perplexity_judge_never_searches(perplexity_server, synthetic_hub):
    """The judge's calls carry no native search: not one goes out with the `web_search` tool."""
    import bespoke_dataset
    from bespoke_metric.scoring.pipeline import score

    perplexity_server.reset()
    row = bespoke_dataset.load("benchmark", source=synthetic_hub)[0]
    judge = make_judge("perplexity:sonar", base_url=root_url(perplexity_server), api_key=KEY, recall="none", max_parse_retries=0)
    score([{"user": row["user"], "query_id": row["query_id"], "response": row["shots"][-1]["response"]}], judge,
          source=synthetic_hub)
    assert perplexity_server.calls
    assert all("tools" not in call.body and call.status == 200 for call in perplexity_server.calls)


def test_a_missing_key_is_one_user_error_naming_the_engine(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PERPLEXITY_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for spec, variable in (("perplexity:sonar", "PERPLEXITY_API_KEY"), ("gemini:gemini-2.5-pro", "GEMINI_API_KEY"),
                           ("openai:gpt-5", "OPENAI_API_KEY")):
        with pytest.raises(UserError) as error:
            make_backend(spec)
        message = str(error.value)
        assert message.startswith(spec.split(":")[0] + ": no API key")
        assert variable in message
        assert "\n" not in message
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)  # Gemini's second variable
    assert make_backend("gemini:gemini-2.5-flash").identity()["base_url"] == "https://generativelanguage.googleapis.com"


def test_a_body_that_is_not_the_providers_shape_is_a_call_failure_naming_the_engine(perplexity_server, gemini_server):
    for server, spec in ((perplexity_server, "perplexity:sonar"), (gemini_server, "gemini:gemini-2.5-flash")):
        server.rule = lambda record: Fault(status=200, body={"detail": "a proxy's idea of an answer"})
        try:
            (failed,) = complete(make_backend(spec, base_url=root_url(server), api_key=KEY, max_retries=1, backoff_base=0.01),
                                 [ask(native_search=True)])
        finally:
            server.rule = None
        assert isinstance(failed, CallError)
        assert f"malformed response from {spec} at {root_url(server)}" in failed.reason
        assert "gave up after 1 retries" in failed.reason


# -- Gemini ----------------------------------------------------------------------------------------------


def test_gemini_records_grounding_through_the_real_sdk(gemini_server):
    backend = make_backend("gemini:gemini-2.5-pro", base_url=root_url(gemini_server), api_key=KEY)
    searched, plain = complete(backend, [ask(native_search=True), ask("tell me more")])
    calls = {json.dumps(c.body["contents"]): c for c in gemini_server.calls[-2:]}
    search_call = next(c for c in calls.values() if "tools" in c.body)
    assert search_call.path.endswith("/models/gemini-2.5-pro:generateContent")
    assert search_call.headers["x-goog-api-key"] == KEY
    assert search_call.body["tools"] == [{"googleSearch": {}}]
    assert search_call.body["systemInstruction"]["parts"] == [{"text": "be brief"}]
    assert search_call.body["contents"] == [{"role": "user", "parts": [{"text": QUESTION}]}]
    assert "maxOutputTokens" not in search_call.body["generationConfig"]  # a thinking model: no cap by default
    assert searched.search == {
        "queries": [QUESTION, f"{QUESTION} reviews"],
        # the redirect and its title recorded together, at once
        "results": [{"url": gemini_redirect(p), "title": p.url.split("/")[2]} for p in PAGES],
        "cited": [gemini_redirect(p) for p in PAGES[:2]],
        "calls": 2,  # one search per query executed (what Gemini 3 bills)
    }
    assert searched.text.startswith(f"On {QUESTION!r}")  # the thought part is left out
    assert "thinking it over" not in searched.text
    assert searched.reasoning_tokens == REASONING_TOKENS
    assert searched.cached_input_tokens == CACHED_TOKENS
    assert searched.input_tokens > plain.input_tokens  # the search's prompt tokens are input too
    assert plain.search is None


def test_gemini_json_schema_is_structured_output_unless_it_searches(gemini_server):
    schema = {"type": "object", "properties": {"verdict": {"type": "boolean"}}, "required": ["verdict"]}
    backend = make_backend("gemini:gemini-2.0-flash", base_url=root_url(gemini_server), api_key=KEY)
    complete(backend, [ask("structured", json_schema=schema, max_tokens=50)])
    config = last_body(gemini_server)["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == schema
    assert config["maxOutputTokens"] == 50
    complete(backend, [ask("searched and structured", json_schema=schema, native_search=True)])
    body = last_body(gemini_server)
    assert "responseJsonSchema" not in body["generationConfig"]
    assert '"verdict"' in body["contents"][-1]["parts"][0]["text"]  # the schema spelled out instead


def test_gemini_retries_a_429_after_its_retry_info_delay(gemini_server):
    error = {"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED",
                       "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]}}
    gemini_server.reset()
    gemini_server.faults.append(Fault(status=429, body=error))
    backend = make_backend("gemini:gemini-2.5-flash", base_url=root_url(gemini_server), api_key=KEY, backoff_base=0.01)
    (answer,) = complete(backend, [ask()])
    assert isinstance(answer, Completion)
    first, second = gemini_server.calls
    assert first.status == 429
    assert second.received - first.finished >= 1.0
    assert (backend.retries_made, backend.pacer.refusals) == (0, 1)  # a rate limit's wait, not a retry


def test_gemini_client_errors_are_not_retried_and_hold_no_key(gemini_server, caplog):
    gemini_server.reset()
    gemini_server.faults.append(Fault(status=400, body={"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                                  "message": f"API key {KEY} not valid"}}))
    caplog.set_level(logging.DEBUG)
    (failed,) = complete(make_backend("gemini:gemini-2.5-flash", base_url=root_url(gemini_server), api_key=KEY), [ask()])
    assert isinstance(failed, CallError)
    assert not failed.retryable
    assert failed.reason.startswith(f"HTTP 400 from {root_url(gemini_server)}: INVALID_ARGUMENT")
    assert KEY not in failed.reason
    assert "***" in failed.reason
    assert KEY not in caplog.text
    assert len(gemini_server.calls) == 1


@pytest.mark.slow
def test_an_unreachable_gemini_endpoint_fails_every_call_in_seconds():
    import socket

    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))
    try:
        backend = make_backend("gemini:gemini-2.5-flash", base_url=f"http://127.0.0.1:{refused.getsockname()[1]}",
                               api_key=KEY, backoff_base=0.01)
        outcomes = complete(backend, [ask(f"q{i}") for i in range(20)])
    finally:
        refused.close()
    assert all(isinstance(outcome, CallError) for outcome in outcomes)
    assert all("connection error" in outcome.reason for outcome in outcomes)
    assert backend.retries_made <= 2 * backend.concurrency


# -- the cache, and no key anywhere ----------------------------------------------------------------------


TOOLS = ({"type": "function", "function": {"name": "search", "description": "search the web",
                                            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}},)


@pytest.mark.slow
def test_tool_calls_and_search_records_round_trip_through_the_cache_without_the_key(openai_server, perplexity_server,
                                                                                     gemini_server, tmp_path):
    cases = [
        (make_backend("openai:gpt-4.1", base_url=openai_server.base_url, api_key=KEY), openai_server,
         [ask(native_search=True), ask(tools=TOOLS), ask("uses the responses api", tools=TOOLS, native_search=True)]),
        (make_backend("perplexity:sonar", base_url=root_url(perplexity_server), api_key=KEY), perplexity_server,
         [ask(native_search=True), ask(), ask("CUTOFF")]),
        (make_backend("gemini:gemini-2.5-pro", base_url=root_url(gemini_server), api_key=KEY), gemini_server,
         [ask(native_search=True)]),
    ]
    path = tmp_path / "calls.sqlite"
    for backend, server, requests in cases:
        server.reset()
        with Cache(path) as cache:
            first = run_requests_sync(backend, requests, cache=cache)
        assert len(server.calls) == len(requests)
        with Cache(path) as cache:
            again = run_requests_sync(backend, requests, cache=cache)
            stored = [cache.get(key) for key in _keys(backend, requests)]
        assert len(server.calls) == len(requests)  # the second run made no call
        assert all(result.cached for result in again)
        assert [r.text for r in again] == [r.text for r in first]
        fresh = complete(backend, requests)
        assert stored == fresh  # every field: tool calls, search record, token details
    openai_outcomes = complete(cases[0][0], cases[0][2])
    assert openai_outcomes[1].tool_calls[0].name == "search"
    assert openai_outcomes[1].tool_calls[0].arguments == {"query": QUESTION}
    assert openai_outcomes[2].tool_calls[0].id == "call_1"
    assert openai_outcomes[2].search["queries"] == ["uses the responses api"]

    written = b"".join(p.read_bytes() for p in tmp_path.iterdir())  # the database, its -wal and -shm
    assert sorted(p.name for p in tmp_path.iterdir())[0] == "calls.sqlite"
    assert b"SECRET" not in written
    assert PAGES[0].url.encode() in written  # the scan reads what was stored


def _keys(backend, requests):
    from bespoke_metric.calls.cache import key_for

    return [key_for(backend.identity(), request) for request in requests]


def test_the_command_line_says_a_key_is_missing_in_one_line(monkeypatch, capsys, synthetic_hub, tmp_path):
    import bespoke_dataset
    from bespoke_cli.cli import main

    for name in ("PERPLEXITY_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    row = bespoke_dataset.load("benchmark", source=synthetic_hub)[0]
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"user": row["user"], "query_id": row["query_id"], "response": "An answer."}) + "\n")
    capsys.readouterr()  # what datasets printed building the table (a bar, on a cold cache) is not the command's
    for judge, variable in (("perplexity:sonar", "PERPLEXITY_API_KEY"), ("gemini:gemini-2.5-pro", "GEMINI_API_KEY")):
        code = main(["score", "--predictions", str(predictions), "--judge", judge, "--source", str(synthetic_hub),
                     "--output", str(tmp_path / "results.json")])
        [line] = own_lines(capsys.readouterr().err)
        assert code == 2
        assert line.startswith(f"error: {judge.split(':')[0]}: no API key")
        assert variable in line
    assert not (tmp_path / "results.json").exists()


# -- the parsers, on raw bodies (as a batch's output lines will feed them) ---------------------------------


def test_responses_body_with_several_queries_and_pages_read():
    from bespoke_metric.backends.providers.openai_backend import _responses_completion

    body = {"status": "incomplete", "output": [
        {"type": "reasoning", "summary": []},
        {"type": "web_search_call", "action": {"type": "search", "query": "a", "queries": ["a", "a 2025"],
                                               "sources": [{"type": "url", "url": "https://x.example"}]}},
        {"type": "web_search_call", "action": {"type": "find_in_page", "url": "https://y.example", "pattern": "2025"}},
        {"type": "web_search_call", "action": {"type": "search"}},  # sources not asked for: nothing to record
        {"type": "message", "content": [{"type": "output_text", "text": "Part one. ", "annotations": []},
                                        {"type": "output_text", "text": "Part two.", "annotations": [
                                            {"type": "url_citation", "url": "https://z.example", "title": "Z"}]}]},
    ], "usage": {"input_tokens": 10, "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 12}}}
    completion = _responses_completion(body)
    assert completion.text == "Part one. Part two."
    assert completion.truncated
    assert (completion.reasoning_tokens, completion.cached_input_tokens) == (12, 0)
    assert completion.search == {
        "queries": ["a", "a 2025"],
        "results": [{"url": "https://x.example", "title": ""}, {"url": "https://z.example", "title": "Z"}],  # cited: a result too
        "cited": ["https://z.example"],
        "calls": 2, "failed": 0, "failures": [], "opened": ["https://y.example"],  # two searches, one page read
    }


def test_perplexity_agent_body_with_string_content_and_no_search_count():
    """From the Agent API's documented shapes: message content may be a plain string; a `search_results`
    item without the usage count is one search; annotations other than `url_citation` cite nothing."""
    from bespoke_metric.backends.providers.perplexity import agent_completion

    body = {"status": "completed", "model": "google/gemini-3-flash-preview", "output": [
        {"type": "search_results", "queries": ["a", "a 2026"], "results": [
            {"id": 1, "url": "https://a.example", "title": "A", "snippet": "s", "date": None, "last_updated": None}]},
        {"type": "message", "content": "Plain text."}], "usage": {"input_tokens": 4, "output_tokens": 2, "total_tokens": 6}}
    completion = agent_completion(body, "perplexity:preset/low")
    assert completion.text == "Plain text."
    assert completion.search == {"queries": ["a", "a 2026"], "results": [{"url": "https://a.example", "title": "A", "snippet": "s"}],
                                 "cited": [], "calls": 1}
    assert completion.provider_cost is None  # no `usage.cost`: not guessed
    assert agent_completion({**body, "output": body["output"][1:]}, "perplexity:preset/low").search is None


def test_gemini_body_cut_off_and_without_grounding():
    from bespoke_metric.backends.providers.gemini import _gemini_completion

    body = {"candidates": [{"content": {"parts": [{"text": "half"}, {"text": " an answer"}]}, "finishReason": "MAX_TOKENS"}],
            "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3}}
    assert _gemini_completion(body) == Completion("half an answer", 7, 3, truncated=True, truncation_reason="MAX_TOKENS")
    with pytest.raises(KeyError):
        _gemini_completion({"promptFeedback": {}})


def test_gemini_refused_prompt_fails_without_retry(gemini_server):
    gemini_server.reset()
    gemini_server.faults.append(Fault(status=200, body={"promptFeedback": {"blockReason": "SAFETY"}}))
    (refused,) = complete(make_backend("gemini:gemini-2.5-flash", base_url=root_url(gemini_server), api_key=KEY), [ask()])
    assert refused == CallError("gemini:gemini-2.5-flash refused the prompt (SAFETY)", retryable=False)
    assert len(gemini_server.calls) == 1
