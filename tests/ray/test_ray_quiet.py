"""A successful run on Ray says what it did and nothing of Ray's own notices (issue 20): no warning that
token authentication is on (Ray's default for a new local instance) and no `core_worker.cc ... E` line for
every actor pool Ray Data starts (ray-project/ray#57733, a false alarm); with debug logging (`-v`) both
are shown."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from bespoke_dataset.rows import load_rows
from bespoke_metric.backends.ray.noise import TOKEN_NOTICE, AlarmFilter, quiet_ray_notices, without_false_alarms
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import serve

FALSE_ALARM = (b"[2026-12-01 08:35:08,072 E 913 1372] core_worker.cc:2465: Actor with class name: "
               b"'MapWorker(MapBatches(EngineWorker))' and ID: '5dd6d8a4cf8aee50ae88695101000000' has constructor "
               b"arguments in the object store and max_restarts > 0. If the arguments in the object store go out of "
               b"scope or are lost, the actor restart will fail. See https://github.com/ray-project/ray/issues/53727\n")
BAR = b"\rjudging:  50%|#####     | 5/10 [00:01<00:01, 4.50it/s]"  # a progress bar's update, no newline
REAL_ERROR = b"[2026-12-01 08:35:09,001 E 913 1372] core_worker.cc:901: Failed to connect to the raylet\n"


def test_the_stderr_filter_drops_the_false_alarm_and_nothing_else(capfd):
    with without_false_alarms():
        os.write(2, FALSE_ALARM)
        os.write(2, REAL_ERROR)
        os.write(2, BAR)  # passed on at once
        os.write(2, FALSE_ALARM[:40])  # a line cut in two writes is still one line
        os.write(2, FALSE_ALARM[40:])
    err = capfd.readouterr().err
    assert err == (REAL_ERROR + BAR + b"\n").decode()  # the bar's text, the alarm after it gone


@pytest.mark.parametrize("chunks", [
    [FALSE_ALARM + REAL_ERROR + BAR + FALSE_ALARM],  # all in one read of the pipe
    [FALSE_ALARM, REAL_ERROR, BAR, FALSE_ALARM[:40], FALSE_ALARM[40:]],  # each write read on its own
    [FALSE_ALARM[:7], FALSE_ALARM[7:] + REAL_ERROR[:3], REAL_ERROR[3:] + BAR[:5], BAR[5:] + FALSE_ALARM[:1], FALSE_ALARM[1:]],
])
def test_what_passes_does_not_depend_on_where_the_pipe_breaks_the_stream(chunks):
    stream = AlarmFilter()
    passed = b"".join(stream.feed(chunk) for chunk in chunks) + stream.end()
    assert passed == REAL_ERROR + BAR + b"\n"  # the bar's line keeps its end, the alarm after it gone


def test_a_progress_bar_is_passed_on_as_it_comes_and_a_log_lines_start_is_held():
    stream = AlarmFilter()
    assert stream.feed(BAR) == BAR  # its "[00:01<...]" is no log line's start
    assert stream.feed(FALSE_ALARM[:12]) == b""  # "[2026-12-01 " may be
    assert stream.feed(FALSE_ALARM[12:]) == b"\n"


def test_with_debug_logging_nothing_is_filtered(capfd, caplog):
    with caplog.at_level(logging.DEBUG, logger="bespoke_metric"):
        with without_false_alarms():
            os.write(2, FALSE_ALARM)
    assert capfd.readouterr().err == FALSE_ALARM.decode()


@pytest.fixture(scope="module")
def predictions(tmp_path_factory):
    path = tmp_path_factory.mktemp("ray-quiet") / "preds.jsonl"
    rows = load_rows("benchmark", "sample")[:2]
    path.write_text("".join(json.dumps({"user": r["user"], "query_id": r["query_id"], "response": r["shots"][-1]["response"]}) + "\n"
                            for r in rows))
    return path


def test_a_run_on_a_new_local_ray_instance_prints_none_of_rays_notices(predictions, tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    with serve(responder=judge_answer) as server:
        command = [sys.executable, "-m", "bespoke_cli.cli", "score", "--predictions", str(predictions), "--source", "sample",
                   "--judge", "openai:judge", "--base-url", server.base_url, "--api-key", "sk-test", "--executor", "ray",
                   "--output", str(tmp_path / "results.json")]
        child = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert child.returncode == 0, child.stderr
    assert "results written to" in child.stdout
    assert child.stderr.splitlines() == ["INFO bespoke_metric.backends.ray.backend: starting a local Ray"]


@pytest.mark.parametrize("debug", [False, True])
def test_rays_token_notice_is_left_out_unless_debugging(debug, caplog):
    token_logger = logging.getLogger("ray._private.authentication.authentication_token_setup")
    # caught at the logger itself (where the filter sits): once Ray has run in this process, its loggers
    # no longer propagate to the root, where caplog listens
    propagates, token_logger.propagate = token_logger.propagate, False
    token_logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.DEBUG if debug else logging.INFO, logger="bespoke_metric"):
            quiet_ray_notices()
            token_logger.warning(f"{TOKEN_NOTICE}. Set RAY_AUTH_MODE=disabled to opt out.")
            token_logger.warning("Token authentication is disabled for this Ray cluster.")  # a warning that matters
    finally:
        token_logger.removeHandler(caplog.handler)
        token_logger.propagate = propagates
    shown = [record.getMessage() for record in caplog.records if record.name == token_logger.name]
    assert len(shown) == (2 if debug else 1)
    assert shown[-1].startswith("Token authentication is disabled")
