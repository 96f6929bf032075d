"""The `hf:` judge end to end on a tiny random model: real generation, strict parsing, honest failures."""

from __future__ import annotations

import json

import pytest

from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.backends.options import OptionError
from bespoke_metric.judging.config import JudgeConfig
from bespoke_metric.judging.factory import make_judge
from bespoke_metric.scoring.pipeline import score


@pytest.mark.slow
def test_hf_judge_records_unparseable_answers_as_failures(tiny_model_dir, synthetic_hub, tmp_path):
    import bespoke_dataset

    rows = list(bespoke_dataset.load("benchmark", source=synthetic_hub))[:2]
    records = [{"user": r["user"], "query_id": r["query_id"], "response": r["shots"][0]["response"]} for r in rows]
    cache = tmp_path / "hf.sqlite"
    results = score(records, f"hf:{tiny_model_dir}", source=synthetic_hub, cache=str(cache), max_shots=1,
                    recall="batched", max_tokens=8, max_parse_retries=1).to_json()
    summary = results["summary"]
    # Held to the schema, even a random model would answer; 8 tokens cannot hold an answer, though: every one is
    # cut off, re-asked once, cut off again. Every judgment fails, is counted, and is never a 0.
    assert summary["failures"] == {metric: 2 for metric in (*DIMENSIONS, "recall")}
    assert summary["need_alignment"] is None
    assert summary["average"] is None
    for item in results["items"]:
        assert item["scores"] == {d: None for d in DIMENSIONS}
        assert item["recall"] is None
        assert {e["metric"] for e in item["errors"]} == {*DIMENSIONS, "recall"}
        assert all("cut off at the output limit in 2 of 2 answers" in e["reason"] for e in item["errors"])
    # Two items x (personalization + batched recall), each asked once more after the answer ran on.
    assert results["usage"]["calls"] == 8 and summary["judge_truncated"] == 8
    judge = results["judge"]
    assert judge["engine"] == "hf"
    assert judge["max_tokens"] == 8
    # a judge's answers are JSON held to the schema by xgrammar's grammar, unless --no-grammar
    assert (judge["structured"], judge["constraint"], judge["settings"]["schema"]) == (True, "grammar", "grammar")
    free = make_judge(f"hf:{tiny_model_dir}", grammar=False)
    assert {name: free.describe()[name] for name in ("structured", "constraint")} == {"structured": False, "constraint": None}
    assert free.describe()["settings"]["schema"] == "in prompt"
    json.dumps(results)  # serialisable as written to results.json
    again = score(records, f"hf:{tiny_model_dir}", source=synthetic_hub, cache=str(cache), max_shots=1,
                  recall="batched", max_tokens=8, max_parse_retries=1).to_json()
    assert again["usage"]["calls"] == 0
    assert again["items"] == results["items"]


def test_a_judge_holds_its_answers_to_the_schema_where_its_engine_can():
    """A `JudgeConfig` builds nothing: what a judge gets by default, and `--no-grammar` where it applies."""
    held = JudgeConfig(spec="hf:some/model")
    assert (held.engine.options.grammar, held.protocol.structured) == (True, True)
    free = JudgeConfig(spec="hf:some/model", options={"grammar": False})
    assert (free.engine.options.grammar, free.protocol.structured) == (False, False)  # the paper's lines
    assert JudgeConfig(spec="hf:some/model", options={"grammar": False, "structured": True}).protocol.structured is True
    assert JudgeConfig(spec="vllm:some/model").protocol.structured is True
    assert JudgeConfig(spec="openai:gpt-5", options={"api_key": "sk-x"}).protocol.structured is False
    with pytest.raises(OptionError, match="^--no-grammar does not apply to the openai judge"):
        JudgeConfig(spec="openai:gpt-5", options={"grammar": False})
