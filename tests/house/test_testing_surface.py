"""`bespoke_metric.testing` is public: its curated names resolve, each is documented in the package's
table and in its own docstring, importing it stays light, and its example runs as written."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import bespoke_dataset
import bespoke_metric.testing as testing
from bespoke_metric import score

HEAVY = ("torch", "transformers", "sentence_transformers", "pandas", "datasets", "openai")


def test_every_public_name_resolves_and_is_documented():
    assert testing.__all__ == sorted(testing.__all__)
    assert {"serve", "TestServer", "Fault", "judge_answer", "build_tiny_model", "RecordingBackend"} <= set(testing.__all__)
    table = testing.__doc__
    for name in testing.__all__:
        value = getattr(testing, name)
        assert f"`{name}" in table, f"{name} is missing from the package's table"
        if callable(value):
            assert (value.__doc__ or "").strip(), f"{name} has no docstring"
    assert "browser" not in testing.__all__  # the project's own UI helpers are not part of the surface


def test_importing_the_surface_loads_nothing_heavy():
    code = ("import json, sys; from bespoke_metric.testing import serve, judge_answer, Fault, RecordingBackend; "
            "print(json.dumps(sorted(sys.modules)))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=True)
    loaded = set(json.loads(done.stdout))
    assert [name for name in HEAVY if name in loaded] == []


@pytest.mark.slow
def test_the_package_example_scores_through_the_local_server():
    rows = list(bespoke_dataset.load("benchmark", source="sample"))[:3]
    predictions = [{"user": r["user"], "query_id": r["query_id"], "response": r["shots"][0]["response"]} for r in rows]
    with testing.serve(responder=testing.judge_answer) as server:
        results = score(predictions, "openai:judge", source="sample", base_url=server.base_url, api_key="test")
    assert len(server.calls) == results.usage["calls"] >= 2 * len(rows)
    # the stand-in judge's rule, visible from outside: the score follows the need's words the response repeats
    for item, row in zip(results.items, rows, strict=True):
        assert set(item.scores.values()) == {testing.score_for(row["gold_information_need"], row["shots"][0]["response"])}
