"""`bespoke import`: what is not a framework's run of BESPOKE is refused in one line naming the file, exit 2,
nothing written. (Runs imported for real: test_framework_parity.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bespoke_cli.cli import main
from bespoke_dataset import SAMPLE_DIR


def refused(capsys: pytest.CaptureFixture, *paths: str) -> str:
    assert main(["import", *paths, "--output", "out.json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert not Path("out.json").exists() and not Path("out").exists()
    return err


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_missing_file_a_folder_and_another_kind_of_file_are_named(here: Path, capsys: pytest.CaptureFixture) -> None:
    assert "missing.eval: no such file" in refused(capsys, "missing.eval")
    (here / "logs").mkdir()
    assert "logs: a folder" in refused(capsys, "logs")
    (here / "notes.txt").write_text("hello\n", encoding="utf-8")
    assert "notes.txt: neither an inspect log" in refused(capsys, "notes.txt")


def test_lm_eval_results_json_points_to_the_samples_beside_it(here: Path, capsys: pytest.CaptureFixture) -> None:
    (here / "results_2026-12-05T00-00-00.json").write_text(json.dumps({"results": {}}), encoding="utf-8")
    assert "samples_*.jsonl" in refused(capsys, "results_2026-12-05T00-00-00.json")


def test_a_predictions_file_is_not_lm_eval_samples(here: Path, capsys: pytest.CaptureFixture) -> None:
    err = refused(capsys, str(SAMPLE_DIR / "predictions.jsonl"))
    assert "predictions.jsonl: line 1 is not a sample lm-eval logged" in err


def test_samples_of_another_task_hold_no_bespoke_item(here: Path, capsys: pytest.CaptureFixture) -> None:
    sample = {"doc_id": 0, "doc": {"question": "2+2"}, "resps": [["4"]], "filtered_resps": ["4"], "filter": "none"}
    (here / "samples_gsm8k_2026.jsonl").write_text(json.dumps(sample) + "\n", encoding="utf-8")
    assert "samples_gsm8k_2026.jsonl: line 1" in refused(capsys, "samples_gsm8k_2026.jsonl")


def test_a_file_that_is_no_inspect_log_is_named(here: Path, capsys: pytest.CaptureFixture) -> None:
    (here / "run.eval").write_bytes(b"not a zip")
    assert "run.eval: not an inspect log that can be read" in refused(capsys, "run.eval")
    (here / "run.json").write_text("{}", encoding="utf-8")
    assert "run.json: not an inspect log that can be read" in refused(capsys, "run.json")
