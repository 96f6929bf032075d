"""Claude through Anthropic's Messages API (`anthropic:`), over real HTTP against the strict Messages API server
on 127.0.0.1 (`fakes.anthropic_server`, whose field sets are read off the anthropic SDK's
request types): as a judge and as a system searching the web by itself, through the command line too;
`max_tokens` always sent, `temperature` never where the model refuses it, Claude's web search settings and
record, 529 retries, refusals, retired models, and no key anywhere (issue 32)."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request

import pytest
from backend_outcomes import QUESTION, ask, complete
from fakes.anthropic_server import error_body, serve_anthropic
from fakes.provider_servers import CACHED_TOKENS, REASONING_TOKENS, search_pages
from output_lines import own_lines

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import CallError, Completion, ModelUnavailableError
from bespoke_metric.backends.options import OptionError
from bespoke_metric.backends.providers.anthropic import ANTHROPIC_VERSION, message_completion, refuses_temperature
from bespoke_metric.backends.registry import ENGINES, make_backend
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.scheduler import run_requests_sync
from bespoke_metric.testing.server import Fault

KEY = "sk-ant-test-SECRET-7f3a09c1d2e4"
PAGES = search_pages(QUESTION)


@pytest.fixture(scope="module")
def server():
    with serve_anthropic() as running:
        yield running
        assert running.refused == []  # the strict server never had to refuse one of our bodies


@pytest.fixture(autouse=True)
def fresh(server):
    yield
    server.faults.clear()
    server.rule = None
    server.served.clear()


def claude(server, model: str = "claude-sonnet-5-5", **options):
    return make_backend(f"anthropic:{model}", base_url=server.root_url, api_key=KEY, backoff_base=0.01, **options)


# -- a call ------------------------------------------------------------------------------------------------


def test_a_call_is_a_messages_api_body_with_max_tokens_and_the_model_that_served_recorded(server):
    server.served["claude-sonnet-5-5"] = "claude-sonnet-5-5-20261015"
    (answer,) = complete(claude(server), [ask(max_tokens=300)])
    call = server.calls[-1]
    assert call.path == "/v1/messages"
    assert (call.headers["x-api-key"], call.headers["anthropic-version"]) == (KEY, ANTHROPIC_VERSION)
    assert "authorization" not in {name.lower() for name in call.headers}  # the key travels once, in its header
    assert call.body == {"model": "claude-sonnet-5-5", "max_tokens": 300, "system": "be brief",
                         "messages": [{"role": "user", "content": QUESTION}]}
    assert isinstance(answer, Completion) and answer.text
    assert answer.served_model == "claude-sonnet-5-5-20261015" and answer.service_tier == "standard"
    # Usage: input_tokens leaves out the prompt cache's reads, which are billed input too (anthropic/types/usage.py)
    assert answer.cached_input_tokens == CACHED_TOKENS and answer.input_tokens == len(f"be brief {QUESTION}".split()) + CACHED_TOKENS
    assert answer.reasoning_tokens == REASONING_TOKENS  # output_tokens_details.thinking_tokens
    assert answer.search is None and not answer.truncated


def test_temperature_goes_only_to_the_models_that_take_it(server):
    assert [refuses_temperature(model) for model in ("claude-opus-4-7", "claude-opus-4-7-20260416", "claude-opus-5-5",
                                                     "claude-fable-5-2", "claude-opus-4-1", "claude-sonnet-4-5",
                                                     "claude-sonnet-5-5", "claude-3-opus-20240229")] == [
        True, True, True, True, False, False, False, False]
    for model in ("claude-opus-4-7", "claude-fable-5-2"):
        with pytest.raises(UserError, match=f"anthropic:{model} takes no temperature"):
            claude(server, model, temperature=0.0)
        complete(claude(server, model), [ask()])
        assert "temperature" not in server.calls[-1].body
    complete(claude(server, "claude-sonnet-4-5", temperature=0.0), [ask()])
    assert server.calls[-1].body["temperature"] == 0.0
    assert claude(server, "claude-sonnet-4-5", temperature=0.0).identity()["settings"]["temperature"] == 0.0


def post(server, path: str, body: dict, **headers: str) -> tuple[int, dict]:
    request = urllib.request.Request(server.root_url + path, json.dumps(body).encode(),
                                     {"content-type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


TOOL = {"name": "t", "input_schema": {"type": "object"}}


def test_the_strict_server_refuses_what_the_api_refuses(server):
    """The server our bodies pass answers a field the SDK's types do not name, a value of the wrong shape (the
    SDK's request type validates it), a missing `max_tokens`, both domain lists, a refused temperature, a
    forced tool with thinking on, Opus 5.5's refusals and a missing header as the API does."""
    headers = {"x-api-key": "k", "anthropic-version": ANTHROPIC_VERSION}
    body = {"model": "claude-sonnet-5-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    cases = [
        ({**body, "response_format": {"type": "json_object"}}, "response_format: Extra inputs are not permitted"),
        ({**body, "tools": [{"type": "web_search_20250305", "name": "web_search", "search_context_size": "high"}]},
         "tools.0.search_context_size: Extra inputs are not permitted"),
        ({k: v for k, v in body.items() if k != "max_tokens"}, "max_tokens: Field required"),
        ({**body, "tools": [{"type": "web_search_20250305", "name": "web_search", "allowed_domains": ["a.org"],
                             "blocked_domains": ["b.org"]}]}, "Cannot specify both allowed_domains and blocked_domains"),
        ({**body, "model": "claude-opus-4-7", "temperature": 0}, "`temperature` is deprecated for this model."),
        # what Claude Opus 5.5 and thinking refuse (issue 43, 2026-12-04)
        ({**body, "tools": [TOOL], "tool_choice": {"type": "tool", "name": "t"}, "thinking": {"type": "adaptive"}},
         "Thinking may not be enabled when tool_choice forces tool use."),
        ({**body, "tools": [TOOL], "tool_choice": {"type": "any"}, "thinking": {"type": "enabled", "budget_tokens": 2048}},
         "Thinking may not be enabled when tool_choice forces tool use."),
        ({**body, "model": "claude-opus-5-5", "tools": [TOOL], "tool_choice": {"type": "tool", "name": "t"}},
         "forcing tool use is not supported for this model"),
        ({**body, "model": "claude-opus-5-5", "thinking": {"type": "disabled"}}, "'disabled' is not supported for this model"),
        ({**body, "model": "claude-opus-5-5", "thinking": {"type": "enabled", "budget_tokens": 2048}},
         "'enabled' is not supported for this model"),
        ({**body, "model": "claude-3-opus-20240229", "output_config": {"format": {"type": "json_schema", "schema": {}}}},
         "structured outputs are not supported for this model"),
        ({**body, "output_config": {"format": {"type": "json_schema", "schema": {}, "strict": True}}},
         "output_config.format.strict: Extra inputs are not permitted"),
        ({**body, "output_config": {"effort": "extreme"}}, "output_config.effort: Input should be"),
        # the effort a model does not take (Anthropic's effort page, 2026-12-04)
        ({**body, "model": "claude-sonnet-4-5", "output_config": {"effort": "high"}},
         "This model does not support the effort parameter."),
        ({**body, "model": "claude-3-5-sonnet-20241022", "output_config": {"effort": "low"}},
         "This model does not support the effort parameter."),
        ({**body, "model": "claude-opus-4-6", "output_config": {"effort": "xhigh"}}, "'xhigh' is not supported for this model"),
        ({**body, "model": "claude-opus-4-5-20251101", "output_config": {"effort": "max"}}, "'max' is not supported for this model"),
        ({**body, "thinking": {"type": "enabled"}}, "budget_tokens: Field required"),
    ]
    for given, words in cases:
        status, answer = post(server, "/v1/messages", given, **headers)
        assert status == 400 and answer["type"] == "error" and words in answer["error"]["message"], answer
    for model, effort in (("claude-opus-4-5", "high"), ("claude-opus-4-6", "max"), ("claude-sonnet-4-6", "max"),
                          ("claude-haiku-5-5", "xhigh"), ("claude-opus-5-5", "xhigh")):
        status, answer = post(server, "/v1/messages", {**body, "model": model, "output_config": {"effort": effort}}, **headers)
        assert status == 200, answer
    status, answer = post(server, "/v1/messages", body, **{"anthropic-version": ANTHROPIC_VERSION})
    assert status == 401 and answer["error"]["type"] == "authentication_error"
    assert len(server.refused) == len(cases) + 1
    server.refused.clear()


SCHEMA = {"title": "claim verdicts", "type": "object", "properties": {"verdicts": {"type": "array", "minItems": 2}},
          "required": ["verdicts"]}
VERDICTS = {"verdicts": [{"claim": 1, "verdict": True}]}


def structured(server, model: str, **options):
    """One structured request to `model` and its answer, the server answering `VERDICTS`."""
    server.responder = lambda body: json.dumps(VERDICTS)
    try:
        (answer,) = complete(claude(server, model, **options), [ask(json_schema=SCHEMA)])
    finally:
        from bespoke_metric.testing.system_responder import answer_any

        server.responder = answer_any
    return answer, server.calls[-1].body


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-4-5", "claude-opus-4-1"])
def test_a_structured_answer_is_held_by_structured_outputs_never_by_a_forced_tool(server, model):
    import anthropic

    answer, body = structured(server, model)
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": anthropic.transform_schema(SCHEMA)}}
    assert "tools" not in body and "tool_choice" not in body and "thinking" not in body
    assert json.loads(answer.text) == VERDICTS  # the text block, held to the schema
    assert claude(server, model).constraint == "json-schema"


def test_the_effort_and_the_format_share_output_config(server):
    _, body = structured(server, "claude-opus-5-5", reasoning_effort="high")
    assert body["output_config"]["effort"] == "high" and body["output_config"]["format"]["type"] == "json_schema"


def test_a_claude_before_structured_outputs_is_held_by_a_forced_tool_with_thinking_off(server):
    answer, body = structured(server, "claude-3-5-sonnet-20241022")
    assert body["tools"] == [{"name": "claim_verdicts", "description": "Give the answer in this shape.", "input_schema": SCHEMA}]
    assert body["tool_choice"] == {"type": "tool", "name": "claim_verdicts"} and "thinking" not in body
    assert "output_config" not in body and json.loads(answer.text) == VERDICTS  # the tool_use block's input


def test_a_claude_that_can_do_neither_is_asked_for_lines_and_says_so(server):
    backend = claude(server, "claude-2.1")
    assert backend.constraint == "lines"  # a judge asks it for the paper's lines (schema.LINES)
    answer, body = structured(server, "claude-2.1")
    assert not {"tools", "tool_choice", "output_config"} & body.keys()
    assert '"verdicts"' in body["messages"][-1]["content"]  # called with a schema directly: spelled out in the prompt
    assert json.loads(answer.text) == VERDICTS


def test_schema_format_off_spells_the_schema_out(server):
    answer, body = structured(server, "claude-sonnet-5-5", schema_format=False)
    assert not {"tools", "output_config"} & body.keys() and '"verdicts"' in body["messages"][-1]["content"]
    assert json.loads(answer.text) == VERDICTS and claude(server, schema_format=False).constraint is None


def test_an_answer_cut_off_and_a_refusal_are_named(server):
    cut, refused = complete(claude(server), [ask(max_tokens=3), ask("REFUSEME please")])
    assert (cut.truncated, cut.truncation_reason, len(cut.text.split())) == (True, "max_tokens", 3)
    # stop_reason "refusal" with stop_details (anthropic/types/refusal_stop_details.py): not retried
    assert refused == CallError("anthropic:claude-sonnet-5-5 refused to answer (general_harms: This request was declined.)",
                                retryable=False)


def test_an_overloaded_api_is_retried_after_its_retry_after_and_errors_are_named_by_the_sdk(server):
    server.faults.extend([Fault(status=529, retry_after="1", body=error_body("overloaded_error", "Overloaded")),
                          Fault(status=429, body=error_body("rate_limit_error", "Number of request tokens has exceeded your rate limit"),
                                headers=(("retry-after", "0"),))])
    server.reset()
    backend = claude(server)
    (answer,) = complete(backend, [ask()])
    first, second, third = server.calls
    assert (first.status, second.status, third.status) == (529, 429, 200)
    assert second.received - first.finished >= 1.0  # the 529's Retry-After
    # the 529 is a retry; the 429 a rate limit's wait, which spends no retry
    assert isinstance(answer, Completion) and (backend.retries_made, backend.pacer.refusals) == (1, 1)
    server.faults.append(Fault(status=400, body=error_body("invalid_request_error", f"messages: bad content (key {KEY})")))
    (failed,) = complete(backend, [ask()])
    assert isinstance(failed, CallError) and not failed.retryable
    assert failed.reason.startswith(f"HTTP 400 from {server.root_url}: BadRequestError: Error code: 400 - messages: bad content")
    assert KEY not in failed.reason


def test_a_retired_model_stops_the_run_naming_it_in_the_providers_words(server):
    with serve_anthropic(retired=("claude-3-opus-20240229",)) as retiring:
        backend = make_backend("anthropic:claude-3-opus-20240229", base_url=retiring.root_url, api_key=KEY)
        with pytest.raises(ModelUnavailableError) as raised:
            complete(backend, [ask("one"), ask("two")])
        assert len(retiring.calls) <= 2  # not retried
    assert raised.value.model == "anthropic:claude-3-opus-20240229"
    assert str(raised.value).startswith("the model 'anthropic:claude-3-opus-20240229' is not served: model: claude-3-opus-20240229")


def test_a_missing_key_is_one_line_naming_the_variable(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(UserError) as error:
        make_backend("anthropic:claude-sonnet-5-5")
    assert str(error.value).startswith("anthropic: no API key for api.anthropic.com: set ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    backend = make_backend("anthropic:claude-sonnet-5-5")
    assert backend.identity() == {"engine": "anthropic", "model": "claude-sonnet-5-5", "base_url": "https://api.anthropic.com",
                                  "api": "messages", "settings": {"schema_format": True}}
    assert KEY not in json.dumps(backend.describe())


# -- Claude searching the web ---------------------------------------------------------------------------------


def test_native_search_maps_the_search_settings_onto_the_web_search_tool_and_records_every_search(server):
    backend = claude(server, search_domains="trails.example, docs.example", search_location="country=KR,city=Seoul",
                     search_max_uses=1, search_tool="web_search_20260209")
    (searched,) = complete(backend, [ask(native_search=True)])
    assert server.calls[-1].body["tools"] == [{"type": "web_search_20260209", "name": "web_search", "max_uses": 1,
                                               "allowed_domains": ["trails.example", "docs.example"],
                                               "user_location": {"type": "approximate", "country": "KR", "city": "Seoul"}}]
    trails = [page for page in PAGES if page.url.startswith("https://trails.example")]
    assert searched.search == {
        "queries": [QUESTION, f"{QUESTION} reviews"],  # every server_tool_use, the failed one too
        "results": [{"url": page.url, "title": page.title, "page_age": page.date} for page in trails[:2]],
        "cited": [trails[0].url],  # the answer's web_search_result_location only
        "calls": 1,  # usage.server_tool_use.web_search_requests: what was billed
        "failed": 1, "failures": searched.search["failures"],
    }
    [failure] = searched.search["failures"]  # the tool_use_id of the result, the query of its server_tool_use, its error_code
    assert re.fullmatch(rf"the web search srvtoolu_\w+ \('{QUESTION} reviews'\) failed: max_uses_exceeded", failure)
    assert backend.identity()["settings"]["web_search"] == {
        "max_uses": 1, "allowed_domains": ["trails.example", "docs.example"],
        "user_location": {"type": "approximate", "country": "KR", "city": "Seoul"}, "tool": "web_search_20260209"}
    (blocked,) = complete(claude(server, search_blocked_domains="trails.example"), [ask(native_search=True)])
    assert server.calls[-1].body["tools"] == [{"type": "web_search_20250305", "name": "web_search", "blocked_domains": ["trails.example"]}]
    assert blocked.search["calls"] == 2 and not any("trails.example" in result["url"] for result in blocked.search["results"])
    # without native search: no tool at all, nothing recorded (a Claude judge never searches)
    (plain,) = complete(backend, [ask()])
    assert "tools" not in server.calls[-1].body and plain.search is None


@pytest.mark.parametrize("options, words", [
    ({"search_context_size": "high"}, "--search-context-size does not apply to the anthropic engine"),
    ({"search_recency_filter": "month"}, "--search-recency-filter does not apply to the anthropic engine"),
    ({"search_domains": "a.org", "search_blocked_domains": "b.org"}, "takes --search-domains .* or --search-blocked-domains"),
    ({"search_tool": "web_search_2024"}, "--search-tool must be one of web_search_20250305"),
    ({"search_location": "planet=Mars"}, "--search-location takes KEY=VALUE"),
    ({"search_max_uses": 0}, "--search-max-uses must be at least 1"),
    ({"reasoning_effort": "minimal"}, "--reasoning-effort must be one of low, medium, high, xhigh, max"),
])
def test_a_setting_claude_cannot_take_is_refused_in_one_line(options, words):
    with pytest.raises(UserError, match=words) as raised:
        make_backend("anthropic:claude-sonnet-5-5", base_url="http://127.0.0.1:9", api_key=KEY, **options)
    assert "\n" not in str(raised.value)
    assert isinstance(raised.value, OptionError) == ("does not apply" in words)


@pytest.mark.parametrize("model, effort, words", [
    ("claude-sonnet-4-5", "high", r"anthropic:claude-sonnet-4-5 \(Claude Sonnet and Haiku 4.5\) takes no --reasoning-effort, "
                                  r"not 'high': Anthropic answers any with a 400 \(\"This model does not support the effort"),
    ("claude-opus-4-6", "xhigh", r"anthropic:claude-opus-4-6 \(Claude 4.6\) takes --reasoning-effort low, medium, high, max, "
                                r"not 'xhigh'$"),
    ("claude-opus-4-5-20251101", "max", r"takes --reasoning-effort low, medium, high, not 'max'$"),
])
def test_an_effort_the_model_does_not_take_is_one_line_before_any_call(model, effort, words):
    with pytest.raises(UserError, match=words) as raised:
        make_backend(f"anthropic:{model}", base_url="http://127.0.0.1:9", api_key=KEY, reasoning_effort=effort)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("model, efforts", [
    ("claude-opus-5-5", ("low", "medium", "high", "xhigh", "max")), ("claude-sonnet-5-5", ("low", "medium", "high", "xhigh", "max")),
    ("claude-haiku-5-5", ("low", "medium", "high", "xhigh", "max")), ("claude-fable-5-2", ("low", "medium", "high", "xhigh", "max")),
    ("claude-opus-4-7", ("low", "medium", "high", "xhigh", "max")), ("claude-sonnet-4-6", ("low", "medium", "high", "max")),
    ("claude-opus-4-6", ("low", "medium", "high", "max")), ("claude-opus-4-5-20251101", ("low", "medium", "high")),
    ("claude-sonnet-4-5-20250929", ()), ("claude-haiku-4-5", ()), ("claude-opus-4-1", ()), ("claude-sonnet-4-20250514", ()),
    ("claude-3-5-sonnet-20241022", ()), ("claude-2.1", ()), ("claude-next-7", ("low", "medium", "high", "xhigh", "max")),
])
def test_the_catalogue_says_which_efforts_each_claude_takes_and_a_judge_sends_high_where_it_can(model, efforts):
    from bespoke_metric.backends.providers.anthropic_models import claude_family, judgment_effort

    assert claude_family(model).efforts == efforts
    assert judgment_effort(model) == ("high" if efforts else None)


def test_the_effort_is_sent_as_output_config(server):
    complete(claude(server, reasoning_effort="high"), [ask()])
    assert server.calls[-1].body["output_config"] == {"effort": "high"}


def test_a_failed_search_keeps_its_error_code_and_a_body_read_through_the_sdks_types():
    """A search the API could not run comes as a `web_search_tool_result` whose content is a
    `web_search_tool_result_error` (anthropic/types/web_search_tool_result_error_object.py); a citation of
    another kind (`char_location`) cites no web page."""
    from anthropic.types import Message

    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-5-5", "stop_reason": "end_turn",
            "content": [
                {"type": "server_tool_use", "id": "srvtoolu_a", "name": "web_search", "input": {"query": "rye bread"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_a",
                 "content": {"type": "web_search_tool_result_error", "error_code": "too_many_requests"}},
                {"type": "text", "text": "From what I know: ", "citations": None},
                {"type": "text", "text": "rye needs longer proofing.", "citations": [
                    {"type": "char_location", "cited_text": "x", "document_index": 0, "document_title": None,
                     "start_char_index": 0, "end_char_index": 1}]}],
            "usage": {"input_tokens": 10, "output_tokens": 7, "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}}}
    completion = message_completion(Message.model_validate(body))
    assert completion.text == "From what I know: rye needs longer proofing."
    assert completion.search == {"queries": ["rye bread"], "results": [], "cited": [], "calls": 0, "failed": 1,
                                 "failures": ["the web search srvtoolu_a ('rye bread') failed: too_many_requests"]}


def test_search_records_come_back_from_the_cache_without_a_call_or_the_key(server, tmp_path):
    backend = claude(server)
    requests = [ask(native_search=True), ask("tell me more")]
    with Cache(tmp_path / "calls.sqlite") as cache:
        first = run_requests_sync(backend, requests, cache=cache)
        calls = len(server.calls)
        again = run_requests_sync(backend, requests, cache=cache)
    assert len(server.calls) == calls and all(result.cached for result in again)
    assert [r.completion for r in again] == [r.completion for r in first]
    assert again[0].completion.search["calls"] == 2
    written = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert KEY.encode() not in written and PAGES[0].url.encode() in written


def test_the_engine_is_registered_with_a_batch_api_and_no_search_by_default():
    engine = ENGINES["anthropic"]
    assert (engine.batch_api, engine.search_default, engine.local) == (True, "none", False)
    backend = make_backend("anthropic:claude-sonnet-5-5", base_url="http://127.0.0.1:9", api_key=KEY)
    assert (backend.searches, backend.takes_tools) == (True, False)


# -- as a system and as a judge, end to end ----------------------------------------------------------------


def test_a_claude_system_with_native_search_and_a_claude_judge_run_from_the_command_line(server, synthetic_hub, tmp_path):
    from bespoke_cli.cli import main

    server.served["claude-sonnet-5-5"] = "claude-sonnet-5-5-20261015"
    server.reset()
    args = ["run", "--model", "anthropic:claude-sonnet-5-5", "--search", "native", "--search-max-uses", "2",
            "--search-location", "country=KR", "--model-base-url", server.root_url, "--model-api-key", KEY,
            "--judge", "anthropic:claude-haiku-5-5", "--base-url", server.root_url, "--api-key", KEY,
            "--cache", str(tmp_path / "judge.sqlite"), "--source", str(synthetic_hub), "--limit", "2",
            "--output", str(tmp_path / "results.json")]
    assert main(args) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    made = [json.loads(line) for line in (tmp_path / "results" / "predictions.jsonl").read_text().splitlines()]
    assert results["summary"]["items"] == 2 and not any(results["summary"]["failures"].values())
    for prediction, item in zip(made, results["items"], strict=True):
        assert prediction["search"]["engine"] == "native" and prediction["search"]["calls"] == 2
        assert prediction["search"]["cited"] and prediction["search"]["cited"][0] in [r["url"] for r in prediction["search"]["results"]]
        assert item["search"] == prediction["search"]
    searching = [call for call in server.calls if call.body.get("model") == "claude-sonnet-5-5"]
    judging = [call for call in server.calls if call.body.get("model") == "claude-haiku-5-5"]
    assert searching and all(call.body["tools"] == [{"type": "web_search_20250305", "name": "web_search", "max_uses": 2,
                                                     "user_location": {"type": "approximate", "country": "KR"}}]
                             for call in searching)
    assert judging and all("tools" not in call.body and call.body["max_tokens"] > 0 for call in judging)
    assert results["system"]["served_models"] == {"claude-sonnet-5-5-20261015": 2}
    system_use = results["usage"]["models"]["anthropic:claude-sonnet-5-5"]
    assert system_use["web_searches"] == 4  # two searches per answer, priced per 1,000 beside the tokens
    price = system_use["price"]
    assert price["web_search"] == 10.0 and price["source"].startswith("genai-prices")
    tokens = ((system_use["input_tokens"] - system_use["cached_input_tokens"]) * price["input"]
              + system_use["cached_input_tokens"] * price["cached_input"] + system_use["output_tokens"] * price["output"]) / 1e6
    assert system_use["cost"] == pytest.approx(tokens + 4 * 10.0 / 1000, abs=1e-6)
    assert results["usage"]["models"]["anthropic:claude-haiku-5-5"]["roles"] == ["judge"]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.slow
def test_the_command_line_says_a_retired_claude_in_one_line_and_writes_nothing(synthetic_hub, tmp_path):
    """In a `bespoke` process of its own, as a user runs it."""
    import subprocess
    import sys

    import bespoke_dataset

    rows = list(bespoke_dataset.load("benchmark", source=synthetic_hub))[:3]
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps({"user": r["user"], "query_id": r["query_id"], "response": "An answer."}) + "\n"
                                   for r in rows))
    with serve_anthropic(retired=("claude-3-opus-20240229",)) as retiring:
        done = subprocess.run([sys.executable, "-m", "bespoke_cli.cli", "score", "--predictions", str(predictions), "--judge",
                               "anthropic:claude-3-opus-20240229", "--base-url", retiring.root_url, "--api-key", KEY,
                               "--no-guards", "--source", str(synthetic_hub), "--output", str(tmp_path / "results.json")],
                              capture_output=True, text=True, timeout=600, env={**os.environ, "HF_DATASETS_OFFLINE": "1"})
    [line] = own_lines(done.stderr)
    assert done.returncode == 1, done.stderr
    assert line.startswith("error: the model 'anthropic:claude-3-opus-20240229' is not served: model: claude-3-opus-20240229 "
                           "(it may be retired; docs/choosing-a-judge.md compares successors against the human labels)")
    assert KEY not in done.stderr + done.stdout
    assert sorted(path.name for path in tmp_path.iterdir()) == ["preds.jsonl"]


def test_generate_with_a_retired_claude_leaves_nothing_behind(synthetic_hub, tmp_path, capsys):
    from bespoke_cli.cli import main

    output = tmp_path / "p.jsonl"
    with serve_anthropic(retired=("claude-3-opus-20240229",)) as retiring:
        code = main(["generate", "--model", "anthropic:claude-3-opus-20240229", "--search", "native", "--base-url",
                     retiring.root_url, "--api-key", KEY, "--source", str(synthetic_hub), "--limit", "2", "--output", str(output)])
    [line] = own_lines(capsys.readouterr().err)
    assert code == 1 and line.startswith("error: the model 'anthropic:claude-3-opus-20240229' is not served")
    assert not output.exists() and not (tmp_path / "p.run.json").exists()


# -- a structured Claude judge (issue 43) --------------------------------------------------------------------


def score_with_claude(server, model: str, tmp_path, *flags: str) -> dict:
    """`bespoke score --structured` of the sample with `anthropic:MODEL` against `server`: the results file."""
    import bespoke_dataset
    from bespoke_cli.cli import main

    rows = list(bespoke_dataset.load("benchmark", source="sample"))[:2]
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps({"user": r["user"], "query_id": r["query_id"],
                                               "response": "A thorough answer, step by step."}) + "\n" for r in rows))
    output = tmp_path / f"{model}.json"
    code = main(["score", "--predictions", str(predictions), "--judge", f"anthropic:{model}", "--structured",
                 "--base-url", server.root_url, "--api-key", KEY, "--source", "sample", "--no-guards",
                 "--output", str(output), *flags])
    assert code == 0
    return json.loads(output.read_text())


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-sonnet-5-5"])
def test_a_structured_claude_judge_scores_with_structured_outputs_and_no_forced_tool(server, tmp_path, model):
    server.reset()
    results = score_with_claude(server, model, tmp_path)
    bodies = [call.body for call in server.calls]
    assert bodies and all(body["output_config"]["format"]["type"] == "json_schema" for body in bodies)
    assert not any("tool_choice" in body or "tools" in body for body in bodies)
    assert server.refused == []  # nothing Opus 5.5 refuses (a forced tool, thinking off) was sent
    # the judgments at the official evaluator's effort, the recall checks at the model's own
    efforts = {("claim" if "# Claim" in body["messages"][-1]["content"] else "judgment", body["output_config"].get("effort"))
               for body in bodies}
    assert efforts == {("judgment", "high"), ("claim", None)}
    judge = results["judge"]
    assert (judge["structured"], judge["constraint"], judge["recall_effort"]) == (True, "json-schema", None)
    assert judge["settings"]["reasoning_effort"] == "high"
    assert all(item["scores"]["need_alignment"] is not None and item["recall"] is not None for item in results["items"])


def test_a_claude_that_can_do_neither_judges_in_the_papers_lines_and_records_it(server, tmp_path):
    server.reset()
    results = score_with_claude(server, "claude-2.1", tmp_path)
    bodies = [call.body for call in server.calls]
    assert bodies and not any({"tools", "tool_choice", "output_config"} & body.keys() for body in bodies)
    assert not any('"need_alignment"' in body["messages"][-1]["content"] for body in bodies)  # lines asked, no schema
    judge = results["judge"]
    assert (judge["structured"], judge["constraint"]) == (False, "lines")
    assert all(item["scores"]["need_alignment"] is not None for item in results["items"])


def test_a_claude_judges_recall_checks_go_at_the_recall_effort_given(server):
    """A Claude judge's judgments go at `high` where the model takes an effort; `recall_reasoning_effort` sets the
    recall checks' `output_config.effort` alone, beside the format."""
    import bespoke_dataset
    from bespoke_metric.judging.factory import make_judge
    from bespoke_metric.scoring.pipeline import score

    server.reset()
    rows = list(bespoke_dataset.load("benchmark", source="sample"))[:1]
    judge = make_judge("anthropic:claude-opus-5-5", base_url=server.root_url, api_key=KEY, progress=False, structured=True,
                       recall_reasoning_effort="low")
    try:
        results = score([{"user": r["user"], "query_id": r["query_id"], "response": "An answer."} for r in rows], judge,
                        source="sample", guards=False)
    finally:
        judge.close()
    efforts = {("claim" if "# Claim" in call.body["messages"][-1]["content"] else "judgment",
                call.body["output_config"].get("effort")) for call in server.calls}
    assert efforts == {("judgment", "high"), ("claim", "low")} and server.refused == []
    assert results.judge["recall_effort"] == "low"


def test_a_claude_without_efforts_judges_with_none_and_refuses_a_recall_effort_before_any_call(server, tmp_path):
    server.reset()
    results = score_with_claude(server, "claude-sonnet-4-5", tmp_path)
    assert server.calls and not any("effort" in call.body.get("output_config", {}) for call in server.calls)
    assert "reasoning_effort" not in results["judge"]["settings"] and results["judge"]["recall_effort"] is None
    import bespoke_dataset
    from bespoke_metric.judging.factory import make_judge
    from bespoke_metric.scoring.pipeline import score

    server.reset()
    row = next(iter(bespoke_dataset.load("benchmark", source="sample")))
    judge = make_judge("anthropic:claude-sonnet-4-5", base_url=server.root_url, api_key=KEY, progress=False,
                       recall_reasoning_effort="low")
    try:
        with pytest.raises(UserError, match=r"^anthropic:claude-sonnet-4-5 \(Claude Sonnet and Haiku 4.5\) takes no "
                                            r"--recall-reasoning-effort, not 'low'"):
            score([{"user": row["user"], "query_id": row["query_id"], "response": "An answer."}], judge, source="sample",
                  guards=False)
    finally:
        judge.close()
    assert server.calls == []


def test_the_effort_given_to_a_claude_judge_is_its_judgments_and_the_model_default_stays_for_a_system(server, tmp_path):
    server.reset()
    results = score_with_claude(server, "claude-opus-5-5", tmp_path, "--reasoning-effort", "medium")
    assert {call.body["output_config"].get("effort") for call in server.calls} == {"medium", None}
    assert results["judge"]["settings"]["reasoning_effort"] == "medium"
    complete(claude(server, "claude-opus-5-5"), [ask()])  # a system model: the model's own default effort
    assert "output_config" not in server.calls[-1].body


@pytest.mark.parametrize("model, held, thinks", [
    ("claude-opus-5-5", "format", True), ("claude-opus-5-5-20260922", "format", True), ("claude-sonnet-5-5", "format", False),
    ("claude-haiku-4-5", "format", False), ("claude-opus-4-7", "format", False), ("claude-fable-5-2", "format", False),
    ("claude-opus-4-1", "format", False), ("anthropic/claude-sonnet-4-5", "format", False),
    ("claude-3-5-sonnet-20241022", "tool", False), ("claude-sonnet-4-20250514", "tool", False), ("claude-opus-4-0", "tool", False),
    ("claude-2.1", "lines", False), ("claude-instant-1.2", "lines", False), ("claude-next-7", "format", False),
])
def test_the_catalogue_says_how_each_claude_is_held_to_a_schema(model, held, thinks):
    from bespoke_metric.backends.providers.anthropic_models import ClaudeFamily, claude_family

    family = claude_family(model)
    assert (family.held(), family.always_thinks) == (held, thinks)
    # a family that always thinks is never sent a forced tool, whatever else it takes
    assert ClaudeFamily("t", "t", structured_outputs=False, always_thinks=True).held() == "lines"


def test_claude_and_perplexity_share_the_api_backend_not_openais_class(server):
    from bespoke_metric.backends.providers.anthropic import AnthropicBackend
    from bespoke_metric.backends.providers.api_backend import APIBackend
    from bespoke_metric.backends.providers.openai_backend import OpenAIBackend
    from bespoke_metric.backends.providers.perplexity import PerplexityBackend

    for backend in (AnthropicBackend, PerplexityBackend):
        assert issubclass(backend, APIBackend) and not issubclass(backend, OpenAIBackend)
    identity = claude(server, reasoning_effort="low", search_max_uses=2).identity()
    assert identity == {"engine": "anthropic", "model": "claude-sonnet-5-5", "base_url": server.root_url, "api": "messages",
                        "settings": {"schema_format": True, "reasoning_effort": "low", "web_search": {"max_uses": 2}}}
