"""Parsing raw history text: only what is unambiguous, never an exception."""

from __future__ import annotations

import pytest

from bespoke_dataset.reading.histories import chat_turns, parse_history, urls
from bespoke_dataset.reading.timestamps import first_timestamp


def test_chat_transcript():
    text = ("Conversation started: 2025-03-05 21:03\nUser: How do I fix my bike?\nIt has a flat.\n"
            "Assistant: Patch the tube.\nSee https://bikes.example.org/patch.\nUser: Thanks!")
    parsed = parse_history(text, "chat")
    assert parsed["timestamp"] == "2025-03-05T21:03:00"
    assert parsed["turns"] == [
        {"role": "user", "content": "How do I fix my bike?\nIt has a flat."},
        {"role": "assistant", "content": "Patch the tube.\nSee https://bikes.example.org/patch."},
        {"role": "user", "content": "Thanks!"},
    ]
    assert parsed["urls"] == ["https://bikes.example.org/patch"]  # the sentence's full stop is not the URL's
    assert parsed["search_queries"] == []


def test_search_history():
    text = ("[2025-03-04 09:12:44] Searched: sourdough starter\n  -> https://a.example.com/x\n"
            "Searched: levain\n  -> https://a.example.com/x\n  -> http://b.example.com/y?q=1")
    parsed = parse_history(text, "search")
    assert parsed["timestamp"] == "2025-03-04T09:12:44"
    assert parsed["search_queries"] == ["sourdough starter", "levain"]
    assert parsed["urls"] == ["https://a.example.com/x", "http://b.example.com/y?q=1"]
    assert parsed["turns"] == []


def test_unstructured_text_yields_nothing():
    for source in ("chat", "search"):
        parsed = parse_history("notes on levain and crumb. remember the banneton", source)
        assert parsed == {"timestamp": None, "turns": [], "urls": [], "search_queries": []}
    assert parse_history("", "chat")["turns"] == []


def test_invalid_dates_are_skipped_not_fatal():
    assert first_timestamp("2025-13-45 10:00 then 2025-03-01T08:30:15") == "2025-03-01T08:30:15"
    assert first_timestamp("2025-02-30 25:99") is None


def test_json_message_lists_are_turns():
    assert chat_turns('[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]') == [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert chat_turns('[{"role": "user"}]') == []  # not messages: no labelled lines either
    assert chat_turns("[not json\nUser: hi") == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("text, expected", [
    ("See https://a.example.org/x.", ["https://a.example.org/x"]),
    ("first https://a.example.org/x, then https://b.example.org/y; done", ["https://a.example.org/x",
                                                                         "https://b.example.org/y"]),
    ("really? https://a.example.org/x?! yes: https://b.example.org/y:", ["https://a.example.org/x",
                                                                        "https://b.example.org/y"]),
    ("(see https://a.example.org/x)", ["https://a.example.org/x"]),
    ("[https://a.example.org/x]", ["https://a.example.org/x"]),
    ("[a link](https://a.example.org/x).", ["https://a.example.org/x"]),
    ("https://en.wikipedia.org/wiki/Foo_(bar) and (https://en.wikipedia.org/wiki/Foo_(bar)).",
     ["https://en.wikipedia.org/wiki/Foo_(bar)"]),
    ("https://a.example.org/search?q=1&x=[2]", ["https://a.example.org/search?q=1&x=[2]"]),
    ("https://a.example.org/x. https://a.example.org/x", ["https://a.example.org/x"]),
])
def test_urls_lose_trailing_punctuation_and_unbalanced_brackets(text, expected):
    assert urls(text) == expected
    assert parse_history(text, "search")["urls"] == expected
