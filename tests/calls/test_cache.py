"""The SQLite answer cache: keys, persistence, WAL, concurrent writers (threads and processes)."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading

import pytest

from bespoke_dataset import SAMPLE_DIR
from bespoke_metric.backends.base import Completion, Request
from bespoke_metric.calls.cache import Cache, key_for

IDENTITY = {"engine": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1", "api": "chat", "settings": {"temperature": 0.0}}
REQUEST = Request(messages=({"role": "user", "content": "hello"},), max_tokens=10)


def test_key_depends_on_everything_that_determines_the_answer():
    base = key_for(IDENTITY, REQUEST, {"protocol_version": 1})
    assert len(base) == 64
    assert base == key_for(dict(reversed(list(IDENTITY.items()))), REQUEST, {"protocol_version": 1})
    variants = [
        key_for({**IDENTITY, "model": "other"}, REQUEST, {"protocol_version": 1}),
        key_for({**IDENTITY, "settings": {"temperature": 0.5}}, REQUEST, {"protocol_version": 1}),
        key_for(IDENTITY, Request(messages=({"role": "user", "content": "hello!"},), max_tokens=10), {"protocol_version": 1}),
        key_for(IDENTITY, Request(messages=({"role": "system", "content": "hello"},), max_tokens=10), {"protocol_version": 1}),
        key_for(IDENTITY, Request(messages=REQUEST.messages, max_tokens=11), {"protocol_version": 1}),
        key_for(IDENTITY, Request(messages=REQUEST.messages, max_tokens=10, json_schema={"type": "object"}), {"protocol_version": 1}),
        key_for(IDENTITY, REQUEST, {"protocol_version": 2}),
        key_for(IDENTITY, REQUEST),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_put_get_persist_and_wal(tmp_path):
    path = tmp_path / "sub" / "cache.sqlite"
    with Cache(path) as cache:
        assert cache.get("k1") is None
        assert len(cache) == 0
        cache.put("k1", Completion("first", 3, 4))
        cache.put("k1", Completion("replaced", 5, 6))
        cache.put("k2", Completion("ünïcode ✓", 0, 0))
        assert cache.get_many(["k1", "k2", "k3"]) == {"k1": Completion("replaced", 5, 6), "k2": Completion("ünïcode ✓", 0, 0)}
    with Cache(path) as reopened:
        assert len(reopened) == 2
        assert "k2" in reopened
        assert "k3" not in reopened
        assert reopened.get("k1") == Completion("replaced", 5, 6)
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_many_keys_at_once(tmp_path):
    with Cache(tmp_path / "c.sqlite") as cache:
        for i in range(1200):
            cache.put(f"k{i}", Completion(str(i)))
        found = cache.get_many([f"k{i}" for i in range(0, 1300)])
        assert len(found) == 1200
        assert found["k1199"].text == "1199"


def _write_many(path: str, worker: int, count: int) -> None:
    with Cache(path) as cache:
        for i in range(count):
            cache.put(f"w{worker}-{i}", Completion(f"text {worker} {i}", i, worker))
            if i % 10 == 0:
                assert cache.get(f"w{worker}-{i}") is not None


@pytest.mark.slow
def test_concurrent_writer_processes(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_write_many, args=(path, w, 150)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=60)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    with Cache(path) as cache:
        assert len(cache) == 600
        assert cache.get("w3-149") == Completion("text 3 149", 149, 3)
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_concurrent_writer_threads_share_one_instance(tmp_path):
    with Cache(tmp_path / "threads.sqlite") as cache:
        def work(worker: int) -> None:
            for i in range(100):
                cache.put(f"t{worker}-{i}", Completion(str(i)))
                cache.get(f"t{worker}-{i}")

        threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(cache) == 600


def test_tools_and_native_search_change_the_key_and_nothing_else_does():
    # a request without tools or native search keeps the key it had before those fields existed
    assert key_for(IDENTITY, REQUEST) == "cc96607a230629c62b4c5648b2d0b1eec6699e338f0451e76ca7bcf5836c2874"
    tool = {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}
    keys = {key_for(IDENTITY, REQUEST), key_for(IDENTITY, Request(REQUEST.messages, 10, tools=(tool,))),
            key_for(IDENTITY, Request(REQUEST.messages, 10, native_search=True))}
    assert len(keys) == 3


def test_extras_round_trip(tmp_path):
    from bespoke_metric.backends.base import ToolCall

    completion = Completion("answer", 10, 5, False, cached_input_tokens=4, reasoning_tokens=2,
                            tool_calls=(ToolCall("search", {"query": "tides"}, "call_1"),),
                            search={"queries": ["tides"], "results": [{"url": "https://a.example", "title": "A"}],
                                    "cited": ["https://a.example"]})
    with Cache(tmp_path / "c.sqlite") as cache:
        cache.put("k", completion)
        cache.put("plain", Completion("x", 1, 1))
    with Cache(tmp_path / "c.sqlite") as cache:
        assert cache.get("k") == completion
        assert cache.get("plain") == Completion("x", 1, 1)


def test_a_cache_written_before_extras_gains_the_column(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE completions (key TEXT PRIMARY KEY, text TEXT NOT NULL, input_tokens INTEGER NOT NULL,"
               " output_tokens INTEGER NOT NULL, truncated INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL)")
    db.execute("INSERT INTO completions VALUES ('k', 'old answer', 3, 2, 0, 0.0)")
    db.commit()
    db.close()
    with Cache(path) as cache:
        assert cache.get("k") == Completion("old answer", 3, 2)
        cache.put("new", Completion("y", 1, 1, reasoning_tokens=1))
        assert cache.get("new").reasoning_tokens == 1


def test_a_cache_that_cannot_be_created_is_the_user_s_error_naming_it(tmp_path, capsys):
    from bespoke_cli.cli import main
    from bespoke_dataset.errors import UserError

    (tmp_path / "a-file").write_text("", encoding="utf-8")
    (tmp_path / "a-folder.sqlite").mkdir()
    for path, why in ((tmp_path / "a-file" / "answers.sqlite", f"File exists: {tmp_path / 'a-file'}"),
                      (tmp_path / "a-folder.sqlite", "unable to open database file")):
        with pytest.raises(UserError) as raised:
            Cache(path)
        assert str(raised.value) == f"--cache {path}: the answer cache cannot be created there ({why})"
    # from the command line: one line, before any call, nothing written
    args = ["score", "--source", "sample", "--predictions", str(SAMPLE_DIR / "predictions.jsonl"), "--judge", "openai:judge-model",
            "--api-key", "sk-test", "--base-url", "http://127.0.0.1:9/v1", "--cache", str(tmp_path / "a-folder.sqlite"),
            "--output", str(tmp_path / "results.json")]
    assert main(args) == 2
    assert capsys.readouterr().err == (f"error: --cache {tmp_path / 'a-folder.sqlite'}: the answer cache cannot be created "
                                       "there (unable to open database file)\n")
    assert not (tmp_path / "results.json").exists()
