"""The `bespoke` command line: every subcommand is registered and documents itself."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bespoke_cli.cli import COMMANDS, main


def test_top_level_help_lists_every_command():
    run = subprocess.run([sys.executable, "-m", "bespoke_cli.cli", "--help"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    for name in COMMANDS:
        assert name in run.stdout
    assert "95% bootstrap" in run.stdout


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_subcommand_help(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([name, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: bespoke {name}") and "%%" not in out
