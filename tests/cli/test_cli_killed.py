"""A `bespoke score` process killed with SIGKILL mid-run (no handler runs, nothing is flushed): the rerun
pays only for what the cache lacks, so a killed run costs at most the calls it had in flight, and the
killed run's cache, `-wal` included, holds no key."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from key_scan import calls_with_key, stored_bytes

import bespoke_dataset
from bespoke_metric.calls.cache import count_answers
from bespoke_metric.testing.judge_responder import judge_answer

CONCURRENCY = 4
KEY = "sk-killed-run-0123456789"


@pytest.mark.slow
def test_sigkill_mid_run_then_rerun_pays_at_most_the_calls_in_flight(openai_server, synthetic_hub, tmp_path):
    rows = list(bespoke_dataset.load("benchmark", source=synthetic_hub))
    needed = sum(1 + len(row["claims"]) for row in rows)  # one personalization call and one per claim
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps({"user": r["user"], "query_id": r["query_id"],
                                               "response": r["shots"][0]["response"]}) + "\n" for r in rows))
    cache, output = tmp_path / "judge.sqlite", tmp_path / "results.json"
    openai_server.responder = judge_answer
    openai_server.latency = 0.1  # about 3 s of calls at this concurrency: the kill lands part-way
    args = [sys.executable, "-m", "bespoke_cli.cli", "score", "--predictions", str(predictions), "--judge",
            "openai:judge", "--source", str(synthetic_hub), "--base-url", openai_server.base_url,
            "--concurrency", str(CONCURRENCY), "--cache", str(cache), "--output", str(output)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}

    killed = subprocess.Popen([*args, "--api-key", KEY], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while (sum(call.finished is not None for call in openai_server.calls) < needed // 3 and killed.poll() is None
           and time.monotonic() < deadline):
        time.sleep(0.02)
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=30)
    assert killed.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert not output.exists()  # nothing half-written
    saved = count_answers(cache)
    assert 0 < saved < needed
    # SQLite's write-ahead log is left as the kill found it: the key is in neither file
    assert cache.with_name(cache.name + "-wal").is_file()
    assert KEY.encode() not in stored_bytes(cache)

    openai_server.latency = 0.0
    rerun = subprocess.run([*args, "--api-key", "sk-rerun"], env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    results = json.loads(output.read_text())
    assert results["summary"]["items"] == len(rows) and sum(results["summary"]["failures"].values()) == 0
    assert results["usage"]["cached"] == saved
    assert results["usage"]["calls"] == needed - saved == calls_with_key(openai_server, "sk-rerun")
    # paid twice: only what the killed run had sent and not yet stored, never more than it had in flight
    assert 0 <= calls_with_key(openai_server, KEY) - saved <= CONCURRENCY
    assert b"sk-rerun" not in stored_bytes(cache, output)
