"""The same release in the other layouts the real one plausibly has reads the same, and says how it read it.

`layout_variants.rewrite` turns the synthetic Hub-layout release into one row per judged response (a
`response_list` of one, or the response object itself), other query-id spellings, UUID and integer row ids,
scores as text and floats, claims as a JSON list or one a line, rubrics as JSON, Google activity text and
JSON for searches, JSON chats: every config must come out as from the original.
"""

from __future__ import annotations

import json
import shutil

import pytest
from dataset_helpers import copy_release, edit_table

from bespoke_cli.cli import main
from bespoke_dataset import BespokeDataWarning, check, load
from bespoke_dataset.reading.timestamps import instant
from bespoke_dataset.rows import load_rows
from bespoke_dataset.synthetic.layouts import SHOTS, VARIANTS, rewrite

SAME_RECORDS = ("queries", "rj_pairs", "meta_test", "gold_claims", "rubrics", "benchmark")


@pytest.fixture(scope="module")
def variants(synthetic_hub, tmp_path_factory):
    root = tmp_path_factory.mktemp("variants")
    return {variant: rewrite(synthetic_hub, root / variant, variant) for variant in VARIANTS}


@pytest.fixture(scope="module")
def original(synthetic_hub):
    with pytest.warns(BespokeDataWarning):  # the synthetic histories hold a few undated, unlabelled sessions
        return {config: load_rows(config, synthetic_hub) for config in (*SAME_RECORDS, "histories")}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("config", SAME_RECORDS)
def test_every_config_reads_the_same_in_every_layout(variants, original, variant, config):
    assert load_rows(config, variants[variant]) == original[config]


@pytest.mark.parametrize("variant", VARIANTS)
def test_histories_keep_ids_times_queries_and_turns(variants, original, variant):
    with pytest.warns(BespokeDataWarning):
        rewritten = load_rows("histories", variants[variant])
    before = original["histories"]
    assert [(s["user"], s["id"], s["source"]) for s in rewritten] == [(s["user"], s["id"], s["source"]) for s in before]
    for new, old in zip(rewritten, before, strict=True):
        assert new["text"] != old["text"] or not (old["turns"] or old["search_queries"]), old["id"]
        assert (new["timestamp"] is None) == (old["timestamp"] is None), old["id"]
        if old["timestamp"]:  # the rewrite writes the same moments in UTC: the zone is kept, the instant is the same
            assert instant(new["timestamp"]) == instant(old["timestamp"]), old["id"]
        assert new["search_queries"] == old["search_queries"], old["id"]
        assert new["turns"] == old["turns"], old["id"]
        assert set(new["urls"]) == set(old["urls"]), old["id"]
    zoned = [s["timestamp"] for s in rewritten if s["timestamp"] and s["source"] == "search"]
    assert zoned and all(t.endswith("+00:00") for t in zoned)


def test_a_variant_loads_through_datasets_as_the_original(variants, synthetic_hub, tmp_path):
    for config in ("benchmark", "meta_test"):
        assert load(config, variants["response_objects"], cache_dir=tmp_path).to_list() == \
            load(config, synthetic_hub, cache_dir=tmp_path).to_list()


EXPECTED_FORMS = {
    "per_response": {"evaluation_shot": ["response_list payload 100", "queries in one row per response 20"],
                     "gold_information": ["JSON list 20"], "personalized_rubric": ["JSON string 20"],
                     "search_history": ["activity text"], "chat_history": ["json messages"]},
    "response_objects": {"evaluation_shot": ["one response object 100", "queries in one row per response 20"],
                         "gold_information": ["text, one claim a line 20"], "personalized_rubric": ["JSON list 20"],
                         "search_history": ["json activity"], "chat_history": ["json messages"]},
    "per_item": {"evaluation_shot": ["response_list payload 100", "queries in one row per response 20"],
                 "gold_information": ["text, one claim a line 80", "queries in several rows 20"],
                 "personalized_rubric": ["text 80", "queries in several rows 20"],
                 "search_history": ["activity text"], "chat_history": ["json messages"]},
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_info_check_says_how_each_table_was_read(variants, original, variant, capsys):
    assert main(["info", "--check", "--source", str(variants[variant])]) == 0
    out = capsys.readouterr().out
    blocks = _blocks(out)
    for table, forms in EXPECTED_FORMS[variant].items():
        for form in forms:
            assert form in blocks[table], (table, form, blocks[table])
    assert blocks["evaluation_shot"].startswith("evaluation_shot      100 rows, 20 queries, responses per query "
                                                "(min/median/max) 5/5/5")
    assert "claims per query (min/median/max) 4/4/4" in blocks["gold_information"]
    assert "query ids normalised 20" in blocks["queries"]
    report = check(variants[variant])
    chats = [s for s in original["histories"] if s["source"] == "chat"]
    assert report.table("chat_history").figures == {"with a time": sum(1 for s in chats if s["timestamp"]),
                                                    "with turns": sum(1 for s in chats if s["turns"])}
    assert report.configs == {config: len(rows) for config, rows in original.items()} | {"histories": 60}
    if variant == "response_objects":
        counts = report.table("evaluation_shot").counts
        assert counts["scores written as text"] + counts["scores written as whole floats"] == 400
    assert not report.errors


def _blocks(out: str) -> dict[str, str]:
    """`info --check` output by table: each table's first line and the indented lines under it."""
    blocks: dict[str, str] = {}
    name = None
    for line in out.splitlines():
        if line and not line.startswith(" "):
            name = line.split()[0]
            blocks[name] = line
        elif name is not None:
            blocks[name] += "\n" + line
    return blocks


def _set_score(row_number: int, score: object):
    def edit(rows):
        payload = json.loads(rows[row_number]["evaluation_shot_value"])
        payload["response_list"][0]["tone"]["score"] = score
        rows[row_number]["evaluation_shot_value"] = json.dumps(payload)
        return rows
    return edit


def test_one_summary_warning_per_table_counts_rows_and_reasons(variants, tmp_path):
    release = copy_release(variants["per_response"], tmp_path / "broken")
    edit_table(release, SHOTS, _set_score(3, "good"))
    edit_table(release, SHOTS, _set_score(40, 4.5))
    edit_table(release, SHOTS, lambda rows: rows[:11] + [dict(rows[10])] + rows[11:])  # an exact repeat of row 10
    with pytest.warns(BespokeDataWarning) as caught:
        pairs = load_rows("rj_pairs", release)
    ours = [str(w.message) for w in caught if issubclass(w.category, BespokeDataWarning)]
    assert len(ours) == 1
    lines = ours[0].split("\n")
    assert lines[0] == "evaluation_shot: 3 of 101 rows fell back"
    assert lines[1].startswith(f"  example dropped, score not an integer 1-5: 2 ({SHOTS} row 3, field "
                               "evaluation_shot_value.response_list[0].tone.score: 'good'; ")
    assert f"{SHOTS} row 41, field evaluation_shot_value.response_list[0].tone.score: 4.5)" in lines[1]  # after the repeat
    assert lines[2] == (f"  exact duplicate of an earlier response of its query, dropped: 1 ({SHOTS} row 11, "
                        "field evaluation_shot_value.response_list[0])")
    assert len(pairs) == 98
    report = check(release)
    shots = report.table("evaluation_shot")
    assert shots.fell_back == 3 and shots.rows == 101
    assert shots.fallbacks == {"example dropped, score not an integer 1-5": 2,
                               "exact duplicate of an earlier response of its query, dropped": 1}
    assert main(["info", "--check", "--strict", "--source", str(release)]) == 1


def test_a_rubric_written_as_a_json_object_reads_as_text(synthetic_hub, tmp_path):
    release = copy_release(synthetic_hub, tmp_path / "json-rubric")
    rubric = {"Tone": "warm and direct", "Content depth": ["name the tools", {"numbers": "cite them"}]}
    edit_table(release, "personalized_rubric/personalized_rubric.parquet",
               lambda rows: [{**rows[0], "personalized_rubric_value": json.dumps(rubric)}] + rows[1:])
    first = load_rows("rubrics", release)[0]
    assert first["rubric"] == "Tone: warm and direct\nContent depth:\n  name the tools\n  numbers: cite them"
    assert check(release).table("personalized_rubric").forms == {"JSON object": 1, "text": 19}


def test_info_check_names_a_config_it_cannot_read_and_checks_the_rest(synthetic_hub, tmp_path, capsys):
    release = copy_release(synthetic_hub, tmp_path / "no-rubrics")
    shutil.rmtree(release / "personalized_rubric")
    report = check(release)
    assert set(report.errors) == {"rubrics", "benchmark"}
    assert report.configs["rj_pairs"] == 100
    assert main(["info", "--check", "--source", str(release)]) == 1
    captured = capsys.readouterr()
    assert "error: rubrics: personalized_rubric/: missing table 'personalized_rubric'" in captured.out
    assert "error: 2 config(s) could not be read: rubrics, benchmark" in captured.err


def test_a_row_per_response_whose_text_is_under_response(synthetic_hub, original, tmp_path):
    release = copy_release(synthetic_hub, tmp_path / "response-key")

    def per_response(rows):
        out = []
        for row in rows:
            for item in json.loads(row["evaluation_shot_value"])["response_list"]:
                item["response"] = item.pop("contents")
                out.append({**row, "evaluation_shot_value": json.dumps(item)})
        return out

    edit_table(release, SHOTS, per_response)
    assert load_rows("rj_pairs", release) == original["rj_pairs"]


def test_several_claim_and_rubric_rows_per_query_load_and_score_as_one(variants, synthetic_hub, openai_server, tmp_path):
    """A release with one row per claim and per rubric item (`per_item`) loads through `datasets` as the original
    does, and its queries are judged with the very prompts of the original: claims in row order, rubric lines
    joined in row order."""
    from bespoke_metric.scoring.pipeline import score
    from bespoke_metric.testing.judge_responder import judge_answer

    release = variants["per_item"]
    assert load("benchmark", release, cache_dir=tmp_path).to_list() == load("benchmark", synthetic_hub, cache_dir=tmp_path).to_list()
    openai_server.responder = judge_answer
    rows = load_rows("benchmark", release)[:3]
    records = [{"user": r["user"], "query_id": r["query_id"], "response": r["shots"][0]["response"]} for r in rows]
    summaries, prompts = [], []
    for source in (release, synthetic_hub):
        calls = len(openai_server.calls)
        results = score(records, "openai:judge", source=str(source), base_url=openai_server.base_url, api_key="sk-test",
                        max_shots=1).to_json()
        summaries.append(results["summary"])
        prompts.append(sorted(json.dumps(call.body["messages"]) for call in openai_server.calls[calls:]))
    assert summaries[0] == summaries[1] and summaries[0]["items"] == 3 and not sum(summaries[0]["failures"].values())
    assert prompts[0] == prompts[1]
    assert rows[0]["claims"][1] in "".join(prompts[0]) and rows[0]["rubric"].split("\n")[1] in "".join(prompts[0])
