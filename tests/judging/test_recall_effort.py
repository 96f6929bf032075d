"""Recall checks sent as the official evaluator sends them (issue 43): its judgments go at reasoning effort
`high`, its per-claim recall checks with no effort (the model's default); bespoke's judgments keep `high`, its
recall checks carry none unless `--recall-reasoning-effort` says otherwise, and the results' judge block says
what was sent (`judge.recall_effort`). Over real HTTP against the strict OpenAI server."""

from __future__ import annotations

import json

import pytest
from fakes.provider_servers import serve_strict, strict_responder
from output_lines import own_lines

import bespoke_dataset
from bespoke_dataset.errors import UserError
from bespoke_metric.backends.options import OptionError
from bespoke_metric.calls.cache import Cache
from bespoke_metric.judging.factory import make_judge
from bespoke_metric.scoring.pipeline import score
from bespoke_metric.testing.judge_responder import judge_answer

KEY = "sk-test-recall-effort"


@pytest.fixture(scope="module")
def strict():
    with serve_strict(strict_responder(answer=judge_answer)) as server:
        yield server


def predictions() -> list[dict]:
    rows = list(bespoke_dataset.load("benchmark", source="sample"))[:2]
    return [{"user": row["user"], "query_id": row["query_id"], "response": row["shots"][0]["response"]} for row in rows]


def judged(server, model: str = "gpt-5", **options):
    """The judge's results and the bodies it sent, split into judgments and recall checks."""
    server.reset()
    judge = make_judge(f"openai:{model}", base_url=server.base_url, api_key=KEY, progress=False, **options)
    try:
        results = score(predictions(), judge, source="sample", guards=False)
    finally:
        judge.close()
    bodies = [call.body for call in server.calls]
    recall = [body for body in bodies if "# Claim" in json.dumps(body)]
    return results, [body for body in bodies if body not in recall], recall


def test_judgments_keep_high_and_recall_checks_carry_no_effort_by_default(strict):
    results, judgments, recall = judged(strict)
    assert judgments and all(body["reasoning"] == {"effort": "high"} for body in judgments)
    assert recall and not any("reasoning" in body for body in recall)  # the model's own default
    assert strict.refused == []
    assert results.judge["recall_effort"] is None and results.judge["settings"]["reasoning_effort"] == "high"


def test_a_recall_effort_given_is_sent_and_recorded(strict):
    results, judgments, recall = judged(strict, recall_reasoning_effort="low")
    assert all(body["reasoning"] == {"effort": "high"} for body in judgments)
    assert recall and all(body["reasoning"] == {"effort": "low"} for body in recall)
    assert results.judge["recall_effort"] == "low"


def test_a_batched_recall_check_goes_at_the_recall_effort_too(strict):
    _, judgments, recall = judged(strict, recall="batched")
    assert recall and all("# Claims (" in json.dumps(body) and "reasoning" not in body for body in recall)
    assert judgments and all(body["reasoning"] == {"effort": "high"} for body in judgments)


def test_a_recall_effort_the_model_refuses_is_one_line_before_any_call(strict):
    strict.reset()
    judge = make_judge("openai:gpt-6.2-astra", base_url=strict.base_url, api_key=KEY, progress=False,
                       recall_reasoning_effort="none")
    try:
        with pytest.raises(UserError, match=r"^openai:gpt-6.2-astra \(GPT-6.2 and later\) takes --reasoning-effort low, "
                                            r"medium, high, xhigh, max, not 'none'$"):
            score(predictions(), judge, source="sample", guards=False)
    finally:
        judge.close()
    assert strict.calls == []


def test_an_engine_without_efforts_refuses_the_flag_naming_it():
    with pytest.raises(OptionError, match=r"^--recall-reasoning-effort does not apply to the gemini judge"):
        make_judge("gemini:gemini-3.8-flash", api_key=KEY, recall_reasoning_effort="low")


def test_recall_checks_at_another_effort_are_cached_apart_and_the_same_effort_shares_the_keys(strict, tmp_path):
    cache = str(tmp_path / "judge.sqlite")
    judged(strict, cache=cache, recall_reasoning_effort="high")  # the effort of the judgments: keys as before
    judged(strict, cache=cache)
    assert strict.calls and all("# Claim" in json.dumps(call.body) for call in strict.calls)  # judgments cached
    before = len(strict.calls)
    judged(strict, cache=cache)
    assert strict.calls == [] and before > 0
    with Cache(cache) as kept:
        assert len(kept) > 0


def test_a_model_without_effort_sends_no_recall_effort_and_keeps_its_keys(strict):
    _, judgments, recall = judged(strict, model="gpt-4.1")
    assert not any("reasoning_effort" in body or "reasoning" in body for body in judgments + recall)


def test_the_command_line_flag_sets_the_recall_effort_and_the_judgments_effort_apart(strict, tmp_path):
    from bespoke_cli.cli import main

    strict.reset()
    given = tmp_path / "preds.jsonl"
    given.write_text("".join(json.dumps(prediction) + "\n" for prediction in predictions()))
    output = tmp_path / "results.json"
    code = main(["score", "--predictions", str(given), "--judge", "openai:gpt-5", "--reasoning-effort", "medium",
                 "--recall-reasoning-effort", "minimal", "--base-url", strict.base_url, "--api-key", KEY,
                 "--source", "sample", "--no-guards", "--output", str(output)])
    assert code == 0 and strict.refused == []
    efforts = {("claim" if "# Claim" in json.dumps(call.body) else "judgment", call.body["reasoning"]["effort"])
               for call in strict.calls}
    assert efforts == {("judgment", "medium"), ("claim", "minimal")}
    judge = json.loads(output.read_text())["judge"]
    assert (judge["recall_effort"], judge["settings"]["reasoning_effort"]) == ("minimal", "medium")


def test_run_names_the_judges_own_flag_for_a_judge_whose_engine_takes_no_effort(strict, tmp_path, capsys):
    """`bespoke run` has a system model too, whose flag is `--reasoning-effort`: the judge's is named, before the
    system model is called."""
    from bespoke_cli.cli import main

    strict.reset()
    code = main(["run", "--model", "openai:gpt-5", "--model-base-url", strict.base_url, "--model-api-key", KEY,
                 "--judge", "hf:HuggingFaceTB/SmolLM2-135M-Instruct", "--judge-reasoning-effort", "high",
                 "--source", "sample", "--limit", "1", "--output", str(tmp_path / "results.json")])
    [line] = own_lines(capsys.readouterr().err)
    assert code == 2 and line == ("error: --judge-reasoning-effort does not apply to the hf judge "
                                  "(hf:HuggingFaceTB/SmolLM2-135M-Instruct): its engine takes no reasoning effort")
    assert strict.calls == []
