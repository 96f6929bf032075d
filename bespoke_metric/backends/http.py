"""A session to a JSON API that takes its key in a header of its own, for the clients that are no model.

The search APIs (`bespoke_metric.systems.search.web`) are called the way the model APIs are: through the
OpenAI-compatible `Session`'s transport (one aiohttp session, failures classified as `CallFailed`) and a
`retries.Caller` (concurrency limit, backoff honouring `Retry-After`, retry budget). What differs is
here: the key's header (`X-Subscription-Token`, `x-api-key`, none at all), a query string on GET, and an
error status no retry mends (a refused key, a missing path) coming back as `Refused`, for the caller to
name in its own words.
"""

from __future__ import annotations

from collections.abc import Mapping

from .providers.openai_session import CallFailed, Session, short, status_failure

FINAL_STATUS = frozenset({401, 403, 404})
"""Refused (a key, a disabled format) or not found: another try gives the same."""


class Refused(CallFailed):
    """An error status in `FINAL_STATUS`."""

    def __init__(self, reason: str, status: int) -> None:
        super().__init__(reason, retryable=False)
        self.status = status


class ApiSession(Session):
    """Calls to one API within one event loop, with `headers` (its key, if any) on every call."""

    def __init__(self, base_url: str, headers: Mapping[str, str], timeout: float) -> None:
        super().__init__(base_url, "", timeout)
        plain = {name: value for name, value in self._plain_headers.items() if name != "authorization"}
        self._plain_headers = {**plain, **headers}
        self._headers = {**self._plain_headers, "content-type": "application/json"}

    async def query(self, path: str, params: Mapping[str, str]) -> bytes:
        """GET `path` with the query `params`; the answer's body, or `CallFailed`."""
        return await self._send("GET", path, params=dict(params), headers=self._plain_headers)

    def _status_failure(self, status: int, headers: Mapping[str, str], content: bytes) -> CallFailed:
        reason = f"HTTP {status} from {self.where}: {short(content.decode('utf-8', 'replace'))}"
        return Refused(reason, status) if status in FINAL_STATUS else status_failure(status, headers, reason)
