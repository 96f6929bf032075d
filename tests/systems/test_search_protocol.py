"""The pure parts of search: what the judge scores of an answer (`clean_response`), the citations read
from it, the queries a model writes (rewrite lines, agent tool calls and `SEARCH:` lines), results as
the model reads them, and the noise draw."""

from __future__ import annotations

import random

import pytest

from bespoke_metric.backends.base import Completion, ToolCall
from bespoke_metric.backends.reasoning import strip_reasoning
from bespoke_metric.backends.web_search import page_key, search_record
from bespoke_metric.calls.scheduler import ParseError
from bespoke_metric.judging.cleaning import clean_response, strip_citations
from bespoke_metric.systems.search.noise import add_noise, noise_rng
from bespoke_metric.systems.search.protocol import render_search_results, results_for, rewrite_queries, search_calls, without_search_lines
from bespoke_metric.systems.search.record import SearchTrace, cited_urls, native_block
from bespoke_metric.systems.tokens import TokenCounter

COUNTER = TokenCounter.approximate(4)


@pytest.mark.parametrize(("raw", "clean"), [
    ("<think>\nThey bake.\n</think>\nUse 75% hydration [1]. Feed it daily [2, 3].", "Use 75% hydration. Feed it daily."),
    ("Read [the flour guide](https://flour.example/guide) first.", "Read the flour guide first."),
    ("Rye ferments faster ([1](https://a.example/x)).", "Rye ferments faster."),
    ("Keep it warm (https://a.example/1, https://b.example/2) and covered.", "Keep it warm and covered."),
    ("More at https://a.example/page. Then bake.", "More at. Then bake."),
    ("Bake at 230 C【3†source】 for 40 minutes.", "Bake at 230 C for 40 minutes."),
    ("Footnoted claim[^4].", "Footnoted claim."),
    ("Proof it overnight [1]. Source: https://a.example/x", "Proof it overnight."),
    ("Code stays: `starters = [1, 2]`\n```\nurl = 'https://a.example'  # [1]\n```", "Code stays: `starters = [1, 2]`\n```\nurl = 'https://a.example'  # [1]\n```"),
    ("| week | feed |\n|---|---|\n| 1 | daily |\n| 2 | twice |", "| week | feed |\n|---|---|\n| 1 | daily |\n| 2 | twice |"),
    ("A plain answer with no sources.", "A plain answer with no sources."),
])
def test_clean_response_leaves_prose_and_drops_reasoning_citations_and_urls(raw: str, clean: str) -> None:
    assert clean_response(raw) == clean


def test_an_answer_ending_with_twenty_sources_of_one_site_keeps_only_its_prose() -> None:
    prose = ("A starter kept in a cold kitchen needs more time between feeds: expect it to peak in eight to ten hours "
             "instead of four to six [1]. Move it somewhere warmer, such as the top of the fridge or an oven with the "
             "light on, and feed it with a little more whole grain flour to speed it up [2][3].")
    sources = "\n".join(f"{n}. [Sourdough guide part {n}](https://bakers.example/guide/{n})" for n in range(1, 21))
    cleaned = clean_response(f"{prose}\n\n**Sources:**\n{sources}")
    assert cleaned == strip_citations(prose) and "bakers.example" not in cleaned and "Sources" not in cleaned
    assert cleaned.endswith("to speed it up.")


def test_openais_parenthesised_citations_and_the_headings_they_empty_are_dropped() -> None:
    # how OpenAI's web search cites in an answer's text (a Responses API `output_text` of gpt-5 with web_search:
    # `([domain](url?utm_source=openai))`, several in one group), and a section left with nothing but links
    raw = ("## Trails near Seoul\n\n"
           "Bukhansan is busiest on weekend mornings ([trails.example](https://trails.example/bukhansan?utm_source=openai)). "
           "Gwanaksan suits beginners ([trails.example](https://trails.example/gwanaksan?utm_source=openai), "
           "[hikes.example](https://hikes.example/g?utm_source=openai)).\n\n"
           "## Useful links\n- [Bukhansan trails](https://trails.example/bukhansan?utm_source=openai)\n\n"
           "## Tips\n\nGo early (before 8am).\n\n## Kept as written\n## Last\nDone.")
    assert clean_response(raw) == ("## Trails near Seoul\n\nBukhansan is busiest on weekend mornings. Gwanaksan suits beginners.\n\n"
                                   "## Tips\n\nGo early (before 8am).\n\n## Kept as written\n## Last\nDone.")


def test_an_unclosed_reasoning_block_is_no_answer() -> None:
    with pytest.raises(ParseError, match="never closed"):
        clean_response("<think>\nstill thinking about [1]")


def test_citations_are_the_shown_results_an_answer_names_and_the_urls_it_writes() -> None:
    shown = [{"url": f"https://r.example/{n}", "title": str(n)} for n in range(1, 5)] + [{"title": "no url", "url": ""}]
    answer = "See [3], then https://other.example/x. Also [1, 4] and [1] again; [9] and [5] name nothing."
    assert cited_urls(answer, shown) == ["https://r.example/3", "https://other.example/x", "https://r.example/1", "https://r.example/4"]
    assert cited_urls("No citations.", shown) == []


def test_a_native_search_block_keeps_what_the_provider_reported_in_order() -> None:
    block = native_block({"queries": ["a", "b"], "results": [{"url": "https://x.example", "title": None}], "cited": ["https://x.example"]})
    assert block == {"engine": "native", "policy": "native", "calls": 2, "failed": 0, "failures": [],
                     "queries": [{"round": 1, "query": "a"}, {"round": 1, "query": "b"}],
                     "results": [{"round": 1, "rank": 1, "url": "https://x.example", "title": "", "noise": False}],
                     "opened": [], "cited": ["https://x.example"]}
    assert native_block(None)["calls"] == 0  # a model that chose not to search
    counted = native_block({"queries": [], "calls": 3, "results": [], "cited": []})  # Perplexity's way
    assert (counted["calls"], counted["queries"]) == (3, [])


def test_native_searches_are_counted_as_searches_failed_ones_as_failed() -> None:
    # two searches of one string are two searches
    assert native_block(search_record(["rye", "rye"], [], []))["calls"] == 2
    # results reported without any count or query (Perplexity without `num_search_queries`): one search, not none
    five = search_record((), [{"url": f"https://p.example/{n}"} for n in range(5)], ())
    assert native_block(five)["calls"] == 1
    # a failed `web_search_call` is a failed search, with its reason
    failed = native_block(search_record(["rye"], [], [], calls=2, failures=["web_search_call status failed"]))
    assert (failed["calls"], failed["failed"], failed["failures"]) == (2, 1, ["web_search_call status failed"])
    # a record cached before `calls` was kept still counts
    assert native_block({"queries": [], "query_count": 4, "results": []})["calls"] == 4


def test_one_page_is_one_result_whatever_tracking_parameters_it_carries() -> None:
    assert page_key("https://News.Example/a/b?id=7&utm_source=openai&utm_medium=x#top") == "https://news.example/a/b?id=7"
    assert page_key("https://a.example/p?gclid=1&q=rye") == "https://a.example/p?q=rye"
    assert page_key("https://a.example/p?ref=home") == "https://a.example/p?ref=home"  # a page's own parameter stays
    record = search_record(["rye"], [{"url": "https://a.example/p", "title": "P"}, {"url": "https://b.example/q", "title": "Q"}],
                           [{"url": "https://a.example/p?utm_source=openai", "title": "P again"}])
    assert record["results"] == [{"url": "https://a.example/p", "title": "P"}, {"url": "https://b.example/q", "title": "Q"}]
    assert record["cited"] == ["https://a.example/p"]  # the URL the search first reported is the one kept
    only_cited = search_record([], [], [{"url": "https://c.example/x?utm_source=openai"}])
    assert only_cited["results"] == [{"url": "https://c.example/x?utm_source=openai", "title": ""}]  # the original kept
    shown = [{"url": "https://r.example/1", "title": "1"}]
    assert cited_urls("See [1] and https://r.example/1?utm_source=chatgpt.com.", shown) == ["https://r.example/1"]


def test_api_sources_are_kept_by_name_and_opened_pages_are_listed() -> None:
    # OpenAI's web_search_call sources may be `{"type": "api", "name": ...}` (live data, no page)
    record = search_record(["weather seoul"], [{"type": "url", "url": "https://w.example/seoul"}, {"type": "api", "name": "oai-weather"},
                                               {"type": "api", "name": "oai-weather"}], [],
                           opened=["https://w.example/seoul?utm_source=openai", "https://w.example/seoul", "https://o.example/"])
    assert record["results"] == [{"url": "https://w.example/seoul", "title": "", "type": "url"},
                                 {"url": "", "title": "", "type": "api", "name": "oai-weather"}]
    assert record["opened"] == ["https://w.example/seoul?utm_source=openai", "https://o.example/"]
    block = native_block(record)
    assert block["results"][1] == {"round": 1, "rank": 2, "url": "", "title": "", "type": "api", "name": "oai-weather", "noise": False}
    assert block["opened"] == record["opened"] and block["calls"] == 1
    # a result marked `opened` (records cached before `opened` was kept) is listed too
    assert native_block({"queries": ["q"], "results": [{"url": "https://y.example", "opened": True}]})["opened"] == ["https://y.example"]


def test_cited_urls_come_from_the_answer_never_from_its_reasoning() -> None:
    shown = [{"url": f"https://r.example/{n}", "title": str(n)} for n in (1, 2)]
    trace = SearchTrace("searxng:http://h", "query")
    trace.show(shown)
    raw = "<think>Maybe [2], see https://think.example/x</think>\nUse [1]."
    assert trace.block(strip_reasoning(raw))["cited"] == ["https://r.example/1"]


def test_rewrite_queries_are_read_one_a_line_without_list_marks() -> None:
    answer = 'Here are some queries:\n\n1. "sourdough cold kitchen"\n- Sourdough cold kitchen\n* **rye starter ratio**\n3) oven light proofing\nextra'
    assert rewrite_queries(answer, 3) == ["sourdough cold kitchen", "rye starter ratio", "oven light proofing"]
    assert rewrite_queries("Queries:\n", 3) == []


def test_agent_searches_come_from_tool_calls_or_search_lines() -> None:
    calls = (ToolCall("search", {"query": "rye"}, "c1"), ToolCall("other", {"query": "x"}, "c2"), ToolCall("search", {"query": " "}, "c3"))
    assert search_calls(Completion("", tool_calls=calls), "", tools=True) == [("c1", "rye")]
    text = "I will look.\nSEARCH: rye starter\n**Search:** cold proofing\n- search: flour types"
    assert search_calls(Completion(text), text, tools=False) == [("", "rye starter"), ("", "cold proofing"), ("", "flour types")]
    assert search_calls(Completion("Researching the SEARCH: inline is no call"), "Researching the SEARCH: inline is no call", tools=False) == []
    assert without_search_lines(text) == "I will look."


def test_results_are_numbered_from_where_the_conversation_is_and_cut_to_the_budget() -> None:
    results = [{"title": "Guide", "url": "https://g.example", "text": "Warm it. " * 50}, {"title": "", "url": "", "text": "second"}]
    assert render_search_results([], 100, COUNTER) == ""
    assert results_for("rye", [], 100, COUNTER, 1) == 'Search results for "rye":\n(nothing found)'
    text = results_for("rye", results, 10_000, COUNTER, 4)
    assert text.startswith('Search results for "rye":\n\n[4] Guide (https://g.example)\nWarm it.') and "[5] (untitled)\nsecond" in text
    assert COUNTER.count(render_search_results(results, 30, COUNTER)) <= 30


def test_noise_replaces_its_share_shuffles_and_repeats_for_the_same_seed() -> None:
    own = [{"url": f"https://own.example/{n}", "title": str(n)} for n in range(5)]
    pool = [{"url": f"https://other.example/{n}", "title": str(n)} for n in range(20)] + own[:2]
    first = add_noise(own, pool, 0.7, noise_rng(3, "q"))
    assert sum(noise for _, noise in first) == round(0.7 * 5) == 4
    assert all(result["url"].startswith("https://other.example/") for result, noise in first if noise)  # never its own
    assert first == add_noise(own, pool, 0.7, noise_rng(3, "q"))
    assert first != add_noise(own, pool, 0.7, noise_rng(4, "q"))
    assert add_noise(own, pool, 0.0, random.Random(1)) == [(r, False) for r in own]  # no noise, order kept
    short = add_noise(own, pool[:1], 0.7, random.Random(1))
    assert sum(noise for _, noise in short) == 1  # a pool too small gives what it has
