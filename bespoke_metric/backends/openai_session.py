"""One run's connection to an OpenAI-compatible endpoint: the official SDK, at a small cost per call.

The SDK is kept for what it is for. Its client holds the key and the base URL, builds the request with its
authentication and headers, owns the HTTP client (on the aiohttp transport that the SDK offers for
concurrency, when aiohttp is installed) and turns an error response into its error types. What it costs
per call is left out: its request pipeline (parameter transforms, option copies, header building,
response models) took more client time than the HTTP exchange itself, milliseconds a call for long
few-shot prompts, which is the whole budget of a local judge server answering in tens of milliseconds.
Here that pipeline builds one template request per endpoint path, and every call sends the template with
its own JSON body, serialised once by the caller, on the SDK's HTTP client
(`benchmarks/judge_throughput.py` measures the difference).

Failures come out as `CallFailed`, classified: whether another try may pass, and how long the server
asked to wait.
"""

from __future__ import annotations

import email.utils
import functools
import math
import ssl
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

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
    asked to wait (`Retry-After`), if it did."""

    def __init__(self, reason: str, retryable: bool, wait: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.wait = wait


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # Shared by every session of the process: building one reads the CA bundle, tens of ms a run.
    import httpx2

    return httpx2.create_ssl_context()


def http_client() -> Any:
    """The SDK's HTTP client: on aiohttp, which the SDK's documentation recommends for concurrency (it
    costs about half the client time a call of the default transport), else the SDK's default."""
    import openai

    try:
        return openai.DefaultAioHttpClient(verify=_tls_context())
    except RuntimeError:  # the SDK's way of saying that aiohttp is not installed
        return openai.DefaultAsyncHttpxClient(verify=_tls_context())


class Session:
    """Calls to one endpoint within one event loop; `close()` when done (the connection pool belongs to the
    loop)."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        import openai

        self.where = scrub_url(base_url)
        self.timeout = timeout
        self._http = http_client()
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout, http_client=self._http
        )
        self._templates: dict[str, tuple[Any, list[tuple[bytes, bytes]], dict[str, Any]]] = {}

    async def post(self, path: str, body: bytes) -> bytes:
        """POST a JSON body to `path` (under the base URL); the answer's body, or `CallFailed`."""
        import httpx2

        url, headers, extensions = self._templates.get(path) or self._template(path)
        request = httpx2.Request("POST", url, headers=headers, content=body, extensions=extensions)
        try:
            response = await self._http.send(request)
        except (httpx2.RequestError, ssl.SSLError) as err:
            raise self._transport_failure(err) from None
        if response.status_code >= 400:
            raise self._status_failure(response) from None
        return response.content

    async def close(self) -> None:
        await self._client.close()

    def _template(self, path: str) -> tuple[Any, list[tuple[bytes, bytes]], dict[str, Any]]:
        """The SDK's own request for `path`, as its `post` builds it (URL, authentication, headers,
        timeout), less the body and its length."""
        from openai._models import FinalRequestOptions

        options = FinalRequestOptions.construct(method="post", url=path, security={"bearer_auth": True})
        built = self._client._build_request(options)
        headers = [(name, value) for name, value in built.headers.raw if name.lower() != b"content-length"]
        self._templates[path] = template = (built.url, headers, dict(built.extensions))
        return template

    def _status_failure(self, response: Any) -> CallFailed:
        error = self._client._make_status_error_from_response(response)  # the SDK's error type and message
        status = error.status_code
        wait = None
        if status == 429 or status >= 500:
            wait = parse_retry_after(response.headers.get("retry-after"))
            if wait is None and response.headers.get("retry-after-ms"):
                wait = (parse_retry_after(response.headers.get("retry-after-ms")) or 0.0) / 1000
        return CallFailed(f"HTTP {status} from {self.where}: {short(error.message)}",
                          retryable=status in _RETRYABLE_STATUS or status >= 500, wait=wait)

    def _transport_failure(self, error: BaseException) -> CallFailed:
        import httpx2

        cause = error.__cause__
        # The aiohttp transport maps every aiohttp connection error to a connect timeout: a refused or
        # dropped connection is not one.
        mislabelled = (isinstance(error, httpx2.ConnectTimeout) and cause is not None
                       and type(cause).__module__.startswith("aiohttp") and not isinstance(cause, TimeoutError))
        if isinstance(error, httpx2.TimeoutException) and not mislabelled:
            return CallFailed(f"timed out after {self.timeout:g} s", retryable=True)
        detail = str(error) or str(cause or "") or type(error).__name__
        return CallFailed(f"connection error to {self.where}: {short(detail)}", retryable=True)


def short(text: str, limit: int = 300) -> str:
    """`text` on one line, cut to `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
