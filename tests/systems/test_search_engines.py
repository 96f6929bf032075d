"""The search engines over real HTTP: each provider's fake server on 127.0.0.1 answering its documented
JSON, asked the documented way (path, query, key header, result count); retries that honour
`Retry-After`; and every mistake no retry mends named in one line with the engine (unknown engine,
missing or refused key, SearXNG without JSON, an endpoint that is not the provider's API)."""

from __future__ import annotations

import asyncio
import socket

import pytest
from fakes.search_servers import made_up_results, serve_search

from bespoke_metric.backends.base import CallError
from bespoke_metric.systems.search.base import SearchEngineError, SearchOptions
from bespoke_metric.systems.search.collection import SearchCollectionError
from bespoke_metric.systems.search.engines import make_search_engine, parse_search_spec
from bespoke_metric.systems.search.providers import PROVIDERS, plain_text
from bespoke_metric.testing.server import Fault

KEY = "search-secret-key-0123456789"
QUERIES = ["sourdough starter hydration", "rye bread at altitude"]
FAST = SearchOptions(backoff_base=0.01)
"""Retries back off in hundredths of a second here."""


def search(engine, queries: list[str]):
    """The engine's answers to one batch, as a run asks them: on an event loop, released after."""
    async def batch():
        try:
            return await engine.search(queries)
        finally:
            await engine.release()

    return asyncio.run(batch())


def expected(query: str, k: int) -> list[dict[str, str]]:
    return made_up_results(query)[:k]


def engine_for(provider: str, server, monkeypatch: pytest.MonkeyPatch, **options):
    if PROVIDERS[provider].key_env is not None:
        monkeypatch.setenv(PROVIDERS[provider].key_env, KEY)
    base = {"backoff_base": 0.01, **options}
    if provider == "searxng":
        return make_search_engine(f"searxng:{server.base_url}", SearchOptions(**base))
    return make_search_engine(provider, SearchOptions(base_url=server.base_url, **base))


@pytest.mark.parametrize("provider", ["searxng", "tavily", "brave", "exa", "serper"])
def test_every_engine_asks_the_documented_way_and_reads_raw_results(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_search(provider, key=None if provider == "searxng" else KEY) as server:
        engine = engine_for(provider, server, monkeypatch, k=3)
        found = search(engine, QUERIES)
        assert found == [expected(query, 3) for query in QUERIES]  # title, url, text, date; never an LLM answer
        assert sorted(server.queries()) == sorted(QUERIES)
        call = server.calls[0]
    headers = {name.lower(): value for name, value in call.headers.items()}
    if provider == "searxng":
        assert call.method == "GET" and call.path.startswith("/search?") and "format=json" in call.path
    elif provider == "tavily":
        assert (call.method, call.path, headers["authorization"]) == ("POST", "/search", f"Bearer {KEY}")
        assert call.body["max_results"] == 3 and call.body["include_answer"] is False
    elif provider == "brave":
        assert call.method == "GET" and call.path.startswith("/res/v1/web/search?") and "count=3" in call.path
        assert headers["x-subscription-token"] == KEY
    elif provider == "exa":
        assert (call.method, call.path, headers["x-api-key"], call.body["numResults"]) == ("POST", "/search", KEY, 3)
    else:
        assert (call.method, call.path, headers["x-api-key"], call.body["num"]) == ("POST", "/search", KEY, 3)
    assert engine.identity()["k"] == 3 and KEY not in repr(engine.identity()) + repr(engine.describe())


def test_tavilys_own_answer_is_never_a_result(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_search("tavily", key=KEY) as server:
        found = search(engine_for("tavily", server, monkeypatch), ["what to bake"])
    assert found[0] and not any("NEVER USE THIS" in value for result in found[0] for value in result.values())


def test_a_search_with_no_hits_is_an_empty_result_list(monkeypatch: pytest.MonkeyPatch) -> None:
    for provider in ("brave", "serper", "searxng"):
        with serve_search(provider, results=lambda query: []) as server:
            assert search(engine_for(provider, server, monkeypatch), ["nothing at all"]) == [[]], provider


def test_429_waits_as_long_as_retry_after_says_and_5xx_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_search("searxng", faults=[Fault(status=429, retry_after="0.3"), Fault(status=503)]) as server:
        engine = engine_for("searxng", server, monkeypatch)
        assert search(engine, ["one query"]) == [expected("one query", 5)]
        first, second, third = server.calls
    assert [call.status for call in (first, second, third)] == [429, 503, 200]
    assert second.received - first.finished >= 0.3  # the server's wait, honoured
    assert (engine.retries_made, engine.pacer.refusals) == (1, 1)  # the 503 a retry; the 429 a rate limit's wait


def test_a_search_that_keeps_failing_fails_alone_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = lambda call: Fault(status=500) if "broken" in call.path else None  # noqa: E731
    with serve_search("searxng", rule=broken) as server:
        engine = engine_for("searxng", server, monkeypatch, max_retries=2)
        good, bad = search(engine, ["fine query", "broken query"])
    assert good == expected("fine query", 5)
    assert isinstance(bad, CallError) and "HTTP 500" in bad.reason and "gave up after 2 retries" in bad.reason


def test_a_call_past_the_timeout_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_search("searxng", faults=[Fault(hang=2.0)]) as server:
        engine = engine_for("searxng", server, monkeypatch, timeout=0.3)
        assert search(engine, ["slow query"]) == [expected("slow query", 5)]
    assert engine.retries_made == 1


def test_an_unreachable_searxng_fails_every_query_in_seconds() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    engine = make_search_engine(f"searxng:http://127.0.0.1:{port}", FAST)
    found = search(engine, QUERIES * 5)
    assert all(isinstance(answer, CallError) for answer in found)
    assert "answered no call" in found[0].reason or "unreachable" in found[0].reason
    assert engine.retries_made <= 2 * len(found)


def test_searxng_without_json_output_is_one_line_saying_how_to_enable_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_search("searxng", json_enabled=False) as server:
        with pytest.raises(SearchEngineError) as caught:
            search(engine_for("searxng", server, monkeypatch), QUERIES)
    message = str(caught.value)
    assert message.startswith(f"search engine searxng:{server.base_url} refused the search (HTTP 403")
    assert "settings.yml" in message and "\n" not in message


def test_a_refused_key_names_the_engine_and_never_shows_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_search("brave", key="the-right-key-000") as server:
        with pytest.raises(SearchEngineError, match=r"search engine brave refused the search \(HTTP 401") as caught:
            search(engine_for("brave", server, monkeypatch), QUERIES)
    assert KEY not in str(caught.value)


@pytest.mark.parametrize("shape", ["wrong", "html"])
def test_an_answer_that_is_not_the_documented_json_names_the_engine(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_search("exa", shape=shape) as server:
        with pytest.raises(SearchEngineError, match=r"^search engine exa answered .* is that the exa search API\?$"):
            search(engine_for("exa", server, monkeypatch), QUERIES)


def test_a_wrong_path_is_a_404_named_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_search("serper") as server:
        monkeypatch.setenv("SERPER_API_KEY", KEY)
        engine = make_search_engine("serper", SearchOptions(base_url=server.base_url + "/v2"))
        with pytest.raises(SearchEngineError, match=r"serper: .*/v2/search does not exist \(HTTP 404\)"):
            search(engine, QUERIES)


def test_mistakes_in_a_spec_or_its_options_are_one_line_each(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    cases = {
        "bing": "unknown search engine 'bing'; known: docs:DIR, searxng:URL, tavily, brave, exa, serper, native, none",
        "searxng": "search engine searxng needs its URL: --search searxng:URL",
        "tavily:fast": "search engine tavily takes nothing after its name",
        "tavily": "search engine tavily needs an API key: set TAVILY_API_KEY",
        "searxng:localhost:8888": "search engine searxng: 'localhost:8888' is not an http(s) URL",
        "native": "--search native is not a search engine to call",
    }
    for spec, message in cases.items():
        with pytest.raises(SearchEngineError, match=message.replace("(", r"\(").replace(")", r"\)")):
            make_search_engine(spec)
    with pytest.raises(SearchCollectionError, match=f"search collection {tmp_path / 'missing'} .* is not a folder"):
        make_search_engine(f"docs:{tmp_path / 'missing'}")
    with pytest.raises(SearchEngineError, match="--search-base-url does not apply to the searxng search engine"):
        make_search_engine("searxng:http://127.0.0.1:9", SearchOptions(base_url="http://127.0.0.1:8"))
    with pytest.raises(SearchEngineError, match="--search-timeout does not apply to the docs search engine"):
        make_search_engine(f"docs:{tmp_path}", SearchOptions(timeout=3.0))
    with pytest.raises(SearchEngineError, match="--search-k must be a positive integer, got 0"):
        make_search_engine("searxng:http://127.0.0.1:9", SearchOptions(k=0))
    assert make_search_engine("tavily", replay=True).spec == "tavily"  # a replay never calls it: no key needed
    assert str(parse_search_spec("searxng:http://h:1/")) == "searxng:http://h:1/"


def test_a_searxng_url_is_recorded_without_credentials() -> None:
    engine = make_search_engine("searxng:https://user:pw@search.example:8443/?token=abc")
    assert engine.spec == "searxng:https://search.example:8443"
    assert "pw" not in repr(engine.identity()) and "abc" not in repr(engine.describe())


def test_a_searxng_whose_engines_are_all_down_fails_the_search_naming_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # SearXNG's JSON when no engine answered: `results: []` and `unresponsive_engines` as [name, reason]
    # pairs (searx/webapp.py, `__get_translated_errors`)
    down = [("google", "timeout"), ("duckduckgo", "CAPTCHA")]
    with serve_search("searxng", results=lambda query: [], unresponsive=down) as server:
        engine = engine_for("searxng", server, monkeypatch, max_retries=1)
        (failed,) = search(engine, ["sourdough"])
        assert len(server.calls) == 2  # retried once, as a 5xx is: its engines may answer again
    assert isinstance(failed, CallError)
    assert "its engines did not answer: google (timeout), duckduckgo (CAPTCHA)" in failed.reason
    # some engines down and results from the others: a search that found something
    with serve_search("searxng", unresponsive=[("google", "timeout")]) as server:
        assert search(engine_for("searxng", server, monkeypatch), ["rye"]) == [expected("rye", 5)]
    # every engine answered and found nothing: a search that found nothing
    with serve_search("searxng", results=lambda query: []) as server:
        assert search(engine_for("searxng", server, monkeypatch), ["nothing"]) == [[]]


@pytest.mark.parametrize(("provider", "maximum", "parameter"), [("brave", 20, "count"), ("tavily", 20, "max_results"),
                                                                ("exa", 100, "numResults"), ("serper", 100, "num")])
def test_search_k_above_an_engines_documented_maximum_is_refused_before_any_call(provider: str, maximum: int, parameter: str,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROVIDERS[provider].key_env, KEY)
    with pytest.raises(SearchEngineError) as caught:
        make_search_engine(provider, SearchOptions(k=maximum + 5, base_url="http://127.0.0.1:9"))
    assert str(caught.value) == (f"--search-k {maximum + 5} is more than search engine {provider} gives for one search: "
                                 f"at most {maximum} (its {parameter})")
    assert make_search_engine(provider, SearchOptions(k=maximum, base_url="http://127.0.0.1:9")).k == maximum
    assert make_search_engine("searxng:http://127.0.0.1:9", SearchOptions(k=500)).k == 500  # SearXNG sets no limit


def test_html_in_titles_and_snippets_is_plain_text_before_any_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    # Brave's `description` marks the query's words: "... <strong>sourdough</strong> ..." (its API
    # reference's example response); SearXNG passes on its engines' markup and entities
    marked = lambda query: [{"title": "Rye &amp; <b>sourdough</b>", "url": "https://a.example/r",
                             "text": "Feed a <strong>sourdough</strong> starter<br>daily &#8211; keep it &lt;25&nbsp;C"}]
    for provider in ("brave", "searxng"):
        with serve_search(provider, results=marked) as server:
            [[result]] = search(engine_for(provider, server, monkeypatch), ["sourdough"])
        assert (result["title"], result["text"]) == ("Rye & sourdough", "Feed a sourdough starter daily \u2013 keep it <25 C"), provider
    assert plain_text("5 < 6, AT&T, <p>one</p><p>two</p>") == "5 < 6, AT&T, one two"
    # Tavily, Exa and Serper send text: a `<` there is a `<`, never markup to drop
    code = lambda query: [{"title": "Java", "url": "https://j.example", "text": "a List<String> & x<y"}]
    with serve_search("tavily", results=code) as server:
        [[result]] = search(engine_for("tavily", server, monkeypatch), ["generics"])
    assert result["text"] == "a List<String> & x<y"
