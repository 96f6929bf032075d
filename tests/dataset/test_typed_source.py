"""An export is a source (issue 20): `bespoke export --out bespoke-typed`, then `--source bespoke-typed` for
every command (load, info, score, meta-eval, generate, export) reads the same records as the original, and
an export of synthetic data is still said to be synthetic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bespoke_cli.cli import main
from bespoke_dataset import load, resolve_source
from bespoke_dataset.exporting import export
from bespoke_dataset.features import CONFIGS
from bespoke_dataset.rows import load_rows
from bespoke_dataset.source import SYNTHETIC_MARKER


@pytest.fixture(scope="module")
def exported(synthetic_hub, synthetic_github, tmp_path_factory) -> dict[str, Path]:
    """`bespoke export` of the Hub-layout and the GitHub-layout synthetic releases."""
    root = tmp_path_factory.mktemp("typed")
    return {"hub": export(synthetic_hub, root / "bespoke-typed", cache_dir=root / "cache"),
            "github": export(synthetic_github, root / "github-typed", cache_dir=root / "cache")}


@pytest.mark.slow
def test_an_export_reads_back_as_the_records_it_was_made_of(exported, synthetic_hub, tmp_path):
    source = resolve_source(exported["hub"])
    assert source.layout == "typed"
    assert source.synthetic  # the release's marker came along
    for config in CONFIGS:
        original = load_rows(config, synthetic_hub)
        assert load_rows(config, exported["hub"]) == original
        assert list(load(config, exported["hub"], cache_dir=tmp_path / "cache")) == original


def test_an_export_without_a_config_names_what_it_holds(exported, capsys):
    with pytest.raises(ValueError, match=r"has no 'histories' config \(it holds: benchmark, gold_claims, "):
        load_rows("histories", exported["github"])


def test_info_on_an_export(exported, tmp_path, capsys):
    assert main(["info", "--source", str(exported["hub"]), "--cache-dir", str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    assert "(typed layout)" in out
    assert [line.split()[0] for line in out.splitlines()[1:]] == list(CONFIGS)


@pytest.mark.slow
def test_score_and_meta_eval_on_an_export(exported, synthetic_hub, judge_server, tmp_path, capsys):
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({"user": r["user"], "query_id": r["query_id"], "response": r["shots"][0]["response"]}) + "\n"
                                   for r in load_rows("benchmark", synthetic_hub)[:3]))
    judge = ["--judge", "openai:judge", "--base-url", judge_server.base_url, "--api-key", "sk-test"]
    on_export, on_original = tmp_path / "export.json", tmp_path / "original.json"
    assert main(["score", "--predictions", str(predictions), *judge, "--source", str(exported["hub"]), "--output", str(on_export)]) == 0
    assert main(["score", "--predictions", str(predictions), *judge, "--source", str(synthetic_hub), "--output", str(on_original)]) == 0
    a, b = (json.loads(path.read_text()) for path in (on_export, on_original))
    assert a["items"] == b["items"] and a["summary"] == b["summary"]
    assert a["data"]["synthetic"] is True
    assert main(["meta-eval", *judge, "--source", str(exported["hub"]), "--limit", "4", "--resamples", "50",
                 "--no-feedback-accuracy"]) == 0
    assert "synthetic release" in capsys.readouterr().out


@pytest.mark.slow
def test_generate_on_an_export(exported, tiny_model_dir, tmp_path):
    output = tmp_path / "p.jsonl"
    assert main(["generate", "--model", f"hf:{tiny_model_dir}", "--source", str(exported["hub"]), "--context", "history",
                 "--budget", "120", "--max-new-tokens", "4", "--limit", "2", "--output", str(output)]) == 0
    assert len(output.read_text().splitlines()) == 2


def test_export_an_export(exported, tmp_path):
    again = tmp_path / "again"
    assert main(["export", "--source", str(exported["hub"]), "--out", str(again), "--cache-dir", str(tmp_path / "cache")]) == 0
    assert (again / SYNTHETIC_MARKER).is_file()
    assert load_rows("benchmark", again) == load_rows("benchmark", exported["hub"])


def test_an_export_of_real_data_over_a_synthetic_one_drops_the_marker(exported, tmp_path):
    """The marker says where the data came from: an export of data that is not synthetic must not keep it."""
    real = tmp_path / "real"
    export(exported["hub"], real, cache_dir=tmp_path / "cache")
    (real / SYNTHETIC_MARKER).unlink()  # now a copy of the data that claims nothing
    out = tmp_path / "out"
    export(exported["hub"], out, cache_dir=tmp_path / "cache")
    assert (out / SYNTHETIC_MARKER).is_file()
    export(real, out, cache_dir=tmp_path / "cache")
    assert not (out / SYNTHETIC_MARKER).exists()
