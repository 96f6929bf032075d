"""Ctrl-C (SIGINT) in the `bespoke` command: one line saying how many answers the cache kept and how to
resume, exit 130, no traceback, no half-written results; the rerun pays only for what is missing."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bespoke_metric.calls.cache import count_answers
from bespoke_metric.testing.judge_responder import judge_answer

LINE = re.compile(r"^interrupted: (\d+) answer\(s\) saved in (.+) \((\d+) by this run\); rerun the same command to resume$")


@pytest.fixture
def slow_judge(openai_server):
    """Answers one after another, 0.3 s apart (however many are asked at once), so that an interrupt
    lands while some answers are in and others are not."""
    arrivals = itertools.count(1)

    def staggered(body):
        time.sleep(0.3 * next(arrivals))
        return judge_answer(body)

    openai_server.responder = staggered
    return openai_server


@pytest.fixture
def predictions(tmp_path: Path, synthetic_hub: Path) -> Path:
    import bespoke_dataset

    path = tmp_path / "preds.jsonl"
    rows = bespoke_dataset.load("benchmark", source=synthetic_hub)
    path.write_text("".join(json.dumps({"user": r["user"], "query_id": r["query_id"], "response": r["shots"][0]["response"]}) + "\n"
                            for r in rows))
    return path


def interrupt_once_answers_land(args: list[str], cache: Path, tmp_path: Path, *, answers: int = 2,
                                presses: int = 1, wait_s: float = 240) -> tuple[int, str]:
    """Run `bespoke ARGS`, press Ctrl-C (SIGINT) `presses` times, half a second apart, once the cache holds
    `answers` answers (waiting `wait_s` at most); (exit code, stderr)."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "BESPOKE_CACHE": str(tmp_path / "bespoke-cache")}
    process = subprocess.Popen([sys.executable, "-m", "bespoke_cli.cli", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    deadline = time.monotonic() + wait_s
    while count_answers(cache) < answers and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert process.poll() is None, "the command ended before it could be interrupted"
    for press in range(presses):
        if press:
            time.sleep(0.5)
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError("the command did not stop within two minutes of Ctrl-C") from None
    return process.returncode, err


def check_interrupted(code: int, err: str, cache: Path) -> int:
    assert code == 130, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    match = LINE.match(lines[0])
    assert match, lines[0]
    saved = int(match.group(1))
    assert match.group(2) == str(cache)
    assert saved == count_answers(cache)  # the count is the cache's own
    assert int(match.group(3)) == saved  # a fresh cache: all of them came from this run
    assert saved >= 2
    return saved


@pytest.mark.slow
def test_ctrl_c_in_score_keeps_the_cache_and_the_rerun_resumes(slow_judge, predictions, synthetic_hub, tmp_path):
    cache, output = tmp_path / "judge.sqlite", tmp_path / "results.json"
    args = ["score", "--predictions", str(predictions), "--judge", "openai:judge", "--source", str(synthetic_hub),
            "--base-url", slow_judge.base_url, "--cache", str(cache), "--concurrency", "2", "--output", str(output)]
    saved = check_interrupted(*interrupt_once_answers_land(args, cache, tmp_path), cache)
    assert not output.exists()  # no half-written results
    slow_judge.responder = judge_answer
    rerun = subprocess.run([sys.executable, "-m", "bespoke_cli.cli", *args], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "OPENAI_API_KEY": "sk-test"}, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(output.read_text())["usage"]["cached"] == saved


@pytest.mark.slow
def test_ctrl_c_in_generate(slow_judge, synthetic_hub, tmp_path):
    output = tmp_path / "preds.jsonl"
    args = ["generate", "--model", "openai:gpt-4o", "--base-url", slow_judge.base_url, "--source", str(synthetic_hub),
            "--context", "none", "--output", str(output)]
    check_interrupted(*interrupt_once_answers_land(args, tmp_path / "preds.cache.sqlite", tmp_path), tmp_path / "preds.cache.sqlite")


@pytest.mark.slow
def test_ctrl_c_in_meta_eval(slow_judge, synthetic_hub, tmp_path):
    cache = tmp_path / "judge.sqlite"
    args = ["meta-eval", "--judge", "openai:judge", "--source", str(synthetic_hub), "--base-url", slow_judge.base_url,
            "--cache", str(cache), "--concurrency", "2", "--output", str(tmp_path / "meta.json")]
    check_interrupted(*interrupt_once_answers_land(args, cache, tmp_path), cache)
    assert not (tmp_path / "meta.json").exists()


@pytest.mark.slow
def test_ctrl_c_in_generate_with_an_hf_model_stops_at_once_keeping_every_ended_answer(smollm2_cache, tmp_path,
                                                                                       monkeypatch):
    """SmolLM2 answering the sample's first two queries one at a time, longest prompt first: the second query's
    answer ends after about 280 tokens, the first's runs on to the 8,000-token cap, for many minutes. Ctrl-C once
    the first answer lands stops the second at its next token (the command ends within the two minutes
    `communicate` waits, not after the cap), keeps the answer that had ended, and a second press meanwhile
    does not abort the process."""
    from bespoke_metric.testing import smollm2_path

    # one torch thread: on a loaded machine of few cores, two spin against each other and a step takes many times longer
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    output, cache = tmp_path / "preds.jsonl", tmp_path / "preds.cache.sqlite"
    args = ["generate", "--model", f"hf:{smollm2_path()}", "--source", "sample", "--context", "none", "--limit", "2",
            "--batch-size", "1", "--max-new-tokens", "8000", "--output", str(output)]
    code, err = interrupt_once_answers_land(args, cache, tmp_path, answers=1, presses=2, wait_s=600)
    assert code == 130, err
    assert "Traceback" not in err and "terminate called" not in err
    lines = [line for line in err.strip().splitlines() if not line.startswith("generating (none): ")]  # progress
    assert len(lines) == 1, err
    match = LINE.match(lines[0])
    assert match, lines[0]
    assert int(match.group(1)) == count_answers(cache) == 1  # the answer that had ended, not the one cut short
    assert not output.exists()  # the run's predictions are written when its group ends: none was
