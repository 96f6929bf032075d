"""Parsing raw history text: only what is unambiguous, never an exception."""

from __future__ import annotations

import json

import pytest

from bespoke_dataset.reading.histories import read_history, urls
from bespoke_dataset.reading.timestamps import first_timestamp


def test_chat_transcript():
    text = ("Conversation started: 2025-03-05 21:03\nUser: How do I fix my bike?\nIt has a flat.\n"
            "Assistant: Patch the tube.\nSee https://bikes.example.org/patch.\nUser: Thanks!")
    parsed = read_history(text, "chat")[0]
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
    parsed = read_history(text, "search")[0]
    assert parsed["timestamp"] == "2025-03-04T09:12:44"
    assert parsed["search_queries"] == ["sourdough starter", "levain"]
    assert parsed["urls"] == ["https://a.example.com/x", "http://b.example.com/y?q=1"]
    assert parsed["turns"] == []


def test_unstructured_text_yields_nothing():
    for source in ("chat", "search"):
        parsed = read_history("notes on levain and crumb. remember the banneton", source)[0]
        assert parsed == {"timestamp": None, "turns": [], "urls": [], "search_queries": []}
    assert read_history("", "chat")[0]["turns"] == []


def test_invalid_dates_are_skipped_not_fatal():
    assert first_timestamp("2025-13-45 10:00 then 2025-03-01T08:30:15") == "2025-03-01T08:30:15"
    assert first_timestamp("2025-02-30 25:99") is None


def test_json_message_lists_are_turns():
    """A JSON list of messages is read as turns; JSON that is not messages, or not JSON, as labelled lines."""
    assert read_history('[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]', "chat")[0]["turns"] == [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert read_history('[{"role": "user"}]', "chat")[0]["turns"] == []  # not messages: no labelled lines either
    assert read_history("[not json\nUser: hi", "chat")[0]["turns"] == [{"role": "user", "content": "hi"}]


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
    assert read_history(text, "search")[0]["urls"] == expected


# ---------------------------------------------------------------- the layouts real exports have

from bespoke_dataset.reading.timestamps import instant, read_time  # noqa: E402


@pytest.mark.parametrize("text, expected", [
    ("Jul 5, 2025, 3:04:05 PM UTC", "2025-07-05T15:04:05+00:00"),
    ("Jul 5, 2025, 3:04:05\u202fPM KST", "2025-07-05T15:04:05+09:00"),  # Google writes a narrow no-break space
    ("September 30, 2025 at 10:00 AM PDT", "2025-09-30T10:00:00-07:00"),
    ("5 Jul 2025, 15:04:05 BST", "2025-07-05T15:04:05+01:00"),
    ("2025-07-05T15:04:05Z", "2025-07-05T15:04:05+00:00"),
    ("at 2025-07-05 15:04:05+0900 then", "2025-07-05T15:04:05+09:00"),
    ("Mar 3, 2025, 7:00:00 AM", "2025-03-03T07:00:00"),
    ("Jul 5, 2025, 3:04 PM IST", "2025-07-05T15:04:00"),  # an ambiguous zone is not guessed
    ("written on 2025-07-05, then at 2025-07-06 08:00", "2025-07-06T08:00:00"),  # a date and time beats a date
    ("written on Jul 5, 2025", "2025-07-05"),
    ("Maybe 5 of them", None),
])
def test_timestamps_as_exports_write_them(text, expected):
    assert first_timestamp(text) == expected


def test_times_given_as_values_and_their_order_across_zones():
    assert read_time(1751727845) == "2025-07-05T15:04:05+00:00"
    assert read_time(1751727845500) == "2025-07-05T15:04:05.500000+00:00"
    assert read_time("Jul 5, 2025, 3:04:05 PM UTC") == "2025-07-05T15:04:05+00:00"
    assert read_time(True) is None and read_time("soon") is None
    assert instant("2025-07-05T15:04:05+09:00") < instant("2025-07-05T10:00:00+00:00")


TAKEOUT_TEXT = """Searched for trail running shoes
Jul 5, 2025, 3:09:00 PM UTC
Search
Visited https://shoes.example.com/trail
Jul 5, 2025, 3:06:10 PM UTC
Search
Searched for running shoes
Jul 5, 2025, 3:04:05 PM UTC
Search"""


def test_google_activity_text_reads_oldest_first_and_keeps_the_zone():
    parsed, form = read_history(TAKEOUT_TEXT, "search")
    assert form == "activity text"
    assert parsed["search_queries"] == ["running shoes", "trail running shoes"]
    assert parsed["timestamp"] == "2025-07-05T15:04:05+00:00"  # the session began at its earliest entry
    assert parsed["urls"] == ["https://shoes.example.com/trail"]
    oldest_first = "\n".join(reversed(TAKEOUT_TEXT.split("\nSearch\n")))  # an export written the other way
    assert read_history(oldest_first, "search")[0]["search_queries"] == ["running shoes", "trail running shoes"]


def test_takeout_activity_json():
    text = json.dumps([
        {"header": "Search", "title": "Searched for levain", "time": "2025-03-04T09:20:00.120Z", "products": ["Search"]},
        {"header": "Search", "title": "Visited Levain basics", "titleUrl": "https://bread.example.org/levain",
         "time": "2025-03-04T09:15:00Z"},
        {"header": "Search", "title": "Searched for sourdough starter", "time": "2025-03-04T09:12:44Z"}])
    parsed, form = read_history(text, "search")
    assert form == "json activity"
    assert parsed["search_queries"] == ["sourdough starter", "levain"]
    assert parsed["timestamp"] == "2025-03-04T09:12:44+00:00"
    assert parsed["urls"] == ["https://bread.example.org/levain"]


@pytest.mark.parametrize("text, timestamp", [
    (json.dumps([{"role": "user", "content": "hi", "timestamp": "2025-03-05T21:03:10+09:00"},
                 {"role": "assistant", "content": "hello", "timestamp": "2025-03-05T21:03:12+09:00"}]),
     "2025-03-05T21:03:10+09:00"),
    (json.dumps([{"role": "human", "content": "hi"}, {"role": "model", "content": "hello"}]), None),
    (json.dumps({"create_time": 1741176190, "messages": [
        {"author": {"role": "user"}, "content": {"content_type": "text", "parts": ["hi"]}},
        {"author": {"role": "assistant"}, "content": {"content_type": "text", "parts": ["hello"]}}]}),
     "2025-03-05T12:03:10+00:00"),
])
def test_json_chats_with_and_without_times(text, timestamp):
    parsed, form = read_history(text, "chat")
    assert form == "json messages"
    assert parsed["turns"] == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert parsed["timestamp"] == timestamp


def test_labelled_turns_after_a_bracketed_time_and_plain_text():
    parsed, form = read_history("[2025-03-05 21:03] User: hi\n[2025-03-05 21:04] Assistant: hello", "chat")
    assert form == "transcript"
    assert [t["role"] for t in parsed["turns"]] == ["user", "assistant"]
    assert parsed["timestamp"] == "2025-03-05T21:03:00"
    assert read_history("some notes about bread", "chat")[1] == "plain text"
    assert read_history("some notes about bread", "search")[1] == "plain text"


def test_activity_with_the_time_on_the_title_line():
    text = ("Searched for running shoes \u00b7 Jul 5, 2025, 3:04:05 PM UTC\n"
            "Searched for trail shoes \u00b7 Jul 5, 2025, 3:09:05 PM UTC")  # oldest first this time: kept so
    parsed = read_history(text, "search")[0]
    assert parsed["search_queries"] == ["running shoes", "trail shoes"]
    assert parsed["timestamp"] == "2025-07-05T15:04:05+00:00"
    assert read_history("Searched for flights 2025-07-05\nJul 5, 2025, 3:09 PM", "search")[0]["search_queries"] == [
        "flights 2025-07-05"]  # a date without a time in a query is part of it


def test_a_json_chat_after_a_header_line_and_a_time_in_its_text():
    parsed, form = read_history('Conversation started: 2025-03-03 07:00\n[{"role": "User", "content": "hi"}]', "chat")
    assert form == "json messages" and parsed["turns"] == [{"role": "user", "content": "hi"}]
    assert parsed["timestamp"] == "2025-03-03T07:00:00"
