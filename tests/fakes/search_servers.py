"""Search APIs on 127.0.0.1 for tests and benchmarks: SearXNG, Tavily, Brave, Exa and Serper, each
answering in its documented JSON.

    with serve_search("tavily", key="tvly-test-key") as server:
        make_search_engine("tavily", SearchOptions(base_url=server.base_url))   # TAVILY_API_KEY=tvly-test-key
        ...
        assert server.calls[0].body["query"] == "sourdough starter"

What it finds for a query comes from `results(query) -> [{"title", "url", "text", "date"}]` (by default
`made_up_results`: the same documents for the same query, every time); how it answers can be made slow
(`latency`) or faulty, with the `Fault`s of the OpenAI-compatible test server: a scripted queue or a
`rule` per call (429 with `Retry-After`, 5xx, hanging past the client's timeout). A provider's quirks are
kept: a SearXNG without JSON output enabled answers 403 (`json_enabled=False`); Tavily sends its own LLM
`answer` (which a client must never use); Brave leaves out `web` when nothing is found; a SearXNG
lists the engines that did not answer (`unresponsive`: `[(engine, reason)]`, its `unresponsive_engines`,
with no result when every one is down: give `results=lambda query: []` too). A wrong or
missing key is a 401. `shape="wrong"` answers JSON that is not the provider's, `shape="html"` a web page.
Every request is recorded, and the peak of calls in flight is tracked.
"""

from __future__ import annotations

import re
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

from bespoke_metric.testing.server import Fault, RecordedRequest, RequestHandler, TestServer

Document = dict[str, str]
"""`{"title", "url", "text", "date"}` (date optional)."""

PROVIDERS: tuple[str, ...] = ("searxng", "tavily", "brave", "exa", "serper")
SEARXNG_RESULTS = 10
"""SearXNG takes no result count: it answers a page of this many."""

_PATHS = {"searxng": ("GET", "/search"), "tavily": ("POST", "/search"), "brave": ("GET", "/res/v1/web/search"),
          "exa": ("POST", "/search"), "serper": ("POST", "/search")}
_KEY_HEADERS = {"tavily": "authorization", "brave": "x-subscription-token", "exa": "x-api-key", "serper": "x-api-key"}
_SITES = ("example.org", "example.com", "example.net")


def made_up_results(query: str, count: int = SEARXNG_RESULTS) -> list[Document]:
    """`count` documents about `query`, the same every time: one site per rank, a page per query word."""
    slug = re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-") or "empty"
    return [{"title": f"{query} ({rank})", "url": f"https://{_SITES[rank % len(_SITES)]}/{slug}/{rank}",
             "text": f"Page {rank} about {query}: what to know, step by step.", "date": f"2025-0{1 + rank % 9}-15"}
            for rank in range(1, count + 1)]


class SearchServer(TestServer):
    """A running fake search API (the OpenAI-compatible `TestServer`'s lifecycle, faults and records,
    another API); configure it by assigning its attributes between calls."""

    url_path = ""

    def __init__(self, provider: str, *, key: str | None = None, results: Callable[[str], list[Document]] = made_up_results,
                 latency: float = 0.0, faults: list[Fault | None] | None = None,
                 rule: Callable[[RecordedRequest], Fault | None] | None = None, json_enabled: bool = True,
                 shape: str = "documented", unresponsive: Sequence[tuple[str, str]] = ()) -> None:
        if provider not in PROVIDERS:
            raise ValueError(f"unknown search provider {provider!r}; known: {', '.join(PROVIDERS)}")
        super().__init__(latency=latency, faults=faults, rule=rule)
        self.provider = provider
        self.key = key
        """The key a call must carry (None: any, or none)."""
        self.results = results
        self.json_enabled = json_enabled
        self.shape = shape
        self.unresponsive = list(unresponsive)

    def counts(self, record: RecordedRequest) -> bool:
        return True  # every request is a search call (a wrong one is answered as the API would)

    def queries(self) -> list[str]:
        """The query of every search call, in arrival order."""
        return [_query_of(self.provider, call) for call in self.calls]

    def answer(self, record: RecordedRequest) -> tuple[int, Any]:
        """`(status, JSON payload or page text)` for one call."""
        method, path = _PATHS[self.provider]
        if record.method != method or urlsplit(record.path).path.rstrip("/") != path:
            return 404, {"error": f"no route {record.method} {record.path}"}
        if self.key is not None and _key_of(self.provider, record) != self.key:
            return 401, {"error": "invalid API key"} if self.provider != "brave" else {
                "type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID", "status": 401}}
        params = parse_qs(urlsplit(record.path).query)
        if self.provider == "searxng" and params.get("format", ["html"])[0] == "json" and not self.json_enabled:
            return 403, "<html><body>403 Forbidden</body></html>"
        if self.shape == "html":
            return 200, "<!doctype html><html><body>Search</body></html>"
        query = _query_of(self.provider, record)
        if self.shape == "wrong":
            return 200, {"hits": [{"link": "https://example.org"}], "query": query}
        payload = _payload(self.provider, query, self.results(query), _count(self.provider, record))
        if self.provider == "searxng":
            # searx/webapp.py writes `unresponsive_engines` as [engine name, error message] pairs
            payload["unresponsive_engines"] = [[name, reason] for name, reason in self.unresponsive]
        return 200, payload


def _query_of(provider: str, record: RecordedRequest) -> str:
    if provider in ("searxng", "brave"):
        return parse_qs(urlsplit(record.path).query).get("q", [""])[0]
    body = record.body or {}
    return str(body.get("q" if provider == "serper" else "query", ""))


def _key_of(provider: str, record: RecordedRequest) -> str | None:
    headers = {name.lower(): value for name, value in record.headers.items()}
    value = headers.get(_KEY_HEADERS.get(provider, ""))
    if provider == "tavily" and value is not None:
        return value.removeprefix("Bearer ")
    return value


def _count(provider: str, record: RecordedRequest) -> int:
    if provider == "searxng":
        return SEARXNG_RESULTS
    if provider == "brave":
        return int(parse_qs(urlsplit(record.path).query).get("count", ["20"])[0])
    body = record.body or {}
    return int(body.get({"tavily": "max_results", "exa": "numResults", "serper": "num"}[provider], 10))


def _payload(provider: str, query: str, found: list[Document], count: int) -> dict[str, Any]:
    """The provider's documented answer holding the first `count` of `found`."""
    docs = found[:count]
    if provider == "searxng":
        return {"query": query, "number_of_results": len(docs), "answers": [], "suggestions": [], "infoboxes": [],
                "results": [{"url": d["url"], "title": d["title"], "content": d["text"], "publishedDate": d.get("date"),
                             "engine": "duckduckgo", "engines": ["duckduckgo"], "score": 1.0 / rank, "category": "general"}
                            for rank, d in enumerate(docs, start=1)]}
    if provider == "tavily":
        return {"query": query, "answer": f"Tavily's own summary of {query}: NEVER USE THIS", "images": [],
                "results": [{"title": d["title"], "url": d["url"], "content": d["text"], "score": 1.0 / rank,
                             "raw_content": None, "published_date": d.get("date")} for rank, d in enumerate(docs, start=1)],
                "response_time": 0.42}
    if provider == "brave":
        answer: dict[str, Any] = {"type": "search", "query": {"original": query, "more_results_available": False}}
        if docs:
            answer["web"] = {"type": "search", "family_friendly": True, "results": [
                {"type": "search_result", "title": d["title"], "url": d["url"], "description": d["text"],
                 "page_age": d.get("date"), "language": "en", "profile": {"name": urlsplit(d["url"]).hostname}}
                for d in docs]}
        return answer
    if provider == "exa":
        return {"requestId": f"req-{zlib.crc32(query.encode('utf-8')):08x}", "resolvedSearchType": "neural",
                "results": [{"id": d["url"], "url": d["url"], "title": d["title"], "text": d["text"],
                             "publishedDate": d.get("date"), "author": None, "score": 1.0 / rank}
                            for rank, d in enumerate(docs, start=1)]}
    return {"searchParameters": {"q": query, "type": "search", "engine": "google", "num": count},
            "organic": [{"title": d["title"], "link": d["url"], "snippet": d["text"], "date": d.get("date"), "position": rank}
                        for rank, d in enumerate(docs, start=1)]}


class _SearchHandler(RequestHandler):
    """The OpenAI-compatible server's handler (reading bodies, recording, faults, sending JSON), answering
    as a search API."""

    state: SearchServer

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        record = RecordedRequest("GET", self.path, dict(self.headers.items()), None, time.monotonic())
        fault = self.state._begin(record)
        try:
            self._handle(record, None, fault)
        except (BrokenPipeError, ConnectionResetError):
            self.state._end(record, 499)

    def _handle(self, record: RecordedRequest, body: Any, fault: Fault | None) -> None:
        state = self.state
        if fault is not None and fault.hang:
            state._wait(fault.hang)
        if fault is not None and fault.status:
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            headers.update(fault.headers)
            self._send(record, fault.status, fault.body or {"error": f"scripted failure {fault.status}"}, headers)
            return
        if record.method == "POST" and body is None:
            self._send(record, 400, {"error": "body is not JSON"})
            return
        state._wait(state.latency)
        status, payload = state.answer(record)
        if isinstance(payload, str):  # a web page, where a JSON API was expected
            self._page(record, status, payload)
        else:
            self._send(record, status, payload)

    def _page(self, record: RecordedRequest, status: int, page: str) -> None:
        data = page.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.state._end(record, status)
        self.wfile.write(data)


SearchServer.handler = _SearchHandler


def serve_search(provider: str, **options: Any) -> SearchServer:
    """Run a `SearchServer` for `provider` on a free port of 127.0.0.1 for the `with` block."""
    return SearchServer(provider, **options)
