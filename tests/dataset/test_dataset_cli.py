"""The data subcommands: `bespoke info`, `bespoke synth`, `bespoke export` (Hub upload mocked at HfApi)."""

from __future__ import annotations

import datasets
from dataset_helpers import FakeHfApi

from bespoke_cli.cli import main


def test_info_prints_every_config_and_its_size(synthetic_hub, tmp_path, capsys):
    assert main(["info", "--source", str(synthetic_hub), "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "hub layout" in out
    for config, rows in {"queries": 20, "histories": 60, "rj_pairs": 100, "meta_test": 40, "gold_claims": 20,
                         "rubrics": 20, "benchmark": 20}.items():
        assert any(line.split()[:2] == [config, str(rows)] for line in out.splitlines()), config


def test_info_on_the_bundled_sample(tmp_path, capsys):
    assert main(["info", "--source", "sample", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "source: sample" in out
    assert any(line.split()[:2] == ["benchmark", "15"] for line in out.splitlines())


def test_synth_writes_a_loadable_github_release(tmp_path, capsys):
    out = tmp_path / "gh"
    assert main(["synth", "--out", str(out), "--users", "2", "--sessions", "20", "--layout", "github"]) == 0
    assert str(out) in capsys.readouterr().out
    assert main(["info", "--source", str(out), "--cache-dir", str(tmp_path / "c")]) == 0
    out_text = capsys.readouterr().out
    assert "github layout" in out_text
    assert "histories" not in out_text
    assert any(line.split()[:2] == ["benchmark", "10"] for line in out_text.splitlines())


def test_export_and_push(synthetic_hub, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("huggingface_hub.HfApi", FakeHfApi)
    out = tmp_path / "export"
    assert main(["export", "--source", str(synthetic_hub), "--out", str(out), "--cache-dir", str(tmp_path / "c"),
                 "--push-to-hub", "org/typed"]) == 0
    assert "pushed to org/typed" in capsys.readouterr().out
    assert FakeHfApi.instances[-1].calls[1][1]["folder_path"] == str(out)
    assert 'load_dataset("org/typed", "benchmark", split="test")' in (out / "README.md").read_text()
    bench = datasets.load_dataset(str(out), "benchmark", split="test", cache_dir=str(tmp_path / "hf"))
    assert len(bench) == 20
