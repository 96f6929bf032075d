"""Bad input: a clear error naming table, row and field, or a warning saying what was dropped."""

from __future__ import annotations

import json
import re
import shutil
import warnings

import pytest
from dataset_helpers import copy_release, edit_table

from bespoke_dataset import BespokeDataError, BespokeDataWarning, load
from bespoke_dataset.rows import load_rows

SHOTS = "evaluation_shot/evaluation_shot.parquet"


@pytest.fixture
def release(synthetic_hub, tmp_path):
    return copy_release(synthetic_hub, tmp_path / "release")


def set_shot_score(rows, row, response, dim, score):
    payload = json.loads(rows[row]["evaluation_shot_value"])
    payload["response_list"][response][dim]["score"] = score
    rows[row]["evaluation_shot_value"] = json.dumps(payload)
    return rows


def test_missing_table_names_the_table(release, tmp_path):
    shutil.rmtree(release / "personalized_rubric")
    with pytest.raises(BespokeDataError, match=r"personalized_rubric/.*missing table 'personalized_rubric'"):
        load("rubrics", source=release, cache_dir=tmp_path)
    with pytest.raises(BespokeDataError, match="missing table"):
        load("benchmark", source=release, cache_dir=tmp_path)
    assert len(load("queries", source=release, cache_dir=tmp_path)) == 20  # other configs stay usable


def test_missing_column_names_the_file_and_column(release, tmp_path):
    edit_table(release, "queries/query_table.parquet",
               lambda rows: [{k: v for k, v in r.items() if k != "gold_information_need"} for r in rows])
    with pytest.raises(BespokeDataError) as error:
        load("queries", source=release, cache_dir=tmp_path)
    assert error.value.where == "queries/query_table.parquet"
    assert error.value.field == "gold_information_need"


def test_malformed_json_names_table_row_and_field(release, tmp_path):
    def corrupt(rows):
        rows[3]["evaluation_shot_value"] = rows[3]["evaluation_shot_value"][:-5]
        return rows

    edit_table(release, SHOTS, corrupt)
    with pytest.raises(BespokeDataError, match="malformed JSON") as error:
        load("rj_pairs", source=release, cache_dir=tmp_path)
    assert error.value.where == f"{SHOTS} row 3"
    assert error.value.field == "evaluation_shot_value"
    assert f"{SHOTS} row 3, field 'evaluation_shot_value'" in str(error.value)


def test_wrong_payload_shape_names_the_json_path(release, tmp_path):
    def corrupt(rows):
        payload = json.loads(rows[0]["evaluation_shot_value"])
        del payload["response_list"][2]["contents"]
        rows[0]["evaluation_shot_value"] = json.dumps(payload)
        return rows

    edit_table(release, SHOTS, corrupt)
    with pytest.raises(BespokeDataError) as error:
        load("benchmark", source=release, cache_dir=tmp_path)
    assert error.value.field == "evaluation_shot_value.response_list[2].contents"


@pytest.mark.parametrize("score", [7, 0, "good", 3.5, None])
def test_invalid_score_drops_that_example_with_a_warning(release, tmp_path, score):
    edit_table(release, SHOTS, lambda rows: set_shot_score(rows, 1, 2, "tone", score))
    with pytest.warns(BespokeDataWarning, match=rf"^evaluation_shot: 1 of 20 rows fell back\n  example dropped, score "
                                                rf"not an integer 1-5: 1 \({SHOTS} row 1, field evaluation_shot_value"
                                                rf"\.response_list\[2\]\.tone\.score: {re.escape(repr(score))}\)$") as caught:
        pairs = load("rj_pairs", source=release, cache_dir=tmp_path / "a")
    assert len([w for w in caught if issubclass(w.category, BespokeDataWarning)]) == 1
    assert len(pairs) == 99
    with pytest.warns(BespokeDataWarning):
        bench = load("benchmark", source=release, cache_dir=tmp_path / "b")
    sizes = [len(row["shots"]) for row in bench]
    assert sorted(sizes) == [4] + [5] * 19


def test_scores_written_as_strings_become_integers(release, tmp_path):
    edit_table(release, SHOTS, lambda rows: set_shot_score(rows, 0, 0, "need_alignment", " 4 "))
    row = load("rj_pairs", source=release, cache_dir=tmp_path)[0]
    assert row["need_alignment"]["score"] == 4


@pytest.mark.parametrize("table, what", [
    (SHOTS, "shots"), ("personalized_rubric/personalized_rubric.parquet", "rubric"),
    ("gold_information/gold_information.parquet", "claims")])
def test_query_without_shots_rubric_or_claims_is_dropped_from_benchmark(release, tmp_path, table, what):
    removed = {}

    def drop_first(rows):
        removed.update(rows[0])
        return rows[1:]

    edit_table(release, table, drop_first)
    with pytest.warns(BespokeDataWarning, match=rf"benchmark: 1 of 20 queries fell back\n  query left out, no {what}.*: 1 "
                                                rf"\({removed['user']}/\d+\)"):
        bench = load("benchmark", source=release, cache_dir=tmp_path)
    assert len(bench) == 19
    assert len(load("queries", source=release, cache_dir=tmp_path)) == 20


def test_query_whose_shots_were_all_invalid_counts_as_without_shots(release, tmp_path):
    def empty(rows):
        payload = json.loads(rows[5]["evaluation_shot_value"])
        payload["response_list"] = []
        rows[5]["evaluation_shot_value"] = json.dumps(payload)
        return rows

    edit_table(release, SHOTS, empty)
    with pytest.warns(BespokeDataWarning, match="no shots"):
        assert len(load("benchmark", source=release, cache_dir=tmp_path)) == 19


def test_duplicate_user_query_id_names_both_rows(release, tmp_path):
    def duplicate(rows):
        copy = dict(rows[2])
        copy["query-id"] = f"query-id_{copy['query-id'].removeprefix('query-id_')}"  # same id, other form
        return rows + [copy]

    edit_table(release, "queries/query_table.parquet", duplicate)
    with pytest.raises(BespokeDataError, match=r"row 20, field 'query-id': duplicate \(user, query_id\) "
                                               r"'user\d+/\d+', already given by .*row 2"):
        load("queries", source=release, cache_dir=tmp_path)


@pytest.mark.parametrize("table, config", [("gold_information/gold_information.parquet", "gold_claims"),
                                           ("personalized_rubric/personalized_rubric.parquet", "rubrics")])
def test_a_row_repeated_in_a_claim_or_rubric_table_is_read_once(release, tmp_path, table, config):
    # several rows of one query are read (one per claim or rubric item); a row given twice is not read twice
    before = load_rows(config, release)
    edit_table(release, table, lambda rows: rows + [dict(rows[2])])
    with pytest.warns(BespokeDataWarning, match=rf"exact repeat of an earlier row of its query, dropped: 1 \({table} row 20, "
                                                rf"field \w+: as {table} row 2\)"):
        assert load_rows(config, release) == before


def test_unreadable_query_id_names_the_row(release, tmp_path):
    def corrupt(rows):
        rows[4]["query-id"] = "query-six"
        return rows

    edit_table(release, "queries/query_table.parquet", corrupt)
    with pytest.raises(BespokeDataError, match=r"query_table.parquet row 4, field 'query-id': not a query id"):
        load("queries", source=release, cache_dir=tmp_path)


def test_duplicate_history_session_names_both_rows(release, tmp_path):
    edit_table(release, "search_history/search_history.parquet", lambda rows: rows + [rows[0]])
    with pytest.raises(BespokeDataError, match="duplicate session id"):
        load("histories", source=release, cache_dir=tmp_path)


def test_github_layout_errors_name_the_file(synthetic_github, tmp_path):
    release = copy_release(synthetic_github, tmp_path / "github")
    bad = sorted((release / "gold_information" / "user2").glob("*.json"))[0]
    bad.write_text('{"gold_information": "not a list"}')
    with pytest.raises(BespokeDataError) as error:
        load("gold_claims", source=release, cache_dir=tmp_path)
    assert error.value.where == bad.relative_to(release).as_posix()
    assert error.value.field == "gold_information_value.gold_information"


def test_not_a_parquet_file(release, tmp_path):
    (release / "queries" / "query_table.parquet").write_bytes(b"not parquet")
    with pytest.raises(BespokeDataError, match="not a readable parquet file"):
        load("queries", source=release, cache_dir=tmp_path)


# ---------------------------------------------------------------- session ids shared by the two history tables

CHATS, SEARCHES = "chat_history/chat_history.parquet", "search_history/search_history.parquet"


def number_from_zero(only_user=None):
    """Renumber each user's sessions 0, 1, ... within the table (as a release that numbers each table may)."""
    def edit(rows):
        counters: dict[str, int] = {}
        for row in rows:
            if only_user is None or row["user"] == only_user:
                row["id"] = str(counters.setdefault(row["user"], 0))
                counters[row["user"]] += 1
        return rows
    return edit


def ids_by_user(histories):
    ids: dict[str, list[str]] = {}
    for row in histories:
        ids.setdefault(row["user"], []).append(row["id"])
    return ids


def test_session_ids_shared_by_chat_and_search_are_qualified(release, tmp_path):
    edit_table(release, CHATS, number_from_zero())
    edit_table(release, SEARCHES, number_from_zero())
    histories = load("histories", source=release, cache_dir=tmp_path)
    assert len(histories) == 60
    for user, ids in ids_by_user(histories).items():
        assert len(set(ids)) == len(ids), user
    assert all(row["id"] == f"{row['source']}:{int(row['id'].split(':')[1])}" for row in histories)
    assert {"chat:0", "search:0"} <= set(ids_by_user(histories)["user1"])
    bench = load("benchmark", source=release, cache_dir=tmp_path)
    expected = ids_by_user(histories)
    for row in bench:
        assert row["history_ids"] == expected[row["user"]]
        assert len(set(row["history_ids"])) == len(row["history_ids"])


def test_only_users_whose_ids_collide_get_qualified_ids(release, tmp_path):
    edit_table(release, CHATS, number_from_zero("user2"))
    edit_table(release, SEARCHES, number_from_zero("user2"))
    ids = ids_by_user(load("histories", source=release, cache_dir=tmp_path))
    assert ids["user2"][0] == "chat:0"
    assert "search:0" in ids["user2"]
    assert all(":" not in i for user, user_ids in ids.items() if user != "user2" for i in user_ids)
    bench = load("benchmark", source=release, cache_dir=tmp_path)
    assert all(row["history_ids"] == ids[row["user"]] for row in bench)


def test_duplicate_session_after_qualifying_is_still_an_error(release, tmp_path):
    edit_table(release, CHATS, number_from_zero())
    edit_table(release, SEARCHES, lambda rows: number_from_zero()(rows) + [dict(rows[0])])
    with pytest.raises(BespokeDataError, match=r"duplicate session id 'search:0' for user\d+, already given by "
                                               r"search_history/search_history.parquet row 0"):
        load("histories", source=release, cache_dir=tmp_path)
    with pytest.raises(BespokeDataError, match="duplicate session id"):
        load("benchmark", source=release, cache_dir=tmp_path)


# ---------------------------------------------------------------- feedback and judgments of the wrong shape

def edit_judgment(row, response, dim, change):
    def edit(rows):
        payload = json.loads(rows[row]["evaluation_shot_value"])
        item = payload["response_list"][response]
        item[dim] = change(item[dim])
        rows[row]["evaluation_shot_value"] = json.dumps(payload)
        return rows
    return edit


@pytest.mark.parametrize("change, what", [
    (lambda j: {"score": j["score"]}, "missing"),
    (lambda j: {**j, "feedback": None}, "None"),
    (lambda j: {**j, "feedback": 3}, "3"),
])
def test_missing_or_non_text_feedback_warns_and_keeps_the_example(release, tmp_path, change, what):
    edit_table(release, SHOTS, edit_judgment(1, 2, "tone", change))
    with pytest.warns(BespokeDataWarning, match=rf"feedback missing or not text, example kept with empty feedback: 1 "
                                                rf"\({SHOTS} row 1, field evaluation_shot_value.response_list\[2\]"
                                                rf"\.tone\.feedback: {what}\)"):
        pairs = load("rj_pairs", source=release, cache_dir=tmp_path)
    assert len(pairs) == 100
    assert pairs[7]["tone"]["feedback"] == ""
    assert pairs[7]["index"] == 2


def test_feedback_key_in_another_case_is_the_same_key(release, tmp_path):
    edit_table(release, SHOTS, edit_judgment(0, 0, "tone", lambda j: {"Score": j["score"], "Feedback": "Too curt."}))
    with warnings.catch_warnings():
        warnings.simplefilter("error", BespokeDataWarning)
        row = load("rj_pairs", source=release, cache_dir=tmp_path)[0]
    assert row["tone"]["feedback"] == "Too curt."
    assert 1 <= row["tone"]["score"] <= 5


@pytest.mark.parametrize("judgment", ["great", None, [4, "fine"]])
def test_judgment_that_is_not_an_object_is_named_in_the_warning(release, tmp_path, judgment):
    edit_table(release, SHOTS, edit_judgment(1, 2, "tone", lambda j: judgment))
    with pytest.warns(BespokeDataWarning, match=rf"example dropped, judgment not an object with a score: 1 \({SHOTS} row 1, "
                                                rf"field evaluation_shot_value.response_list\[2\]\.tone: "
                                                rf"{re.escape(repr(judgment))}\)") as caught:
        pairs = load("rj_pairs", source=release, cache_dir=tmp_path)
    assert len(pairs) == 99
    assert not any("score not an integer" in str(w.message) for w in caught)


# ---------------------------------------------------------------- a local path that looks like a repo id

@pytest.mark.parametrize("failure", ["offline", "not found"])
def test_missing_folder_that_looks_like_a_repo_id_says_so(tmp_path, monkeypatch, failure):
    from huggingface_hub.utils import LocalEntryNotFoundError, OfflineModeIsEnabled

    def fake_snapshot_download(**kwargs):  # the network boundary
        if failure == "offline":
            raise OfflineModeIsEnabled("offline mode is enabled")
        raise LocalEntryNotFoundError("cannot find the requested files in the local cache")

    monkeypatch.setattr("huggingface_hub.snapshot_download", fake_snapshot_download)
    with pytest.raises(BespokeDataError, match="data/bespokee: no such local folder, and no Hub dataset repo of "
                                               "that name could be reached") as error:
        load("queries", source="data/bespokee", cache_dir=tmp_path)
    assert isinstance(error.value.__cause__, (LocalEntryNotFoundError, OfflineModeIsEnabled))
