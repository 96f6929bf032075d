"""`bespoke stand-in`: one local server answering as a system, a profiler, a rewrite, an agent and a judge,
started and stopped as a user does (the URL on one line and in `--url-file`, Ctrl-C exits 0)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import StandIn

from bespoke_cli.cli import main


@pytest.mark.slow
def test_the_command_prints_its_url_answers_every_role_and_stops_on_ctrl_c(tmp_path: Path, monkeypatch) -> None:
    server = StandIn(tmp_path)
    try:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/v1")
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in")
        monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
        # a profiler, a system and a judge, all openai: models of the one server
        assert main(["run", "--model", "openai:gpt-4o-mini", "--source", "sample", "--context", "profile", "--limit", "2",
                     "--judge", "openai:gpt-5", "--output", "run.json"]) == 0
        results = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
        assert results["summary"]["items"] == 2 and not any(results["summary"]["failures"].values())
        profiles = [json.loads(line) for line in (tmp_path / "run" / "predictions.profiles.jsonl").open()]
        assert profiles and all(p["text"].startswith("This person's activity shows:") for p in profiles)
    finally:
        code, out, err = server.stop()
    assert code == 0, err
    assert out.splitlines()[0] == server.url  # printed on one line, as written to the file
    assert "stopped" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_rewrite_and_an_agent_search_through_the_stand_in(stand_in, tmp_path: Path) -> None:
    from fakes.search_servers import serve_search

    from bespoke_metric.systems import GenerationSettings, generate

    with serve_search("searxng") as searxng:
        for policy in ("rewrite", "agent"):
            settings = GenerationSettings(search=f"searxng:{searxng.base_url}", search_policy=policy, limit=2,
                                          model_options={"base_url": stand_in.url, "api_key": "sk-stand-in"})
            report = generate("openai:gpt-4o-mini", tmp_path / f"{policy}.jsonl", settings, source="sample", progress=False)
            assert report.failed == [] and report.fallbacks == 0 and report.unsearched == 0
            first = json.loads((tmp_path / f"{policy}.jsonl").open().readline())
            assert first["search"]["calls"] >= 1 and "fallback" not in first["search"]
    assert first["search"]["cited"]  # the agent's answer cites its first result


@pytest.mark.slow
def test_a_port_in_use_is_one_error_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "bespoke_cli.cli", "stand-in", "--port", str(port)],
                              capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: --port {port}: cannot serve on 127.0.0.1:{port}") and len(done.stderr.splitlines()) == 1


@pytest.mark.slow
def test_the_responder_module_is_no_silent_command() -> None:
    done = subprocess.run([sys.executable, "-m", "bespoke_metric.testing.system_responder"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0 and "bespoke stand-in" in done.stderr


def test_what_the_stand_in_answered_is_marked_and_costs_nothing(stand_in, tmp_path: Path, monkeypatch, capsys) -> None:
    """The stand-in says so in every answer (`bespoke_stand_in: true`): its judge's and its system's answers
    are marked a stand-in's, nothing is priced, and no figure from it looks like a real model's."""
    from bespoke_metric.analysis.leaderboard import build_leaderboard, load_results

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", stand_in.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in")
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    assert main(["run", "--model", "openai:gpt-4o-mini", "--source", "sample", "--context", "none", "--limit", "3",
                 "--judge", "openai:gpt-5", "--recall", "batched", "--output", "run.json"]) == 0
    out = capsys.readouterr().out
    results = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    answers = results["usage"]["calls"] + results["usage"]["cached"]
    assert results["judge"]["stand_in"] == answers > 0
    assert results["judge"]["served_models"] == {} and results["served_mismatch"] is False
    assert results["system"]["stand_in"] == 3 and results["system"]["served_models"] == {}
    models = results["usage"]["models"]
    assert {spec: (m["cost"], m["stand_in"] > 0) for spec, m in models.items()} == {
        "openai:gpt-5": (0.0, True), "openai:gpt-4o-mini": (0.0, True)}
    assert results["usage"]["cost"] == 0.0 and "stand-in answers, no cost" in out and "total cost $0.0000" in out
    assert "note: openai:gpt-5 was answered by a stand-in" in out and "written by a stand-in" in out
    predictions = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").open()]
    assert all(p["stand_in"] is True and "served_model" not in p for p in predictions)

    # the leaderboard marks the judge as the stand-in, and says who served the system
    [group] = build_leaderboard(load_results([tmp_path / "run.json"]), n_resamples=20)
    assert "STAND-IN judge" in group.title and group.rows[0].served == "STAND-IN"


def test_a_table_of_stand_in_judges_marks_their_rows(stand_in, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", stand_in.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in")
    assert main(["meta-eval", "--judge", "openai:gpt-5", "--judge", "openai:gpt-5-mini", "--source", "sample",
                 "--limit", "6", "--no-feedback-accuracy", "--resamples", "20", "--out", "judges"]) == 0
    table = (tmp_path / "judges" / "judges.md").read_text(encoding="utf-8")
    rows = [line for line in table.splitlines() if line.startswith(("| 1 |", "| 2 |", "| =1 |"))]  # equal stand-ins tie
    assert len(rows) == 2 and all("**STAND-IN judge**" in row and "STAND-IN ×6" in row and "$0.0000" in row
                                  for row in rows)
    assert "A row marked PROXY judge or STAND-IN judge" in table
