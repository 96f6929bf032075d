"""What every script in `benchmarks/` writes: `benchmarks/results/<script>.json`, the figures it measured and
the conditions it measured them under (command, cores, load, date, package version), and for each figure
with a goal whether it met it. The README and the docs quote figures from these files only.

    from record import write_results
    write_results(__file__, {"speedup": 17.2, "calls_per_s": 513.0}, goals={"speedup": (">=", 20.0)})
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"

_COMPARE = {">=": lambda v, g: v >= g, "<=": lambda v, g: v <= g, ">": lambda v, g: v > g, "<": lambda v, g: v < g}


def machine() -> dict[str, Any]:
    """The conditions a figure was measured under: cores, load averages, platform, Python."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (None, None, None)
    return {"cores": os.cpu_count(), "load_1m_5m_15m": [round(x, 2) for x in load if x is not None],
            "platform": platform.platform(), "python": platform.python_version()}


def write_results(script: str, figures: dict[str, Any], *, goals: dict[str, tuple[str, float]] | None = None,
                  notes: dict[str, str] | None = None, out: Path | None = None) -> Path:
    """Write `benchmarks/results/<script stem>.json` (or `out`) and return its path.

    `figures` are what the script measured (numbers, or lists/dicts of them); `goals` maps a figure to
    `(comparison, value)`, and the file records `met: true/false` for each; `notes` say how a figure was
    measured where its name does not."""
    from bespoke_dataset.version import __version__

    goals = goals or {}
    record = {
        "script": f"benchmarks/{Path(script).name}",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "bespoke_eval_version": __version__,
        "machine": machine(),
        "figures": figures,
        "goals": {name: {"comparison": op, "goal": goal, "met": bool(_COMPARE[op](figures[name], goal))}
                  for name, (op, goal) in goals.items()},
        "notes": notes or {},
    }
    path = out or RESULTS / f"{Path(script).stem}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(path)  # never a half-written results file
    print(f"results written to {path}")
    return path
