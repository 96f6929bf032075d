"""Several systems' predictions in one `score` run: one judge, one scheduler run, one results file each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bespoke_dataset
from bespoke_cli.cli import main
from bespoke_metric.scoring.pipeline import score, score_many


def write_predictions(path: Path, source: Path, shot: int) -> Path:
    """Every query answered with its `shot`-th example response (systems differ by `shot`)."""
    with path.open("w") as out:
        for row in bespoke_dataset.load("benchmark", source=source):
            out.write(json.dumps({"user": row["user"], "query_id": row["query_id"], "response": row["shots"][shot]["response"]}) + "\n")
    return path


@pytest.fixture
def systems(tmp_path, synthetic_hub) -> list[Path]:
    # a and c: the same system under two names; b: another
    return [write_predictions(tmp_path / "a.jsonl", synthetic_hub, -1), write_predictions(tmp_path / "b.jsonl", synthetic_hub, 0),
            write_predictions(tmp_path / "c.jsonl", synthetic_hub, -1)]


@pytest.mark.slow
def test_one_run_judges_every_system_as_separate_runs_would(judge_server, systems, synthetic_hub):
    together = [results.to_json() for results in
                score_many(systems, "openai:judge", source=synthetic_hub, base_url=judge_server.base_url, progress=False)]
    calls_together = len(judge_server.calls)
    judge_server.reset()
    apart = [score(path, "openai:judge", source=synthetic_hub, base_url=judge_server.base_url, progress=False).to_json()
             for path in systems]
    for joint, alone in zip(together, apart, strict=True):
        assert joint["items"] == alone["items"]
        assert joint["summary"] == alone["summary"]
    assert together[0]["summary"] != together[1]["summary"]  # different systems, different scores
    # a and c give the same answers: one run sends each distinct request once
    assert calls_together == len(judge_server.calls) - apart[2]["usage"]["calls"]
    # each file's usage is its own: a's and b's calls are what they cost alone, c's were a's (counted there)
    assert [r["usage"]["calls"] for r in together] == [apart[0]["usage"]["calls"], apart[1]["usage"]["calls"], 0]
    assert [r["usage"]["input_tokens"] for r in together[:2]] == [r["usage"]["input_tokens"] for r in apart[:2]]
    assert sum(r["usage"]["calls"] for r in together) == calls_together


def test_cli_writes_one_results_file_per_predictions_file(judge_server, systems, synthetic_hub, tmp_path, capsys):
    out = tmp_path / "results"
    code = main(["score", "--predictions", *map(str, systems), "--judge", "openai:judge", "--source", str(synthetic_hub),
                 "--base-url", judge_server.base_url, "--output-dir", str(out)])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["a.json", "b.json", "c.json"]
    assert json.loads((out / "a.json").read_text())["items"] == json.loads((out / "c.json").read_text())["items"]
    assert "results written to" in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, message",
    [
        ([], "need --output-dir"),
        (["--output-dir", "x", "--output", "y.json"], "not both"),
        (["--output-dir", "x", "--replicas", "2"], "--replicas only apply with --executor ray"),
        (["--output-dir", "x", "--tensor-parallel-size", "2"], "--tensor-parallel-size applies to vllm"),
        (["--output-dir", "x", "--executor", "ray", "--gpus-per-replica", "1"], "--gpus-per-replica applies to hf"),
    ],
)
def test_flags_that_do_not_fit_are_one_line_errors(extra, message, systems, synthetic_hub, judge_server, capsys):
    code = main(["score", "--predictions", *map(str, systems), "--judge", "openai:judge", "--source", str(synthetic_hub),
                 "--base-url", judge_server.base_url, *extra])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert message in err
    assert len(judge_server.calls) == 0


def test_same_named_predictions_files_are_refused(systems, tmp_path, synthetic_hub, capsys):
    other = tmp_path / "elsewhere"
    other.mkdir()
    twin = other / "a.jsonl"
    twin.write_text(systems[0].read_text())
    code = main(["score", "--predictions", str(systems[0]), str(twin), "--judge", "openai:judge", "--source", str(synthetic_hub),
                 "--output-dir", str(tmp_path / "out")])
    assert code == 2
    assert "same name" in capsys.readouterr().err
