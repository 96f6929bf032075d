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

# name -> the module that defines it, imported on first use: a wing costs nothing until a name is used
_LAZY: dict[str, str] = {
    "Axis": ".grid",
    "Cell": ".grid",
    "CellEstimate": ".estimates",
    "CellPlan": ".runner",
    "SweepConfig": ".config",
    "SweepConfigError": ".config",
    "SweepFolder": ".outputs",
    "SweepPlan": ".runner",
    "baselines": ".table",
    "build_table": ".table",
    "cells": ".grid",
    "dry_run": ".estimates",
    "read_sweep": ".outputs",
    "relative_drops": ".table",
    "plan_sweep": ".runner",
    "run_sweep": ".runner",
    "sweep": ".runner",
    "write_report": ".report",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
