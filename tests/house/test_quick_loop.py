"""The quick loop (`python -m pytest -m "not slow"`, docs/getting-started.md) holds what a contributor runs
while working: no test that loads a real model, starts Ray or drives Chromium, and none of the tests
marked `@pytest.mark.slow` where they stand (a mark that travels with its test when it is renamed or moved)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MODEL_FIXTURES

ROOT = Path(__file__).resolve().parents[2]

# A plugin for a collection of the whole suite in a child pytest: what `-m "not slow"` keeps and leaves out.
PLUGIN = '''
import json, os

kept, left = [], []

def _entry(item):
    return {"id": item.nodeid, "name": f"{item.path.name}::{item.originalname}",
            "fixtures": sorted(item.fixturenames), "marks": sorted({mark.name for mark in item.iter_markers()})}

def pytest_deselected(items):
    left.extend(_entry(item) for item in items)

def pytest_collection_finish(session):
    kept.extend(_entry(item) for item in session.items)
    with open(os.environ["QUICK_LOOP_OUT"], "w", encoding="utf-8") as out:
        json.dump({"kept": kept, "left": left}, out)
'''


@pytest.mark.slow
def test_the_quick_loop_loads_no_model_and_every_slow_name_is_a_test(tmp_path):
    (tmp_path / "quick_loop_plugin.py").write_text(PLUGIN, encoding="utf-8")
    out = tmp_path / "collected.json"
    env = {**os.environ, "QUICK_LOOP_OUT": str(out),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n0", "-m", "not slow",
                          "-p", "quick_loop_plugin", "-p", "no:cacheprovider", "tests"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    collected = json.loads(out.read_text(encoding="utf-8"))
    kept, left = collected["kept"], collected["left"]
    assert kept and left
    heavy = [item["id"] for item in kept
             if MODEL_FIXTURES & set(item["fixtures"]) or "ray_cluster" in item["fixtures"]
             or {"slow", "ray", "browser", "vllm"} & set(item["marks"])]
    assert heavy == []
    # a test on a model fixture is slow by rule, whoever wrote it
    assert any(MODEL_FIXTURES & set(item["fixtures"]) for item in left)
