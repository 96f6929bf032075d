"""`bespoke build`: a release from a folder of users' data, end to end.

Rubrics and claims are written by a model behind the local OpenAI-compatible server (real HTTP), the
stand-in `author_answer`; the release must then load, check, score, meta-evaluate, generate and export like
the real one. The claims review round trip, resuming from the cache, the folder rule and every bad-input
line are checked from the command line.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import datasets
import pytest
from output_lines import own_lines

from bespoke_cli.cli import main
from bespoke_dataset import BespokeDataWarning, check, load, resolve_source
from bespoke_dataset.rows import load_rows
from bespoke_dataset.synthetic import write_user_data
from bespoke_metric.calls.scheduler import ParseError
from bespoke_metric.judging import prompts
from bespoke_metric.judging.authoring import parse_claims, parse_rubric
from bespoke_metric.testing.authoring_responder import author_answer, stub_claims
from bespoke_metric.testing.server import Fault, messages_of, serve

SECRET = "sk-secret-build-key"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


@pytest.fixture(scope="module")
def server():
    with serve(responder=author_answer) as running:
        yield running


@pytest.fixture
def fresh(server):
    server.reset()
    server.rule = None
    return server


@pytest.fixture(scope="module")
def given_data(tmp_path_factory):
    """Claims and rubrics given: no model needed."""
    return write_user_data(tmp_path_factory.mktemp("given") / "data")


@pytest.fixture(scope="module")
def model_data(tmp_path_factory):
    """Gold responses instead of claims, and no rubrics: both left to models."""
    return write_user_data(tmp_path_factory.mktemp("model") / "data", claims="gold_responses", rubrics=False)


def model_flags(server, cache: Path) -> list[str]:
    return ["--rubric-model", "openai:author", "--claim-model", "openai:author", "--base-url", server.base_url,
            "--api-key", SECRET, "--cache", str(cache)]


@pytest.fixture(scope="module")
def model_release(server, model_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("model-release")
    server.reset()
    assert main(["build", "--from", str(model_data), "--out", str(root / "release"),
                 *model_flags(server, root / "calls.sqlite")]) == 0
    return root / "release", [messages_of(call.body)[-1]["content"] for call in server.calls], root / "calls.sqlite"


def test_a_release_built_from_given_claims_and_rubrics_reads_like_the_input(given_data, tmp_path, capsys):
    out = tmp_path / "release"
    assert main(["build", "--from", str(given_data), "--out", str(out)]) == 0
    assert "3 users, 6 queries, 24 history sessions, 30 judged examples and 12 held-out, 24 claims" in capsys.readouterr().out
    queries = {(q["user"], q["query_id"]): q for q in read_jsonl(given_data / "queries.jsonl")}
    assert [(q["user"], q["query_id"]) for q in load_rows("queries", out)] == sorted(queries, key=lambda k: (int(k[0][4:]), int(k[1])))
    judged = Counter((j["user"], j["query_id"], j["response"]) for j in read_jsonl(given_data / "judgments.jsonl"))
    shots, meta = load_rows("rj_pairs", out), load_rows("meta_test", out)
    assert Counter((r["user"], r["query_id"], r["response"]) for r in shots + meta) == judged
    assert Counter((r["user"], r["query_id"]) for r in meta) == {key: 2 for key in queries}  # 30% of 7, rounded
    given_claims = {(c["user"], c["query_id"]): c["claims"] for c in read_jsonl(given_data / "claims.jsonl")}
    assert {(r["user"], r["query_id"]): r["claims"] for r in load_rows("gold_claims", out)} == given_claims
    given_rubrics = {(r["user"], r["query_id"]): r["rubric"] for r in read_jsonl(given_data / "rubrics.jsonl")}
    assert {(r["user"], r["query_id"]): r["rubric"] for r in load_rows("rubrics", out)} == given_rubrics
    sessions = {(s["user"], s["id"]): s for s in read_jsonl(given_data / "histories.jsonl")}
    with pytest.warns(BespokeDataWarning):
        histories = load_rows("histories", out)  # the synthetic data hold one unlabelled chat note (a fallback)
    assert {(s["user"], s["id"]): (s["source"], s["text"], s["timestamp"]) for s in histories} == {
        key: (s["source"], s["text"], s["timestamp"]) for key, s in sessions.items()}
    bench = load("benchmark", out, cache_dir=tmp_path / "cache")  # typed, through `datasets`
    assert len(bench) == 6 and all(len(row["shots"]) == 5 for row in bench)
    manifest = json.loads((out / "build.json").read_text())
    assert manifest["counts"]["meta_test"] == 12 and set(manifest["inputs"]) >= {"queries.jsonl", "judgments.jsonl"}
    assert resolve_source(out).synthetic  # built from synthetic users: figures from it say so
    assert not (out / "claims_review.jsonl").exists()


def test_the_split_is_seeded_and_a_share_out_of_range_is_refused(given_data, tmp_path, capsys):
    fingerprints = []
    for name, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        assert main(["build", "--from", str(given_data), "--out", str(tmp_path / name), "--seed", seed]) == 0
        fingerprints.append(resolve_source(tmp_path / name).fingerprint)
    assert fingerprints[0] == fingerprints[1] != fingerprints[2]
    assert main(["build", "--from", str(given_data), "--out", str(tmp_path / "none"), "--meta-test-share", "0"]) == 0
    assert load_rows("meta_test", tmp_path / "none") == [] and len(load_rows("rj_pairs", tmp_path / "none")) == 42
    assert main(["build", "--from", str(given_data), "--out", str(tmp_path / "bad"), "--meta-test-share", "1"]) == 2
    assert "--meta-test-share must be at least 0 and below 1, got 1.0" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_models_write_the_rubrics_and_claims_over_http(model_release, model_data):
    release, prompts_sent, cache = model_release
    assert len(prompts_sent) == 12  # one rubric and one claim extraction per query
    gold = {(g["user"], g["query_id"]): g["response"] for g in read_jsonl(model_data / "gold_responses.jsonl")}
    claims = {(r["user"], r["query_id"]): r["claims"] for r in load_rows("gold_claims", release)}
    assert claims == {key: stub_claims(response) for key, response in gold.items()}
    rubrics = load_rows("rubrics", release)
    assert all(r["rubric"].startswith("Need Alignment:\nServe this need: ") for r in rubrics)
    meta = {r["response"] for r in load_rows("meta_test", release)}
    shots = {r["response"] for r in load_rows("rj_pairs", release)}
    rubric_prompts = [p for p in prompts_sent if prompts.RUBRIC_SECTION in p]
    assert len(rubric_prompts) == 6
    assert all(not any(response in p for response in meta) for p in rubric_prompts)  # held-out responses unseen
    assert all(any(response in p for response in shots) for p in rubric_prompts)
    review = read_jsonl(release / "claims_review.jsonl")
    assert len(review) == sum(len(c) for c in claims.values()) and all(line["keep"] is True for line in review)
    manifest = json.loads((release / "build.json").read_text())
    assert manifest["rubrics"]["model"] == "openai:author"
    assert manifest["claims"]["prompt_version"] == prompts.AUTHORING_VERSION
    for path in [*release.rglob("*"), cache]:
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_reviewed_claims_are_accepted_without_asking_again(model_release, model_data, fresh, tmp_path, capsys):
    release, _, cache = model_release
    review = read_jsonl(release / "claims_review.jsonl")
    for line in review:
        line["keep"] = line["number"] != 1  # drop every query's first claim
    review[1]["claim"] = "An edited claim."
    accepted = tmp_path / "reviewed.jsonl"
    write_jsonl(accepted, review)
    out = tmp_path / "accepted"
    assert main(["build", "--from", str(model_data), "--out", str(out), "--accept", str(accepted),
                 *model_flags(fresh, cache)]) == 0
    assert "rubric: 0 calls, 6 from cache" in capsys.readouterr().out
    assert fresh.calls == []  # rubrics from the cache, claims from the review
    kept: dict[tuple[str, str], list[str]] = {}
    for line in review:
        if line["keep"]:
            kept.setdefault((line["user"], line["query_id"]), []).append(line["claim"])
    assert {(r["user"], r["query_id"]): r["claims"] for r in load_rows("gold_claims", out)} == kept
    assert "An edited claim." in kept[review[1]["user"], review[1]["query_id"]]
    assert read_jsonl(out / "claims_review.jsonl") == review  # the round trip keeps every line and flag
    assert json.loads((out / "build.json").read_text())["claims"]["kept"] == len(review) - 6
    review[0]["keep"] = "yes"
    write_jsonl(accepted, review)
    assert main(["build", "--from", str(model_data), "--out", str(out), "--accept", str(accepted)]) == 2
    assert f"error: {accepted} line 1: 'keep' must be true or false, got 'yes'" in capsys.readouterr().err


@pytest.mark.slow
def test_a_failed_build_writes_nothing_and_a_rerun_asks_only_what_failed(model_data, fresh, tmp_path, capsys):
    cache, out = tmp_path / "calls.sqlite", tmp_path / "release"
    user2 = [q["query"] for q in read_jsonl(model_data / "queries.jsonl") if q["user"] == "user2"]
    asks_user2 = lambda body: any(query in messages_of(body)[-1]["content"] for query in user2)  # noqa: E731
    fresh.rule = lambda record: Fault(status=400) if asks_user2(record.body) else None
    assert main(["build", "--from", str(model_data), "--out", str(out), *model_flags(fresh, cache)]) == 1
    err = capsys.readouterr().err
    assert "error: 2 of 6 rubrics could not be written (first: user2/" in err and "nothing was written" in err
    assert not out.exists()
    failed = [call for call in fresh.calls if call.status == 400]
    assert len(failed) == 2
    fresh.reset()
    fresh.rule = None
    assert main(["build", "--from", str(model_data), "--out", str(out), *model_flags(fresh, cache)]) == 0
    rubric_calls = [call for call in fresh.calls if prompts.RUBRIC_SECTION in messages_of(call.body)[-1]["content"]]
    assert len(fresh.calls) == 2 + 6  # the two rubrics that failed, then the claims
    assert len(rubric_calls) == 2 and all(asks_user2(call.body) for call in rubric_calls)
    assert len(load_rows("rubrics", out)) == 6


def tiny_input(folder: Path) -> Path:
    """A small input written by hand: two users, one query each, three judged responses each."""
    folder.mkdir()
    judgment = {dim: {"score": 4, "feedback": "Fine."} for dim in ("need_alignment", "content_depth", "tone",
                                                                   "explanation_style")}
    write_jsonl(folder / "queries.jsonl", [
        {"user": "ana", "query_id": 1, "query": "Which tent?", "gold_information_need": "A light tent for two."},
        {"user": "ben", "query_id": "q2", "query": "Best pan?", "gold_information_need": "A pan for eggs."}])
    write_jsonl(folder / "judgments.jsonl", [
        {"user": user, "query_id": qid, "response": f"Answer {n} for {user}.", **judgment}
        for user, qid in (("ana", 1), ("ben", 2)) for n in range(3)])
    write_jsonl(folder / "histories.jsonl", [
        {"user": "ana", "id": 1, "source": "chat",
         "text": json.dumps([{"role": "user", "content": "tents?"}, {"role": "assistant", "content": "Yes."}]),
         "timestamp": "2025-07-05T15:04:05+09:00"},
        {"user": "ben", "id": "s1", "source": "search", "text": "Searched for nonstick pan\nJul 5, 2025, 3:04:05 PM UTC"}])
    write_jsonl(folder / "claims.jsonl", [{"user": "ana", "query_id": "1", "claims": ["Two-person tents weigh 2 kg."]},
                                          {"user": "ben", "query_id": "2", "claims": ["Nonstick suits eggs."]}])
    write_jsonl(folder / "rubrics.jsonl", [{"user": "ana", "query_id": "1", "rubric": "Light."},
                                           {"user": "ben", "query_id": "2", "rubric": "Eggs."}])
    return folder


def test_a_clean_hand_written_input_builds_a_release_that_checks_clean(tmp_path, capsys):
    out = tmp_path / "release"
    assert main(["build", "--from", str(tiny_input(tmp_path / "data")), "--out", str(out)]) == 0
    assert main(["info", "--check", "--strict", "--source", str(out)]) == 0
    report = check(out)
    assert report.fallbacks == 0
    histories = {s["id"]: s for s in load_rows("histories", out)}
    assert histories["1"]["timestamp"] == "2025-07-05T15:04:05+09:00"  # the given time, zone kept
    assert histories["s1"]["timestamp"] == "2025-07-05T15:04:05+00:00" and histories["s1"]["search_queries"] == ["nonstick pan"]
    assert [len(load_rows("meta_test", out)), len(load_rows("rj_pairs", out))] == [2, 4]


def test_every_problem_of_the_input_is_one_line_naming_file_and_line(tmp_path, capsys):
    data = tiny_input(tmp_path / "data")
    judgments = read_jsonl(data / "judgments.jsonl")
    judgments[1]["user"] = "cleo"
    judgments[2]["tone"]["score"] = 6
    judgments = [j for j in judgments if j["user"] != "ben"]
    (data / "judgments.jsonl").write_text("".join(json.dumps(j) + "\n" for j in judgments) + "{not json\n")
    histories = read_jsonl(data / "histories.jsonl")
    histories[1]["source"] = "browser"
    write_jsonl(data / "histories.jsonl", histories)
    out = tmp_path / "release"
    assert main(["build", "--from", str(data), "--out", str(out)]) == 2
    err = own_lines(capsys.readouterr().err)
    assert err == [
        f"error: {data}/histories.jsonl line 2: 'source' must be 'chat' or 'search', got 'browser'",
        f"error: {data}/judgments.jsonl line 2: unknown user 'cleo' (not in queries.jsonl)",
        f"error: {data}/judgments.jsonl line 3: 'tone.score' 6 is out of range 1-5",
        f"error: {data}/judgments.jsonl line 4: not JSON (Expecting property name enclosed in double quotes)",
        f"error: {data}/queries.jsonl line 1: query ana/1 has 1 judged response(s) in judgments.jsonl; at least 2 are "
        "needed (examples for the judge and held-out ones)",
        f"error: {data}/queries.jsonl line 2: query ben/2 has 0 judged response(s) in judgments.jsonl; at least 2 are "
        "needed (examples for the judge and held-out ones)",
        "error: 6 problem(s) in the input; nothing was written",
    ]
    assert not out.exists()
    (data / "rubrics.jsonl").unlink()
    assert main(["build", "--from", str(data), "--out", str(out), "--rubric-model", "openai:m",
                 "--claim-model", "openai:m", "--base-url", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert f"error: {data}/claims.jsonl: claims are given, but --claim-model/--accept read them from gold_responses.jsonl" in err


def test_a_folder_that_no_build_wrote_is_refused(given_data, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert main(["build", "--from", str(given_data), "--out", str(out)]) == 2
    assert "is not empty and does not hold a built release (build.json)" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "keep me"
    assert main(["build", "--from", str(given_data), "--out", str(out), "--force"]) == 0
    assert main(["build", "--from", str(given_data), "--out", str(out)]) == 0  # an earlier build may be replaced


@pytest.mark.slow
def test_a_built_release_scores_meta_evaluates_generates_and_exports(model_release, fresh, tmp_path):
    release = model_release[0]
    endpoint = ["--base-url", fresh.base_url, "--api-key", SECRET]
    predictions = tmp_path / "predictions.jsonl"
    write_jsonl(predictions, [{"user": q["user"], "query_id": q["query_id"], "response": q["gold_information_need"]}
                              for q in load_rows("queries", release)])
    results = tmp_path / "results.json"
    assert main(["score", "--source", str(release), "--predictions", str(predictions), "--judge", "openai:judge",
                 *endpoint, "--output", str(results)]) == 0
    scored = json.loads(results.read_text())
    assert scored["summary"]["items"] == 6 and scored["summary"]["need_alignment"] is not None
    assert main(["meta-eval", "--source", str(release), "--judge", "openai:judge", *endpoint,
                 "--no-feedback-accuracy", "--resamples", "20"]) == 0
    generated = tmp_path / "generated.jsonl"
    assert main(["generate", "--model", "openai:system", *endpoint, "--source", str(release), "--context", "history",
                 "--output", str(generated), "--limit", "2"]) == 0
    assert len(read_jsonl(generated)) == 2
    exported = tmp_path / "typed"
    assert main(["export", "--source", str(release), "--out", str(exported), "--cache-dir", str(tmp_path / "c")]) == 0
    typed = datasets.load_dataset(str(exported), "benchmark", split="test", cache_dir=str(tmp_path / "hf"))
    assert len(typed) == 6


def test_new_rubrics_for_a_release_and_meta_eval_with_them(model_release, fresh, tmp_path, capsys):
    release, _, cache = model_release
    rubrics = tmp_path / "rubrics.jsonl"
    endpoint = ["--base-url", fresh.base_url, "--api-key", SECRET]
    assert main(["build", "--rubrics-only", "--source", str(release), "--rubric-model", "openai:other",
                 "--out", str(rubrics), "--cache", str(cache), *endpoint]) == 0
    lines = read_jsonl(rubrics)
    assert len(lines) == 6 and [len(fresh.calls)] == [6]  # another model: asked anew
    edited = [{**line, "rubric": f"REGENERATED {line['user']}/{line['query_id']}"} for line in lines]
    write_jsonl(rubrics, edited)
    fresh.reset()
    output = tmp_path / "meta.json"
    assert main(["meta-eval", "--source", str(release), "--judge", "openai:judge", *endpoint, "--rubrics",
                 str(rubrics), "--no-feedback-accuracy", "--resamples", "20", "--output", str(output)]) == 0
    assert f"rubrics from {rubrics}" in capsys.readouterr().out
    judged = [messages_of(call.body)[-1]["content"] for call in fresh.calls]
    assert judged and all("REGENERATED " in prompt for prompt in judged)
    assert json.loads(output.read_text())["data"]["rubrics"]["file"] == str(rubrics)
    write_jsonl(rubrics, edited[1:])
    assert main(["meta-eval", "--source", str(release), "--judge", "openai:judge", *endpoint, "--rubrics",
                 str(rubrics), "--no-feedback-accuracy"]) == 2
    assert f"{rubrics}: no rubric for {edited[0]['user']}/{edited[0]['query_id']}" in capsys.readouterr().err


def test_authoring_prompts_are_versioned_apart_from_the_judge():
    assert set(prompts.AUTHORING_TEMPLATES).isdisjoint(prompts.TEMPLATES)
    assert prompts.PROTOCOL_VERSION == prompts.version_of(prompts.TEMPLATES)
    assert prompts.AUTHORING_VERSION == prompts.version_of(prompts.AUTHORING_TEMPLATES, "authoring-1")


@pytest.mark.parametrize("answer, claims", [
    ('["A.", " B. ", ""]', ["A.", "B."]),
    ('<think>list them</think>```json\n["A.", "B."]\n```', ["A.", "B."]),
    ('{"claims": ["A.", "B."]}', ["A.", "B."]),
    ("- A.\n2. B.\n\n* C.", ["A.", "B.", "C."]),
    ('{"reasoning": "x", "verdict": true}', ['{"reasoning": "x", "verdict": true}']),  # not a list: one a line
])
def test_claims_are_read_as_a_json_list_or_one_a_line(answer, claims):
    assert parse_claims(answer) == claims


@pytest.mark.parametrize("answer", ["[]", "", "<think>nothing to list</think>"])
def test_an_answer_without_claims_is_repaired_not_kept(answer):
    with pytest.raises(ParseError, match="lists no claim"):
        parse_claims(answer)


def test_a_rubric_is_the_answer_without_its_reasoning():
    assert parse_rubric("<think>what matters here</think>\nBe brief and cite prices.") == "Be brief and cite prices."
    with pytest.raises(ParseError, match="empty"):
        parse_rubric("<think>hmm</think>  ")


def test_any_stub_model_builds_a_release(model_data, fresh, tmp_path):
    """A model that knows nothing of the prompts (it says the same line to everything) still builds one: its
    text is each rubric, its one line each query's one claim, to review."""
    fresh.responder = lambda body: "Answer in short sentences."
    out = tmp_path / "release"
    try:
        assert main(["build", "--from", str(model_data), "--out", str(out), *model_flags(fresh, tmp_path / "c.sqlite")]) == 0
    finally:
        fresh.responder = author_answer
    assert {r["rubric"] for r in load_rows("rubrics", out)} == {"Answer in short sentences."}
    assert {tuple(r["claims"]) for r in load_rows("gold_claims", out)} == {("Answer in short sentences.",)}
