"""Judge throughput of `bespoke score` against a local OpenAI-compatible server with a fixed latency per call.

One run, on the first `--queries` queries of the full-size synthetic release (one personalization call and
one call per gold claim each), with the server in its own process, measures:

1. calls per second of `bespoke_metric.score` against a bare asyncio client (aiohttp) sending the same
   request bodies to the same server at the same concurrency, alternated `--repeats` times, medians
   compared (goal: bespoke within 1.5x of the bare client);
2. bespoke's wall time against the ideal, calls x latency / concurrency (goal: within 1.3x);
3. the official evaluator's pattern, one sequential SDK call per response and per claim, against the
   `bespoke score` command as a whole process: start-up, data, calls, results file (goal: 20x faster).
   The command runs as an installed package does, after one untimed first run (recorded apart) that
   compiles its bytecode (into a `PYTHONPYCACHEPREFIX` of the run's own: an environment may set
   `PYTHONDONTWRITEBYTECODE`) and leaves the day's prices in its cache folder, as a user's first run does.

Client CPU time per call is printed beside the walls: on a shared machine the walls move with the load,
the CPU a call costs much less. Writes `benchmarks/results/judge_throughput.json` (medians and ranges over
the rounds; the load when the run started and ended).

    python benchmarks/judge_throughput.py [--latency 0.05] [--concurrency 128] [--queries 60] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from record import over_runs, write_results  # first: it notes the load the run starts under

from bespoke_metric.backends.providers.api_backend import SERVER_CONCURRENCY

API_KEY = "benchmark"


def _serve(latency: float, queue: "multiprocessing.Queue[str]", stop: "multiprocessing.Event") -> None:
    from bespoke_metric.testing.judge_responder import judge_answer
    from bespoke_metric.testing.server import serve

    with serve(responder=judge_answer, latency=latency) as server:
        queue.put(server.base_url)
        stop.wait(3600)


async def _bare(base_url: str, bodies: list[tuple[str, bytes]], concurrency: int) -> float:
    """Wall seconds for a bare aiohttp client to send every body and read every answer's text."""
    import aiohttp

    headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
    limit = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession() as session:

        async def one(path: str, body: bytes) -> str:
            async with limit, session.post(base_url + path, data=body, headers=headers) as response:
                return json.loads(await response.read())["choices"][0]["message"]["content"]

        start = time.perf_counter()
        await asyncio.gather(*(one(path, body) for path, body in bodies))
        return time.perf_counter() - start


def _official_pattern(base_url: str, bodies: list[tuple[str, bytes]]) -> tuple[float, float]:
    """Wall and CPU seconds for one sequential SDK call per request, as the official evaluator makes them."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=API_KEY)
    start, cpu = time.perf_counter(), time.process_time()
    for _, body in bodies:
        _ = client.chat.completions.create(**json.loads(body)).choices[0].message.content  # read, as the evaluator does
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    client.close()
    return wall, cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _command(base_url: str, release: Path, predictions: Path, concurrency: int, work: Path) -> tuple[float, float, dict[str, Any]]:
    """Wall and CPU seconds of `bespoke score` as a fresh process, and its results."""
    output = work / "results.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "BESPOKE_CACHE": str(work / "cache"),
           "PYTHONPYCACHEPREFIX": str(work / "bytecode")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start, cpu = time.perf_counter(), _children_cpu()
    run = subprocess.run(
        [sys.executable, "-m", "bespoke_cli.cli", "score", "--predictions", str(predictions), "--source", str(release),
         "--judge", "openai:bench", "--base-url", base_url, "--api-key", API_KEY,
         "--output", str(output)] + ([] if concurrency == SERVER_CONCURRENCY else ["--concurrency", str(concurrency)]),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    if run.returncode != 0:
        raise SystemExit(f"bespoke score failed ({run.returncode}):\n{run.stderr}")
    return wall, cpu, json.loads(output.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the server takes per call (a local vLLM: tens of ms)")
    parser.add_argument("--concurrency", type=int, default=SERVER_CONCURRENCY,
                        help=f"calls in flight (default: bespoke's own default for a local server, {SERVER_CONCURRENCY})")
    parser.add_argument("--queries", type=int, default=60, help="items scored (the first N queries of the release)")
    parser.add_argument("--repeats", type=int, default=3, help="alternated rounds of bespoke and the bare client")
    args = parser.parse_args()

    from bespoke_dataset.rows import load_rows
    from bespoke_dataset.synthetic import write_release
    from bespoke_metric.judging.factory import make_judge
    from bespoke_metric.judging.judge import JudgeItem
    from bespoke_metric.scoring.pipeline import score

    work = Path(tempfile.mkdtemp(prefix="bespoke-throughput-"))
    release = write_release(work / "release")
    rows = load_rows("benchmark", release)[: args.queries]
    responses = [row["shots"][len(row["shots"]) // 2]["response"] for row in rows]
    predictions = work / "preds.jsonl"
    predictions.write_text("".join(
        json.dumps({"user": r["user"], "query_id": r["query_id"], "response": text}) + "\n"
        for r, text in zip(rows, responses, strict=True)))

    context = multiprocessing.get_context("spawn")
    queue, stop = context.Queue(), context.Event()
    server = context.Process(target=_serve, args=(args.latency, queue, stop), daemon=True)
    server.start()
    base_url = queue.get(timeout=120)

    # The exact bodies bespoke sends, for the bare client and the official pattern.
    judge = make_judge("openai:bench", base_url=base_url, api_key=API_KEY)
    requests, _ = judge.requests([JudgeItem(row, text) for row, text in zip(rows, responses, strict=True)])
    bodies = [judge.backend.path_and_body(request) for request in requests]
    calls = len(bodies)

    def bespoke_round() -> tuple[float, float]:
        cpu = time.process_time()
        results = score(predictions, "openai:bench", source=release, base_url=base_url, api_key=API_KEY,
                        concurrency=args.concurrency, progress=False).to_json()
        assert results["usage"]["calls"] == calls and results["usage"]["failed"] == 0, results["usage"]
        return results["usage"]["wall_seconds"], time.process_time() - cpu

    def bare_round() -> tuple[float, float]:
        cpu = time.process_time()
        wall = asyncio.run(_bare(base_url, bodies, args.concurrency))
        return wall, time.process_time() - cpu

    try:
        bespoke_round(), bare_round()  # warm-up: imports, first connections
        walls: dict[str, list[float]] = {"bespoke": [], "bare": []}
        cpus: dict[str, list[float]] = {"bespoke": [], "bare": []}
        for _ in range(args.repeats):
            for name, one_round in (("bespoke", bespoke_round), ("bare", bare_round)):
                wall, cpu = one_round()
                walls[name].append(wall)
                cpus[name].append(cpu)
        first_command = _command(base_url, release, predictions, args.concurrency, work)[0]  # bytecode, prices
        commands = [_command(base_url, release, predictions, args.concurrency, work) for _ in range(args.repeats)]
        official, official_cpu = _official_pattern(base_url, bodies)
    finally:
        stop.set()
        server.join(10)

    wall = {name: statistics.median(values) for name, values in walls.items()}
    cpu_ms = {name: statistics.median(values) / calls * 1000 for name, values in cpus.items()}
    ideal = calls * args.latency / args.concurrency
    command = statistics.median(seconds for seconds, _, _ in commands)
    command_cpu = statistics.median(cpu for _, cpu, _ in commands)
    command_judge = statistics.median(results["usage"]["wall_seconds"] for _, _, results in commands)
    print(f"items: {len(rows)}  calls: {calls} (1 + claims per item)  latency: {args.latency * 1000:.0f} ms  "
          f"concurrency: {args.concurrency}  medians of {args.repeats}")
    print(f"bespoke:      {calls / wall['bespoke']:6.0f} calls/s  wall {wall['bespoke']:.2f} s  "
          f"client CPU {cpu_ms['bespoke']:.2f} ms/call (whole score(): data, prompts, parsing)")
    print(f"bare aiohttp: {calls / wall['bare']:6.0f} calls/s  wall {wall['bare']:.2f} s  client CPU {cpu_ms['bare']:.2f} ms/call")
    print(f"  bare client / bespoke, calls per second: {wall['bespoke'] / wall['bare']:.2f}x (goal: at most 1.5x)")
    print(f"  bespoke wall / ideal ({ideal:.2f} s): {wall['bespoke'] / ideal:.2f}x (goal: at most 1.3x); "
          f"bare client / ideal: {wall['bare'] / ideal:.2f}x")
    print(f"official pattern (one sequential SDK call per response and per claim): {official:.2f} s, "
          f"client CPU {official_cpu / calls * 1000:.2f} ms/call")
    print(f"bespoke score command, whole process: {command:.2f} s (judging {command_judge:.2f} s; start-up, data "
          f"and results file {command - command_judge:.2f} s), CPU {command_cpu:.2f} s; its untimed first run "
          f"{first_command:.2f} s")
    print(f"  official pattern / bespoke score command: {official / command:.1f}x (goal: at least 20x); "
          f"/ its judging alone: {official / command_judge:.1f}x")
    write_results(__file__, {
        "queries": len(rows), "calls": calls, "latency_ms": round(args.latency * 1000), "concurrency": args.concurrency,
        "rounds": args.repeats,
        "bespoke_calls_per_s": over_runs(calls / w for w in walls["bespoke"]),
        "bare_calls_per_s": over_runs(calls / w for w in walls["bare"]),
        "bespoke_over_bare": over_runs(b / a for b, a in zip(walls["bespoke"], walls["bare"], strict=True)),
        "ideal_s": round(ideal, 3),
        "bespoke_over_ideal": over_runs(w / ideal for w in walls["bespoke"]),
        "bare_over_ideal": over_runs(w / ideal for w in walls["bare"]),
        "client_cpu_ms_per_call": {name: round(value, 3) for name, value in cpu_ms.items()},
        "official_s": round(official, 2),
        "command_first_s": round(first_command, 2),
        "command_s": over_runs(seconds for seconds, _, _ in commands),
        "command_cpu_s": over_runs(cpu for _, cpu, _ in commands),
        "command_judging_s": over_runs(results["usage"]["wall_seconds"] for _, _, results in commands),
        "speedup": over_runs(official / seconds for seconds, _, _ in commands),
        "speedup_judging": over_runs(official / results["usage"]["wall_seconds"] for _, _, results in commands),
    }, goals={"bespoke_over_bare.median": ("<=", 1.5), "bespoke_over_ideal.median": ("<=", 1.3),
              "speedup.median": (">=", 20.0)},
       notes={"official_s": "one sequential openai SDK call per response and per claim, the same bodies, measured once",
              "command_first_s": "the untimed first run of the command, which compiles its bytecode and looks its "
                                 "prices up (once per install, and once a day)",
              "command_s": "`bespoke score` as a fresh process: start-up, data, guards, calls, results file",
              "speedup": "official_s / command_s, per command run"})


if __name__ == "__main__":
    main()
