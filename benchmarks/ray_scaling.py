"""`--executor ray` on this machine: scaling over actors, and Ray's overhead against the in-process run.

1. A small random `hf:` model (built in place, no download) answers `--hf-requests` prompts on Ray with 1 and
   with 2 actors (one CPU thread each, as Ray gives an actor of one CPU): requests/s with the actors'
   start and steady (first answer to last), and the ratios (on 2 cores, 2 actors can at best double it).
2. The `openai:` engine against the local test server at `--latency` s per call (the server in its own
   process): the same `--calls` requests in-process and on Ray (2 actors sharing `--concurrency`), wall
   times and their ratio (goal: Ray within 1.3x). Ray is started before the clocks run and each Ray
   run's actors start inside its measured time, as they do for a user; the start of Ray itself (once per
   process) is printed apart.

All numbers come from one run on one machine; only the ratios mean anything elsewhere. Writes
`benchmarks/results/ray_scaling.json` with the load the run started and ended under.

    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 python benchmarks/ray_scaling.py [--calls 8000] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from pathlib import Path

from record import write_results  # first: it notes the load the run starts under


def _serve(latency: float, queue: "multiprocessing.Queue[str]", stop: "multiprocessing.Event") -> None:
    from bespoke_metric.testing.server import serve

    with serve(responder=lambda body: "an answer of a few words", latency=latency) as server:
        queue.put(server.base_url)
        stop.wait(3600)


def timed(backend, requests) -> tuple[float, int, float, float]:
    """Wall seconds, requests answered, the steady rate (answers per second from the first answer to
    the last: what more actors add, without their start) and the seconds to the first answer."""
    from bespoke_metric.calls.scheduler import run_requests_sync

    answered: list[float] = []
    start = time.perf_counter()
    results = run_requests_sync(backend, requests, progress=lambda kind, n: answered.append(time.perf_counter()))
    wall = time.perf_counter() - start
    steady = (len(answered) - 1) / (answered[-1] - answered[0]) if len(answered) > 1 and answered[-1] > answered[0] else 0.0
    first = answered[0] - start if answered else wall
    return wall, sum(result.ok for result in results), steady, first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=8000, help="openai: requests per run")
    parser.add_argument("--latency", type=float, default=0.05, help="openai: seconds the server takes per call")
    parser.add_argument("--concurrency", type=int, default=32, help="openai: calls in flight, all actors together")
    parser.add_argument("--hf-requests", type=int, default=384, help="hf: prompts per run (0: skip the hf part)")
    parser.add_argument("--hf-max-tokens", type=int, default=32)
    parser.add_argument("--hf-hidden-size", type=int, default=256, help="hf: width of the random model (compute per prompt)")
    args = parser.parse_args()

    import ray

    from bespoke_metric.backends.base import Request
    from bespoke_metric.backends.registry import make_backend
    from bespoke_metric.testing.tiny_model import build_tiny_model

    start = time.perf_counter()
    ray.init(include_dashboard=False, logging_level="WARNING")
    ray_start_s = time.perf_counter() - start
    print(f"Ray local instance started in {ray_start_s:.1f} s (once per process; not in the runs below)")

    work = Path(tempfile.mkdtemp(prefix="bespoke-ray-scaling-"))
    model = build_tiny_model(work / "tiny", hidden_size=args.hf_hidden_size, num_layers=4)
    prompts = [Request(({"role": "user", "content": f"Request {i}: say something about topic {i % 7}."},), args.hf_max_tokens)
               for i in range(args.hf_requests)]
    hf = {}
    for actors in (1, 2) if args.hf_requests else ():
        backend = make_backend(f"hf:{model}", executor="ray", replicas=actors, batch_size=8, gpus_per_replica=0)
        hf[actors] = timed(backend, prompts)
        wall, ok, steady, _ = hf[actors]
        print(f"hf on Ray, {actors} actor(s): {wall:.1f} s with the actors' start, {ok / wall:.1f} requests/s; steady {steady:.1f} requests/s")
    if hf:
        print(f"hf scaling 2 actors / 1 actor: {hf[1][0] / hf[2][0]:.2f}x wall, {hf[2][2] / hf[1][2]:.2f}x steady throughput")

    context = multiprocessing.get_context("spawn")
    queue, stop = context.Queue(), context.Event()
    server = context.Process(target=_serve, args=(args.latency, queue, stop), daemon=True)
    server.start()
    base_url = queue.get(timeout=120)
    try:
        calls = [Request(({"role": "user", "content": f"call {i}"},), 16) for i in range(args.calls)]
        options = {"base_url": base_url, "concurrency": args.concurrency}
        local_s, local_ok, local_rate, _ = timed(make_backend("openai:bench", **options), calls)
        ray_s, ray_ok, ray_rate, ray_first = timed(make_backend("openai:bench", executor="ray", replicas=2, **options), calls)
    finally:
        stop.set()
        server.join(timeout=10)
    ideal = args.calls * args.latency / args.concurrency
    print(f"openai, {args.calls} calls at {args.latency * 1000:.0f} ms, concurrency {args.concurrency} (ideal {ideal:.1f} s):")
    print(f"  in-process {local_s:.1f} s ({local_ok} ok), Ray 2 actors {ray_s:.1f} s ({ray_ok} ok)")
    print(f"  Ray / in-process wall time: {ray_s / local_s:.2f}x (goal <= 1.3x)")
    print(f"  of which Ray's first answer (actors starting) {ray_first:.1f} s; steady calls/s in-process {local_rate:.0f},"
          f" Ray {ray_rate:.0f}: {local_rate / ray_rate:.2f}x")
    figures = {
        "ray_start_s": round(ray_start_s, 1),
        "openai": {"calls": args.calls, "latency_ms": round(args.latency * 1000), "concurrency": args.concurrency,
                   "ideal_s": round(ideal, 2), "in_process_s": round(local_s, 2), "ray_s": round(ray_s, 2),
                   "ok": {"in_process": local_ok, "ray": ray_ok}, "ray_over_in_process": round(ray_s / local_s, 3),
                   "ray_first_answer_s": round(ray_first, 2), "steady_calls_per_s": {"in_process": round(local_rate), "ray": round(ray_rate)}},
    }
    if hf:
        figures["hf"] = {"prompts": args.hf_requests, "max_tokens": args.hf_max_tokens, "hidden_size": args.hf_hidden_size,
                         "wall_s": {str(n): round(hf[n][0], 2) for n in hf},
                         "steady_requests_per_s": {str(n): round(hf[n][2], 2) for n in hf},
                         "two_over_one_wall": round(hf[1][0] / hf[2][0], 3), "two_over_one_steady": round(hf[2][2] / hf[1][2], 3)}
    write_results(__file__, figures, goals={"openai.ray_over_in_process": ("<=", 1.3)},
                  notes={"ray_s": "actors start inside the measured time, as for a user; Ray itself started before",
                         "two_over_one_wall": "hf wall time with 1 actor / with 2 (>1: 2 actors are faster)"})


if __name__ == "__main__":
    main()
