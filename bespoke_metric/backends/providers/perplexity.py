"""`perplexity:MODEL` (`sonar`, `sonar-pro`, `sonar-reasoning`, ...): Perplexity's search-augmented chat API.

Perplexity answers at `/chat/completions` in OpenAI's shape, so this is the `openai:` backend (one aiohttp
session per run, retries honouring `Retry-After`, the run-wide retry budget) with Perplexity's endpoint, key
(`PERPLEXITY_API_KEY`) and search. It searches on every call unless told not to: a request without
`native_search` is sent with `disable_search: true` (so a Perplexity judge, or `--search none`, does not
search). What it searched comes back beside the answer: `search_results` (title, url, date, snippet) are
the results, `citations` the URLs that the answer's `[n]` markers index (from 1), and
`usage.num_search_queries` the number of searches (their text is not given: `calls` in the record).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable

from ..base import Completion, Request
from ..openai_backend import OpenAIBackend, _chat_completion
from ..web_search import RECENCY_FILTERS, SEARCH_MODES, check_choice, search_record, split_list

PERPLEXITY_BASE_URL = "https://api.perplexity.ai"
PERPLEXITY_CONCURRENCY = 8
"""Calls in flight on Perplexity's API: its rate limits (requests per minute) are low."""

_MARKER = re.compile(r"\[(\d{1,3})\]")


class PerplexityBackend(OpenAIBackend):
    """Perplexity's chat API. See the module docstring."""

    name = "perplexity"
    takes_tools = False
    searches = True
    default_url = PERPLEXITY_BASE_URL
    url_variable = None
    key_variable = "PERPLEXITY_API_KEY"
    provider_concurrency = PERPLEXITY_CONCURRENCY

    def __init__(
        self,
        model: str,
        *,
        search_mode: str | None = None,
        search_domain_filter: str | Iterable[str] | None = None,
        search_recency_filter: str | None = None,
        search_context_size: str | None = None,
        **client: Any,
    ) -> None:
        """
        Args:
            model: `sonar`, `sonar-pro`, `sonar-reasoning`, ...
            search_mode: `web` (default), `academic` or `sec`.
            search_domain_filter: domains to search (`"nature.com,arxiv.org"`), or to leave out (`-pinterest.com`).
            search_recency_filter: only results from the last `hour`, `day`, `week`, `month` or `year`.
            search_context_size: `low`, `medium` or `high`: how much of what it found it reads.
            client: `OpenAIBackend`'s endpoint, sampling and retry options (`base_url`, `api_key`,
                `concurrency`, `timeout`, `temperature`, `schema_format`, `max_retries`, ...); the endpoint
                default is Perplexity's API, the key `PERPLEXITY_API_KEY`, at most 8 calls in flight.
        """
        super().__init__(model, api="chat", search_context_size=search_context_size, **client)
        self.search_mode = check_choice("--search-mode", search_mode, SEARCH_MODES)
        self.search_domain_filter = split_list(search_domain_filter)
        self.search_recency_filter = check_choice("--search-recency-filter", search_recency_filter, RECENCY_FILTERS)

    def filters(self) -> dict[str, Any]:
        """The search filters that are set, as the request's fields."""
        filters: dict[str, Any] = {}
        if self.search_mode is not None:
            filters["search_mode"] = self.search_mode
        if self.search_domain_filter:
            filters["search_domain_filter"] = list(self.search_domain_filter)
        if self.search_recency_filter is not None:
            filters["search_recency_filter"] = self.search_recency_filter
        return filters

    def search_settings(self) -> dict[str, Any]:
        settings = {**self.web_search.settings(), **self.filters()}
        return {"search": settings} if settings else {}

    def parse(self, path: str, answer: dict[str, Any]) -> Completion:
        return _perplexity_completion(answer)

    def _response_format(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {"type": "json_schema", "json_schema": {"schema": schema}}  # Perplexity's shape: no name

    def _chat_search_args(self, request: Request) -> dict[str, Any]:
        if not request.native_search:
            return {"disable_search": True}
        options = self.web_search.chat_options()
        return {**self.filters(), **({"web_search_options": options} if options else {})}


def _perplexity_completion(answer: dict[str, Any]) -> Completion:
    """A Perplexity response body as a `Completion`: the chat completion, with the search record of its
    `search_results` and `citations` (those the answer's `[n]` markers point at are `cited`)."""
    completion = _chat_completion(answer)
    usage = answer.get("usage") or {}
    reasoning = completion.reasoning_tokens or int(usage.get("reasoning_tokens") or 0)
    results = [dict(result) for result in answer.get("search_results") or ()]
    urls = [str(url) for url in answer.get("citations") or ()] or [str(result.get("url") or "") for result in results]
    if not results and not urls:
        return dataclasses.replace(completion, reasoning_tokens=reasoning)
    counted = {"calls": int(usage["num_search_queries"])} if usage.get("num_search_queries") is not None else {}
    cited = [{"url": urls[number - 1]} for number in marked(completion.text) if 1 <= number <= len(urls)]
    search = search_record((), results or [{"url": url} for url in urls], cited, **counted)
    return dataclasses.replace(completion, reasoning_tokens=reasoning, search=search)


def marked(text: str) -> list[int]:
    """The numbers of the `[n]` citation markers in `text`, each once, in the order they first appear."""
    return list(dict.fromkeys(int(number) for number in _MARKER.findall(text)))

