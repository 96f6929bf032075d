"""The `bespoke` command line: every subcommand is registered and documents itself."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bespoke_cli.cli import COMMANDS, main


@pytest.mark.slow
def test_top_level_help_lists_every_command():
    run = subprocess.run([sys.executable, "-m", "bespoke_cli.cli", "--help"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    for name in COMMANDS:
        assert name in run.stdout
    assert "95% bootstrap" in run.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_subcommand_help(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([name, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: bespoke {name}")
    assert "%%" not in out


@pytest.mark.slow
def test_a_reader_that_stops_early_is_no_error():
    """`bespoke info | head -1`: the reader is gone before the command writes; it ends quietly, exit 0."""
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has already stopped reading
    try:
        done = subprocess.run([sys.executable, "-m", "bespoke_cli.cli", "info", "--source", "sample"],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr
    assert "BrokenPipeError" not in done.stderr
    assert done.returncode == 0
