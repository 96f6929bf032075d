"""Gemini 3.x and 2.5 through the real `google-genai` SDK against a Gemini-shaped server on 127.0.0.1:
thinking options as the SDK names them, grounding on 3.x, the model that served (`modelVersion`), stopped
answers named by their finish reason, citations only from the answer, and a model the API does not serve;
Gemini 3.8 against a server as strict as the Gemini API: thinking levels per model, no deprecated sampling
parameter, `model_status` recorded, noticed, or the retirement error (issue 32)."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import warnings

import pytest
from backend_outcomes import complete
from fakes.provider_servers import (
    gemini_redirect,
    gemini_responder,
    root_url,
    search_pages,
    serve_provider,
    serve_strict,
)
from output_lines import own_lines

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import CallError, ModelUnavailableError, Request
from bespoke_metric.backends.providers.gemini import _gemini_completion
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.backends.retirement import ModelNotice
from bespoke_metric.testing.server import Fault

KEY = "AIza-test-SECRET-gemini-0b7d"
QUESTION = "hiking trails near Seoul on weekends"
PAGES = search_pages(QUESTION)


def ask(text: str = QUESTION, **kwargs) -> Request:
    return Request(messages=({"role": "user", "content": text},), **kwargs)


@pytest.fixture(scope="module")
def server():
    with serve_provider(gemini_responder()) as running:
        yield running


def gemini(server, model: str, **options):
    return make_backend(f"gemini:{model}", base_url=root_url(server), api_key=KEY, backoff_base=0.01, **options)


@pytest.mark.slow
def test_gemini_3_takes_a_thinking_level_and_grounds_its_answer(server):
    backend = gemini(server, "gemini-3-pro-preview", thinking_level="low")
    (searched,) = complete(backend, [ask(native_search=True)])
    call = server.calls[-1]
    assert call.path.endswith("/models/gemini-3-pro-preview:generateContent")
    # the REST body the SDK sends (google-genai 3.6 keeps ThinkingConfig's own field names inside thinkingConfig;
    # the API reads either spelling, as protobuf JSON does)
    assert call.body["generationConfig"] == {"thinkingConfig": {"thinking_level": "LOW"}}  # no deprecated temperature
    assert call.body["tools"] == [{"googleSearch": {}}]
    assert searched.search["cited"] == [gemini_redirect(page) for page in PAGES[:2]]
    assert "thinking it over" not in searched.text  # the thought part is left out
    assert searched.served_model == "gemini-fake"  # the response's modelVersion
    assert backend.identity()["settings"]["thinking_level"] == "low"


def test_gemini_2_5_takes_a_thinking_budget(server):
    backend = gemini(server, "gemini-2.5-flash", thinking_budget=0)
    complete(backend, [ask()])
    assert server.calls[-1].body["generationConfig"]["thinkingConfig"] == {"thinking_budget": 0}
    assert backend.identity()["settings"]["thinking_budget"] == 0
    complete(gemini(server, "gemini-2.5-flash"), [ask()])
    assert "thinkingConfig" not in server.calls[-1].body["generationConfig"]  # the model's own default


@pytest.mark.parametrize("model, options, words", [
    ("gemini-2.5-pro", {"thinking_level": "high"}, "takes --thinking-budget, not --thinking-level"),
    ("gemini-3-pro-preview", {"thinking_level": "high", "thinking_budget": 128}, "not both"),
    ("gemini-3-pro-preview", {"thinking_level": "huge"}, "--thinking-level must be one of"),
    ("gemini-2.0-flash", {"thinking_budget": 128}, "does not think"),
])
def test_thinking_options_a_model_cannot_take_are_one_user_error(server, model, options, words):
    with pytest.raises(UserError, match=words):
        gemini(server, model, **options)


# Finish reasons as google-genai types them (types.FinishReason: STOP, MAX_TOKENS, SAFETY, RECITATION,
# PROHIBITED_CONTENT, ...); a candidate stopped for safety comes with no content, or with what was written
# before the stop (the Gemini API's Candidate: content, finishReason, finishMessage, safetyRatings).
@pytest.mark.slow
@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT"])
def test_an_answer_the_provider_stopped_fails_naming_the_reason(server, reason):
    server.reset()
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Part of an"}]}, "finishReason": reason,
                            "index": 0, "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH",
                                                           "blocked": True}]}],
            "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 3}, "modelVersion": "gemini-3-pro-preview"}
    server.faults.append(Fault(status=200, body=body))
    (stopped,) = complete(gemini(server, "gemini-3-pro-preview"), [ask()])
    assert stopped == CallError(f"gemini:gemini-3-pro-preview stopped the answer (finishReason {reason})", retryable=False)
    assert len(server.calls) == 1


def test_an_empty_answer_for_another_reason_is_named_too():
    body = {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "MALFORMED_FUNCTION_CALL",
                            "finishMessage": "Malformed function call"}]}
    with pytest.raises(Exception, match=r"finishReason MALFORMED_FUNCTION_CALL\): Malformed function call"):
        _gemini_completion(body)


def test_a_support_inside_a_thought_part_cites_nothing():
    # Segment.partIndex names the part a support points into (google-genai types.Segment: part_index)
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": "maybe the old page", "thought": True},
                                                                    {"text": "The trail opens at six."}]},
                            "finishReason": "STOP",
                            "groundingMetadata": {
                                "webSearchQueries": ["trail hours"],
                                "groundingChunks": [{"web": {"uri": "https://a.example/r", "title": "a.example"}},
                                                    {"web": {"uri": "https://b.example/r", "title": "b.example"}}],
                                "groundingSupports": [
                                    {"segment": {"startIndex": 0, "endIndex": 9, "text": "maybe the"}, "groundingChunkIndices": [0]},
                                    {"segment": {"partIndex": 1, "startIndex": 0, "endIndex": 22, "text": "The trail opens at six"},
                                     "groundingChunkIndices": [1]}]}}],
            "modelVersion": "gemini-2.5-pro"}
    completion = _gemini_completion(body)
    assert completion.search["cited"] == ["https://b.example/r"]
    assert completion.text == "The trail opens at six."
    assert completion.served_model == "gemini-2.5-pro"


def test_a_model_the_api_does_not_serve_stops_the_run(server):
    # the Gemini API's 404 for a model it does not (or no longer) serve, a google.rpc.Status body
    server.faults.append(Fault(status=404, body={"error": {
        "code": 404, "status": "NOT_FOUND",
        "message": "models/gemini-1.0-pro is not found for API version v1beta, or is not supported for generateContent. "
                   "Call ListModels to see the list of available models and their supported methods."}}))
    with pytest.raises(ModelUnavailableError, match="'gemini:gemini-1.0-pro' is not served: models/gemini-1.0-pro is not found"):
        complete(gemini(server, "gemini-1.0-pro"), [ask()])


# -- Gemini 3.8 (issue 32), against a server as strict as the Gemini API --------------------------------------

SOON = (datetime.date.today() + datetime.timedelta(days=30)).isoformat()
# google-genai 3.6.1 types.ModelStatus {message, model_stage: types.ModelStage (..., LEGACY, DEPRECATED, RETIRED),
# retirement_time}, as GenerateContentResponse.model_status carries it on the Gemini API (REST: camelCase)
DEPRECATED = {"modelStage": "DEPRECATED", "retirementTime": "2027-06-01T00:00:00Z",
              "message": "gemini-3.6-flash is deprecated; migrate to gemini-3.8-flash."}
RETIRING = {"modelStage": "STABLE", "retirementTime": f"{SOON}T00:00:00Z"}
RETIRED = {"modelStage": "RETIRED", "message": "gemini-3.6-flash has been retired."}


@pytest.fixture
def strict():
    with serve_strict() as running:
        yield running
        assert running.refused == [] and running.deprecated == []  # nothing we sent was refused or deprecated


@pytest.mark.parametrize("level", ["low", "medium", "high"])
def test_gemini_3_8_flash_takes_its_thinking_levels_and_no_sampling_parameter(strict, level):
    backend = gemini(strict, "gemini-3.8-flash", thinking_level=level)
    (searched,) = complete(backend, [ask(native_search=True)])
    assert strict.calls[-1].body["generationConfig"] == {"thinkingConfig": {"thinking_level": level.upper()}}
    assert "temperature" not in backend.identity()["settings"]
    # two queries executed: two searches, as Gemini 3 bills them
    assert searched.search["calls"] == 2 and searched.search["queries"] == [QUESTION, f"{QUESTION} reviews"]


def test_a_grounded_gemini_3_8_answer_costs_its_executed_queries_at_14_dollars_per_1000(strict):
    """Gemini 3 bills grounding per query executed ($14 per 1,000, genai-prices' `web_searches_kcount`), not
    per grounded prompt: each executed query is one of the run's `web_searches`, priced beside the tokens."""
    from bespoke_metric.backends.base import Usage
    from bespoke_metric.calls.pricing import Tokens, maintained_price, model_usage
    from bespoke_metric.calls.scheduler import run_requests_sync

    usage = Usage()
    answers = run_requests_sync(gemini(strict, "gemini-3.8-flash", thinking_level="low"),
                                [ask(native_search=True), ask("quiet trails near Busan", native_search=True), ask()], usage=usage)
    queries = sum(len((result.completion.search or {}).get("queries", ())) for result in answers)
    assert queries == 4 and usage.web_searches == queries  # two per grounded answer, none for the plain one
    price = maintained_price("gemini:gemini-3.8-flash")
    assert price is not None and price.web_search == 14.0 and price.source.startswith("genai-prices")
    record = model_usage(usage, price)
    assert record["web_searches"] == 4
    assert record["cost"] == pytest.approx(price.cost(Tokens.of(usage)) + queries * 14.0 / 1000, abs=1e-6)


@pytest.mark.parametrize("model, options, words", [
    ("gemini-3.8-flash", {"thinking_level": "minimal"}, "takes --thinking-level low, medium, high, not 'minimal'"),
    ("gemini-3.8-flash", {"thinking_level": "low", "thinking_budget": 512}, "not both"),
    ("gemini-3.8-flash", {"temperature": 0.0}, "Gemini 3.x deprecates temperature, top_p, top_k"),
])
def test_what_gemini_3_8_refuses_is_one_user_error_before_any_call(model, options, words):
    with pytest.raises(UserError, match=words):
        make_backend(f"gemini:{model}", base_url="http://127.0.0.1:9", api_key=KEY, **options)


def test_the_strict_server_refuses_what_the_gemini_api_refuses():
    from fakes.provider_servers import gemini_refusal

    route = "/v1beta/models/gemini-3.8-flash:generateContent"
    contents = [{"role": "user", "parts": [{"text": "hi"}]}]
    assert "MINIMAL is not supported" in gemini_refusal(route, {"contents": contents, "generationConfig": {"thinkingConfig": {"thinkingLevel": "MINIMAL"}}})
    assert "cannot both be set" in gemini_refusal(route, {"contents": contents, "generationConfig": {
        "thinkingConfig": {"thinking_level": "LOW", "thinkingBudget": 128}}})
    assert 'Unknown name "topN"' in gemini_refusal(route, {"contents": contents, "generationConfig": {"topN": 3}})
    assert gemini_refusal(route.replace("3.8", "3.6"), {"contents": contents, "generationConfig": {"thinkingConfig": {"thinkingLevel": "MINIMAL"}}}) is None


def test_gemini_2_5_still_gets_temperature_0(strict):
    complete(gemini(strict, "gemini-2.5-flash"), [ask()])
    assert strict.calls[-1].body["generationConfig"] == {"temperature": 0.0}
    strict.deprecated.clear()  # a 2.5 model takes it: not deprecated there


def test_a_deprecated_model_is_noticed_once_and_its_status_recorded_through_the_cache(strict, tmp_path):
    from bespoke_metric.calls.cache import Cache
    from bespoke_metric.calls.scheduler import run_requests_sync

    strict.responder = gemini_responder(model_status=DEPRECATED)
    backend = gemini(strict, "gemini-3.6-flash")
    with warnings.catch_warnings(record=True) as caught, Cache(tmp_path / "c.sqlite") as cache:
        warnings.simplefilter("always")
        first = run_requests_sync(backend, [ask("one"), ask("two"), ask("three")], cache=cache)
        again = run_requests_sync(backend, [ask("one")], cache=cache)
    notices = [str(w.message) for w in caught if issubclass(w.category, ModelNotice)]
    assert notices == ["gemini:gemini-3.6-flash is DEPRECATED, retiring on 2027-06-01 "
                       f"(in {(datetime.date(2027, 6, 1) - datetime.date.today()).days} days), as its provider says in every "
                       "answer (model_status); docs/choosing-a-judge.md compares successors against the human labels"]
    status = {"stage": "DEPRECATED", "retirement_time": "2027-06-01T00:00:00Z"}
    assert all(result.completion.model_status == status for result in first)
    assert again[0].cached and again[0].completion.model_status == status and len(strict.calls) == 3


def test_a_retirement_within_90_days_is_noticed(strict):
    strict.responder = gemini_responder(model_status=RETIRING)
    with pytest.warns(ModelNotice, match=f"gemini:gemini-3.8-flash is STABLE, retiring on {SOON} \\(in 30 days\\)"):
        complete(gemini(strict, "gemini-3.8-flash"), [ask()])


def test_a_retired_status_is_the_retirement_error(strict):
    strict.responder = gemini_responder(model_status=RETIRED)
    with pytest.raises(ModelUnavailableError, match="'gemini:gemini-3.6-flash' is not served: model_status says RETIRED: "
                                                   "gemini-3.6-flash has been retired."):
        complete(gemini(strict, "gemini-3.6-flash"), [ask(), ask("another")])


def bespoke(*argv: str) -> subprocess.CompletedProcess:
    """`bespoke` in a process of its own, as a user runs it (the notice is a warning the command prints)."""
    return subprocess.run([sys.executable, "-m", "bespoke_cli.cli", *argv], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_DATASETS_OFFLINE": "1"})


@pytest.mark.slow
def test_a_deprecated_system_prints_one_notice_and_its_predictions_and_results_record_it(strict, synthetic_hub, tmp_path):
    from bespoke_metric.testing.system_responder import answer_any

    strict.responder = gemini_responder(answer=answer_any, model_status=DEPRECATED)
    output = tmp_path / "run.json"
    done = bespoke("run", "--model", "gemini:gemini-3.6-flash", "--search", "native", "--model-base-url", root_url(strict),
                   "--model-api-key", KEY, "--judge", "gemini:gemini-3.6-flash", "--base-url", root_url(strict), "--api-key", KEY,
                   "--source", str(synthetic_hub), "--limit", "2",
                   "--no-guards", "--output", str(output))
    assert done.returncode == 0, done.stderr
    notices = [line for line in own_lines(done.stderr) if line.startswith("notice:")]
    assert notices == [line for line in notices if "gemini:gemini-3.6-flash is DEPRECATED, retiring on 2027-06-01" in line]
    assert len(notices) == 1, done.stderr
    assert KEY not in done.stderr + done.stdout
    results = json.loads(output.read_text())
    status = {"stage": "DEPRECATED", "retirement_time": "2027-06-01T00:00:00Z"}
    assert results["judge"]["model_status"] == status and results["system"]["model_status"] == status


@pytest.mark.slow
def test_a_retired_judge_is_one_error_line_and_nothing_written(strict, synthetic_hub, tmp_path):
    import bespoke_dataset

    strict.responder = gemini_responder(model_status=RETIRED)
    rows = bespoke_dataset.load("benchmark", source=synthetic_hub)
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps({"user": row["user"], "query_id": row["query_id"], "response": "An answer."}) + "\n"
                                   for row in list(rows)[:3]))
    done = bespoke("score", "--predictions", str(predictions), "--judge", "gemini:gemini-3.6-flash", "--base-url", root_url(strict),
                   "--api-key", KEY, "--no-guards", "--source", str(synthetic_hub), "--output", str(tmp_path / "results.json"))
    [line] = own_lines(done.stderr)
    assert done.returncode == 1, done.stderr
    assert line.startswith("error: the model 'gemini:gemini-3.6-flash' is not served: model_status says RETIRED")
    assert not (tmp_path / "results.json").exists()
