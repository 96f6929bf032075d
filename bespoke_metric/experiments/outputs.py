"""A sweep's output folder: where each cell's files go, `sweep.json`, and which cells are finished.

    DIR/cells/NAME.json                   the cell's results file (as `bespoke run --output` writes it)
    DIR/cells/NAME.predictions.jsonl      its predictions, with .run.json and .profiles.jsonl beside them
    DIR/generation.cache.sqlite           every system-model and profiler call of every cell
    DIR/judge.cache.sqlite                every judge call (unless --cache names another file)
    DIR/sweep.json                        the grid, each cell's status and figures, the judge, the data
    DIR/table.md, DIR/table.csv           the paper's table
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from bespoke_dataset.atomic import atomic_write_text
from bespoke_dataset.errors import UserError
from bespoke_dataset.version import __version__
from bespoke_metric.analysis.leaderboard import Entry, LeaderboardError, load_results
from bespoke_metric.systems.runfiles import sidecar

from .grid import Cell

log = logging.getLogger(__name__)

SWEEP_FILE = "sweep.json"
DONE, FAILED, PENDING = "done", "failed", "pending"
"""A cell's status: scored with every query predicted; could not do all its work (`reason` says why); not run yet;
or `results.incomplete.INCOMPLETE`: scored, but some judgments failed (its results file is marked so): not finished, so the same
sweep judges it again, from the judge's cache, paying only for the gaps."""


class SweepFileError(UserError):
    """A folder that holds no sweep, or a `sweep.json` that cannot be read."""


@dataclass(frozen=True)
class SweepFolder:
    """The paths of one sweep's output folder."""

    root: Path

    def results(self, cell: str) -> Path:
        return self.root / "cells" / f"{cell}.json"

    def predictions(self, cell: str) -> Path:
        return self.root / "cells" / f"{cell}.predictions.jsonl"

    def run_file(self, cell: str) -> Path:
        return sidecar(self.predictions(cell), ".run.json")

    @property
    def generation_cache(self) -> Path:
        return self.root / "generation.cache.sqlite"

    @property
    def judge_cache(self) -> Path:
        return self.root / "judge.cache.sqlite"

    @property
    def sweep_file(self) -> Path:
        return self.root / SWEEP_FILE

    @property
    def table_md(self) -> Path:
        return self.root / "table.md"

    @property
    def table_csv(self) -> Path:
        return self.root / "table.csv"

    def cell_files(self, cell: str) -> dict[str, str]:
        """The cell's files as `sweep.json` lists them, relative to the folder."""
        return {name: os.path.relpath(path, self.root) for name, path in
                (("results", self.results(cell)), ("predictions", self.predictions(cell)), ("run", self.run_file(cell)))}


def read_sweep(root: str | os.PathLike[str]) -> dict[str, Any]:
    """The content of `ROOT/sweep.json`; `SweepFileError` naming the file when there is none or it is not JSON."""
    path = SweepFolder(Path(root)).sweep_file
    if not path.is_file():
        raise SweepFileError(f"{path}: no such file; is {root} the --out folder of a bespoke sweep?")
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise SweepFileError(f"{path}: not valid JSON (line {error.lineno}: {error.msg})") from None
    if not isinstance(content, dict) or not isinstance(content.get("cells"), list):
        raise SweepFileError(f"{path}: not a sweep file (no 'cells' list)")
    return content


def previous_cells(root: Path) -> dict[str, Mapping[str, Any]]:
    """The cells an earlier sweep into `root` recorded, by name (none when it holds no sweep yet)."""
    try:
        return {cell["name"]: cell for cell in read_sweep(root)["cells"]}
    except SweepFileError:
        return {}


def is_finished(folder: SweepFolder, name: str, fingerprint: str, previous: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether cell `name` was finished by an earlier sweep with the same settings (`fingerprint`): then
    its results file stands and nothing of it runs again."""
    before = previous.get(name)
    return (before is not None and before.get("status") == DONE and before.get("fingerprint") == fingerprint
            and folder.results(name).is_file())


def load_entries(folder: SweepFolder, cells: Sequence[Cell]) -> dict[str, Entry]:
    """The results of every cell that has a results file with something scored in it, by cell name."""
    entries = {}
    for cell in cells:
        path = folder.results(cell.name)
        if path.is_file():
            try:
                [entries[cell.name]] = load_results([path])
            except LeaderboardError as error:  # nothing scored: the cell's status says why
                log.debug("cell %s has no figures: %s", cell.name, error)
    return entries


def write_sweep(folder: SweepFolder, content: Mapping[str, Any]) -> None:
    """Write `sweep.json` atomically, stamped with the time and the package version."""
    stamped = {**content, "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
               "bespoke_eval_version": __version__}
    atomic_write_text(folder.sweep_file, json.dumps(stamped, indent=2, ensure_ascii=False, default=str) + "\n")
