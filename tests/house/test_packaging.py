"""The wheel ships every package of the source tree: setup.cfg lists packages by hand (the CLI's folder is
installed under another name), so a sub-package added without its line would be left out of a wheel
while an editable install hides it."""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_setup_cfg_lists_every_package_of_the_tree() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    listed = set(config["options"]["packages"].split())
    found = set()
    for top, name in (("bespoke_dataset", "bespoke_dataset"), ("bespoke_metric", "bespoke_metric"), ("scripts", "bespoke_cli")):
        for init in (ROOT / top).rglob("__init__.py"):
            found.add(".".join([name, *init.parent.relative_to(ROOT / top).parts]))
    assert sorted(found - listed) == []
    assert sorted(listed - found) == []


def test_the_dataset_card_lives_once_in_the_package_that_ships_it() -> None:
    from bespoke_dataset.exporting import CARD_TEMPLATE

    assert CARD_TEMPLATE == ROOT / "bespoke_dataset" / "hub_card.md" and CARD_TEMPLATE.is_file()
    assert not CARD_TEMPLATE.is_symlink()  # a link to a copy outside the package: two cards to keep in step
    assert sorted(path.relative_to(ROOT).as_posix() for path in ROOT.glob("*/hub_card.md")) == ["bespoke_dataset/hub_card.md"]
    assert not (ROOT / "hub_card.md").exists()
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert "hub_card.md" in config["options.package_data"]["bespoke_dataset"]


def test_the_lint_finds_nothing() -> None:
    # the rules are pyproject.toml's (pyflakes, import order, bugbear's sure checks); .ci/run runs the same
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout


LOWER_BOUNDS = ROOT / ".ci" / "lower-bounds.txt"
UNPINNED = {"torch": "the registry's Linux builds carry CUDA: the lower-bounds environment gets the CPU build on disk"}


def test_the_lower_bounds_ci_installs_are_the_declared_minimums() -> None:
    """.ci/lower-bounds installs .ci/lower-bounds.txt and runs the metric and data tests: each pin there must
    be the `>=` minimum setup.cfg declares (install_requires and the extras it installs), and every such
    minimum pinned, so the declaration cannot drift from what CI has seen work."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    lines = [*config["options"]["install_requires"].splitlines(), *config["options.extras_require"]["evaluate"].splitlines(),
             *config["options.extras_require"]["offline"].splitlines()]
    declared: dict[str, Version] = {}
    for line in lines:
        if line.strip() and not line.strip().startswith("#"):
            requirement = Requirement(line)
            minimum = [spec.version for spec in requirement.specifier if spec.operator == ">="]
            if minimum:
                declared[canonicalize_name(requirement.name)] = Version(minimum[0])
    pinned: dict[str, Version] = {}
    for line in LOWER_BOUNDS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            [spec] = requirement.specifier
            assert spec.operator == "==", line
            pinned[canonicalize_name(requirement.name)] = Version(spec.version)
    assert {name: version for name, version in declared.items() if name not in UNPINNED} == pinned
    assert set(UNPINNED) <= set(declared)
    assert "bash .ci/lower-bounds" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
