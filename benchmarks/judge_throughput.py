"""Judge throughput against a local OpenAI-compatible server with a fixed per-call latency.

Scores all 150 queries of the full-size synthetic release (1 personalization call + 1 call per gold claim
each) at `--concurrency` and, in the same run, one call at a time as the official scripts do. The server
runs in its own process so its work does not share the client's interpreter. Prints wall times, the ideal
(calls x latency / concurrency) and the ratios.

    python benchmarks/judge_throughput.py [--latency 1.0] [--concurrency 32] [--sequential-queries 5]

The sequential baseline is measured on the first `--sequential-queries` queries (all 150 take
calls x latency seconds) and its per-call time is projected to the full run; pass 150 to measure it whole.
Recall in both modes is scored too, and their agreement is printed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import tempfile
from pathlib import Path


def _serve(latency: float, queue: "multiprocessing.Queue[str]", stop: "multiprocessing.Event") -> None:
    from bespoke_metric.testing.judge_responder import judge_answer
    from bespoke_metric.testing.server import serve

    with serve(responder=judge_answer, latency=latency) as server:
        queue.put(server.base_url)
        stop.wait(3600)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds the server takes per call (an API judge takes seconds)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--sequential-queries", type=int, default=5)
    args = parser.parse_args()

    import bespoke_dataset
    from bespoke_dataset.synthetic import write_release
    from bespoke_metric.pipeline import score

    work = Path(tempfile.mkdtemp(prefix="bespoke-throughput-"))
    release = write_release(work / "release")
    rows = list(bespoke_dataset.load("benchmark", source=release))
    predictions = [{"user": r["user"], "query_id": r["query_id"], "response": r["shots"][len(r["shots"]) // 2]["response"]} for r in rows]
    (work / "preds.jsonl").write_text("".join(json.dumps(p) + "\n" for p in predictions))

    context = multiprocessing.get_context("spawn")
    queue, stop = context.Queue(), context.Event()
    server = context.Process(target=_serve, args=(args.latency, queue, stop), daemon=True)
    server.start()
    base_url = queue.get(timeout=120)
    options = dict(source=release, base_url=base_url, api_key="benchmark", progress=False)
    try:
        concurrent = score(work / "preds.jsonl", "openai:bench", concurrency=args.concurrency, **options)
        sequential = score(predictions[: args.sequential_queries], "openai:bench", concurrency=1, **options)
        batched = score(work / "preds.jsonl", "openai:bench", concurrency=args.concurrency, recall="batched", **options)
    finally:
        stop.set()
        server.join(10)

    calls = concurrent["usage"]["calls"]
    wall = concurrent["usage"]["wall_seconds"]
    ideal = calls * args.latency / args.concurrency
    per_call_sequential = sequential["usage"]["wall_seconds"] / sequential["usage"]["calls"]
    sequential_full = per_call_sequential * calls
    print(f"queries: {len(rows)}  calls: {calls} (1 + claims per query)  latency: {args.latency:.3f}s")
    print(f"concurrency {args.concurrency}: wall {wall:.2f}s  ideal {ideal:.2f}s  ratio to ideal {wall / ideal:.2f}x")
    print(f"sequential: {sequential['usage']['calls']} calls in {sequential['usage']['wall_seconds']:.2f}s "
          f"({per_call_sequential * 1000:.0f} ms/call) -> {sequential_full:.1f}s for all {calls} calls"
          f"{'' if args.sequential_queries >= len(rows) else ' (projected)'}")
    print(f"speed-up over sequential: {sequential_full / wall:.1f}x")
    agree = [a == b for x, y in zip(concurrent["items"], batched["items"]) for a, b in zip(x["claim_verdicts"], y["claim_verdicts"])]
    print(f"recall per-claim {concurrent['summary']['recall']:.2f} vs batched {batched['summary']['recall']:.2f} "
          f"({batched['usage']['calls']} calls, {batched['usage']['wall_seconds']:.2f}s); "
          f"claim verdicts agree on {sum(agree)}/{len(agree)} ({sum(agree) / len(agree):.1%})")


if __name__ == "__main__":
    main()
