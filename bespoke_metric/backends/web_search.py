"""The record of a model's own web search (`Completion.search`), one shape for every provider.

`{"queries": [str], "results": [{"url", "title", ...}], "cited": [url]}`: what it searched for, what the
searches returned (each URL once, in the order the provider gave them, with whatever else it said of a
result: a snippet, a date), and the URLs its answer cites. Every cited URL is also a result, with its
title, even where the provider listed no sources. Where the provider says how many searches it made, they
are `calls`.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping


def search_record(queries: Iterable[str], results: Iterable[Mapping[str, Any]], cited: Iterable[Mapping[str, Any]],
                  **more: Any) -> dict[str, Any]:
    """The search record from what a provider reported.

    Args:
        queries: the search queries, in order (repeats kept: the model did search twice).
        results: the sources, each with at least `url`; the first entry of a URL wins, later ones only
            fill in what it lacks (a title).
        cited: the citations of the answer, each with `url` and, where known, `title`.
        more: further top-level fields (`calls`).
    """
    by_url: dict[str, dict[str, Any]] = {}
    cited = list(cited)
    for result in (*results, *({"url": c.get("url"), "title": c.get("title")} for c in cited)):
        url = str(result.get("url") or "")
        if not url:
            continue
        entry = by_url.setdefault(url, {"url": url, "title": ""})
        for name, value in result.items():
            if value not in (None, "") and not entry.get(name):
                entry[name] = value
    cited_urls = list(dict.fromkeys(str(c["url"]) for c in cited if c.get("url")))
    return {"queries": [str(q) for q in queries if q], "results": list(by_url.values()), "cited": cited_urls, **more}


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
