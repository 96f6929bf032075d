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
