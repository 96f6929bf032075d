"""Cut-off answers: a prediction whose answer the output limit ended carries `truncated: true` and
`truncation_reason`, is scored as given, counted in every summary (`summary.truncated`, "3 of 3 answers were
cut off") and in the leaderboard, and refused by `--strict` (exit 1, nothing written). A judge's answer that
runs on to the output limit is never read: it is re-asked once, showing the judge only its start, and
counted (`summary.judge_truncated`); cut off again, the judgment fails saying so.

Two real cases: the transformers backend running the tiny model at a small `--max-new-tokens`, and an
OpenAI-compatible server answering `finish_reason: "length"` (openai-python `Choice.finish_reason`, the
value a llama.cpp or vLLM server sends when `max_tokens` ends the answer).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

import bespoke_dataset
from bespoke_cli.cli import main
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.analysis.leaderboard import build_leaderboard, load_results
from bespoke_metric.analysis.report import to_csv, to_markdown
from bespoke_metric.calls.scheduler import RUN_ON_ECHO_CHARS
from bespoke_metric.judging.protocol import PERSONALIZATION_SCHEMA, bounded_schema
from bespoke_metric.results import ItemResult
from bespoke_metric.scoring.pipeline import score
from bespoke_metric.scoring.predictions import PredictionError, read_predictions
from bespoke_metric.testing.judge_responder import judge_answer, response_text
from bespoke_metric.testing.server import Cutoff, messages_of
from bespoke_metric.testing.system_responder import answer_any, system_answer


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


@pytest.mark.slow
def test_the_tiny_model_cut_off_by_max_new_tokens_is_marked_scored_and_counted(tiny_model_dir: Path, openai_server, here: Path, capsys) -> None:
    generate = ["generate", "--model", f"hf:{tiny_model_dir}", "--source", "sample", "--limit", "3", "--max-new-tokens", "4"]
    assert main([*generate, "--output", "p.jsonl"]) == 0
    predictions = read_jsonl(here / "p.jsonl")
    assert [(p["truncated"], p["truncation_reason"]) for p in predictions] == [(True, "length")] * 3
    assert {p["served_model"] for p in predictions} == {str(tiny_model_dir)}  # a local model is the one loaded
    assert "3 generated (3 cut off at the output limit" in capsys.readouterr().out

    openai_server.responder = judge_answer
    score = ["score", "--predictions", "p.jsonl", "--judge", "openai:judge-model", "--base-url", openai_server.base_url,
             "--source", "sample", "--no-guards"]  # the tiny model's gibberish would be guarded
    assert main([*score, "--output", "s.json"]) == 0
    printed = capsys.readouterr().out
    assert "3 of 3 answers were cut off at the output limit" in printed
    results = json.loads((here / "s.json").read_text(encoding="utf-8"))
    assert results["summary"]["truncated"] == 3
    assert all(item["truncated"] is True and item["truncation_reason"] == "length" for item in results["items"])
    assert all(item["scores"]["tone"] is not None for item in results["items"])  # scored as given
    assert results["system"]["served_models"] == {str(tiny_model_dir): 3} and results["served_mismatch"] is False

    [group] = build_leaderboard(load_results([here / "s.json"]), n_resamples=50)
    assert group.rows[0].truncated == 3
    assert "| Cut off |" in to_markdown([group]) and f"| 3 | {tiny_model_dir} |" in to_markdown([group])
    [row] = csv.DictReader(io.StringIO(to_csv([group])))
    assert row["truncated"] == "3"

    assert main([*score, "--output", "strict.json", "--strict"]) == 1
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        "error: 3 of 3 answers were cut off at the output limit (--strict); strict.json not written"]
    assert not (here / "strict.json").exists()

    assert main([*generate, "--output", "strict.jsonl", "--strict"]) == 1
    assert "cut off" in capsys.readouterr().err
    assert not (here / "strict.jsonl").exists() and not (here / "strict.run.json").exists()


def cut_system_answers(body: dict[str, Any]):
    """The system's answers cut off (`finish_reason: length`), the judge's whole."""
    answer = system_answer(body)
    return answer_any(body) if answer is None else Cutoff(answer)


def test_finish_reason_length_from_an_openai_compatible_server_is_marked(openai_server, here: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-truncation-test")
    openai_server.responder = cut_system_answers
    run = ["run", "--model", "openai:gpt-4o-mini", "--source", "sample", "--judge", "openai:gpt-5", "--limit", "3"]
    assert main([*run, "--output", "run.json"]) == 0
    predictions = read_jsonl(here / "run" / "predictions.jsonl")
    assert [(p["truncated"], p["truncation_reason"]) for p in predictions] == [(True, "length")] * 3
    results = json.loads((here / "run.json").read_text(encoding="utf-8"))
    assert results["summary"]["truncated"] == 3
    assert capsys.readouterr().out.count("3 of 3 answers were cut off") == 1

    assert main([*run, "--output", "strict.json", "--strict"]) == 1
    assert not (here / "strict.json").exists() and not (here / "strict" / "predictions.jsonl").exists()

    openai_server.responder = answer_any  # whole answers: nothing marked, nothing refused
    assert main([*run, "--output", "whole.json", "--strict"]) == 0
    whole = json.loads((here / "whole.json").read_text(encoding="utf-8"))
    assert whole["summary"]["truncated"] == 0 and not any("truncated" in item for item in whole["items"])


def test_strict_scoring_of_several_files_writes_none_when_one_holds_a_cut_off_answer(openai_server, here: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-truncation-test")
    generate = ["generate", "--model", "openai:gpt-4o-mini", "--source", "sample", "--limit", "2"]
    openai_server.responder = answer_any
    assert main([*generate, "--output", "whole.jsonl"]) == 0
    openai_server.responder = cut_system_answers
    assert main([*generate, "--output", "cut.jsonl", "--generation-cache", "cut.sqlite"]) == 0
    openai_server.responder = answer_any
    capsys.readouterr()
    score = ["score", "--predictions", "whole.jsonl", "cut.jsonl", "--judge", "openai:gpt-5", "--source", "sample",
             "--output-dir", "scored"]
    assert main([*score, "--strict"]) == 1
    assert "error: 2 of 2 answers were cut off at the output limit (--strict); scored/cut.json not written" in capsys.readouterr().err
    assert not (here / "scored" / "whole.json").exists() and not (here / "scored" / "cut.json").exists()
    assert main(score) == 0
    assert json.loads((here / "scored" / "cut.json").read_text())["summary"]["truncated"] == 2


def test_a_prediction_marked_truncated_must_say_true_or_false() -> None:
    rows = [{"user": "user1", "query_id": "1", "response": "an answer", "truncated": "yes"}]
    with pytest.raises(PredictionError, match="line 1: 'truncated' must be true or false"):
        read_predictions(rows, ["user1/1"])
    [prediction] = read_predictions([{**rows[0], "truncated": True, "truncation_reason": "MAX_TOKENS"}], ["user1/1"])
    assert (prediction.truncated, prediction.truncation_reason) == (True, "MAX_TOKENS")


def test_an_item_keeps_its_truncation_through_a_results_file() -> None:
    item = ItemResult("user1", "1", truncated=True, truncation_reason="max_output_tokens")
    assert ItemResult.from_json(json.loads(json.dumps(item.to_json()))) == item
    assert "truncated" not in ItemResult("user1", "1").to_json()


RAMBLE = "The answer covers the need of the user. " * 200
"""What a small judge writes when it loops: one sentence again and again, until the output limit cuts it."""


@pytest.mark.slow
def test_a_judge_answer_that_runs_on_is_re_asked_once_and_counted(openai_server, here: Path, capsys) -> None:
    rows = list(bespoke_dataset.load("benchmark", source="sample"))[:2]
    records = [{"user": row["user"], "query_id": row["query_id"], "response": row["shots"][0]["response"]} for row in rows]
    recovers = records[0]["response"].strip()

    def runs_on(body: dict[str, Any]) -> Any:
        """Every first answer runs on; re-asked, the judge of the first response recovers, the other loops again."""
        messages = messages_of(body)
        if messages[-2]["role"] == "assistant" and response_text(messages[1]["content"]).strip() == recovers:
            return judge_answer(body)
        return Cutoff(RAMBLE)

    openai_server.responder = runs_on
    judge = {"base_url": openai_server.base_url, "api_key": "sk-truncation-test", "recall": "none", "guards": False,
             "progress": False}
    results = score(records, "openai:judge-model", source="sample", structured=True, **judge).to_json()
    first, second = results["items"]
    assert None not in first["scores"].values() and first["errors"] == []
    assert second["scores"] == {dimension: None for dimension in DIMENSIONS}
    assert [error["metric"] for error in second["errors"]] == list(DIMENSIONS)
    assert all(error["reason"].startswith("cut off at the output limit in 2 of 2 answers (") and
               error["reason"].endswith("tokens the last): a model that runs on is re-asked once") for error in second["errors"])
    assert results["summary"]["judge_truncated"] == 3 and results["summary"]["truncated"] == 0  # the judge's, not the system's
    assert results["usage"]["calls"] == 4 and results["usage"]["failed"] == 1
    re_asks = [call.body for call in openai_server.calls if call.body["messages"][-2]["role"] == "assistant"]
    assert len(re_asks) == 2  # once each, never a third time
    assert all(body["messages"][-2]["content"] == RAMBLE[:RUN_ON_ECHO_CHARS] for body in re_asks)  # its start, not the loop
    assert {call.body["max_tokens"] for call in openai_server.calls} == {2048}
    # a server other than the provider's compiles the schema itself: it gets the bounded one, and the results say so
    assert all(call.body["response_format"]["json_schema"]["schema"] == bounded_schema(PERSONALIZATION_SCHEMA, 2048)
               for call in openai_server.calls)
    assert (results["judge"]["structured"], results["judge"]["constraint"]) == (True, "json-schema")

    # the paper's lines (the default of an API judge): no schema, no constraint; no repair turn, no re-ask
    openai_server.reset()
    lines = score(records, "openai:judge-model", source="sample", max_parse_retries=0, **judge).to_json()
    assert (lines["judge"]["structured"], lines["judge"]["constraint"]) == (False, None)
    assert lines["summary"]["judge_truncated"] == 2 and len(openai_server.calls) == 2
    assert not any("response_format" in call.body for call in openai_server.calls)
    assert {error["reason"] for item in lines["items"] for error in item["errors"]} == {
        "unparseable answer after 1 attempt(s): the answer was cut off at the output limit before it ended"}

    # the command line says how many of the judge's answers ran on
    (here / "p.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    assert main(["score", "--predictions", "p.jsonl", "--judge", "openai:judge-model", "--base-url", openai_server.base_url,
                 "--source", "sample", "--recall", "none", "--no-guards", "--structured", "--output", "s.json"]) == 3  # one lost: incomplete
    assert "3 of the judge's 4 answers ran on to the output limit (summary.judge_truncated): never read, each re-asked once" \
        in capsys.readouterr().out
