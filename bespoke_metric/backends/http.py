"""The HTTP core every API client of this package calls through: model APIs and search APIs alike.

A local judge server (`vllm serve` on a GPU node) answers hundreds of short calls a second, so what the
client spends per call and before its first call is the budget: a call is a body serialised once by the
caller and sent on one aiohttp session per event loop (the transport the official SDKs recommend for
concurrency), with no SDK request pipeline in between (`benchmarks/judge_throughput.py` measures it).

A `Session` sends; failures come out as `CallFailed`, classified: whether another try may pass, how long
the server asked to wait (`Retry-After`), whether no connection could be made at all. An error status no
retry mends (a refused key, a missing path) is `Refused`, for the caller to name in its own words; a
provider's session (`providers.openai_session.OpenAISession`, `providers.anthropic.AnthropicSession`) names
its errors as the provider's SDK does instead. Retries, backoff and the limit on calls in flight are the
caller's (`retries.Caller`).
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import math
import ssl
import time
from typing import Callable, Mapping
from urllib.parse import urlsplit, urlunsplit

from bespoke_dataset.version import __version__

USER_AGENT = f"bespoke-eval/{__version__}"
"""What every call says it comes from."""
_RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}
FINAL_STATUS = frozenset({401, 403, 404})
"""Refused (a key, a disabled format) or not found: another try gives the same."""


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
    said the model asked for is retired or unknown (`retirement.unavailable_reason`); `rate_limited`: refused
    for a rate limit (a 429), which a wait mends (`pacing.Pacer`), never a dead endpoint; `quota`: the provider's
    words when the account can make no more calls until someone acts, and `remedy` what they must do
    (`limits.QuotaExhaustedError`)."""

    def __init__(self, reason: str, retryable: bool, wait: float | None = None, unreachable: bool = False,
                 unavailable: str | None = None, rate_limited: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.wait = wait
        self.unreachable = unreachable
        self.unavailable = unavailable
        self.rate_limited = rate_limited
        self.quota: str | None = None
        self.remedy = ""

    def spent(self, words: str, remedy: str) -> "CallFailed":
        """This failure, said to be a spent quota (`quota`, `remedy`): no retry mends it."""
        self.quota, self.remedy, self.retryable, self.rate_limited = words, remedy, False, False
        return self


class Refused(CallFailed):
    """An error status in `FINAL_STATUS`."""

    def __init__(self, reason: str, status: int) -> None:
        super().__init__(reason, retryable=False)
        self.status = status


def status_failure(status: int, headers: Mapping[str, str], reason: str, wait: float | None = None) -> CallFailed:
    """The failure of a call answered with an HTTP error `status`: retryable for 408, 409, 429 and 5xx,
    after the wait the server asked for (`retry-after-ms`, `Retry-After`; else `wait`); a 429 is a rate limit."""
    if status == 429 or status >= 500:
        asked = parse_retry_after(headers.get("retry-after-ms"))
        asked = asked / 1000 if asked is not None else parse_retry_after(headers.get("retry-after"))
        wait = asked if asked is not None else wait
    return CallFailed(reason, retryable=status in _RETRYABLE_STATUS or status >= 500, wait=wait, rate_limited=status == 429)


def short(text: str, limit: int = 300) -> str:
    """`text` on one line, cut to `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@functools.cache
def tls_context() -> ssl.SSLContext:
    # Shared by every session of the process: building one reads the CA bundle, tens of ms a run.
    try:
        import certifi
    except ImportError:  # the system's bundle
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


class Session:
    """Calls to one JSON API within one event loop, with `headers` (its key, if any, in whatever header the
    API takes it) on every call; `close()` when done (the connection pool belongs to the loop). `observe`, when
    set, is shown every answer's headers, refused or not (a `pacing.Pacer` reads the rate limits in them)."""

    observe: Callable[[Mapping[str, str]], None] | None = None

    def __init__(self, base_url: str, headers: Mapping[str, str], timeout: float) -> None:
        import aiohttp

        self.base_url = base_url.rstrip("/")
        self.where = scrub_url(base_url)
        self.timeout = timeout
        self._plain_headers = {"accept": "application/json", "user-agent": USER_AGENT, **headers}
        self._headers = {**self._plain_headers, "content-type": "application/json"}
        tls = tls_context() if urlsplit(self.base_url).scheme == "https" else False
        # no connection limit of its own: the caller's semaphore is the one limit on calls in flight
        self._http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, ssl=tls),
                                           timeout=aiohttp.ClientTimeout(total=timeout))

    async def post(self, path: str, body: bytes) -> bytes:
        """POST a JSON body to `path` (under the base URL); the answer's body, or `CallFailed`."""
        return await self._send("POST", path, data=body, headers=self._headers)

    async def get(self, path: str) -> bytes:
        """GET `path` (under the base URL); the answer's body, or `CallFailed`."""
        return await self._send("GET", path, headers=self._plain_headers)

    async def query(self, path: str, params: Mapping[str, str]) -> bytes:
        """GET `path` with the query `params`; the answer's body, or `CallFailed`."""
        return await self._send("GET", path, params=dict(params), headers=self._plain_headers)

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
                if self.observe is not None:
                    self.observe(response.headers)
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
        """The failure an error answer makes: `Refused` for a status in `FINAL_STATUS`, else `status_failure`.
        A provider's session overrides it to name the error as its SDK does."""
        reason = f"HTTP {status} from {self.where}: {short(content.decode('utf-8', 'replace'))}"
        return Refused(reason, status) if status in FINAL_STATUS else status_failure(status, headers, reason)
