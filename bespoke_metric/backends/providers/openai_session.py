"""OpenAI's session, on the HTTP core (`backends.http`): the bearer key, errors named as the SDK names them.

The official SDK's request pipeline (parameter transforms, option copies, header building, response models)
took milliseconds a call for long few-shot prompts, and importing it takes most of a second: neither is on
this path. A call goes out through `http.Session` with the bearer key; the SDK is imported only when a call
fails with an error response, to name the error with the SDK's public error class for its status
(`RateLimitError`, `BadRequestError`, ...) and the SDK's wording, so messages read the same as from any SDK
client. An answer that says the model itself is not served is recognised (`retirement`).
"""

from __future__ import annotations

import json
from typing import Any, Mapping
from urllib.parse import urlsplit

from ..http import USER_AGENT, CallFailed, Session, short, status_failure, tls_context
from ..retirement import unavailable_reason


class OpenAISession(Session):
    """Calls to one OpenAI-compatible endpoint within one event loop, with the bearer key on every call."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        super().__init__(base_url, {"authorization": f"Bearer {api_key}"}, timeout)

    def _status_failure(self, status: int, headers: Mapping[str, str], content: bytes) -> CallFailed:
        failure = status_failure(status, headers, f"HTTP {status} from {self.where}: {short(sdk_error(status, content))}")
        failure.unavailable = unavailable_reason(status, content)
        words = spent_quota(status, content)
        return failure.spent(words, QUOTA_REMEDY) if words else failure


SPENT_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})
"""The error codes of an OpenAI 429 that no wait mends: the account's credit or its monthly budget is spent (OpenAI's
error-codes guide: "You exceeded your current quota, please check your plan and billing details")."""
QUOTA_REMEDY = ("add credit or raise the budget in the provider's billing settings (for OpenAI: "
                "platform.openai.com/settings/organization/billing), then run the same command again")


def spent_quota(status: int, content: bytes) -> str | None:
    """The provider's words when a 429 says the account's quota is spent (`SPENT_CODES`, as the error's `code` or
    `type`), not that a rate limit was reached; None otherwise."""
    if status != 429:
        return None
    try:
        error = json.loads(content).get("error")
    except (ValueError, AttributeError):
        return None
    if not isinstance(error, dict) or not ({error.get("code"), error.get("type")} & SPENT_CODES):
        return None
    return f"{error.get('message') or 'quota exceeded'} ({error.get('code') or error.get('type')})"


def model_shutdown_date(base_url: str, api_key: str, model: str, timeout: float) -> str | None:
    """The `shutdown_date` the endpoint's `GET /models/{model}` gives (OpenAI's `Model` object: an ISO date, or
    null when none is announced); None when it gives none, or the lookup fails in any way (it is a courtesy:
    silent). One blocking call: made once per model, not per request."""
    import urllib.parse

    found = _get_json(base_url, api_key, f"/models/{urllib.parse.quote(model, safe='')}", timeout)
    date = found.get("shutdown_date") if isinstance(found, dict) else None
    return str(date) if date else None


def model_ids(base_url: str, api_key: str, timeout: float) -> list[str]:
    """The model ids the endpoint's `GET /models` lists (OpenAI's `{"object": "list", "data": [Model]}`), for
    a key: empty when the lookup fails in any way (a courtesy: silent). One blocking call."""
    found = _get_json(base_url, api_key, "/models", timeout)
    data = found.get("data") if isinstance(found, dict) else None
    return [str(model["id"]) for model in data or () if isinstance(model, dict) and model.get("id")]


def _get_json(base_url: str, api_key: str, path: str, timeout: float) -> Any:
    """The JSON body of `GET path` under `base_url` with the key, or None when the call fails in any way."""
    import urllib.request

    url = f"{base_url.rstrip('/')}{path}"
    request = urllib.request.Request(url, headers={"authorization": f"Bearer {api_key}", "accept": "application/json",
                                                   "user-agent": USER_AGENT})
    tls = tls_context() if urlsplit(url).scheme == "https" else None
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=tls) as answer:
            return json.loads(answer.read())
    except Exception:  # noqa: BLE001 - any failure (HTTP, network, body) means: nothing known
        return None


def sdk_error(status: int, content: bytes, error_class: type | None = None) -> str:
    """The error response as the official SDK reports it: the SDK's public error class for the status
    (`RateLimitError`, `BadRequestError`, ...) and its message, `Error code: 429 - <the body's message>`;
    `error_class` is another provider's SDK's class for it (default: the openai SDK's)."""
    if error_class is None:
        import openai  # only now: a failed call can afford the import

        error_class = sdk_error_class(openai, status)
    message = f"Error code: {status}"
    try:
        body = json.loads(content)
    except ValueError:
        body = None
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"]:
        message += f" - {error['message']}"
    return f"{error_class.__name__}: {message}"


def sdk_error_class(openai: Any, status: int) -> type:
    """The SDK's public error class for an HTTP error status, as the SDK's client picks it."""
    by_status = {400: openai.BadRequestError, 401: openai.AuthenticationError, 403: openai.PermissionDeniedError,
                 404: openai.NotFoundError, 409: openai.ConflictError, 422: openai.UnprocessableEntityError,
                 429: openai.RateLimitError}
    if status in by_status:
        return by_status[status]
    return openai.InternalServerError if status >= 500 else openai.APIStatusError
