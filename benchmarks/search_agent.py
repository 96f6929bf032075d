"""Wall time of a search agent against the ideal for its dependent rounds, and of its replay.

`generate` answers `--queries` questions (150 by default, the benchmark's size) with the `agent` policy
and `--rounds` rounds (3): every question searches once a round, then answers. Its system model is an
OpenAI-compatible server and its search engine a SearXNG-shaped one, each in its own process on
127.0.0.1 and each taking `--latency` seconds (0.05) per call. Model and engine concurrency are above
the number of questions, so a perfect client waits `latency` once per dependent step: `rounds + 1`
model turns and `rounds` searches. The figure is the median wall time of `--repeats` runs (each with
fresh caches, after one warm-up run) over that ideal (goal: at most 1.3x); beside it, a bare aiohttp
client's wall time for the same dependent steps against the same servers (the floor they set), the
client's CPU time per call, and the wall time of replaying a run from its caches with the search server
stopped.

    python benchmarks/search_agent.py [--queries 150] [--rounds 3] [--latency 0.05] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the fakes (tests/fakes/)
from record import write_results  # noqa: E402

MODEL = "openai:gpt-4o"  # counted offline in OpenAI's encoding


def _agent(rounds: int):
    """The system model: it searches once a round (calling the `search` tool it is offered, as an `openai:`
    model does; writing `SEARCH:` lines to a client that offers none), then answers."""
    def respond(body: dict[str, Any]) -> str | dict[str, Any]:
        from bespoke_metric.testing.server import messages_of, tool_call

        messages = messages_of(body)
        turns = sum(1 for m in messages if m["role"] == "assistant")
        question = re.search(r"Question: (.+)$", messages[1]["content"], re.S).group(1).strip()
        if turns < rounds:
            query = f"{question} (part {turns + 1})"
            return tool_call(body, "search", {"query": query}) if body.get("tools") else f"SEARCH: {query}"
        return f"Here is what the searches found about {question} [1], with one more detail [4]."
    return respond


def _serve_model(latency: float, rounds: int, queue: Any, stop: Any) -> None:
    from bespoke_metric.testing.server import serve

    with serve(responder=_agent(rounds), latency=latency) as server:
        queue.put(server.base_url)
        stop.wait(3600)


def _serve_search(latency: float, queue: Any, stop: Any) -> None:
    from fakes.search_servers import serve_search

    with serve_search("searxng", latency=latency) as server:
        queue.put(server.base_url)
        stop.wait(3600)
        queue.put(server.max_in_flight)


def _start(target: Any, *args: Any) -> tuple[multiprocessing.Process, Any, Any, str]:
    queue, stop = multiprocessing.Queue(), multiprocessing.Event()
    process = multiprocessing.Process(target=target, args=(*args, queue, stop), daemon=True)
    process.start()
    return process, queue, stop, queue.get(timeout=60)


def _questions(count: int) -> list[dict[str, str]]:
    import bespoke_dataset

    sample = list(bespoke_dataset.load("queries", source="sample"))
    return [{"user": f"user{1 + i // 5}", "query_id": str(1 + i % 5), "query": f"{sample[i % len(sample)]['query']} (case {i + 1})",
             "gold_information_need": sample[i % len(sample)]["gold_information_need"]} for i in range(count)]


async def _bare_rounds(model_url: str, search_url: str, rows: list[dict[str, str]], rounds: int) -> float:
    """Wall seconds for a bare aiohttp client to make the same dependent steps against the same servers:
    every question's model call, then every question's search, `rounds` times, then every answer. What
    the servers and the transport cost, with nothing of bespoke's."""
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def model(row: dict[str, str], turns: int) -> str:
            messages = [{"role": "system", "content": "s"}, {"role": "user", "content": f"Question: {row['query']}"}]
            messages += [{"role": "assistant", "content": "SEARCH: x"}, {"role": "user", "content": "results"}] * turns
            async with session.post(f"{model_url}/chat/completions", json={"model": "m", "messages": messages}) as answer:
                return (await answer.json())["choices"][0]["message"]["content"]

        async def search(query: str) -> int:
            async with session.get(f"{search_url}/search", params={"q": query, "format": "json"}) as answer:
                return len((await answer.json())["results"])

        start = time.perf_counter()
        for turn in range(rounds + 1):
            said = await asyncio.gather(*(model(row, turn) for row in rows))
            if turn < rounds:
                await asyncio.gather(*(search(text) for text in said))
        return time.perf_counter() - start


def _run(model_url: str, search_url: str, rows: list[dict[str, str]], folder: Path, rounds: int, replay: bool) -> tuple[float, float, Any]:
    from bespoke_metric.backends.registry import make_backend
    from bespoke_metric.systems import GenerationSettings, generate
    from bespoke_metric.systems.search import SearchOptions

    backend = make_backend(MODEL, base_url=model_url, concurrency=4 * len(rows))
    settings = GenerationSettings(search=f"searxng:{search_url}", search_policy="agent", search_rounds=rounds,
                                  search_options=SearchOptions(concurrency=4 * len(rows)), search_replay=replay,
                                  cache=folder / "run.cache.sqlite", max_new_tokens=256)
    output = folder / ("replay.jsonl" if replay else "preds.jsonl")
    start, cpu = time.perf_counter(), time.process_time()
    report = generate(backend, output, settings, queries=rows, progress=False)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    backend.close()
    if report.failed or report.generated != len(rows):
        raise SystemExit(f"the run failed: {report.failed[:3]}")
    return wall, cpu, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    rows = _questions(args.queries)
    ideal = (2 * args.rounds + 1) * args.latency
    model, _, model_stop, model_url = _start(_serve_model, args.latency, args.rounds)
    search, search_queue, search_stop, search_url = _start(_serve_search, args.latency)
    walls, cpus, folders = [], [], []
    try:
        _run(model_url, search_url, rows, Path(tempfile.mkdtemp(prefix="search-agent-")), args.rounds, replay=False)  # warm-up
        for _ in range(args.repeats):
            folder = Path(tempfile.mkdtemp(prefix="search-agent-"))
            wall, cpu, report = _run(model_url, search_url, rows, folder, args.rounds, replay=False)
            walls.append(wall)
            cpus.append(cpu)
            folders.append(folder)
            print(f"agent run: {wall:.3f} s ({cpu:.3f} CPU-s) for {report.usage.calls} model calls")
            if report.usage.calls != len(rows) * (args.rounds + 1):  # else it timed fewer dependent steps than the ideal's
                raise SystemExit(f"the agent made {report.usage.calls} model calls, not {len(rows)} x {args.rounds + 1}: "
                                 "it did not search every round")
        bare = statistics.median(asyncio.run(_bare_rounds(model_url, search_url, rows, args.rounds)) for _ in range(args.repeats))
        print(f"bare client, the same steps: {bare:.3f} s")
    finally:
        search_stop.set()
        peak = search_queue.get(timeout=30)
        search.join(timeout=10)
    # the search server is gone: a replay that sent a single search would fail
    replay_wall, _, replayed = _run(model_url, search_url, rows, folders[0], args.rounds, replay=True)
    model_stop.set()
    model.join(timeout=10)
    same = (folders[0] / "preds.jsonl").read_bytes() == (folders[0] / "replay.jsonl").read_bytes()
    median = statistics.median(walls)
    figures = {
        "queries": args.queries, "rounds": args.rounds, "latency_s": args.latency,
        "model_calls_per_run": args.queries * (args.rounds + 1), "search_calls_per_run": args.queries * args.rounds,
        "ideal_s": round(ideal, 3), "wall_s": [round(w, 3) for w in walls], "median_wall_s": round(median, 3),
        "ratio_to_ideal": round(median / ideal, 3), "bare_client_wall_s": round(bare, 3),
        "ratio_to_bare_client": round(median / bare, 3), "search_peak_in_flight": peak,
        "client_cpu_s": round(statistics.median(cpus), 3),
        "client_cpu_ms_per_call": round(1000 * statistics.median(cpus) / (args.queries * (2 * args.rounds + 1)), 3),
        "replay_wall_s": round(replay_wall, 3), "replay_model_calls": replayed.usage.calls, "replay_identical": same,
    }
    print(f"ideal {ideal:.3f} s, median {median:.3f} s: {median / ideal:.2f}x; replay {replay_wall:.3f} s "
          f"({replayed.usage.calls} model calls), identical predictions: {same}")
    write_results(__file__, figures, goals={"ratio_to_ideal": ("<=", 1.3)}, notes={
        "ideal_s": "(2 * rounds + 1) * latency: rounds + 1 dependent model turns and rounds dependent searches",
        "ratio_to_ideal": "median wall over the ideal; the wall includes opening the caches and writing the files",
        "client_cpu_s": "CPU seconds of the generating process per run (median): on a loaded machine the walls move with "
                         "the load, this much less",
        "replay_wall_s": "the same run from its generation and search caches, the search server stopped",
        "bare_client_wall_s": "a bare aiohttp client making the same dependent steps against the same servers (median): "
                              "the floor the servers and the transport set, measured in the same run",
    })


if __name__ == "__main__":
    main()
