"""Nothing a user owns is destroyed, and what is written is shared as the umask says.

A folder-writing command (`synth --out`, `export --out`) refuses a non-empty folder it did not write
(exit 2, nothing touched) unless `--force`, and may replace one it wrote. Files and folders come out with
the umask's modes (0644/0755 under 022); temporary files stay private until they are renamed into place.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from output_lines import own_lines

import bespoke_dataset.atomic as atomic
from bespoke_cli.cli import main
from bespoke_dataset.atomic import FolderNotOursError, FolderOwner, atomic_dir, atomic_write_text, check_folder
from bespoke_metric.results import Results
from bespoke_metric.scoring.pipeline import write_results

SMALL = ["--users", "1", "--queries-per-user", "1", "--sessions", "4", "--shots-per-query", "1", "--meta-test-per-query", "1"]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def umask():
    """Set the process umask for a test, and put it back."""
    previous = os.umask(0o022)
    yield lambda value: os.umask(value)
    os.umask(previous)


def test_synth_refuses_a_folder_it_did_not_write(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("months of work")
    before = snapshot(out)
    assert main(["synth", "--out", str(out), *SMALL]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [line] = err.strip().splitlines()
    assert line.startswith(f"error: {out} is not empty")
    assert "--force" in line
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # no temporary sibling either


def test_synth_replaces_its_own_release_and_forced_any_folder(tmp_path, capsys):
    out = tmp_path / "release"
    assert main(["synth", "--out", str(out), *SMALL]) == 0
    assert main(["synth", "--out", str(out), *SMALL, "--seed", "1"]) == 0  # its own: replaced
    assert json.loads((out / "synthetic_truth.json").read_text())["settings"]["seed"] == 1
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "old.txt").write_text("x")
    assert main(["synth", "--out", str(foreign), *SMALL, "--force"]) == 0
    assert not (foreign / "old.txt").exists()
    assert (foreign / "SYNTHETIC.md").is_file()


def test_an_empty_folder_or_a_new_path_is_fine_and_a_file_is_not(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["synth", "--out", str(tmp_path / "empty"), *SMALL]) == 0
    assert main(["synth", "--out", str(tmp_path / "a" / "new"), *SMALL]) == 0
    (tmp_path / "file").write_text("mine")
    capsys.readouterr()
    assert main(["synth", "--out", str(tmp_path / "file"), *SMALL, "--force"]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert (tmp_path / "file").read_text() == "mine"


@pytest.mark.slow
def test_export_refuses_a_folder_that_holds_no_export(synthetic_hub, tmp_path, capsys):
    out = tmp_path / "notes"
    out.mkdir()
    (out / "README.md").write_text("my notes")
    assert main(["export", "--source", str(synthetic_hub), "--out", str(out), "--cache-dir", str(tmp_path / "c")]) == 2
    [line] = own_lines(capsys.readouterr().err)
    assert line.startswith(f"error: {out} is not empty")
    assert "--force" in line
    assert snapshot(out) == {"README.md": b"my notes"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes"]  # refused before anything was built
    # into an earlier export it writes again
    exported = tmp_path / "typed"
    assert main(["export", "--source", str(synthetic_hub), "--out", str(exported), "--cache-dir", str(tmp_path / "c")]) == 0
    (exported / "NOTES.md").write_text("kept")
    assert main(["export", "--source", str(synthetic_hub), "--out", str(exported), "--cache-dir", str(tmp_path / "c")]) == 0
    assert (exported / "NOTES.md").read_text() == "kept"


def test_one_guard_for_every_folder_writer(tmp_path):
    owner = FolderOwner("a report (report.json)", lambda folder: (folder / "report.json").is_file())
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "other.txt").write_text("x")
    with pytest.raises(FolderNotOursError, match="does not hold a report"):
        with atomic_dir(folder, owner) as tmp:
            (tmp / "report.json").write_text("{}")
    assert snapshot(folder) == {"other.txt": b"x"}
    with atomic_dir(folder, owner, force=True) as tmp:
        (tmp / "report.json").write_text("{}")
    with atomic_dir(folder, owner) as tmp:  # now it is its own
        (tmp / "report.json").write_text("{}")
    check_folder(tmp_path / "missing", owner, force=False, effect="replace it")


@pytest.mark.parametrize("mask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)])
def test_written_files_follow_the_umask(mask, file_mode, dir_mode, umask, make_results, tmp_path, capsys):
    umask(mask)
    results = tmp_path / "results.json"
    write_results(Results.from_json(make_results([[4, 4, 4, 4, 0.5]] * 5)), results)
    assert mode(results) == file_mode
    board = tmp_path / "board.md"
    assert main(["leaderboard", str(results), "--output", str(board), "--resamples", "50"]) == 0
    assert mode(board) == file_mode
    release = tmp_path / "release"
    assert main(["synth", "--out", str(release), *SMALL]) == 0
    assert mode(release) == dir_mode
    assert {mode(p) for p in release.rglob("*") if p.is_dir()} == {dir_mode}
    assert {mode(p) for p in release.rglob("*") if p.is_file()} == {file_mode}


def test_temporary_files_stay_private_until_renamed(umask, tmp_path, monkeypatch):
    umask(0o022)
    seen = []
    publish = atomic.publish_mode

    def watching(path):
        seen.append(mode(path))  # the temporary file, still being written
        publish(path)

    monkeypatch.setattr(atomic, "publish_mode", watching)
    atomic_write_text(tmp_path / "out.txt", "text")
    assert seen == [0o600]
    assert mode(tmp_path / "out.txt") == 0o644
