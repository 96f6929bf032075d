"""The README's Quickstart writes its results where the README says, and git ignores them; the README's
timings say what was measured."""

from __future__ import annotations

import fnmatch
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def quickstart_score_command() -> list[str]:
    block = README.split("## Quickstart", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    first = block.splitlines()[0]
    [command] = [part.strip() for part in first.split("&&") if part.strip().startswith("bespoke score")]
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
    assert f"`{output}`" in README.split("## Quickstart", 1)[1].split("## Data", 1)[0]
    assert ignored_by_git(output)
    assert ignored_by_git("results.json")  # `bespoke score`'s default output, run at the top of a checkout
    assert not ignored_by_git("README.md")
    assert not ignored_by_git("bespoke_metric/results/records.py")


def test_readme_timings_say_what_was_measured():
    assert "in seconds" not in README
    performance = README.split("## Performance", 1)[1].split("\n## ", 1)[0]
    assert "wall-clock time of what the bullet names" in " ".join(performance.split())
    for bullet in re.findall(r"^- `benchmarks/(\w+)\.py`", performance, flags=re.MULTILINE):
        assert (ROOT / "benchmarks" / f"{bullet}.py").is_file(), bullet
