"""Which error answers mean "this model is not served", and when a shutdown is near (`backends.retirement`,
pure): the one classification every backend uses (OpenAI, Gemini, Perplexity)."""

from __future__ import annotations

import datetime
import json

import pytest

from bespoke_metric.backends.retirement import is_retired, known_shutdown, shutdown_notice, status_notice, unavailable_reason


@pytest.mark.parametrize("status, body, words", [
    # OpenAI: a 404 whose error code is model_not_found (its error object: message, type, param, code)
    (404, {"error": {"message": "The model `gpt-4-32k` has been deprecated, learn more here: https://platform.openai.com/docs/deprecations",
                     "type": "invalid_request_error", "param": None, "code": "model_not_found"}}, "has been deprecated"),
    (404, {"error": {"message": "The model `gpt-9` does not exist or you do not have access to it.",
                     "type": "invalid_request_error", "param": None, "code": "model_not_found"}}, "does not exist"),
    # a gateway that words it without the code
    (400, {"error": {"message": "The model o1-preview was shut down on 2025-07-28."}}, "was shut down"),
    # Gemini's 404, as a google.rpc.Status body (bytes, as it comes off the wire)
    (404, json.dumps({"error": {"code": 404, "status": "NOT_FOUND", "message": "models/gemini-1.0-pro is not found for API "
                                "version v1beta, or is not supported for generateContent."}}).encode(), "not found for API version"),
    # Perplexity's unknown model: a 400 whose error type is invalid_model
    (400, {"error": {"message": "Invalid model 'sonar-reasoning'. Permitted models can be found in the documentation at "
                     "https://docs.perplexity.ai/getting-started/models.", "type": "invalid_model", "code": 400}}, "Invalid model"),
    (404, "The model has been deprecated", "deprecated"),  # a body that is not JSON
    # Anthropic's 404 for a model it does not (or no longer) serve: an ErrorResponse whose error is a
    # NotFoundErrorObject (anthropic/types/shared/error_response.py, not_found_error_object.py)
    (404, {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-3-opus-20240229"},
           "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}, "model: claude-3-opus-20240229"),
])
def test_a_retired_or_unknown_model_is_recognised_with_the_providers_words(status, body, words):
    reason = unavailable_reason(status, body)
    assert reason is not None and words in reason


@pytest.mark.parametrize("status, body", [
    (404, {"error": {"message": "no route /v1/responses", "type": "not_found"}}),  # a wrong base URL
    (400, {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                     "'max_completion_tokens' instead.", "type": "invalid_request_error", "code": "unsupported_parameter"}}),
    (400, {"error": {"message": "The parameter `functions` is deprecated; use `tools`."}}),  # deprecated, but not the model
    (429, {"error": {"message": "Rate limit reached for model gpt-5", "code": "rate_limit_exceeded"}}),
    (500, b"<html>bad gateway</html>"),
    (404, None),
    # Anthropic: a batch that is not found is not the model; a parameter the model refuses is not the model
    (404, {"type": "error", "error": {"type": "not_found_error", "message": "Message batch msgbatch_01 not found"}}),
    (400, {"type": "error", "error": {"type": "invalid_request_error",
                                      "message": "`temperature` is deprecated for this model."}}),
])
def test_other_errors_are_not_a_retired_model(status, body):
    assert unavailable_reason(status, body) is None


def test_a_shutdown_is_noticed_within_90_days_only():
    today = datetime.date(2026, 12, 1)
    assert shutdown_notice("openai:gpt-5", "2026-12-11", today).startswith("openai:gpt-5 shuts down on 2026-12-11 (in 10 days")
    assert "(today" in shutdown_notice("openai:gpt-5", "2026-12-01", today)
    assert "(3 days ago" in shutdown_notice("openai:o1", "2026-11-28", today)
    assert shutdown_notice("openai:gpt-4o", "2027-03-01", today) == "openai:gpt-4o shuts down on 2027-03-01 (in 90 days, as its provider says); docs/choosing-a-judge.md compares successors against the human labels"
    assert shutdown_notice("openai:gpt-4o", "2027-03-02", today) is None  # 91 days
    assert shutdown_notice("openai:gpt-4.1", None, today) is None
    assert shutdown_notice("openai:gpt-4.1", "soon", today) is None


def test_announced_shutdowns_cover_snapshots_and_prefixes_only_of_their_model():
    assert known_shutdown("openai", "gpt-5-2025-08-07").date == "2026-12-11"
    assert known_shutdown("openai", "openai/o3").date == "2026-12-11"
    assert known_shutdown("openai", "gpt-4o-search-preview").date == "2026-07-23"
    assert known_shutdown("openai", "gpt-5-mini") is None and known_shutdown("openai", "gpt-4o-mini") is None
    assert known_shutdown("perplexity", "gpt-5") is None  # another engine's model of that name is not OpenAI's


def test_a_model_status_is_noticed_when_deprecated_or_retiring_within_90_days():
    today = datetime.date(2026, 12, 1)
    # google-genai types.ModelStatus: model_stage (types.ModelStage), retirement_time (a datetime)
    assert status_notice("gemini:gemini-3.6-flash", {"stage": "DEPRECATED", "retirement_time": "2027-06-01T00:00:00Z"}, today) == (
        "gemini:gemini-3.6-flash is DEPRECATED, retiring on 2027-06-01 (in 182 days), as its provider says in every answer "
        "(model_status); docs/choosing-a-judge.md compares successors against the human labels")
    assert status_notice("gemini:gemini-3.6-flash", {"stage": "DEPRECATED"}, today).startswith("gemini:gemini-3.6-flash is DEPRECATED, as")
    assert "LEGACY, retiring on 2027-01-15 (in 45 days)" in status_notice("gemini:x", {"stage": "LEGACY", "retirement_time": "2027-01-15T00:00:00Z"}, today)
    assert status_notice("gemini:x", {"stage": "LEGACY", "retirement_time": "2027-03-02T00:00:00Z"}, today) is None  # 91 days
    assert status_notice("gemini:x", {"stage": "STABLE"}, today) is None
    assert is_retired({"stage": "RETIRED"}) and not is_retired({"stage": "DEPRECATED"}) and not is_retired({})
