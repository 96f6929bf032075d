"""The README's workflow on its own files (issue 20): `bespoke run --output results/NAME.json` keeps its
predictions, run file and cache in `results/NAME/`, and `bespoke leaderboard results/*.json` and
`bespoke space leaderboard --results results/` read such a folder: files that are evidently not results
files (a run file, a sweep's summary, a judge's meta-evaluation) are skipped with a note, and a file given
twice is ranked once. A rerun of the same command resumes from the companion files, an earlier version's
layout included."""

from __future__ import annotations

import glob
import json
import shutil
from pathlib import Path

import pytest
from output_lines import own_lines

from bespoke_cli.cli import main


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    return tmp_path


def run_args(model_dir: Path, server, output: str = "results/tiny.json") -> list[str]:
    return ["run", "--model", f"hf:{model_dir}", "--source", "sample", "--max-new-tokens", "8", "--limit", "3",
            "--judge", "openai:judge", "--base-url", server.base_url, "--api-key", "sk-test",
            "--no-guards",  # the tiny random model writes gibberish, which the guards would keep from the judge
            "--output", output]


@pytest.mark.slow
def test_run_keeps_its_companion_files_in_a_folder_beside_the_results(tiny_model_dir, judge_server, workdir, capsys):
    assert main(run_args(tiny_model_dir, judge_server)) == 0
    files = sorted(p.relative_to(workdir / "results").as_posix() for p in (workdir / "results").rglob("*") if p.is_file())
    assert files == ["tiny.json", "tiny/predictions.cache.sqlite", "tiny/predictions.jsonl", "tiny/predictions.run.json"]
    results = json.loads((workdir / "results" / "tiny.json").read_text())
    assert results["system"]["predictions"] == "tiny/predictions.jsonl"  # relative to the results file's folder
    assert glob.glob("results/*.json") == [str(Path("results") / "tiny.json")]  # only the results file
    capsys.readouterr()

    # the same command again: everything comes from the companion files, nothing is generated anew
    calls = len(judge_server.calls)
    assert main(run_args(tiny_model_dir, judge_server)) == 0
    assert "0 generated, 3 already there" in capsys.readouterr().out
    assert len(judge_server.calls) == calls * 2  # the judge has no --cache: it is asked again, and only it


@pytest.mark.slow
def test_a_run_begun_by_an_earlier_version_resumes_from_its_files(tiny_model_dir, judge_server, workdir, capsys):
    """0.1 kept the companions beside the results (`results/tiny.predictions.jsonl`, ...): still found."""
    assert main(run_args(tiny_model_dir, judge_server)) == 0
    folder = workdir / "results" / "tiny"
    for path in folder.iterdir():  # as 0.1 left them
        path.rename(workdir / "results" / f"tiny.{path.name}")
    folder.rmdir()
    earlier = workdir / "results" / "tiny.predictions.jsonl"
    before = earlier.read_text()
    capsys.readouterr()
    assert main(run_args(tiny_model_dir, judge_server)) == 0
    out = capsys.readouterr().out
    assert "0 generated, 3 already there" in out
    assert "system calls 0 (0 cached)" in out
    assert earlier.read_text() == before
    assert not folder.exists()
    assert json.loads((workdir / "results" / "tiny.json").read_text())["system"]["predictions"] == "tiny.predictions.jsonl"


@pytest.fixture
def results_folder(tiny_model_dir, judge_server, workdir, capsys) -> Path:
    """`results/` after two runs, with what else such a folder holds: a run file of `generate` and a sweep's
    summary beside the results files, and a meta-evaluation."""
    assert main(run_args(tiny_model_dir, judge_server, "results/tiny.json")) == 0
    assert main([*run_args(tiny_model_dir, judge_server, "results/tiny-history.json"), "--context", "history",
                 "--budget", "120"]) == 0
    results = workdir / "results"
    shutil.copy(results / "tiny" / "predictions.run.json", results / "generated.run.json")
    (results / "sweep.json").write_text(json.dumps({"grid": {"contexts": ["none", "history"]},
                                                    "cells": [{"name": "tiny", "status": "done"}]}))
    meta = json.loads((results / "tiny.json").read_text())
    meta["meta_eval"] = {"pooled": {"pearson": 0.8}}
    (results / "judge-meta-eval.json").write_text(json.dumps(meta))
    capsys.readouterr()
    return results


@pytest.mark.slow
def test_the_leaderboard_reads_a_results_folder_and_says_what_it_skipped(results_folder, capsys):
    files = sorted(glob.glob("results/*.json"))
    assert main(["leaderboard", *files, "results/tiny.json", "--resamples", "50"]) == 0  # one file given twice
    captured = capsys.readouterr()
    rows = [line for line in captured.out.splitlines() if line.startswith("| 1 ") or line.startswith("| 2 ")]
    assert len(rows) == 2  # the two systems, each once
    notes = [line for line in captured.err.splitlines() if line.startswith("note: skipped")]
    assert notes == [
        f"note: skipped {Path('results/generated.run.json')}: the run file of a generation (the system's settings), not a results file",
        f"note: skipped {Path('results/judge-meta-eval.json')}: a meta-evaluation of a judge, not a system's results",
        f"note: skipped {Path('results/sweep.json')}: a sweep's summary, not a results file",
    ]
    assert "error" not in captured.err
    assert main(["leaderboard", "results", "--resamples", "50"]) == 0  # the folder itself: the same table
    by_folder = capsys.readouterr()
    assert [line for line in by_folder.out.splitlines() if line.startswith(("| 1 ", "| 2 "))] == rows
    assert set(notes) < set(line for line in by_folder.err.splitlines() if line.startswith("note: skipped"))


@pytest.mark.slow
def test_a_copy_of_a_results_file_is_ranked_once(results_folder, capsys):
    shutil.copy("results/tiny.json", "results/tiny-copy.json")
    assert main(["leaderboard", "results/tiny.json", "results/tiny-copy.json", "--resamples", "50"]) == 0
    captured = capsys.readouterr()
    assert sum(line.startswith("| 1 ") for line in captured.out.splitlines()) == 1
    assert f"note: {Path('results/tiny-copy.json')} is a copy of {Path('results/tiny.json')}: ranked once" in captured.err


@pytest.mark.slow
def test_a_folder_with_no_results_file_is_one_error(results_folder, capsys):
    assert main(["leaderboard", "results/sweep.json"]) == 2
    err = own_lines(capsys.readouterr().err)
    assert err[-1] == "error: no results file among the 1 file(s) given"
    Path("results/nothing").mkdir()
    assert main(["leaderboard", "results/nothing"]) == 2
    assert own_lines(capsys.readouterr().err)[-1] == "error: no results file among the 1 file(s) and folder(s) given"


@pytest.mark.slow
def test_a_broken_results_file_is_still_an_error(results_folder, capsys):
    Path("results/broken.json").write_text('{"summary": {}, "items": [')
    assert main(["leaderboard", *glob.glob("results/*.json")]) == 2
    assert "results/broken.json: not valid JSON" in capsys.readouterr().err


@pytest.mark.slow
def test_the_leaderboard_space_ships_the_results_files_of_the_folder(results_folder, workdir, capsys):
    assert main(["space", "leaderboard", "--results", "results", "--out", "board", "--package-from", "registry"]) == 0
    shipped = sorted(p.relative_to(workdir / "board" / "results").as_posix() for p in (workdir / "board" / "results").rglob("*"))
    assert shipped == ["tiny-history.json", "tiny.json"]
    notes = [line for line in own_lines(capsys.readouterr().err) if line.startswith("note: skipped")]
    assert len(notes) == 5  # the two runs' run files in their companion folders, the copy of one, the sweep, the meta-eval
    assert any("tiny/predictions.run.json" in note for note in notes)
