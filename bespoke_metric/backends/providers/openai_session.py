"""One run's connection to an OpenAI-compatible endpoint, at a small cost per call.

A local judge server (`vllm serve` on a GPU node) answers hundreds of short calls a second, so what the
client spends per call and before its first call is the budget. The official SDK's request pipeline
(parameter transforms, option copies, header building, response models) took milliseconds a call for
long few-shot prompts, and importing it takes most of a second: neither is on this path. A call is a
JSON body, serialised once by the caller, POSTed with the bearer key on one aiohttp session (the
transport the SDK itself recommends for concurrency). The SDK is imported only when a call fails with an
error response, to name the error with the SDK's public error class for its status (`RateLimitError`,
`BadRequestError`, ...) and the SDK's wording, so messages read the same as from any SDK client. `benchmarks/judge_throughput.py` measures the difference.

Failures come out as `CallFailed`, classified: whether another try may pass, and how long the server
asked to wait, and whether the answer says the model itself is not served (`retirement`).
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import math
import ssl
import time
from typing import Any, Mapping
from urllib.parse import urlsplit, urlunsplit

from bespoke_dataset.version import __version__

from ..retirement import unavailable_reason

_RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}


def scrub_url(url: str) -> str:
    """The URL without user info or query string, which is where credentials hide in URLs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header: a number of seconds or an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = moment.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


class CallFailed(Exception):
    """A call that brought no answer. `retryable`: another try may pass; `wait`: the seconds the server
    asked to wait (`Retry-After`), if it did; `unreachable`: no connection could be made at all (refused,
    unknown host), as opposed to one that broke or timed out; `unavailable`: the provider's words when it
    said the model asked for is retired or unknown (`retirement.unavailable_reason`)."""

    def __init__(self, reason: str, retryable: bool, wait: float | None = None, unreachable: bool = False,
                 unavailable: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.wait = wait
        self.unreachable = unreachable
        self.unavailable = unavailable


@functools.cache
def tls_context() -> ssl.SSLContext:
    # Shared by every session of the process: building one reads the CA bundle, tens of ms a run.
    try:
        import certifi
    except ImportError:  # the system's bundle
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


class Session:
    """Calls to one endpoint within one event loop; `close()` when done (the connection pool belongs to the
    loop)."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        import aiohttp

        self.base_url = base_url.rstrip("/")
        self.where = scrub_url(base_url)
        self.timeout = timeout
        self._plain_headers = {"authorization": f"Bearer {api_key}", "accept": "application/json",
                               "user-agent": f"bespoke-eval/{__version__}"}
        self._headers = {**self._plain_headers, "content-type": "application/json"}
        tls = tls_context() if urlsplit(self.base_url).scheme == "https" else False
        # no connection limit of its own: the backend's semaphore is the one limit on calls in flight
        self._http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, ssl=tls),
                                           timeout=aiohttp.ClientTimeout(total=timeout))

    async def post(self, path: str, body: bytes) -> bytes:
        """POST a JSON body to `path` (under the base URL); the answer's body, or `CallFailed`."""
        return await self._send("POST", path, data=body, headers=self._headers)

    async def get(self, path: str) -> bytes:
        """GET `path` (under the base URL); the answer's body, or `CallFailed`."""
        return await self._send("GET", path, headers=self._plain_headers)

    async def upload(self, path: str, fields: Mapping[str, str], filename: str, content: bytes) -> bytes:
        """POST a multipart form of `fields` and one file (the Files API's upload); the answer's body, or
        `CallFailed`."""
        import aiohttp

        form = aiohttp.FormData()
        for name, value in fields.items():
            form.add_field(name, value)
        form.add_field("file", content, filename=filename, content_type="application/jsonl")
        return await self._send("POST", path, data=form, headers=self._plain_headers)

    async def _send(self, method: str, path: str, **options: object) -> bytes:
        import aiohttp

        try:
            async with self._http.request(method, self.base_url + path, **options) as response:  # type: ignore[arg-type]
                content = await response.read()
                if response.status >= 400:
                    raise self._status_failure(response.status, response.headers, content)
                return content
        except asyncio.TimeoutError:
            raise CallFailed(f"timed out after {self.timeout:g} s", retryable=True) from None
        except (aiohttp.ClientError, ssl.SSLError, OSError) as err:
            detail = str(err) or type(err).__name__
            raise CallFailed(f"connection error to {self.where}: {short(detail)}", retryable=True,
                             unreachable=isinstance(err, aiohttp.ClientConnectorError)) from None

    async def close(self) -> None:
        await self._http.close()

    def _status_failure(self, status: int, headers: Mapping[str, str], content: bytes) -> CallFailed:
        failure = status_failure(status, headers, f"HTTP {status} from {self.where}: {short(sdk_error(status, content))}")
        failure.unavailable = unavailable_reason(status, content)
        return failure


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
                                                   "user-agent": f"bespoke-eval/{__version__}"})
    tls = tls_context() if urlsplit(url).scheme == "https" else None
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=tls) as answer:
            return json.loads(answer.read())
    except Exception:  # noqa: BLE001 - any failure (HTTP, network, body) means: nothing known
        return None


def status_failure(status: int, headers: Mapping[str, str], reason: str, wait: float | None = None) -> CallFailed:
    """The failure of a call answered with an HTTP error `status`: retryable for 408, 409, 429 and 5xx,
    after the wait the server asked for (`Retry-After`, `retry-after-ms`; else `wait`)."""
    if status == 429 or status >= 500:
        asked = parse_retry_after(headers.get("retry-after"))
        if asked is None and headers.get("retry-after-ms"):
            asked = (parse_retry_after(headers.get("retry-after-ms")) or 0.0) / 1000
        wait = asked if asked is not None else wait
    return CallFailed(reason, retryable=status in _RETRYABLE_STATUS or status >= 500, wait=wait)


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


def short(text: str, limit: int = 300) -> str:
    """`text` on one line, cut to `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
