"""What every script in `benchmarks/` writes: `benchmarks/results/<script>.json`, the figures it measured and
the conditions it measured them under (command, cores, load at start and end, date, package version, how
long the script ran), and for each figure with a goal whether it met it. The docs and the README quote
figures from these files only, each behind a marker `tests/results/test_figures.py` checks:
`<!-- figure: judge_throughput.speedup.median -->12.7`.

    from record import over_runs, write_results
    write_results(__file__, {"speedup": over_runs([12.1, 12.7, 13.0]), "calls_per_s": 513.0},
                  goals={"speedup.median": (">=", 20.0)})

Noisy timings are recorded `over_runs`: median, min, max and the number of runs.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"

_COMPARE = {">=": lambda v, g: v >= g, "<=": lambda v, g: v <= g, ">": lambda v, g: v > g, "<": lambda v, g: v < g}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else []


# A script imports this module first: its start, for the load the run began under and how long it ran.
_STARTED = time.perf_counter()
_LOAD_AT_START = _load()


def machine() -> dict[str, Any]:
    """The conditions a figure was measured under: cores, load averages (1, 5, 15 min) when the script
    started and when it wrote its results, platform, Python."""
    return {"cores": os.cpu_count(), "load_at_start": _LOAD_AT_START, "load_at_end": _load(),
            "platform": platform.platform(), "python": platform.python_version()}


def over_runs(values: Iterable[float], digits: int = 4) -> dict[str, float]:
    """A timing (or ratio) measured several times: its median, min and max, and how many runs."""
    values = list(values)
    return {"median": round(statistics.median(values), digits), "min": round(min(values), digits),
            "max": round(max(values), digits), "runs": len(values)}


def lookup(figures: Mapping[str, Any], path: str) -> Any:
    """The figure at a dotted `path` (`speedup.median`, `configs.benchmark.cold_s`)."""
    value: Any = figures
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise KeyError(f"no figure {path!r} (stopped at {part!r})")
        value = value[part]
    return value


def write_results(script: str, figures: dict[str, Any], *, goals: dict[str, tuple[str, float]] | None = None,
                  notes: dict[str, str] | None = None, out: Path | None = None) -> Path:
    """Write `benchmarks/results/<script stem>.json` (or `out`) and return its path.

    `figures` are what the script measured (numbers, or dicts of them, nested); `goals` maps a figure's
    dotted path to `(comparison, value)`, and the file records `met: true/false` for each; `notes` say
    how a figure was measured where its name does not."""
    from bespoke_dataset.version import __version__

    goals = goals or {}
    record = {
        "script": f"benchmarks/{Path(script).name}",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "bespoke_eval_version": __version__,
        "machine": machine(),
        "script_seconds": round(time.perf_counter() - _STARTED, 1),
        "figures": figures,
        "goals": {path: {"comparison": op, "goal": goal, "met": bool(_COMPARE[op](lookup(figures, path), goal))}
                  for path, (op, goal) in goals.items()},
        "notes": notes or {},
    }
    path = out or RESULTS / f"{Path(script).stem}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(path)  # never a half-written results file
    for name, goal in record["goals"].items():
        print(f"goal {name} {goal['comparison']} {goal['goal']}: {'met' if goal['met'] else 'MISSED'}")
    print(f"results written to {path}")
    return path
