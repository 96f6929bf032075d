"""`bespoke score` with an API judge starts light: it never imports the heavy optional stacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bespoke_dataset.rows import load_rows
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import serve

HEAVY = ("torch", "transformers", "sentence_transformers", "matplotlib", "pandas", "datasets",
         "openai")  # the SDK only names an error response: calls that succeed never import it

# Runs the real command line in a fresh interpreter, then reports its exit code and every module it loaded.
CHILD = """
import json, sys
from bespoke_cli.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


@pytest.fixture(scope="module")
def score_run(synthetic_hub, tmp_path_factory):
    """A `bespoke score --judge openai:...` run against the test server, in a subprocess."""
    work = tmp_path_factory.mktemp("startup")
    predictions = work / "preds.jsonl"
    rows = load_rows("benchmark", synthetic_hub)[:3]
    predictions.write_text("".join(
        json.dumps({"user": r["user"], "query_id": r["query_id"], "response": r["shots"][0]["response"]}) + "\n"
        for r in rows))
    output = work / "results.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with serve(responder=judge_answer) as server:
        child = subprocess.run(
            [sys.executable, "-c", CHILD, "score", "--predictions", str(predictions), "--source", str(synthetic_hub),
             "--judge", "openai:test-model", "--base-url", server.base_url, "--api-key", "local",
             "--output", str(output)],
            capture_output=True, text=True, cwd=work, env=env, timeout=120)
        calls = len(server.calls)
    assert child.returncode == 0, child.stderr
    report = json.loads(child.stdout.strip().splitlines()[-1])
    return report, calls, json.loads(output.read_text())


def test_the_run_scores_through_the_server(score_run):
    report, calls, results = score_run
    assert report["code"] == 0
    assert calls == results["usage"]["calls"]
    assert calls >= 3 * 2  # a personalization call and at least one claim call per prediction
    assert results["summary"]["items"] == 3
    assert sum(results["summary"]["failures"].values()) == 0


@pytest.mark.parametrize("module", HEAVY)
def test_no_heavy_module_is_imported(score_run, module):
    loaded = [name for name in score_run[0]["modules"] if name == module or name.startswith(module + ".")]
    assert loaded == []
