"""Progress into a log file (stderr no terminal, as under pytest): a plain line now and then while a run
lasts and a last one when it ends, nothing for a short run; on the `hf:` engine, as its answers land."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from bespoke_dataset.errors import UserError
from bespoke_metric.calls.progress import LogLines, ProgressBar, log_every_s
from bespoke_metric.systems import GenerationSettings, generate

LINE = re.compile(r"^(?P<desc>.+): (?P<finished>\d+)/(?P<total>\d+) calls \((?P<share>\d+)%\), (?P<done>\d+) done, "
                  r"(?P<cached>\d+) cached, (?P<failed>\d+) failed; \d+(m\d\ds)?s? so far(, about .+ left)?$")


def progress_lines(err: str) -> list[re.Match[str]]:
    return [match for match in map(LINE.match, err.splitlines()) if match]


def wait_for_line(capsys: pytest.CaptureFixture[str]) -> str:
    """What the timer thread wrote to stderr once it wrote something (the test fails after a minute without)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        err = capsys.readouterr().err
        if err:
            return err
        time.sleep(0.01)
    raise AssertionError("no progress line was written")


def test_a_run_into_a_log_writes_a_line_now_and_then_and_a_last_one(capsys, monkeypatch):
    monkeypatch.setenv("BESPOKE_PROGRESS_EVERY", "0.05")
    with ProgressBar(total=10, desc="judging") as bar:
        bar("done", 2)
        bar("cached")
        first = progress_lines(wait_for_line(capsys))
        bar("failed")
    last = progress_lines(capsys.readouterr().err)[-1]
    assert first[0].group("desc", "finished", "total", "share", "done", "cached", "failed") == (
        "judging", "3", "10", "30", "2", "1", "0")
    assert last.group("finished", "share", "done", "cached", "failed") == ("4", "40", "2", "1", "1")


def test_a_short_run_writes_nothing_and_a_disabled_bar_never_does(capsys, monkeypatch):
    with ProgressBar(total=3) as bar:
        bar("done", 3)
    monkeypatch.setenv("BESPOKE_PROGRESS_EVERY", "0.01")
    with ProgressBar(total=3, disable=True) as bar:
        time.sleep(0.1)
        bar("done", 3)
    assert capsys.readouterr().err == ""


def test_on_a_terminal_the_bar_is_drawn_and_disabled_it_is_not(capsys, monkeypatch):
    monkeypatch.setattr("bespoke_metric.calls.progress.on_terminal", lambda: True)
    with ProgressBar(total=4, desc="judging") as bar:
        bar("done", 3)
        bar("failed")
    drawn = capsys.readouterr().err
    assert "judging: 100%" in drawn and "4/4" in drawn and "failed=1" in drawn
    with ProgressBar(total=4, disable=True) as bar:
        bar("done", 4)
    assert capsys.readouterr().err == ""


def test_the_line_says_how_far_and_how_long_is_left():
    now = [100.0]
    lines = LogLines(150, "generating (none)", "call", {"done": 38, "cached": 2, "failed": 0}, every_s=3600,
                     clock=lambda: now[0])
    now[0] += 65
    assert lines.line() == ("generating (none): 40/150 calls (26%), 38 done, 2 cached, 0 failed; 1m05s so far, "
                            "about 3m08s left")  # 110 calls at the pace of the 38 made (the cached 2 took no time)
    lines.close()
    assert lines.written == 0  # nothing was written during the run: nothing at its end either


def test_a_resumed_run_s_cached_answers_do_not_count_in_the_time_left():
    """`1/3 ... 0 done, 1 cached ... about 5m00s left`: an answer from the cache took no time, so it says
    nothing of the pace; the estimate comes from the calls made."""
    now = [0.0]
    counts = {"done": 0, "cached": 1, "failed": 0}
    lines = LogLines(3, "judging", "call", counts, every_s=3600, clock=lambda: now[0])
    now[0] += 150
    assert lines.line().endswith("; 2m30s so far")
    counts["done"] = 1
    assert lines.line().endswith("; 2m30s so far, about 2m30s left")  # one call made in 2m30s, one to go
    lines.close()


@pytest.mark.parametrize("value", ["soon", "0", "-5"])
def test_a_wrong_interval_is_named(monkeypatch, value):
    monkeypatch.setenv("BESPOKE_PROGRESS_EVERY", value)
    with pytest.raises(UserError, match=f"BESPOKE_PROGRESS_EVERY .*{value!r}"):
        log_every_s()


@pytest.mark.slow
def test_hf_generation_into_a_log_reports_as_answers_land(tiny_model_dir, capsys, monkeypatch, tmp_path: Path):
    """The `hf:` engine through `generate`, as `bespoke generate` runs it into a log file."""
    monkeypatch.setenv("BESPOKE_PROGRESS_EVERY", "0.05")
    report = generate(f"hf:{tiny_model_dir}", tmp_path / "preds.jsonl",
                      GenerationSettings(context="none", max_new_tokens=64, limit=4, cache=tmp_path / "c.sqlite"),
                      source="sample", progress=True)
    lines = progress_lines(capsys.readouterr().err)
    assert report.generated + len(report.failed) == 4
    assert lines, "the run wrote no progress line"
    assert {line.group("desc") for line in lines} == {"generating (none)"}
    assert lines[-1].group("finished", "total", "share") == ("4", "4", "100")
    finished = [int(line.group("finished")) for line in lines]
    assert finished == sorted(finished)
