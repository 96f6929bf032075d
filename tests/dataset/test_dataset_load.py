"""Loading every config from both local layouts, the bundled sample, the Hub (download mocked), the cache."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import datasets
import pytest
from dataset_helpers import copy_release, edit_table

import bespoke_dataset
from bespoke_dataset import (
    CONFIGS,
    FEATURES,
    BespokeDataError,
    BespokeDataWarning,
    load,
    normalise_query_id,
    query_key,
    resolve_source,
)
from bespoke_dataset.builder import BespokeBuilder
from bespoke_dataset.reading.raw import RawRelease

SHARED = ("queries", "rj_pairs", "meta_test", "gold_claims", "rubrics")


def truth(release: Path) -> dict:
    return json.loads((release / "synthetic_truth.json").read_text())


@pytest.mark.parametrize("config", CONFIGS)
def test_every_config_from_hub_layout_is_typed_and_complete(synthetic_hub, tmp_path, config):
    dataset = load(config, source=synthetic_hub, cache_dir=tmp_path)
    assert isinstance(dataset, datasets.Dataset)
    assert dataset.split == "test"
    assert dataset.features == FEATURES[config]
    expected = {"queries": 20, "histories": 60, "rj_pairs": 100, "meta_test": 40, "gold_claims": 20,
                "rubrics": 20, "benchmark": 20}
    assert len(dataset) == expected[config]


def test_benchmark_rows_join_everything(synthetic_hub, tmp_path):
    bench = load("benchmark", source=synthetic_hub, cache_dir=tmp_path)
    planted = truth(synthetic_hub)["queries"]
    histories = load("histories", source=synthetic_hub, cache_dir=tmp_path)
    ids_by_user: dict[str, list[str]] = {}
    for row in histories:
        ids_by_user.setdefault(row["user"], []).append(row["id"])
    assert [f"{r['user']}/{r['query_id']}" for r in bench] == sorted(
        planted, key=lambda k: (int(k.split("/")[0][4:]), int(k.split("/")[1])))
    for row in bench:
        key = f"{row['user']}/{row['query_id']}"
        assert row["query_id"].isdigit()
        assert len(row["shots"]) == 5
        assert len(row["claims"]) == 4
        assert row["rubric"]
        assert all(isinstance(s[d]["score"], int) and 1 <= s[d]["score"] <= 5
                   for s in row["shots"] for d in bespoke_dataset.DIMENSIONS)
        assert set(planted[key]["relevant_sessions"]) <= set(row["history_ids"])
        assert row["history_ids"] == ids_by_user[row["user"]]


def test_github_layout_gives_the_same_records(synthetic_hub, synthetic_github, tmp_path):
    assert resolve_source(synthetic_github).layout == "github"
    for config in SHARED:
        assert load(config, source=synthetic_github, cache_dir=tmp_path).to_list() == \
            load(config, source=synthetic_hub, cache_dir=tmp_path).to_list(), config
    hub = load("benchmark", source=synthetic_hub, cache_dir=tmp_path).to_list()
    github = load("benchmark", source=synthetic_github, cache_dir=tmp_path).to_list()
    assert all(row["history_ids"] == [] for row in github)
    assert [{**r, "history_ids": []} for r in hub] == github


def test_github_layout_has_no_histories(synthetic_github, tmp_path):
    with pytest.raises(BespokeDataError, match="GitHub layout has no histories"):
        load("histories", source=synthetic_github, cache_dir=tmp_path)


def test_histories_carry_parsed_structure(synthetic_hub, tmp_path):
    histories = load("histories", source=synthetic_hub, cache_dir=tmp_path)
    chats = [r for r in histories if r["source"] == "chat"]
    searches = [r for r in histories if r["source"] == "search"]
    assert len(searches) == 45
    assert len(chats) == 15  # the release's 3:1 search:chat ratio
    structured = [r for r in chats if r["text"].startswith("Conversation started")]
    assert structured
    assert all(r["timestamp"].startswith("2025-03") for r in structured)
    assert all(r["turns"][0]["role"] == "user" and r["turns"][1]["role"] == "assistant" for r in structured)
    assert all(r["turns"] == [] and r["timestamp"] is None for r in chats if r["text"].startswith("notes on"))
    assert all(r["search_queries"] and r["turns"] == [] for r in searches)
    assert any(r["urls"] for r in searches)
    assert all(url.startswith("https://") and url in r["text"] for r in searches for url in r["urls"])


def test_sample_loads_and_matches_its_predictions(tmp_path):
    bench = load("benchmark", source="sample", cache_dir=tmp_path)
    assert len(bench) == 15
    assert len(set(bench["user"])) == 3
    lines = (bespoke_dataset.SAMPLE_DIR / "predictions.jsonl").read_text().splitlines()
    predictions = [json.loads(line) for line in lines]
    assert {(p["user"], p["query_id"]) for p in predictions} == set(zip(bench["user"], bench["query_id"], strict=True))
    assert all(p["response"].strip() for p in predictions)
    assert "SYNTHETIC" in (bespoke_dataset.SAMPLE_DIR / "SYNTHETIC.md").read_text()
    assert sum(f.stat().st_size for f in bespoke_dataset.SAMPLE_DIR.rglob("*") if f.is_file()) < 500_000


class BuildCounter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.builds: list[str] = []
        original = BespokeBuilder._generate_examples

        def counting(builder: BespokeBuilder):
            self.builds.append(builder.config.name)
            yield from original(builder)

        monkeypatch.setattr(BespokeBuilder, "_generate_examples", counting)


def test_second_load_is_served_from_the_cache(synthetic_hub, tmp_path, monkeypatch):
    counter = BuildCounter(monkeypatch)
    first = load("benchmark", source=synthetic_hub, cache_dir=tmp_path)
    second = load("benchmark", source=synthetic_hub, cache_dir=tmp_path)
    assert counter.builds == ["benchmark"]
    assert second.to_list() == first.to_list()
    assert second.cache_files == first.cache_files
    # named as the dataset, not after the module that defines the builder, built and served from the cache alike
    assert (first.info.builder_name, second.info.builder_name, second.info.dataset_name) == ("bespoke",) * 3


def test_changed_source_is_rebuilt(synthetic_hub, tmp_path, monkeypatch):
    release = copy_release(synthetic_hub, tmp_path / "release")
    counter = BuildCounter(monkeypatch)
    before = load("rubrics", source=release, cache_dir=tmp_path / "cache")
    edit_table(release, "personalized_rubric/personalized_rubric.parquet",
               lambda rows: [{**r, "personalized_rubric_value": "EDITED " + r["personalized_rubric_value"]}
                             for r in rows])
    after = load("rubrics", source=release, cache_dir=tmp_path / "cache")
    assert counter.builds == ["rubrics", "rubrics"]
    assert all(r.startswith("EDITED ") for r in after["rubric"])
    assert before["rubric"][0] == after["rubric"][0].removeprefix("EDITED ")


def test_new_package_version_is_rebuilt(synthetic_hub, tmp_path, monkeypatch):
    counter = BuildCounter(monkeypatch)
    load("queries", source=synthetic_hub, cache_dir=tmp_path)
    monkeypatch.setattr("bespoke_dataset.builder.__version__", "99.0.0")
    load("queries", source=synthetic_hub, cache_dir=tmp_path)
    assert counter.builds == ["queries", "queries"]


def test_same_content_elsewhere_has_the_same_fingerprint(synthetic_hub, tmp_path):
    copy = copy_release(synthetic_hub, tmp_path / "copy")
    assert bespoke_dataset.fingerprint(copy) == bespoke_dataset.fingerprint(synthetic_hub)
    edit_table(copy, "queries/query_table.parquet", lambda rows: rows[:-1])
    assert bespoke_dataset.fingerprint(copy) != bespoke_dataset.fingerprint(synthetic_hub)


def test_hub_source_downloads_a_pinned_snapshot(synthetic_hub, tmp_path, monkeypatch):
    commit = "0123456789abcdef0123456789abcdef01234567"
    snapshot = tmp_path / "hub" / "datasets--org--bespoke" / "snapshots" / commit
    calls = []

    def fake_snapshot_download(**kwargs):  # the network boundary; everything after it is real
        calls.append(kwargs)
        if not snapshot.exists():
            shutil.copytree(synthetic_hub, snapshot)
        return str(snapshot)

    monkeypatch.setattr("huggingface_hub.snapshot_download", fake_snapshot_download)
    bench = load("benchmark", source="org/bespoke", revision="v1.0", cache_dir=tmp_path / "cache")
    assert len(bench) == 20
    assert calls[0]["repo_id"] == "org/bespoke"
    assert calls[0]["repo_type"] == "dataset"
    assert calls[0]["revision"] == "v1.0"
    assert "queries/*.parquet" in calls[0]["allow_patterns"]
    record = resolve_source("org/bespoke", "v1.0").record()
    assert record == {"source": "org/bespoke", "revision": commit,
                      "fingerprint": bespoke_dataset.fingerprint(synthetic_hub)}


def test_available_configs_takes_a_source_as_load_does(synthetic_hub, synthetic_github):
    assert bespoke_dataset.available_configs("sample") == list(CONFIGS)
    assert bespoke_dataset.available_configs(str(synthetic_github)) == [c for c in CONFIGS if c != "histories"]
    assert bespoke_dataset.available_configs(synthetic_hub) == bespoke_dataset.available_configs(resolve_source(synthetic_hub))
    with pytest.raises(ValueError, match="applies to Hub repos only"):
        bespoke_dataset.available_configs(synthetic_hub, revision="main")


def test_unknown_sources_and_configs_are_refused(synthetic_hub, tmp_path):
    with pytest.raises(BespokeDataError, match="no such folder"):
        load("queries", source=str(tmp_path / "missing" / "deeper"), cache_dir=tmp_path)
    with pytest.raises(ValueError, match="unknown config 'query'"):
        load("query", source=synthetic_hub, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="applies to Hub repos only"):
        load("queries", source=synthetic_hub, revision="main", cache_dir=tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(BespokeDataError, match="not a BESPOKE release"):
        load("queries", source=tmp_path / "empty", cache_dir=tmp_path)


@pytest.mark.parametrize("raw, expected", [(6, "6"), ("6", "6"), ("06", "6"), ("query-id_6", "6"),
                                           ("query_id_12", "12"), (" Query-ID 3 ", "3"), (4.0, "4"),
                                           ("query_6", "6"), ("query6", "6"), ("Query-ID 6", "6"), ("q6", "6"),
                                           ("Q_06", "6"), ("6.0", "6"), ("query-id_6.0", "6"), ("0", "0")])
def test_query_ids_are_normalised(raw, expected):
    assert normalise_query_id(raw) == expected


@pytest.mark.parametrize("raw", ["six", "query-id_", "6a", 4.5, -1, None, True, "6/7", "6.5", "6.", "q", "",
                                 "query 6 7", "query-id_6.5", "user6", "-6"])
def test_unreadable_query_ids_are_refused(raw):
    with pytest.raises(ValueError, match="not a query id"):
        normalise_query_id(raw)


def test_query_key_is_canonical():
    assert query_key("user2", "query-id_06") == query_key("user2", 6) == query_key("user2", "6.0") == "user2/6"
    with pytest.raises(ValueError, match="not a query id"):
        query_key("user2", "six")


def test_github_rubric_with_crlf_gives_the_hub_string(synthetic_hub, synthetic_github, tmp_path):
    github = copy_release(synthetic_github, tmp_path / "github")
    file = min((github / "personalized_rubric" / "user2").glob("*.txt"))
    original = file.read_bytes().decode("utf-8")
    file.write_bytes((original.replace("\n", "  \r\n") + "\r\n").encode("utf-8"))
    raw = {row.where: row for row in RawRelease(github).rows("personalized_rubric")}
    assert "\r\n" in raw[file.relative_to(github).as_posix()].fields["personalized_rubric_value"]  # kept as written
    hub = copy_release(synthetic_hub, tmp_path / "hub")
    edit_table(hub, "personalized_rubric/personalized_rubric.parquet",  # the other layout, the same edit
               lambda rows: [{**r, "personalized_rubric_value": r["personalized_rubric_value"] + "\n"} for r in rows])
    from_github = load("rubrics", source=github, cache_dir=tmp_path / "c").to_list()
    assert from_github == load("rubrics", source=synthetic_github, cache_dir=tmp_path / "c").to_list()
    assert from_github == load("rubrics", source=hub, cache_dir=tmp_path / "c").to_list()
    assert from_github == load("rubrics", source=synthetic_hub, cache_dir=tmp_path / "c").to_list()
    assert all("\r" not in r["rubric"] and r["rubric"] == r["rubric"].rstrip() for r in from_github)


def test_warnings_of_a_build_are_repeated_when_the_cache_serves_it(synthetic_hub, tmp_path, monkeypatch):
    release = copy_release(synthetic_hub, tmp_path / "release")
    edit_table(release, "personalized_rubric/personalized_rubric.parquet", lambda rows: rows[1:])
    counter = BuildCounter(monkeypatch)
    with pytest.warns(BespokeDataWarning, match="benchmark: 1 of 20 queries fell back") as first:
        load("benchmark", source=release, cache_dir=tmp_path / "cache")
    with pytest.warns(BespokeDataWarning, match="benchmark: 1 of 20 queries fell back") as second:
        load("benchmark", source=release, cache_dir=tmp_path / "cache")
    assert counter.builds == ["benchmark"]  # the second load was served from the cache
    ours = [[(w.category, str(w.message)) for w in caught if issubclass(w.category, BespokeDataWarning)]
            for caught in (first, second)]
    assert ours[0] == ours[1]
    assert len(ours[0]) == 1
    assert ours[0][0][0] is BespokeDataWarning


def test_clean_data_builds_with_no_warning(synthetic_hub, tmp_path):
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error", BespokeDataWarning)
            load("benchmark", source=synthetic_hub, cache_dir=tmp_path)


def test_one_default_cache_dir(monkeypatch, tmp_path):
    from bespoke_dataset import loading, source

    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "c"))
    assert loading.default_cache_dir is source.default_cache_dir
    assert source.default_cache_dir() == tmp_path / "c"
    assert source.default_cache_dir("datasets") == tmp_path / "c" / "datasets"
    monkeypatch.delenv("BESPOKE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert source.default_cache_dir("embeddings") == tmp_path / "xdg" / "bespoke" / "embeddings"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert source.default_cache_dir() == Path.home() / ".cache" / "bespoke"


def test_load_without_cache_dir_uses_the_default(synthetic_hub, tmp_path, monkeypatch):
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path))
    load("queries", source=synthetic_hub)
    assert list((tmp_path / "datasets").rglob("dataset_info.json"))
