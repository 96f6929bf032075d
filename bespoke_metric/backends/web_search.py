"""The record of a model's own web search (`Completion.search`), one shape for every provider.

`{"queries": [str], "results": [{"url", "title", ...}], "cited": [url]}`, and where known `calls`,
`failed` with `failures` and `opened`: what it searched for, what the searches returned (each page once,
in the order the provider gave them, with whatever else it said of a result: a snippet, a date; a source
that is an API, not a page, by its `name`), the URLs its answer cites, how many searches it made, those
that failed and why, and the pages it opened. Every cited URL is also a result, with its title, even
where the provider listed no sources. One page is one result: URLs are compared by `page_key`, without
the tracking parameters a provider adds (`?utm_source=openai`), and the URL first reported is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .base import ParseError
from .reasoning import answer_start, strip_reasoning

TRACKING_PARAMETERS = frozenset({"gclid", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "yclid", "igshid",
                                 "mc_cid", "mc_eid", "_hsenc", "_hsmi", "srsltid"})
"""Query parameters that say who sent a reader to a page, not which page it is (besides every `utm_*`)."""


def page_key(url: str) -> str:
    """What makes two URLs one page: the URL without tracking parameters (`utm_*`, `gclid`, ...) and
    without its fragment, its scheme and host in lower case. Pure."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # not a URL at all (an unbalanced IPv6 bracket): compared as written
        return url.strip()
    kept = [(name, value) for name, value in parse_qsl(parts.query, keep_blank_values=True)
            if not name.lower().startswith("utm_") and name.lower() not in TRACKING_PARAMETERS]
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, urlencode(kept), ""))


def distinct_pages(urls: Iterable[str]) -> list[str]:
    """Each page of `urls` once (by `page_key`), as first written, in order; empty ones left out."""
    pages: dict[str, str] = {}
    for url in urls:
        if url:
            pages.setdefault(page_key(str(url)), str(url))
    return list(pages.values())


def _source_key(result: Mapping[str, Any]) -> str:
    """A result's identity: its page, or for a source that is an API (OpenAI's `{"type": "api", "name"}`)
    its name; empty for neither."""
    url = str(result.get("url") or "")
    if url:
        return page_key(url)
    name = str(result.get("name") or "")
    return f"api:{name}" if name else ""


def search_record(queries: Iterable[str], results: Iterable[Mapping[str, Any]], cited: Iterable[Mapping[str, Any]], *,
                  calls: int | None = None, failed: int | None = None, failures: Sequence[str] | None = None,
                  opened: Iterable[str] | None = None) -> dict[str, Any]:
    """The search record from what a provider reported.

    Args:
        queries: the search queries, in order (repeats kept: the model did search twice).
        results: the sources, each with `url` (or, for an API source, `name`); the first entry of a page
            wins, later ones only fill in what it lacks (a title).
        cited: the citations of the answer (never of its reasoning), each with `url` and, where known,
            `title`.
        calls: the searches made, where the provider says (two searches for one string are two).
        failed: the searches that failed (default: one per reason in `failures`).
        failures: why the failed searches failed, one reason each.
        opened: the URLs of the pages the model opened or searched in (OpenAI's `open_page`,
            `find_in_page`), each page once.

    What the provider does not say (an argument left None) is left out of the record, never guessed:
    `systems.search.record.native_block` counts the searches of a record without `calls`.
    """
    by_key: dict[str, dict[str, Any]] = {}
    cited = list(cited)
    for result in (*results, *({"url": c.get("url"), "title": c.get("title")} for c in cited)):
        key = _source_key(result)
        if not key:
            continue
        entry = by_key.setdefault(key, {"url": str(result.get("url") or ""), "title": ""})
        for name, value in result.items():
            if value not in (None, "") and not entry.get(name):
                entry[name] = value
    cited_urls = list(dict.fromkeys(by_key[page_key(str(c["url"]))]["url"] for c in cited if c.get("url")))
    record: dict[str, Any] = {"queries": [str(q) for q in queries if q], "results": list(by_key.values()), "cited": cited_urls}
    if calls is not None:
        record["calls"] = int(calls)
    if failed is not None or failures is not None:
        reasons = [str(reason) for reason in failures or ()]
        record["failed"], record["failures"] = len(reasons) if failed is None else int(failed), reasons
    if opened is not None:
        record["opened"] = distinct_pages(opened)
    return record


def searches_made(search: Mapping[str, Any] | None) -> int:
    """How many searches a record says were made (what a provider bills): its `calls` where the provider
    counted them (`query_count` in records cached before `calls` was kept); else one per query, at least
    one per failure, and a search that reported results but no query was still one search, never none.
    0 for no record. Pure."""
    if not search:
        return 0
    reported = search.get("calls", search.get("query_count"))
    if reported is not None:
        return int(reported)
    failed = int(search.get("failed") or len(search.get("failures") or ()))
    return max(len(search.get("queries") or ()), failed, 1 if search.get("results") else 0)


def in_answer(text: str, citations: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The citations (each with `start_index` into `text`, where known) that point into the final answer,
    not into a reasoning block before it; none when the reasoning never closes (there is no answer)."""
    try:
        strip_reasoning(text)
    except ParseError:
        return []
    start = answer_start(text)
    return [note for note in citations
            if not isinstance(note.get("start_index"), int) or note["start_index"] >= start]


# -- options of native search, as the command line gives them ---------------------------------------------

LOCATION_FIELDS = ("country", "region", "city", "timezone")
"""What an approximate user location for a search may name (OpenAI's `user_location`)."""
SEARCH_CONTEXT_SIZES = ("low", "medium", "high")
"""How much of what it found the model reads (OpenAI's and Perplexity's `search_context_size`)."""
RECENCY_FILTERS = ("hour", "day", "week", "month", "year")
"""Perplexity's `search_recency_filter` (inside the Agent API's `web_search` tool `filters`)."""


def check_choice(flag: str, value: str | None, choices: tuple[str, ...]) -> str | None:
    """`value` if it is one of `choices` (or None), else a `UserError` naming `flag`."""
    from bespoke_dataset.errors import UserError

    if value is not None and value not in choices:
        raise UserError(f"{flag} must be one of {', '.join(choices)}, got {value!r}")
    return value


def split_list(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """`"a.com, b.org"` (as a flag gives it) or a sequence of strings -> `("a.com", "b.org")`."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(item.strip() for item in items if item.strip())


def parse_location(value: str | Mapping[str, str] | None, flag: str) -> dict[str, str]:
    """`"country=GB,city=London"` (or a mapping) -> `{"country": "GB", "city": "London"}`; a `UserError`
    naming `flag` for anything else."""
    from bespoke_dataset.errors import UserError

    if value is None:
        return {}
    pairs = value.items() if isinstance(value, Mapping) else [item.partition("=")[::2] for item in split_list(value)]
    location = {str(key).strip(): str(text).strip() for key, text in pairs}
    wrong = sorted(key for key, text in location.items() if key not in LOCATION_FIELDS or not text)
    if wrong or not location:
        raise UserError(f"{flag} takes KEY=VALUE pairs with KEY one of {', '.join(LOCATION_FIELDS)} "
                        f"(e.g. country=GB,city=London), got {value!r}")
    return location
