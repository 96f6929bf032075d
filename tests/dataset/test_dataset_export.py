"""Export to a typed Hub-ready folder, plain `datasets.load_dataset` on it, and the push (HfApi mocked)."""

from __future__ import annotations

import datasets
import pytest
import yaml
from dataset_helpers import FakeHfApi

import bespoke_dataset.exporting as export_module
from bespoke_dataset import CONFIGS, FEATURES, load
from bespoke_dataset.atomic import FolderNotOursError
from bespoke_dataset.exporting import export, push_to_hub
from bespoke_dataset.source import resolve_source


def card_yaml(folder):
    text = (folder / "README.md").read_text()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1]), text


@pytest.fixture(scope="module")
def exported(synthetic_hub, tmp_path_factory):
    return export(synthetic_hub, tmp_path_factory.mktemp("export") / "out", cache_dir=tmp_path_factory.mktemp("c"))


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS)
def test_round_trip_through_load_dataset(exported, synthetic_hub, tmp_path, config):
    plain = datasets.load_dataset(str(exported), config, split="test", cache_dir=str(tmp_path))
    assert plain.features == FEATURES[config]
    assert plain.to_list() == load(config, source=synthetic_hub, cache_dir=tmp_path).to_list()


def test_card_declares_configs_splits_features_and_citation(exported):
    meta, text = card_yaml(exported)
    assert meta["license"] == "mit"
    assert [c["config_name"] for c in meta["configs"]] == list(CONFIGS)
    assert all(c["data_files"] == [{"split": "test", "path": f"{c['config_name']}/test-00000-of-00001.parquet"}]
               for c in meta["configs"])
    infos = {i["config_name"]: i for i in meta["dataset_info"]}
    assert infos["benchmark"]["splits"][0]["num_examples"] == 20
    assert datasets.Features._from_yaml_list(infos["rj_pairs"]["features"]) == FEATURES["rj_pairs"]
    assert "{{" not in text
    assert "}}" not in text.replace("}}\n```", "")
    assert "kim2025bespokebenchmarksearchaugmentedlarge" in text
    assert "arxiv.org/abs/2509.21106" in text
    assert "Synthetic data." in text  # the source was synthetic, and the card says so
    for field in ("need_alignment", "gold_information_need", "history_ids", "search_queries", "claims"):
        assert field in text


def test_github_source_exports_what_it_has(synthetic_github, tmp_path):
    out = export(synthetic_github, tmp_path / "out", cache_dir=tmp_path / "cache")
    meta, _ = card_yaml(out)
    assert [c["config_name"] for c in meta["configs"]] == [c for c in CONFIGS if c != "histories"]
    assert not (out / "histories").exists()
    bench = datasets.load_dataset(str(out), "benchmark", split="test", cache_dir=str(tmp_path / "hf"))
    assert len(bench) == 20


def test_failed_export_leaves_the_previous_folder_untouched(synthetic_hub, tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("previous export")
    calls = []

    def failing_load(config, source, cache_dir=None):
        calls.append(config)
        if len(calls) == 3:
            raise RuntimeError("disk full")
        return load(config, source, cache_dir=cache_dir)

    monkeypatch.setattr(export_module, "load", failing_load)
    with pytest.raises(RuntimeError, match="disk full"):
        export(synthetic_hub, out, cache_dir=tmp_path / "cache", force=True)
    assert [p.name for p in tmp_path.iterdir() if p.name != "cache"] == ["out"]  # no temp folder left
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_push_to_hub_uploads_the_exported_folder(exported, monkeypatch):
    monkeypatch.setattr("huggingface_hub.HfApi", FakeHfApi)
    url = push_to_hub(exported, "org/bespoke-typed", token="hf_secret")
    api = FakeHfApi.instances[-1]
    assert api.token == "hf_secret"
    assert api.calls[0] == ("create_repo", {"repo_id": "org/bespoke-typed", "repo_type": "dataset",
                                            "private": False, "exist_ok": True})
    name, upload = api.calls[1]
    assert name == "upload_folder"
    assert upload["folder_path"] == str(exported)
    assert upload["repo_id"] == "org/bespoke-typed"
    assert upload["repo_type"] == "dataset"
    assert url.endswith("/commit/1")
    assert "hf_secret" not in url


def test_resolved_source_record_is_what_results_store(synthetic_hub):
    record = resolve_source(synthetic_hub).record()
    assert record["source"] == str(synthetic_hub)
    assert record["revision"] is None
    assert len(record["fingerprint"]) == 64


def test_export_into_a_repo_clone_keeps_what_is_not_the_export(synthetic_hub, synthetic_github, tmp_path):
    out = tmp_path / "clone"
    (out / ".git" / "objects").mkdir(parents=True)
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / ".gitattributes").write_text("*.parquet filter=lfs\n")
    (out / "NOTES.md").write_text("mine")
    (out / "README.md").write_text("an old card")
    with pytest.raises(FolderNotOursError, match="--force"):  # a fresh clone holds no export: forced once
        export(synthetic_hub, out, cache_dir=tmp_path / "cache")
    assert (out / "README.md").read_text() == "an old card"
    export(synthetic_hub, out, cache_dir=tmp_path / "cache", force=True)
    assert (out / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert (out / ".git" / "objects").is_dir()
    assert (out / ".gitattributes").read_text() == "*.parquet filter=lfs\n"
    assert (out / "NOTES.md").read_text() == "mine"
    meta, _ = card_yaml(out)
    assert [c["config_name"] for c in meta["configs"]] == list(CONFIGS)
    assert sorted(p.name for p in out.iterdir()) == sorted([".git", ".gitattributes", "NOTES.md", "README.md", "eval.yaml",
                                                            "SYNTHETIC.md", *CONFIGS])  # the source's marker too
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left
    # a source without histories: the stale histories folder of the previous export goes, the rest stays;
    # the folder now holds an export, so no force is needed
    export(synthetic_github, out, cache_dir=tmp_path / "cache")
    assert not (out / "histories").exists()
    assert (out / ".git" / "HEAD").exists()
    assert (out / "NOTES.md").exists()
    bench = datasets.load_dataset(str(out), "benchmark", split="test", cache_dir=str(tmp_path / "hf"))
    assert len(bench) == 20


def test_one_synthetic_marker(tmp_path):
    import inspect

    from bespoke_dataset import source, synthetic

    assert '"SYNTHETIC.md"' not in inspect.getsource(synthetic) + inspect.getsource(export_module)
    release = synthetic.write_release(tmp_path / "r", users=1, queries_per_user=1, sessions=4, shots_per_query=1,
                                      meta_test_per_query=1)
    assert (release / source.SYNTHETIC_MARKER).is_file()
