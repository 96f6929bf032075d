"""One run's connection to an OpenAI-compatible endpoint, at a small cost per call.

A local judge server (`vllm serve` on a GPU node) answers hundreds of short calls a second, so what the
client spends per call and before its first call is the budget. The official SDK's request pipeline
(parameter transforms, option copies, header building, response models) took milliseconds a call for
long few-shot prompts, and importing it takes most of a second: neither is on this path. A call is a
JSON body, serialised once by the caller, POSTed with the bearer key on one aiohttp session (the
transport the SDK itself recommends for concurrency). The SDK is imported only when a call fails with an
error response, to name the error as the SDK does (`RateLimitError`, `BadRequestError`, ...), so
messages read the same as from any SDK client. `benchmarks/judge_throughput.py` measures the difference.

Failures come out as `CallFailed`, classified: whether another try may pass, and how long the server
asked to wait.
"""

from __future__ import annotations

from typing import Mapping

from .http import CallFailed, HttpSession, parse_retry_after, scrub_url, short

__all__ = ["CallFailed", "Session", "parse_retry_after", "scrub_url", "sdk_error", "short"]


class Session(HttpSession):
    """Calls to one OpenAI-compatible endpoint within one event loop, with the bearer key; `close()` when
    done (the connection pool belongs to the loop)."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        super().__init__(base_url, {"authorization": f"Bearer {api_key}"}, timeout,
                         error_text=lambda status, headers, content: sdk_error(self.where, status, headers, content))

    async def post(self, path: str, body: bytes) -> bytes:
        """POST a JSON body to `path` (under the base URL); the answer's body, or `CallFailed`."""
        return await self.request("POST", path, body=body)


def sdk_error(url: str, status: int, headers: Mapping[str, str], content: bytes) -> str:
    """The error response as the official SDK reports it: its error type for the status (`RateLimitError`,
    `BadRequestError`, ...) and its message."""
    import openai  # only now: a failed call can afford the import

    try:  # the SDK's HTTP library: httpx2 from openai 3 on, httpx before
        import httpx2 as http
    except ImportError:
        import httpx as http
    response = http.Response(status, headers=dict(headers), content=content, request=http.Request("POST", url))
    error = openai.AsyncOpenAI(api_key="unused", base_url=url)._make_status_error_from_response(response)
    return f"{type(error).__name__}: {error.message}"

