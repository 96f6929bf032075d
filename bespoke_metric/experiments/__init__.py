"""Experiments: the paper's grids of systems x user contexts x search, run in one process into one table.

>>> from bespoke_metric.experiments import read_sweep
>>> sweep = read_sweep("sweeps/main")  # doctest: +SKIP

| module | concern |
|---|---|
| `grid` | axes, their product (the cells) and the cells' names |
| `config` | a sweep written as YAML, read into the command's own flags |
| `runner` | `run_sweep`: every cell generated, then all judged in one run; models, data and caches shared |
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
    "SweepConfigError": ".config",
    "SweepFolder": ".outputs",
    "SweepPlan": ".runner",
    "baselines": ".table",
    "build_table": ".table",
    "cells": ".grid",
    "config_words": ".config",
    "dry_run": ".estimates",
    "flag_keys": ".config",
    "read_sweep": ".outputs",
    "relative_drops": ".table",
    "run_sweep": ".runner",
    "write_report": ".report",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
