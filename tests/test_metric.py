"""The `evaluate` metric, loaded the way users load it."""

from __future__ import annotations

from pathlib import Path

import evaluate
import pytest

import bespoke_dataset
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.pipeline import score
from bespoke_metric.testing.judge_responder import judge_answer

LOADER = str(Path(__file__).resolve().parents[1] / "loaders" / "bespoke")


def test_evaluate_load_add_batch_compute(openai_server, synthetic_hub, tmp_path):
    openai_server.responder = judge_answer
    rows = list(bespoke_dataset.load("benchmark", source=synthetic_hub))
    options = dict(source=str(synthetic_hub), base_url=openai_server.base_url, api_key="sk-test", cache=str(tmp_path / "c.sqlite"))
    metric = evaluate.load(LOADER, judge="openai:judge", **options)
    assert metric.judge == "openai:judge" and "BESPOKE" in metric.description and "kim2025" in metric.citation
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
        "except ImportError:\n"
        "    print('metric class needs evaluate')\n"
        "print('evaluate' in sys.modules and sys.modules['evaluate'] is not None)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["metric", "class", "needs", "evaluate", "False"]
