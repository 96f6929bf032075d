"""Start-up of `bespoke score` with an API judge: what the command imports before its first call.

Runs, as a fresh process each time, against the stand-in judge server on 127.0.0.1:

    python -X importtime -m bespoke_cli.cli score --source sample --predictions <the sample's> \\
        --judge openai:bench --base-url <the stand-in> --api-key benchmark --output <tmp>

The command runs as an installed package does: its bytecode compiled once, by an untimed first run (into a
`PYTHONPYCACHEPREFIX` of the run's own: an environment may set `PYTHONDONTWRITEBYTECODE`, and the source tree
is left as it is), which also leaves the day's prices in the run's cache folder.

A `sitecustomize` put first on the child's path adds an audit hook that writes a marker line to stderr at
the first `socket.connect` (the first HTTP request), so the `-X importtime` lines split into the imports
before the first call and those after. Per run: the sum of the modules' own import times before the
marker (the imports' cumulative time up to the first call), the wall seconds from the process's start to the
marker, and the packages whose modules took longest. Medians and ranges over `--runs` runs.
Writes `benchmarks/results/startup.json` (goal: at most 0.8 s of imports before the first call).

    python benchmarks/startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from record import over_runs, write_results  # first: it notes the load the run starts under

SAMPLE_PREDICTIONS = Path(__file__).resolve().parent.parent / "bespoke_dataset" / "sample" / "predictions.jsonl"
MARKER = "bespoke-startup: first connect"

# The child's `sitecustomize`: one line on stderr at the first socket connection, written with os.write so it
# lands in order among the `-X importtime` lines (written unbuffered by the interpreter).
_SITECUSTOMIZE = f'''
import os, sys, time

_start = time.perf_counter()

def _hook(event, args):
    if event == "socket.connect" and not _hook.done:
        _hook.done = True
        os.write(2, ("{MARKER} %.4f\\n" % (time.perf_counter() - _start)).encode())

_hook.done = False
sys.addaudithook(_hook)
'''


def _import_lines(stderr: str) -> tuple[list[tuple[int, str]], float]:
    """The `-X importtime` lines before the marker, as (own microseconds, module), and the seconds from
    start-up to the marker."""
    lines: list[tuple[int, str]] = []
    for line in stderr.splitlines():
        if line.startswith(MARKER):
            return lines, float(line.split()[-1])
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            own, _, name = (part.strip() for part in line[len("import time:"):].split("|"))
            lines.append((int(own), name))
    raise SystemExit("the command made no connection: no first call to measure up to\n" + stderr[-2000:])


def one_run(base_url: str, work: Path) -> tuple[float, float, dict[str, float]]:
    """Seconds of imports before the first call, seconds to the first call, and each top-level package's
    share of the imports (its modules' own times) before it."""
    site = work / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    env = {**os.environ, "BESPOKE_CACHE": str(work / "cache"), "PYTHONPYCACHEPREFIX": str(work / "bytecode"),
           "PYTHONPATH": os.pathsep.join([str(site), *(p for p in sys.path if p)])}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [sys.executable, "-X", "importtime", "-m", "bespoke_cli.cli", "score", "--source", "sample",
               "--predictions", str(SAMPLE_PREDICTIONS), "--judge", "openai:bench", "--base-url", base_url,
               "--api-key", "benchmark", "--output", str(work / "results.json")]
    done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bespoke score failed ({done.returncode}):\n{done.stderr[-4000:]}")
    lines, to_first_call = _import_lines(done.stderr)
    imports = sum(own for own, _ in lines) / 1e6
    packages: dict[str, float] = collections.defaultdict(float)
    for own, name in lines:
        packages[name.split(".")[0]] += own / 1e6
    return imports, to_first_call, dict(packages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=8, help="packages listed, slowest first")
    args = parser.parse_args()

    from bespoke_metric.testing.judge_responder import judge_answer
    from bespoke_metric.testing.server import serve

    imports, first_calls, packages = [], [], collections.defaultdict(list)
    with serve(responder=judge_answer) as server, tempfile.TemporaryDirectory(prefix="bespoke-startup-") as tmp:
        cold, _, _ = one_run(server.base_url, Path(tmp))  # compiles the bytecode, caches the prices
        print(f"untimed first run: imports before the first call {cold:.2f} s (bytecode compiled then)")
        for run in range(args.runs):
            start = time.perf_counter()
            seconds, to_first_call, per_package = one_run(server.base_url, Path(tmp))
            imports.append(seconds)
            first_calls.append(to_first_call)
            for name, value in per_package.items():
                packages[name].append(value)
            print(f"run {run + 1}: imports before the first call {seconds:.2f} s, first call at {to_first_call:.2f} s, "
                  f"whole command {time.perf_counter() - start:.2f} s")
    slowest = sorted(packages.items(), key=lambda item: -statistics.median(item[1]))[: args.top]
    for name, values in slowest:
        print(f"  {name:28s} {statistics.median(values):.3f} s")
    write_results(__file__, {
        "runs": args.runs,
        "imports_before_first_call_s": over_runs(imports, 3),
        "first_run_imports_before_first_call_s": round(cold, 3),
        "first_call_s": over_runs(first_calls, 3),
        "slowest_packages_s": {name: round(statistics.median(values), 3) for name, values in slowest},
    }, goals={"imports_before_first_call_s.median": ("<=", 0.8)},
       notes={"imports_before_first_call_s": "the sum of every module's own import time (-X importtime) before "
                                             "the first socket connection",
              "first_run_imports_before_first_call_s": "the untimed first run, which compiles the bytecode (once "
                                                       "per install for a user: pip compiles it)",
              "first_call_s": "wall seconds from the interpreter's start (sitecustomize) to the first connection, "
                              "under -X importtime",
              "slowest_packages_s": "each top-level package's modules' own import times summed, before the first call "
                                    "(medians; they add up to the total)"})


if __name__ == "__main__":
    main()
