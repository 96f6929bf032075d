"""The paper's two Perplexity systems, end to end as a user runs them: `bespoke run` and `bespoke generate`
with `perplexity:sonar` and `perplexity:sonar-reasoning` against a strict Agent API on 127.0.0.1 (answering in
the documented shapes of `fakes.provider_servers.perplexity_responder`, which cites its sources) and a
stand-in judge. Each runs as the documented substitute, says so once and in the results
(`system.substitution`), records its searches and the provider's own cost, and never sends a field the
Agent API would reject."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fakes.provider_servers import FAIL_WORD, perplexity_responder, root_url, serve_perplexity

import bespoke_dataset
from bespoke_cli.cli import main
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import messages_of

KEY = "pplx-secret-5e2c9a7b31"
LIMIT = 3


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def agent():
    with serve_perplexity() as server:
        yield server
        assert server.unknown_fields == []  # not one of our requests was refused for a field it does not know


@pytest.fixture
def judge(openai_server):
    openai_server.responder = judge_answer
    return openai_server


def test_bespoke_run_sonar_runs_as_perplexity_sonar_and_says_so(agent, judge, synthetic_hub: Path, tmp_path: Path, capsys) -> None:
    args = ["run", "--model", "perplexity:sonar", "--model-base-url", root_url(agent), "--model-api-key", KEY,
            "--judge", "openai:judge-model", "--base-url", judge.base_url, "--api-key", "sk-judge-1",
            "--source", str(synthetic_hub), "--limit", str(LIMIT), "--output", str(tmp_path / "results.json")]
    assert main(args) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if line.startswith("note: perplexity:")]
    assert len(notes) == 1 and notes[0].startswith(
        "note: perplexity:sonar runs as perplexity:perplexity/sonar (as of 2026-12-01): the Sonar chat-completions API ended on 2026-09-27")
    assert len(agent.calls) == LIMIT
    for call in agent.calls:  # the guide's mapping of sonar: perplexity/sonar with the web_search tool
        assert call.path == "/v1/agent" and call.status == 200
        assert (call.body["model"], call.body["tools"], "preset" in call.body) == ("perplexity/sonar", [{"type": "web_search"}], False)
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    substitution = results["system"]["substitution"]
    assert substitution["asked"] == "perplexity:sonar" and substitution["ran_as"] == "perplexity:perplexity/sonar"
    assert substitution["date"] == "2026-12-01" and "Migrate from Sonar" in substitution["reason"]
    made = read_jsonl(tmp_path / "results" / "predictions.jsonl")
    assert len(made) == LIMIT
    for item in results["items"]:
        assert item["search"]["engine"] == "native"
        assert item["search"]["calls"] == 2  # two searches, as usage.tool_calls_details.search_web said
        assert len(item["search"]["results"]) == 3
    usage = results["usage"]["models"]["perplexity:sonar"]
    assert usage["roles"] == ["system"]
    assert usage["provider_cost"] > 0 and usage["provider_costed"] == LIMIT  # Perplexity's own figure, beside ours
    assert usage["cost"] > 0  # ours, at the price of what ran (perplexity/sonar), from the maintained source
    assert usage["price"]["source"].startswith("genai-prices ") and usage["price"]["source"].endswith("(perplexity perplexity/sonar)")
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", usage["price"]["date"])  # the day the price holds for
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path.name


def test_bespoke_generate_sonar_reasoning_runs_as_a_reasoning_model_with_search(agent, synthetic_hub: Path, tmp_path: Path,
                                                                               capsys) -> None:
    output = tmp_path / "predictions.jsonl"
    args = ["generate", "--model", "perplexity:sonar-reasoning", "--base-url", root_url(agent), "--api-key", KEY,
            "--source", str(synthetic_hub), "--limit", str(LIMIT), "--output", str(output)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.count("note: perplexity:sonar-reasoning runs as perplexity:openai/gpt-5.1 (reasoning effort medium)") == 1
    assert {(call.body["model"], json.dumps(call.body["reasoning"])) for call in agent.calls} == {("openai/gpt-5.1", '{"effort": "medium"}')}
    assert all(call.body["tools"] == [{"type": "web_search"}] for call in agent.calls)
    assert not any("max_output_tokens" in call.body for call in agent.calls)  # its hidden reasoning would starve under a cap
    run = json.loads(output.with_name("predictions.run.json").read_text(encoding="utf-8"))
    assert run["substitution"]["ran_as"] == "perplexity:openai/gpt-5.1 (reasoning effort medium)"
    assert run["model"]["backend"]["settings"]["agent_model"] == "openai/gpt-5.1"
    assert all(prediction["search"]["calls"] == 2 for prediction in read_jsonl(output))


def test_a_200_failed_run_fails_its_query_naming_the_providers_error(synthetic_hub: Path, tmp_path: Path, capsys) -> None:
    first = bespoke_dataset.load("queries", source=synthetic_hub)[0]["query"]
    answer = perplexity_responder()

    def failing_first(body: dict[str, Any]) -> dict[str, Any]:
        if first in messages_of(body)[-1]["content"]:  # this query's run fails on Perplexity's side
            body = {**body, "input": [{"type": "message", "role": "user", "content": FAIL_WORD}]}
        return answer(body)

    with serve_perplexity(failing_first) as agent:
        output = tmp_path / "predictions.jsonl"
        code = main(["generate", "--model", "perplexity:sonar", "--base-url", root_url(agent), "--api-key", KEY,
                     "--source", str(synthetic_hub), "--limit", str(LIMIT), "--output", str(output)])
        assert agent.unknown_fields == []
    assert code == 3  # a query has no prediction: incomplete, the others written
    out = capsys.readouterr().out
    assert "perplexity:sonar answered status failed: server_error: model_error: upstream model error" in out
    assert "empty answer" not in out
    assert len(read_jsonl(output)) == LIMIT - 1
