"""How long the test suite takes: the quick loop (`python -m pytest -q -m "not slow"`), the full suite
(`python -m pytest -q`, what CI runs) and `tests/house/test_docs.py` alone, each a fresh pytest process, with
the load average when it started (the wall time moves with the machine's load).

With `--baseline-commit SHA` the same three runs are timed at that commit too, in a temporary
`git worktree` with a virtual environment made as a contributor's (`--system-site-packages`, an editable
install without dependencies), so both trees use the same libraries; the figures then include each
time's ratio to the baseline's. A commit from before the markers has no `slow` tests: its quick loop,
which would be its full suite, is not timed.

`--only EXPR` adds `-k EXPR` to every run: a cheap check that the script works, not a measurement of the
suite. Writes `benchmarks/results/test_suite.json`.

    python benchmarks/test_suite.py --baseline-commit 3d98bd1
    python benchmarks/test_suite.py --only "block_reader or test_stats"     # a quick check of the script
"""

from __future__ import annotations

import argparse
import configparser
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from record import write_results  # first: it notes the load the run starts under

ROOT = Path(__file__).resolve().parent.parent

RUNS: dict[str, list[str]] = {
    "quick": ["-m", "not slow"],
    "full": [],
    "docs": ["test_docs.py"],
}
"""What each timed run adds to `python -m pytest -q` (`test_docs.py`: wherever the tree keeps it)."""


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def time_run(python: str, tree: Path, extra: list[str], only: str | None) -> dict:
    """One pytest process in `tree`: its wall time, the load average when it started, its exit code and
    the summary line pytest printed last."""
    command = [python, "-m", "pytest", "-q", *extra, *(["-k", only] if only else [])]
    load = [round(x, 2) for x in os.getloadavg()]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True)
    wall = time.perf_counter() - start
    lines = done.stdout.strip().splitlines()
    print(f"{tree.name}: pytest -q {' '.join(extra)}: {wall:.0f} s at load {load[0]}: {lines[-1] if lines else done.stderr[-300:]}")
    for line in lines:  # what failed, so a red run is told from a slow one
        if line.startswith(("FAILED ", "ERROR ")):
            print(f"  {line}")
    return {"wall_s": round(wall, 1), "load_at_start": load, "exit_code": done.returncode,
            "summary": lines[-1] if lines else ""}


def has_markers(tree: Path) -> bool:
    """Whether the tree's tests know `slow` (registered in setup.cfg): without it the quick loop is the
    full suite, not worth timing twice."""
    return "slow:" in (tree / "setup.cfg").read_text(encoding="utf-8")


def in_tree(tree: Path, extra: list[str]) -> list[str]:
    """`extra` with a test file's name made its path in `tree` (tests/ or a wing's folder under it)."""
    return [str(next((tree / "tests").rglob(word)).relative_to(tree)) if word.endswith(".py") else word for word in extra]


def addopts(tree: Path) -> str:
    """The options the tree's pytest config adds to every run (from 0.4.0: `-n auto`, a worker per core)."""
    config = configparser.ConfigParser()
    config.read(tree / "setup.cfg")
    return " ".join(config.get("tool:pytest", "addopts", fallback="").split())


def time_tree(python: str, tree: Path, only: str | None) -> dict:
    runs = {name: in_tree(tree, extra) for name, extra in RUNS.items() if name != "quick" or has_markers(tree)}
    return {"commit": git("rev-parse", "--short", "HEAD", cwd=tree), "addopts": addopts(tree),
            **{name: time_run(python, tree, extra, only) for name, extra in runs.items()}}


def baseline_python(tree: Path) -> str:
    """A virtual environment for `tree`, made as a contributor's: the system's libraries, the tree's code."""
    venv = tree / ".venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)  # type: ignore[attr-defined]
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "-e", str(tree)],
                   check=True, capture_output=True)
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline-commit", metavar="SHA", help="time the same runs at this commit as well")
    parser.add_argument("--only", metavar="EXPR", help="add `-k EXPR` to every run (a check of the script)")
    args = parser.parse_args()
    figures: dict = {"only": args.only, "current": time_tree(sys.executable, ROOT, args.only)}
    if args.baseline_commit:
        with tempfile.TemporaryDirectory(prefix="bespoke-baseline-") as folder:
            tree = Path(folder) / "tree"
            git("worktree", "add", "--detach", str(tree), args.baseline_commit)
            try:
                figures["baseline"] = time_tree(baseline_python(tree), tree, args.only)
            finally:
                git("worktree", "remove", "--force", str(tree))
        figures["ratio_to_baseline"] = {name: round(figures["current"][name]["wall_s"] / figures["baseline"][name]["wall_s"], 3)
                                        for name in RUNS if name in figures["baseline"]}
    figures["quick_over_full"] = round(figures["current"]["quick"]["wall_s"] / figures["current"]["full"]["wall_s"], 3)
    write_results(__file__, figures, notes={
        "wall_s": "one fresh `python -m pytest -q ...` process, collection included",
        "load_at_start": "the 1, 5 and 15 minute load averages when that process started",
        "ratio_to_baseline": "this checkout's wall time over the baseline commit's, run after run",
        "only": "a `-k` expression every run was narrowed to (null: the whole suite was timed)",
        "addopts": "what the tree's setup.cfg adds to every pytest run: `-n auto` runs a worker per core",
    })


if __name__ == "__main__":
    main()
