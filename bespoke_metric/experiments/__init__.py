"""Experiments: the paper's grids of systems x user contexts x search, run in one process into one table.

>>> from bespoke_metric.experiments import SweepConfig, read_sweep, sweep
>>> outcome = sweep(SweepConfig.from_yaml("sweep.yaml"))  # doctest: +SKIP
>>> record = read_sweep("sweeps/main")  # doctest: +SKIP

| module | concern |
|---|---|
| `grid` | axes, their product (the cells) and the cells' names |
| `config` | `SweepConfig`: a sweep from Python, a YAML file or the command line |
| `runner` | `sweep(SweepConfig)`, `run_sweep`: every cell generated, then all judged in one run; models, data and caches shared |
| `estimates` | what a sweep would call and what its caches already hold, without a call |
| `outputs` | the sweep's folder: each cell's files, `sweep.json`, which cells are finished |
| `table` | the paper's table: intervals, paired differences to `none`, the noise drop |
| `report` | `bespoke report`: the sweep drawn as HTML, with the figures as PNG |
"""

from bespoke_dataset.lazy import lazy_attributes

from .config import SweepConfig, SweepConfigError
from .estimates import CellEstimate, dry_run
from .grid import Axis, Cell, cells
from .outputs import SweepFolder, read_sweep
from .runner import CellPlan, SweepPlan, plan_sweep, run_sweep, sweep
from .table import baselines, build_table, relative_drops

__all__ = [
    "Axis", "Cell", "CellEstimate", "CellPlan", "SweepConfig", "SweepConfigError", "SweepFolder", "SweepPlan",
    "baselines", "build_table", "cells", "dry_run", "plan_sweep", "read_sweep", "relative_drops", "run_sweep",
    "sweep", "write_report",
]

# the report draws with matplotlib (the plots extra): imported on first use
__getattr__, __dir__ = lazy_attributes(__name__, {"write_report": ".report"})
