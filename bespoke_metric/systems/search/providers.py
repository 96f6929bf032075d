"""The search APIs' documented shapes: how to ask each one for `k` results, and how to read its answer.

Pure functions, one `Provider` per API. Every provider's answer is read into the same raw results,
`{"title", "url", "text"}` plus `"date"` where the provider gives one, titles and text as plain text
(`plain_text` for the APIs that send HTML: Brave marks the query's words with `<strong>`, SearXNG passes
on its engines' markup and entities; the others send text, where a `<` is a `<`), and never a
provider-side LLM answer (Tavily is asked for none; Exa's `/answer` is not used). An answer that is not the provider's
documented JSON is a `ShapeError`: the endpoint is not that provider's search API.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

SearchResult = dict[str, str]
"""`{"title", "url", "text"}`, and `"date"` where the provider gives one."""

EXA_TEXT_CHARACTERS = 2000
"""Characters of page text asked of Exa per result (its `contents.text.maxCharacters`)."""


class ShapeError(ValueError):
    """An answer that is not the provider's documented JSON."""


class SearchFailed(Exception):
    """The provider answered, in its documented JSON, that it could not search (a SearXNG whose engines
    did not answer): a failed search, never one that found nothing."""


@dataclass(frozen=True)
class Call:
    """One HTTP call to `path` (under the base URL): a GET with the query `params`, or a POST of `body`."""

    path: str
    params: Mapping[str, str] | None = None
    body: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Provider:
    """A search API: its name (the `--search` spec), where it lives, how its key is sent, and its shapes."""

    name: str
    base_url: str | None
    """Its public endpoint; None for a self-hosted one whose URL is part of the spec (SearXNG)."""
    key_env: str | None
    """The environment variable holding its key; None when it needs none."""
    key_header: str | None
    call: Callable[[str, int], Call]
    read: Callable[[Any, int], list[SearchResult]]
    """`(decoded JSON answer, k) -> results`, raising `ShapeError`."""
    refused_hint: str = "check the API key"
    """What to tell a user whose call was refused (HTTP 401/403)."""
    max_k: int | None = None
    """The most results it gives for one search, as its documentation says (None: no documented limit)."""
    k_parameter: str = ""
    """The request field that asks for `k` results (named with `max_k` in the error for a larger `k`)."""

    def headers(self, key: str | None) -> dict[str, str]:
        if self.key_header is None or key is None:
            return {}
        if self.key_header == "authorization":
            return {"authorization": f"Bearer {key}"}
        return {self.key_header: key}


_INLINE_TAGS = frozenset({"a", "abbr", "b", "bdi", "bdo", "cite", "code", "em", "i", "kbd", "mark", "q", "s", "small",
                          "span", "strong", "sub", "sup", "time", "u", "var"})
"""Tags inside a run of text; any other tag (a paragraph, a line break, a cell) parts words."""


class _Text(HTMLParser):
    """Collects the text of a fragment of HTML, entities decoded (`convert_charrefs`)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _INLINE_TAGS:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        self.handle_starttag(tag, [])


def plain_text(markup: str) -> str:
    """A snippet as text: tags dropped, entities decoded (`&amp;` -> `&`), runs of white space one space.
    Pure."""
    parser = _Text()
    parser.feed(markup)
    parser.close()
    return re.sub(r"\s+", " ", "".join(parser.parts)).strip()


def decode(content: bytes) -> Any:
    try:
        return json.loads(content)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ShapeError("answered something that is not JSON") from None


def _items(answer: Any, path: tuple[str, ...]) -> list[Mapping[str, Any]]:
    """The list at `path` in the answer, checked to be a list of objects."""
    value = answer
    for name in path:
        if not isinstance(value, Mapping) or name not in value:
            raise ShapeError(f"answered JSON without {'.'.join(path)!r}")
        value = value[name]
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise ShapeError(f"answered JSON whose {'.'.join(path)!r} is not a list of results")
    return value


def _results(items: list[Mapping[str, Any]], k: int, *, url: str, text: str, date: str | None,
             html: bool = False) -> list[SearchResult]:
    """The first `k` items with a URL, read into raw results (a field the provider left out is empty);
    `html`: their titles and texts are HTML, read as plain text."""
    read = plain_text if html else str
    out: list[SearchResult] = []
    for item in items:
        if not isinstance(item.get(url), str) or not item[url]:
            continue
        result = {"title": read(str(item.get("title") or "")), "url": item[url], "text": read(str(item.get(text) or ""))}
        if date is not None and item.get(date):
            result["date"] = str(item[date])
        out.append(result)
        if len(out) == k:
            break
    return out


def _searxng_read(answer: Any, k: int) -> list[SearchResult]:
    found = _results(_items(answer, ("results",)), k, url="url", text="content", date="publishedDate", html=True)
    # SearXNG's JSON lists the engines that failed as `unresponsive_engines: [[name, reason], ...]`
    # (searx/webapp.py, `__get_translated_errors`): no result and engines down is no search at all
    down = answer.get("unresponsive_engines") or ()
    if not found and down:
        named = ", ".join(f"{entry[0]} ({entry[1]})" if isinstance(entry, list) and len(entry) > 1 else str(entry)
                          for entry in down)
        raise SearchFailed(f"no result, and its engines did not answer: {named}")
    return found


def _tavily_read(answer: Any, k: int) -> list[SearchResult]:
    # `answer` (Tavily's own LLM summary) is never read: it is not asked for, and ignored if sent
    return _results(_items(answer, ("results",)), k, url="url", text="content", date="published_date")


def _brave_read(answer: Any, k: int) -> list[SearchResult]:
    # A search with no web hits answers without a `web` section.
    if isinstance(answer, Mapping) and answer.get("type") == "search" and "web" not in answer:
        return []
    return _results(_items(answer, ("web", "results")), k, url="url", text="description", date="page_age", html=True)


def _exa_read(answer: Any, k: int) -> list[SearchResult]:
    return _results(_items(answer, ("results",)), k, url="url", text="text", date="publishedDate")


def _serper_read(answer: Any, k: int) -> list[SearchResult]:
    if isinstance(answer, Mapping) and "organic" not in answer and isinstance(answer.get("searchParameters"), Mapping):
        return []  # no organic results
    return _results(_items(answer, ("organic",)), k, url="link", text="snippet", date="date")


PROVIDERS: dict[str, Provider] = {
    "searxng": Provider(
        "searxng", None, None, None,
        call=lambda query, k: Call("/search", params={"q": query, "format": "json"}),
        read=_searxng_read,  # takes no count: it answers a page, of which the first k are kept
        refused_hint="is JSON output enabled? add 'json' to search.formats in its settings.yml",
    ),
    "tavily": Provider(
        "tavily", "https://api.tavily.com", "TAVILY_API_KEY", "authorization",
        call=lambda query, k: Call("/search", body={"query": query, "max_results": k, "include_answer": False,
                                                   "search_depth": "basic"}),
        read=_tavily_read,
        max_k=20, k_parameter="max_results",  # docs.tavily.com, POST /search: max_results 0 <= x <= 20
    ),
    "brave": Provider(
        "brave", "https://api.search.brave.com", "BRAVE_API_KEY", "x-subscription-token",
        call=lambda query, k: Call("/res/v1/web/search", params={"q": query, "count": str(k)}),
        read=_brave_read,
        max_k=20, k_parameter="count",  # Brave Web Search API reference: count, maximum 20
    ),
    "exa": Provider(
        "exa", "https://api.exa.ai", "EXA_API_KEY", "x-api-key",
        call=lambda query, k: Call("/search", body={"query": query, "numResults": k,
                                                   "contents": {"text": {"maxCharacters": EXA_TEXT_CHARACTERS}}}),
        read=_exa_read,
        max_k=100, k_parameter="numResults",  # docs.exa.ai, POST /search: numResults at most 100
    ),
    "serper": Provider(
        "serper", "https://google.serper.dev", "SERPER_API_KEY", "x-api-key",
        call=lambda query, k: Call("/search", body={"q": query, "num": k}),
        read=_serper_read,
        max_k=100, k_parameter="num",  # serper.dev playground: num up to 100
    ),
}
"""Every web search API by its `--search` name."""
