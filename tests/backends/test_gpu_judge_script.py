"""`benchmarks/gpu_judge.py`, the GPU run as one script, run small on the CPU (`--device cpu`) as a user runs it:
a results file with, per model, one run per batch size, each judging its queries through the real `hf:` judge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_gpu_judge_script_runs_small_on_the_cpu(smollm2_cache, tmp_path: Path) -> None:
    out = tmp_path / "gpu_judge.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_judge.py"), "--device", "cpu",
                           "--batch-sizes", "1,2", "--batches", "1", "--max-tokens", "2", "--out", str(out)],
                          capture_output=True, text=True, timeout=1800, cwd=tmp_path,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(out.read_text(encoding="utf-8"))
    figures = record["figures"]
    assert figures["device"] == "cpu" and figures["max_tokens"] == 2
    assert set(figures["models"]) == {"tiny", "smollm2"}
    assert figures["models"]["smollm2"]["model"].endswith(".gguf")
    for model in figures["models"].values():
        assert [run["batch_size"] for run in model["runs"]] == [1, 2]
        for run in model["runs"]:
            # a query's prompts: its personalization call and one per claim, each generated once (no repairs)
            assert run["prompts"] >= run["batch_size"] and run["prompts"] > run["queries"]
            assert 0 < run["tokens_per_s"] and 0 < run["prompts_per_s"]
            assert 0 < run["output_tokens"] <= 2 * run["prompts"]  # at most --max-tokens each
            assert run["peak_gpu_mb"] is None  # no GPU
