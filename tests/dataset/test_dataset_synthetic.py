"""The synthetic releases: public format, full size, determinism, and the planted facts other tests use."""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter

import bm25s
import pyarrow.parquet as pq
import pytest
from scipy.stats import spearmanr

from bespoke_dataset import DIMENSIONS, SAMPLE_DIR, BespokeDataWarning, check, load
from bespoke_dataset.errors import UserError
from bespoke_dataset.synthetic import META_KINDS, paraphrase, write_release, write_sample
from bespoke_dataset.synthetic.responses import KIND_SCORES


def truth(release):
    return json.loads((release / "synthetic_truth.json").read_text())["queries"]


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


@pytest.mark.slow
def test_full_release_has_the_real_sizes(synthetic_full, tmp_path):
    histories = load("histories", source=synthetic_full, cache_dir=tmp_path)
    assert Counter(histories["source"]) == {"search": 2153, "chat": 717}
    bench = load("benchmark", source=synthetic_full, cache_dir=tmp_path)
    assert len(bench) == 150
    assert len(set(bench["user"])) == 30
    assert Counter(bench["user"]).most_common()[-1][1] == 5
    assert all(len(row["shots"]) >= 5 for row in bench)
    per_user = Counter(histories["user"])
    assert max(per_user.values()) - min(per_user.values()) <= 2


def test_hub_tables_use_the_public_raw_format(synthetic_hub):
    queries = pq.read_table(synthetic_hub / "queries" / "query_table.parquet").to_pylist()
    assert set(queries[0]) == {"user", "query-id", "query", "gold_information_need"}
    forms = {q["query-id"].startswith("query-id_") for q in queries}
    assert forms == {True, False}  # ids written both as "6" and "query-id_6"
    shots = pq.read_table(synthetic_hub / "evaluation_shot" / "evaluation_shot.parquet").to_pylist()
    assert set(shots[0]) == {"user", "query-id", "id", "evaluation_shot_value"}
    payload = json.loads(shots[0]["evaluation_shot_value"])
    assert set(payload) == {"query", "gold_information_need", "response_list"}
    scores = [r[d]["score"] for s in shots for r in json.loads(s["evaluation_shot_value"])["response_list"]
              for d in DIMENSIONS]
    assert {type(s) for s in scores} == {int, str}  # some scores arrive as strings
    assert "SYNTHETIC" in (synthetic_hub / "SYNTHETIC.md").read_text()


def test_github_layout_files(synthetic_github):
    user_dir = synthetic_github / "evaluation_shot" / "user1"
    names = sorted(p.name for p in user_dir.iterdir())
    assert len(names) == 5
    assert all(re.fullmatch(r"query-id_\d+\.json", n) for n in names)
    stem = names[0].removesuffix(".json")
    assert (synthetic_github / "personalized_rubric" / "user1" / f"{stem}.txt").is_file()
    assert (synthetic_github / "gold_information" / "user1" / f"{stem}.json").is_file()
    assert not (synthetic_github / "queries").exists()
    assert not (synthetic_github / "chat_history").exists()


def test_same_seed_same_release_other_seed_other_release(tmp_path):
    settings = {"users": 2, "sessions": 20}
    a = write_release(tmp_path / "a", seed=3, **settings)
    b = write_release(tmp_path / "b", seed=3, **settings)
    c = write_release(tmp_path / "c", seed=4, **settings)
    for table in ("queries/query_table.parquet", "chat_history/chat_history.parquet",
                  "evaluation_shot/evaluation_shot.parquet"):
        assert pq.read_table(a / table).equals(pq.read_table(b / table))
        assert not pq.read_table(a / table).equals(pq.read_table(c / table))
    assert truth(a) == truth(b) != truth(c)


@pytest.mark.slow
def test_relevant_sessions_are_retrievable(synthetic_full, tmp_path):
    """The planted relevant sessions of a query are what lexical retrieval over that user's history finds."""
    planted = truth(synthetic_full)
    histories = load("histories", source=synthetic_full, cache_dir=tmp_path)
    queries = load("queries", source=synthetic_full, cache_dir=tmp_path)
    by_user: dict[str, list[dict]] = {}
    for row in histories:
        by_user.setdefault(row["user"], []).append(row)
    recalls = []
    for query in queries:
        relevant = set(planted[f"{query['user']}/{query['query_id']}"]["relevant_sessions"])
        sessions = by_user[query["user"]]
        assert 3 <= len(relevant) <= 5
        assert relevant <= {s["id"] for s in sessions}
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize([s["text"] for s in sessions], stopwords="en", show_progress=False),
                        show_progress=False)
        top, _ = retriever.retrieve(bm25s.tokenize([query["query"]], stopwords="en", show_progress=False),
                                    k=len(relevant), show_progress=False)
        recalls.append(len({sessions[i]["id"] for i in top[0]} & relevant) / len(relevant))
    assert sum(recalls) / len(recalls) > 0.6


def _overlap(a: str, b: str) -> float:
    return len(words(a) & words(b)) / len(words(a) | words(b))


def test_meta_test_responses_of_every_kind_carry_their_planted_scores(synthetic_hub, tmp_path):
    planted = truth(synthetic_hub)
    bench = {f"{r['user']}/{r['query_id']}": r for r in load("benchmark", source=synthetic_hub, cache_dir=tmp_path)}
    claims = {f"{r['user']}/{r['query_id']}": r["claims"] for r in load("gold_claims", source=synthetic_hub, cache_dir=tmp_path)}
    meta = load("meta_test", source=synthetic_hub, cache_dir=tmp_path)
    seen: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for row in meta:
        key = f"{row['user']}/{row['query_id']}"
        facts = planted[key]
        kind, source = facts["meta_test_kinds"][seen[key]], facts["meta_test_paraphrases"][seen[key]]
        conveyed = facts["meta_test_claims"][seen[key]]
        seen[key] += 1
        kinds[kind] += 1
        shots = bench[key]["shots"]
        scores = [row[d]["score"] for d in DIMENSIONS]
        if kind == "paraphrase":  # a close rewording of one example, with its scores
            assert row["response"] != shots[source]["response"]
            assert all(row[d] == shots[source][d] for d in DIMENSIONS)
            overlap = [_overlap(row["response"], s["response"]) for s in shots]
            assert max(range(len(shots)), key=overlap.__getitem__) == source
            assert overlap[source] > 0.7
            continue
        assert source is None
        assert all(abs(score - base) <= 1 for score, base in zip(scores, KIND_SCORES[kind], strict=True))  # rater noise
        for index in conveyed:
            assert claims[key][index] in row["response"] or paraphrase(claims[key][index]) in row["response"]
        if kind == "off_need":  # on-topic, no claim, judged as missing the need
            assert conveyed == []
            assert scores[0] <= 2
        if kind == "padded":  # every claim verbatim, in the longest answer of all
            assert all(c in row["response"] for c in claims[key])
            assert len(row["response"]) > max(len(s["response"]) for s in shots)
        if kind == "terse":  # shorter than every example, judged as meeting the need
            assert len(row["response"]) < min(len(s["response"]) for s in shots)
            assert scores[0] >= 4
    assert set(kinds) == set(META_KINDS)


def test_human_scores_do_not_follow_word_overlap(synthetic_full, tmp_path):
    """Across the held-out responses, overlap with the query's best example says little about the human
    need-alignment score: an answer built on the examples' words is not a good answer."""
    planted = truth(synthetic_full)
    bench = {f"{r['user']}/{r['query_id']}": r for r in load("benchmark", source=synthetic_full, cache_dir=tmp_path)}
    overlaps, scores, seen = [], [], Counter()
    for row in load("meta_test", source=synthetic_full, cache_dir=tmp_path):
        key = f"{row['user']}/{row['query_id']}"
        kind = planted[key]["meta_test_kinds"][seen[key]]
        seen[key] += 1
        if kind == "paraphrase":
            continue
        best = bench[key]["shots"][planted[key]["shot_quality"].index(5)]["response"]
        overlaps.append(_overlap(row["response"], best))
        scores.append(row["need_alignment"]["score"])
    assert len(scores) > 200
    assert abs(spearmanr(overlaps, scores).statistic) < 0.5


def test_shot_quality_orders_scores_and_claims(synthetic_hub, tmp_path):
    planted = truth(synthetic_hub)
    claims = {f"{r['user']}/{r['query_id']}": r["claims"] for r in load("gold_claims", source=synthetic_hub,
                                                                          cache_dir=tmp_path)}
    for row in load("benchmark", source=synthetic_hub, cache_dir=tmp_path):
        key = f"{row['user']}/{row['query_id']}"
        facts = planted[key]
        assert sorted(facts["shot_quality"]) == [1, 2, 3, 4, 5]
        for shot, quality, used in zip(row["shots"], facts["shot_quality"], facts["shot_claims"], strict=True):
            assert all(abs(shot[d]["score"] - quality) <= 1 for d in DIMENSIONS)
            for index in used:  # planted claims appear verbatim or as a close paraphrase
                claim = claims[key][index]
                assert claim in shot["response"] or paraphrase(claim) in shot["response"]
            if quality == 5:
                assert all(c in shot["response"] for c in claims[key])
            if quality == 1:
                assert used == []
                assert not any(c in shot["response"] for c in claims[key])


def test_bundled_sample_is_what_the_generator_writes(tmp_path):
    regenerated = write_sample(tmp_path / "sample")
    for config in ("benchmark", "histories", "meta_test"):
        assert load(config, source=regenerated, cache_dir=tmp_path).to_list() == \
            load(config, source="sample", cache_dir=tmp_path).to_list()
    assert (regenerated / "predictions.jsonl").read_text() == (SAMPLE_DIR / "predictions.jsonl").read_text()
    qualities = json.loads((regenerated / "synthetic_truth.json").read_text())["prediction_quality"]
    assert len(set(qualities.values())) >= 3  # mixed quality


def test_the_bundled_sample_reads_with_no_warning(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", BespokeDataWarning)
        for config in ("benchmark", "histories", "meta_test", "rj_pairs"):
            load(config, source="sample", cache_dir=tmp_path)
    assert check("sample").fallbacks == 0


def test_the_samples_release_written_with_notes_falls_back_on_its_one_note(noted_sample):
    chats = check(noted_sample).table("chat_history")
    assert (chats.fell_back, chats.rows) == (1, 11)
    assert chats.places == {"no readable time, kept in table order": "chat_history/chat_history.parquet row 9",
                            "no speaker turns, read as plain text": "chat_history/chat_history.parquet row 9"}


@pytest.mark.parametrize("kwargs, message", [
    ({"meta_test_per_query": 6}, "cannot exceed --shots-per-query"),
    ({"meta_test_per_query": 6, "shots_per_query": 8}, "cannot exceed 5"),
    ({"users": 0}, "at least 1"),
    ({"layout": "zip"}, "layout must be"),
    ({"queries_per_user": 40}, "at most"),
])
def test_invalid_settings_are_refused(tmp_path, kwargs, message):
    with pytest.raises(UserError, match=message):
        write_release(tmp_path / "x", **kwargs)
    assert not (tmp_path / "x").exists()
