"""Gemini 3.x and 2.5 through the real `google-genai` SDK against a Gemini-shaped server on 127.0.0.1:
thinking options as the SDK names them, grounding on 3.x, the model that served (`modelVersion`), stopped
answers named by their finish reason, citations only from the answer, and a model the API does not serve."""

from __future__ import annotations

import asyncio

import pytest

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import CallError, ModelUnavailableError, Request
from bespoke_metric.backends.providers.gemini import _gemini_completion
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.testing.provider_servers import gemini_redirect, gemini_responder, root_url, search_pages, serve_provider
from bespoke_metric.testing.server import Fault

KEY = "AIza-test-SECRET-gemini-0b7d"
QUESTION = "hiking trails near Seoul on weekends"
PAGES = search_pages(QUESTION)


def ask(text: str = QUESTION, **kwargs) -> Request:
    return Request(messages=({"role": "user", "content": text},), **kwargs)


def complete(backend, requests) -> list:
    outcomes: dict[int, object] = {}
    asyncio.run(backend.complete(requests, lambda index, outcome: outcomes.__setitem__(index, outcome)))
    return [outcomes[index] for index in range(len(requests))]


@pytest.fixture(scope="module")
def server():
    with serve_provider(gemini_responder()) as running:
        yield running


def gemini(server, model: str, **options):
    return make_backend(f"gemini:{model}", base_url=root_url(server), api_key=KEY, backoff_base=0.01, **options)


def test_gemini_3_takes_a_thinking_level_and_grounds_its_answer(server):
    backend = gemini(server, "gemini-3-pro-preview", thinking_level="low")
    (searched,) = complete(backend, [ask(native_search=True)])
    call = server.calls[-1]
    assert call.path.endswith("/models/gemini-3-pro-preview:generateContent")
    # the REST body the SDK sends (google-genai 3.6 keeps ThinkingConfig's own field names inside thinkingConfig;
    # the API reads either spelling, as protobuf JSON does)
    assert call.body["generationConfig"]["thinkingConfig"] == {"thinking_level": "LOW"}
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
