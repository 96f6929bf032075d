"""OpenAI as it is on 2026-12-01, over real HTTP against the test server on 127.0.0.1: the token parameter
per model family, reasoning effort as an option, exact search records of the Responses API, refusals named,
the model that served every call, and retired models and shutdown dates (issues 24 and 25); GPT-6.x as
OpenAI serves it, against a server as strict as OpenAI's API (issue 32).

The bodies are in OpenAI's documented shapes, each fixture citing where its shape comes from."""

from __future__ import annotations

import datetime
import json
import os
import warnings

import pytest
from backend_outcomes import complete
from output_lines import own_lines

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import CallError, ModelUnavailableError, Request, backend_description
from bespoke_metric.backends.providers.openai_backend import _chat_completion, _responses_completion, token_parameter
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.backends.retirement import ModelNotice
from bespoke_metric.testing.server import Fault

KEY = "sk-test-SECRET-today-5c2e81f0"


def ask(text: str = "hiking near Seoul", **kwargs) -> Request:
    return Request(messages=({"role": "user", "content": text},), **kwargs)


def backend_for(server, model: str, **options):
    return make_backend(f"openai:{model}", base_url=server.base_url, api_key=KEY, backoff_base=0.01, **options)


# -- the token parameter ---------------------------------------------------------------------------------


@pytest.mark.parametrize("model, path, name", [
    ("gpt-5", "/chat/completions", "max_completion_tokens"),
    ("gpt-5-chat-latest", "/chat/completions", "max_completion_tokens"),  # GPT-5 family, not a reasoning model
    ("gpt-5-search-api", "/chat/completions", "max_completion_tokens"),
    ("gpt-5.1-mini", "/chat/completions", "max_completion_tokens"),
    ("o3", "/chat/completions", "max_completion_tokens"),
    ("o4-mini", "/chat/completions", "max_completion_tokens"),
    ("gpt-4.1", "/chat/completions", "max_tokens"),
    ("gpt-4o-search-preview", "/chat/completions", "max_tokens"),
    ("Qwen/Qwen3-8B", "/chat/completions", "max_tokens"),  # another server reads max_tokens
    ("gpt-5", "/responses", "max_output_tokens"),
    ("gpt-4.1", "/responses", "max_output_tokens"),
    ("gpt-6.2-astra", "/chat/completions", "max_completion_tokens"),
    ("gpt-6-luna", "/chat/completions", "max_completion_tokens"),
    ("openai/gpt-6.1-terra", "/chat/completions", "max_completion_tokens"),
])
def test_the_token_parameter_follows_the_model_family_and_the_endpoint(model, path, name):
    assert token_parameter(model, path) == name


def test_gpt5_chat_models_are_sent_max_completion_tokens(openai_server):
    # gpt-5-chat-latest answers `max_tokens` with a 400 ("Unsupported parameter: 'max_tokens' ... Use
    # 'max_completion_tokens' instead."), as every GPT-5 model does on chat completions
    for model in ("gpt-5-chat-latest", "gpt-5-search-api"):
        complete(backend_for(openai_server, model), [ask(max_tokens=64)])
        body = openai_server.calls[-1].body
        assert openai_server.calls[-1].path == "/v1/chat/completions"
        assert body["max_completion_tokens"] == 64 and "max_tokens" not in body


# -- reasoning effort --------------------------------------------------------------------------------------


def test_reasoning_effort_is_an_option_sent_as_each_api_takes_it(openai_server):
    complete(backend_for(openai_server, "gpt-5", reasoning_effort="minimal"), [ask()])
    assert openai_server.calls[-1].body["reasoning"] == {"effort": "minimal"}
    complete(backend_for(openai_server, "o3", api="chat", reasoning_effort="low"), [ask()])
    assert openai_server.calls[-1].body["reasoning_effort"] == "low"
    assert backend_for(openai_server, "gpt-5", reasoning_effort="low").identity()["settings"]["reasoning_effort"] == "low"
    with pytest.raises(UserError, match="--reasoning-effort must be one of"):
        backend_for(openai_server, "gpt-5", reasoning_effort="extreme")


def test_the_command_line_takes_reasoning_effort_for_the_system_model(openai_server, synthetic_hub, tmp_path):
    from bespoke_cli.cli import main

    output = tmp_path / "predictions.jsonl"
    code = main(["generate", "--model", "openai:gpt-5", "--base-url", openai_server.base_url, "--api-key", KEY,
                 "--reasoning-effort", "medium", "--source", str(synthetic_hub), "--limit", "2", "--output", str(output)])
    assert code == 0
    efforts = {call.body["reasoning"]["effort"] for call in openai_server.calls}
    assert efforts == {"medium"}


# -- the Responses API's search record ---------------------------------------------------------------------

# `web_search_call` items as openai-python types them (src/openai/types/responses/response_function_web_search.py:
# ResponseFunctionWebSearch {id, status: in_progress|searching|completed|failed|incomplete, action}, ActionSearch
# {query, queries, sources: [{type: "url", url}]}, ActionOpenPage {url}, ActionFind {url, pattern}). A source
# may be a real-time feed rather than a page: `{"type": "api", "name": "oai-weather"}` (OpenAI's web search
# guide lists oai-sports, oai-weather and oai-finance; clients in the wild branch on `type == "api"`).
SEARCHED = {
    "id": "resp_67ccd3a9", "object": "response", "model": "gpt-5-2025-08-07", "status": "completed",
    "service_tier": "default",
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
         "action": {"type": "search", "query": "seoul weather saturday",
                    "sources": [{"type": "url", "url": "https://weather.example/seoul"},
                                {"type": "api", "name": "oai-weather"}]}},
        {"type": "web_search_call", "id": "ws_2", "status": "completed",  # the same string searched again
         "action": {"type": "search", "query": "seoul weather saturday",
                    "sources": [{"type": "url", "url": "https://weather.example/seoul"}]}},
        {"type": "web_search_call", "id": "ws_3", "status": "failed", "action": {"type": "search", "query": "bukhansan closures"}},
        {"type": "web_search_call", "id": "ws_4", "status": "completed",
         "action": {"type": "open_page", "url": "https://trails.example/bukhansan"}},
        {"type": "web_search_call", "id": "ws_5", "status": "completed",
         "action": {"type": "find_in_page", "url": "https://trails.example/bukhansan", "pattern": "closed"}},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [
            {"type": "output_text", "text": "Saturday is dry; Bukhansan is open.", "annotations": [
                {"type": "url_citation", "url": "https://weather.example/seoul", "title": "Seoul weather",
                 "start_index": 0, "end_index": 18}]}]},
    ],
    "usage": {"input_tokens": 40, "output_tokens": 12, "total_tokens": 52},
}


def test_searches_are_counted_as_searches_with_failures_opened_pages_and_api_sources():
    completion = _responses_completion(SEARCHED)
    assert completion.search == {
        "queries": ["seoul weather saturday", "seoul weather saturday", "bukhansan closures"],
        "results": [{"url": "https://weather.example/seoul", "title": "Seoul weather"},
                    {"url": "", "title": "", "type": "api", "name": "oai-weather"}],  # kept, by name
        "cited": ["https://weather.example/seoul"],
        "calls": 3,  # three searches, two of one string
        "failed": 1,
        "failures": ["the web_search_call ws_3 (search 'bukhansan closures') failed"],
        "opened": ["https://trails.example/bukhansan"],  # opened, then searched in: once
    }
    assert (completion.served_model, completion.service_tier) == ("gpt-5-2025-08-07", "default")


def test_the_search_record_comes_over_http_and_through_the_cache(openai_server, tmp_path):
    from bespoke_metric.calls.cache import Cache
    from bespoke_metric.calls.scheduler import run_requests_sync

    openai_server.responder = lambda body: SEARCHED
    backend = backend_for(openai_server, "gpt-5")
    with Cache(tmp_path / "c.sqlite") as cache:
        (first,) = run_requests_sync(backend, [ask(native_search=True)], cache=cache)
        (again,) = run_requests_sync(backend, [ask(native_search=True)], cache=cache)
    assert again.cached and again.completion.search == first.completion.search == _responses_completion(SEARCHED).search
    assert again.completion.served_model == "gpt-5-2025-08-07"
    assert len(openai_server.calls) == 1


def test_a_citation_inside_a_reasoning_block_is_not_cited():
    # a chat answer from a server that leaves the model's reasoning in `content` (a vllm serve of a
    # reasoning model), with `message.annotations[].url_citation` (openai-python
    # types/chat/chat_completion_message.py: AnnotationURLCitation {url, title, start_index, end_index})
    text = "<think>\nMaybe https://old.example says so.\n</think>\nThe trail opens at six."
    body = {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-search-preview",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text, "annotations": [
                {"type": "url_citation", "url_citation": {"url": "https://old.example", "title": "Old",
                                                          "start_index": text.index("https://old"), "end_index": text.index(" says")}},
                {"type": "url_citation", "url_citation": {"url": "https://trails.example", "title": "Trails",
                                                          "start_index": text.index("The trail"), "end_index": len(text)}}]}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 9}}
    search = _chat_completion(body).search
    assert search["cited"] == ["https://trails.example"]
    assert [result["url"] for result in search["results"]] == ["https://old.example", "https://trails.example"]
    # an answer whose reasoning never closed has no answer, so nothing cited
    open_body = json.loads(json.dumps(body))
    open_body["choices"][0]["message"]["content"] = "<think>\nMaybe https://old.example says so."
    assert _chat_completion(open_body).search["cited"] == []


# -- refusals --------------------------------------------------------------------------------------------

# openai-python types/responses/response_output_refusal.py: {"type": "refusal", "refusal": str} in a message's
# content; types/chat/chat_completion_message.py: `refusal: Optional[str]` with `content: null`.
REFUSED_RESPONSE = {"id": "resp_2", "object": "response", "model": "gpt-5-2025-08-07", "status": "completed", "output": [
    {"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
     "content": [{"type": "refusal", "refusal": "I can't help with that request."}]}],
    "usage": {"input_tokens": 9, "output_tokens": 7}}
REFUSED_CHAT = {"id": "chatcmpl-2", "object": "chat.completion", "model": "gpt-4.1-2025-04-14",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": None, "refusal": "I can't help with that request."}}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 7}}


@pytest.mark.parametrize("model, body", [("gpt-5", REFUSED_RESPONSE), ("gpt-4.1", REFUSED_CHAT)])
def test_a_refusal_fails_naming_it_without_a_retry(openai_server, model, body):
    openai_server.responder = lambda request_body: body
    (refused,) = complete(backend_for(openai_server, model), [ask()])
    assert refused == CallError(f"openai:{model} refused to answer: I can't help with that request.", retryable=False)
    assert len(openai_server.calls) == 1


def test_a_response_that_failed_is_named_not_read_as_an_empty_answer(openai_server):
    # Response.status "failed" with `error: ResponseError {code, message}` (openai-python types/responses/response.py)
    openai_server.responder = lambda body: {"id": "resp_3", "object": "response", "model": "gpt-5-2025-08-07", "status": "failed",
                                            "error": {"code": "server_error", "message": "The model failed to generate a response."},
                                            "output": [], "usage": None}
    (failed,) = complete(backend_for(openai_server, "gpt-5"), [ask()])
    assert failed == CallError("openai:gpt-5 answered with status failed (server_error: The model failed to generate a response.)",
                               retryable=False)


def test_generate_names_a_refusal_not_an_empty_answer(openai_server, synthetic_hub, tmp_path, capsys):
    from bespoke_cli.cli import main

    openai_server.responder = lambda body: REFUSED_CHAT
    code = main(["generate", "--model", "openai:gpt-4.1", "--base-url", openai_server.base_url, "--api-key", KEY,
                 "--source", str(synthetic_hub), "--limit", "2", "--output", str(tmp_path / "p.jsonl")])
    out = capsys.readouterr().out
    assert code == 1
    assert "refused to answer: I can't help with that request." in out and "empty answer" not in out


# -- the model that served ----------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["gpt-4.1", "gpt-5"])  # chat completions; Responses API
def test_every_call_records_the_model_that_served_it(openai_server, model):
    # ChatCompletion and Response carry `model`, `service_tier` and (chat) `system_fingerprint`
    # (openai-python types/chat/chat_completion.py, types/responses/response.py)
    openai_server.answer_fields = {"model": f"{model}-2025-08-07", "system_fingerprint": "fp_f33640a400", "service_tier": "flex"}
    (completion,) = complete(backend_for(openai_server, model), [ask()])
    assert (completion.served_model, completion.system_fingerprint, completion.service_tier) == (
        f"{model}-2025-08-07", "fp_f33640a400", "flex")


# -- retired models and shutdown dates ---------------------------------------------------------------------

# OpenAI's answer for a model it no longer serves (a 404 whose error has `code: "model_not_found"`; the
# message as OpenAI's deprecations notices word it)
DEPRECATED = {"error": {"message": "The model `gpt-4-32k` has been deprecated, learn more here: "
                                   "https://platform.openai.com/docs/deprecations", "type": "invalid_request_error",
                        "param": None, "code": "model_not_found"}}


def test_a_retired_model_stops_the_run_naming_the_model_and_the_providers_words(openai_server):
    openai_server.rule = lambda record: Fault(status=404, body=DEPRECATED)
    with pytest.raises(ModelUnavailableError) as raised:
        complete(backend_for(openai_server, "gpt-4-32k"), [ask("one"), ask("two")])
    assert raised.value.model == "openai:gpt-4-32k"
    assert "has been deprecated" in raised.value.provider_words
    assert "\n" not in str(raised.value) and KEY not in str(raised.value)
    assert len(openai_server.calls) <= 2  # not retried


def test_the_providers_words_never_carry_the_key(openai_server):
    echoed = {"error": {"message": f"The model `gpt-x` does not exist (key {KEY})", "code": "model_not_found"}}
    openai_server.rule = lambda record: Fault(status=404, body=echoed)
    with pytest.raises(ModelUnavailableError) as raised:
        complete(backend_for(openai_server, "gpt-x"), [ask()])
    assert KEY not in str(raised.value) and "does not exist" in str(raised.value)


def test_a_404_that_is_not_about_the_model_stays_one_failed_call(openai_server):
    openai_server.faults.append(Fault(status=404, body={"error": {"message": "no route /v1/chat/completions", "type": "not_found"}}))
    (outcome,) = complete(backend_for(openai_server, "test-model"), [ask()])
    assert isinstance(outcome, CallError) and "NotFoundError: Error code: 404 - no route" in outcome.reason


@pytest.mark.slow
def test_the_command_line_says_a_retired_judge_in_one_line_and_writes_nothing(openai_server, synthetic_hub, tmp_path):
    """In a `bespoke` process of its own, as a user runs it: what the test process's earlier tests left behind
    (threads printing, warning filters) is not what the command prints."""
    import subprocess
    import sys

    import bespoke_dataset

    openai_server.rule = lambda record: Fault(status=404, body=DEPRECATED)
    rows = bespoke_dataset.load("benchmark", source=synthetic_hub)
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps({"user": row["user"], "query_id": row["query_id"], "response": "An answer."}) + "\n"
                                   for row in list(rows)[:3]))
    done = subprocess.run([sys.executable, "-m", "bespoke_cli.cli", "score", "--predictions", str(predictions), "--judge",
                           "openai:gpt-4-32k", "--base-url", openai_server.base_url, "--api-key", KEY, "--no-guards",
                           "--source", str(synthetic_hub), "--output", str(tmp_path / "results.json")],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "HF_DATASETS_OFFLINE": "1"})
    [line] = own_lines(done.stderr)  # a library's bar (datasets on a cold cache) is not a line of ours
    assert done.returncode == 1, done.stderr
    assert line.startswith("error: the model 'openai:gpt-4-32k' is not served: The model `gpt-4-32k` has been deprecated")
    assert KEY not in done.stderr + done.stdout
    assert not (tmp_path / "results.json").exists()


def test_generate_with_a_retired_model_leaves_nothing_to_resume(openai_server, synthetic_hub, tmp_path, capsys):
    from bespoke_cli.cli import main

    openai_server.rule = lambda record: Fault(status=404, body=DEPRECATED)
    output = tmp_path / "p.jsonl"
    args = ["generate", "--base-url", openai_server.base_url, "--api-key", KEY, "--source", str(synthetic_hub),
            "--limit", "2", "--output", str(output)]
    assert main([*args, "--model", "openai:gpt-4-32k"]) == 1
    [line] = own_lines(capsys.readouterr().err)
    assert line.startswith("error: the model 'openai:gpt-4-32k' is not served")
    assert not output.exists() and not (tmp_path / "p.run.json").exists()
    # the same --output then takes the successor, not refused as a run of other settings
    openai_server.rule = None
    assert main([*args, "--model", "openai:gpt-4.1"]) == 0
    assert len(output.read_text().splitlines()) == 2


def test_a_published_shutdown_date_is_recorded_and_a_near_one_noticed_once(openai_server):
    soon = (datetime.date.today() + datetime.timedelta(days=10)).isoformat()
    openai_server.shutdown_dates = {"gpt-5": soon, "gpt-4o": "2099-01-14"}
    backend = backend_for(openai_server, "gpt-5", shutdown_lookup=True)
    with pytest.warns(ModelNotice, match=f"openai:gpt-5 shuts down on {soon} \\(in 10 days"):
        described = backend_description(backend)
    assert described == {**backend.identity(), "shutdown_date": soon}  # beside the identity, not in it
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # looked up once: no second call, no second notice
        assert backend.describe()["shutdown_date"] == soon
        far = backend_for(openai_server, "gpt-4o", shutdown_lookup=True).describe()
    assert far["shutdown_date"] == "2099-01-14"
    lookups = [r for r in openai_server.requests if r.method == "GET"]
    assert [r.path for r in lookups] == ["/v1/models/gpt-5", "/v1/models/gpt-4o"]
    assert all({k.lower(): v for k, v in r.headers.items()}["authorization"] == f"Bearer {KEY}" for r in lookups)


def test_a_failed_shutdown_lookup_is_silent(openai_server):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        unknown = backend_for(openai_server, "gpt-unknown-model", shutdown_lookup=True).describe()  # a 404
        gone = make_backend("openai:gpt-4.1-mini", base_url="http://127.0.0.1:9/v1", api_key=KEY, shutdown_lookup=True).describe()
    assert "shutdown_date" not in unknown and "shutdown_date" not in gone
    assert "shutdown_date" not in backend_for(openai_server, "test-model").describe()  # not OpenAI's API: not asked
    assert not [r for r in openai_server.requests if r.path.endswith("/models/test-model")]


@pytest.mark.parametrize("model, date", [("gpt-5", "2026-12-11"), ("o3-2025-04-16", "2026-12-11"), ("gpt-4o", "2027-01-14"),
                                         ("gpt-4.1", "2027-01-14"), ("o4-mini", "2026-10-23")])
def test_where_the_api_publishes_no_date_the_announced_one_is_recorded_and_noticed(model, date):
    from bespoke_metric.backends.providers.openai_backend import _shutdown_dates

    # an endpoint that answers no look-up (nothing listens on port 9): the date comes from OpenAI's deprecations page
    backend = make_backend(f"openai:{model}", base_url="http://127.0.0.1:9/v1", api_key=KEY, shutdown_lookup=True)
    _shutdown_dates.pop((backend.base_url, model), None)
    days = (datetime.date.fromisoformat(date) - datetime.date.today()).days
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert backend.describe()["shutdown_date"] == date
    notices = [str(w.message) for w in caught if issubclass(w.category, ModelNotice)]
    if days <= 90:
        assert notices == [f"openai:{model} shuts down on {date} ({'today' if days == 0 else f'in {days} days' if days > 0 else f'{-days} days ago'}, "
                           "as OpenAI's deprecations page (platform.openai.com/docs/deprecations, as read 2026-12-01)"
                           + ("; OpenAI's e-mail to users says 2026-12-10" if date == "2026-12-11" else "")
                           + " says); docs/choosing-a-judge.md compares successors against the human labels"]
    else:
        assert notices == []
    assert "shutdown_date" not in make_backend("openai:gpt-6.2-astra", base_url="http://127.0.0.1:9/v1", api_key=KEY,
                                               shutdown_lookup=True).describe()  # none announced


def test_the_command_line_prints_a_notice_line():
    from bespoke_cli.cli import _format_warning

    assert _format_warning(ModelNotice("openai:gpt-5 shuts down on 2026-12-11"), ModelNotice, "x.py", 1) == (
        "notice: openai:gpt-5 shuts down on 2026-12-11\n")


# -- GPT-6.x (issue 32), against a server as strict as OpenAI's API -------------------------------------------

GPT6 = ("gpt-6.2-astra", "gpt-6.2-sol", "gpt-6.1-terra", "gpt-6-luna")


@pytest.fixture(scope="module")
def strict_openai():
    from fakes.provider_servers import serve_strict

    with serve_strict() as server:
        yield server


def strict_backend(server, model: str, **options):
    return make_backend(f"openai:{model}", base_url=server.base_url, api_key=KEY, backoff_base=0.01, max_retries=0, **options)


@pytest.mark.parametrize("model", GPT6)
def test_every_gpt6_model_searches_on_the_responses_api_with_nothing_refused(strict_openai, model):
    strict_openai.reset()
    backend = strict_backend(strict_openai, model, search_context_size="high", search_domains="trails.example",
                             search_external_web_access=False)
    (searched, plain, tooled) = complete(backend, [ask(native_search=True, max_tokens=64), ask(max_tokens=64),
                                                   ask(tools=(SEARCH_TOOL,))])
    assert [call.path for call in strict_openai.calls] == ["/v1/responses"] * 3
    assert strict_openai.refused == []
    # the three calls run at once: the searched one is the one whose tool is web search, whichever came first
    [body] = [call.body for call in strict_openai.calls if any(tool.get("type") == "web_search" for tool in call.body.get("tools", ()))]
    assert body["tools"] == [{"type": "web_search", "search_context_size": "high",
                              "filters": {"allowed_domains": ["trails.example"]}, "external_web_access": False}]
    assert body["reasoning"] == {"effort": "high"} and not {"temperature", "top_p", "max_output_tokens"} & body.keys()
    assert searched.search["calls"] == 1 and searched.search["queries"] == ["hiking near Seoul"]
    assert plain.text == "answer to hiking near Seoul" and tooled.tool_calls[0].name == "search"
    assert backend.identity()["settings"]["web_search"]["external_web_access"] is False


SEARCH_TOOL = {"type": "function", "function": {"name": "search", "description": "search the web",
                                                "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}


def test_the_strict_server_refuses_what_openai_refuses_so_the_tests_above_mean_something(strict_openai):
    import urllib.error
    import urllib.request

    def post(path: str, body: dict) -> str:
        request = urllib.request.Request(strict_openai.base_url + path, json.dumps(body).encode(), {"content-type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(request, timeout=30)
        assert raised.value.code == 400
        return json.loads(raised.value.read())["error"]["message"]

    user = [{"role": "user", "content": "hi"}]
    assert "web search" in post("/chat/completions", {"model": "gpt-6.1-terra", "messages": user, "web_search_options": {}})
    assert "'none'" in post("/responses", {"model": "gpt-6.2-sol", "input": user, "reasoning": {"effort": "none"}})
    assert "'temperature'" in post("/responses", {"model": "gpt-6-luna", "input": user, "temperature": 0})
    assert "max_completion_tokens" in post("/chat/completions", {"model": "gpt-6-luna", "messages": user, "max_tokens": 9})
    assert "external_web_access" not in post("/responses", {"model": "gpt-6-luna", "input": user, "tools": [
        {"type": "web_search", "external_web_access": False, "maximum_results": 3}]})  # refused for the other field


def test_gpt6_on_chat_completions_takes_no_tools_and_is_refused_before_any_call(strict_openai):
    strict_openai.reset()
    backend = strict_backend(strict_openai, "gpt-6.2-astra", api="chat")
    with pytest.raises(UserError, match=r"^openai:gpt-6.2-astra \(GPT-6.2 and later\) calls tools, web search included, only "
                                        r"through the Responses API"):
        complete(backend, [ask(), ask(native_search=True)])
    assert strict_openai.calls == []
    # without tools chat completions serve it, with the cap it takes
    (plain,) = complete(backend, [ask(max_tokens=32)])
    assert strict_openai.calls[-1].path == "/v1/chat/completions" and strict_openai.refused == []
    # gpt-6-luna (GPT-6.0) still calls tools on chat completions
    complete(strict_backend(strict_openai, "gpt-6-luna", api="chat"), [ask(tools=(SEARCH_TOOL,))])
    assert strict_openai.calls[-1].path == "/v1/chat/completions" and strict_openai.refused == []


@pytest.mark.parametrize("model, options, words", [
    ("gpt-6.2-astra", {"reasoning_effort": "none"}, "takes --reasoning-effort low, medium, high, xhigh, max, not 'none'"),
    ("gpt-6.2-sol", {"reasoning_effort": "minimal"}, "not 'minimal'"),
    ("gpt-5", {"reasoning_effort": "xhigh"}, r"\(GPT-5\) takes --reasoning-effort minimal, low, medium, high, not 'xhigh'"),
    ("o3", {"reasoning_effort": "none"}, r"\(o-series\) takes --reasoning-effort low, medium, high"),
    ("gpt-6.1-terra", {"temperature": 0.0}, "takes temperature, top_p, logprobs only at --reasoning-effort none, not at 'high'"),
    ("gpt-6.2-astra", {"temperature": 0.0}, "takes no temperature, top_p, logprobs: they need reasoning effort none"),
    ("gpt-5", {"temperature": 0.0}, "is a reasoning model"),
    ("gpt-6.1-sol", {"reasoning_effort": "none"}, r"\(GPT-6.1 Sol\) takes --reasoning-effort low, medium, high, xhigh, max, not 'none'"),
    ("gpt-6.1-sol", {"reasoning_effort": "minimal"}, "not 'minimal'"),
    ("gpt-6.1-sol", {"temperature": 0.0}, "takes no temperature, top_p, logprobs: they need reasoning effort none"),
])
def test_what_a_model_family_refuses_is_one_user_error_before_any_call(strict_openai, model, options, words):
    strict_openai.reset()
    with pytest.raises(UserError, match=words):
        strict_backend(strict_openai, model, **options)
    assert strict_openai.calls == []


@pytest.mark.parametrize("model", ["gpt-6.1-terra", "gpt-6-luna"])
def test_temperature_is_sent_to_gpt6_at_effort_none_and_the_api_takes_it(strict_openai, model):
    strict_openai.reset()
    complete(strict_backend(strict_openai, model, reasoning_effort="none", temperature=0.0), [ask(native_search=True)])
    body = strict_openai.calls[-1].body
    assert (body["reasoning"], body["temperature"]) == ({"effort": "none"}, 0.0)
    assert strict_openai.refused == []


def test_a_gpt62_system_with_native_search_runs_from_the_command_line(strict_openai, synthetic_hub, tmp_path):
    from bespoke_cli.cli import main

    strict_openai.reset()
    output = tmp_path / "gpt-6.2.jsonl"
    code = main(["generate", "--model", "openai:gpt-6.2-astra", "--search", "native", "--no-external-web-access",
                 "--reasoning-effort", "medium", "--base-url", strict_openai.base_url, "--api-key", KEY,
                 "--source", str(synthetic_hub), "--limit", "2", "--output", str(output)])
    assert code == 0
    assert strict_openai.refused == [] and {call.path for call in strict_openai.calls} == {"/v1/responses"}
    assert all(call.body["tools"][0]["external_web_access"] is False for call in strict_openai.calls)
    predictions = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(predictions) == 2 and all(p["search"]["calls"] >= 1 and p["served_model"] == "gpt-6.2-astra" for p in predictions)
    run = json.loads(output.with_suffix(".run.json").read_text())
    assert run["model"]["backend"]["settings"]["web_search"] == {"external_web_access": False}


@pytest.mark.parametrize("argv, line", [
    (["--model", "openai:gpt-6.2-astra", "--reasoning-effort", "none"],
     "error: openai:gpt-6.2-astra (GPT-6.2 and later) takes --reasoning-effort low, medium, high, xhigh, max, not 'none'"),
    (["--model", "gemini:gemini-3.8-flash", "--thinking-level", "minimal"],
     "error: gemini:gemini-3.8-flash takes --thinking-level low, medium, high, not 'minimal'"),
])
def test_a_refused_parameter_is_one_error_line_before_any_call_and_nothing_written(strict_openai, argv, line, tmp_path, capsys):
    from bespoke_cli.cli import main

    strict_openai.reset()
    output = tmp_path / "p.jsonl"
    code = main(["generate", *argv, "--base-url", strict_openai.base_url, "--api-key", KEY,
                 "--source", "sample", "--output", str(output)])
    assert code == 2
    assert [text for text in own_lines(capsys.readouterr().err) if text.startswith("error:")] == [line]
    assert strict_openai.calls == [] and not output.exists()


def test_gpt61_sol_takes_its_documented_efforts_and_no_tools_on_chat(strict_openai):
    """GPT-6.1 Sol (OpenAI's model page, 2026-12-04): low to max, medium its default; the strict server refuses
    none as the API does, so the row above is what keeps it from being sent."""
    strict_openai.reset()
    complete(strict_backend(strict_openai, "gpt-6.1-sol", reasoning_effort="max"), [ask(native_search=True)])
    assert strict_openai.calls[-1].body["reasoning"] == {"effort": "max"} and strict_openai.refused == []
    with pytest.raises(UserError, match="only through the Responses API"):
        complete(strict_backend(strict_openai, "gpt-6.1-sol", api="chat"), [ask(tools=(SEARCH_TOOL,))])
    assert len(strict_openai.calls) == 1


def test_score_refuses_an_effort_gpt61_sol_refuses_in_one_line_before_any_call(strict_openai, synthetic_hub, tmp_path, capsys):
    import bespoke_dataset
    from bespoke_cli.cli import main

    strict_openai.reset()
    rows = list(bespoke_dataset.load("benchmark", source=synthetic_hub))[:2]
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps({"user": r["user"], "query_id": r["query_id"], "response": "An answer."}) + "\n"
                                   for r in rows))
    code = main(["score", "--predictions", str(predictions), "--judge", "openai:gpt-6.1-sol", "--reasoning-effort", "none",
                 "--base-url", strict_openai.base_url, "--api-key", KEY, "--source", str(synthetic_hub),
                 "--output", str(tmp_path / "results.json")])
    [line] = own_lines(capsys.readouterr().err)
    assert code == 2 and line == ("error: openai:gpt-6.1-sol (GPT-6.1 Sol) takes --reasoning-effort low, medium, high, "
                                  "xhigh, max, not 'none'")
    assert strict_openai.calls == [] and not (tmp_path / "results.json").exists()
