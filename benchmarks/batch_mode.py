"""Batch mode against direct calls: the same judging of the full-size synthetic release, both ways.

The judge is the stand-in behind the local fake Files + Batch API server (`fakes.batch_server`), which
answers at once, so the walls compare what the client does, not a provider's queue: direct calls, against
writing, uploading, polling and reading back batches. Measured, on the first `--queries` queries:

1. the wall of `score` direct and with `batch=True` (polls every 0.05 s at first), and the difference
   per call (goal: under 5 ms a call: the Batch API's bookkeeping is nothing beside a provider's hours);
2. what each cost at the built-in price of the judge model (goal: batch at most half of direct);
3. that both give the same figures, and that a dry run counts the input tokens the direct run reports,
   and how long the dry run takes per call (token counting included).

    python benchmarks/batch_mode.py [--queries 150] [--judge openai:gpt-5-mini]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the fakes (tests/fakes/)

from fakes.batch_server import serve_batches  # noqa: E402
from record import write_results  # noqa: E402

from bespoke_dataset.rows import load_rows  # noqa: E402
from bespoke_dataset.synthetic import write_release  # noqa: E402
from bespoke_metric.calls.plan import estimate  # noqa: E402
from bespoke_metric.calls.pricing import PriceTable  # noqa: E402
from bespoke_metric.judging.config import JudgeConfig  # noqa: E402
from bespoke_metric.scoring.pipeline import judge_groups, plan_judging, score  # noqa: E402
from bespoke_metric.testing.judge_responder import judge_answer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--judge", default="openai:gpt-5-mini")
    args = parser.parse_args()
    from bespoke_cli.cost import counted_prompt_tokens

    with tempfile.TemporaryDirectory() as work:
        folder = write_release(Path(work) / "release")
        rows = load_rows("benchmark", folder)[: args.queries]
        predictions = Path(work) / "preds.jsonl"
        predictions.write_text("".join(json.dumps({"user": r["user"], "query_id": r["query_id"],
                                                   "response": r["shots"][0]["response"]}) + "\n" for r in rows))
        with serve_batches(judge_answer) as server:
            options = {"source": folder, "base_url": server.base_url, "api_key": "benchmark", "progress": False}
            start = time.perf_counter()
            groups = judge_groups([predictions], source=folder).groups
            [planned] = plan_judging(JudgeConfig(spec=args.judge, options={"base_url": server.base_url, "api_key": "benchmark"}), groups)
            planned_tokens = estimate(planned, counted_prompt_tokens, PriceTable()).input_tokens
            dry_run_s = time.perf_counter() - start

            start = time.perf_counter()
            direct = score(predictions, args.judge, cache=str(Path(work) / "direct.sqlite"), **options)
            direct_s = time.perf_counter() - start
            direct_calls = len(server.direct_calls)

            start = time.perf_counter()
            batch = score(predictions, args.judge, cache=str(Path(work) / "batch.sqlite"), batch=True, batch_poll=0.05,
                          batch_poll_max=0.2, **options)
            batch_s = time.perf_counter() - start
            assert len(server.direct_calls) == direct_calls, "batch mode made direct calls"
    calls = direct.usage["calls"]
    figures = {
        "queries": len(rows),
        "calls": calls,
        "direct_wall_s": round(direct_s, 2),
        "batch_wall_s": round(batch_s, 2),
        "batch_overhead_ms_per_call": round((batch_s - direct_s) / calls * 1000, 3),
        "direct_cost": direct.usage["cost"],
        "batch_cost": batch.usage["cost"],
        "batch_cost_ratio": round(batch.usage["cost"] / direct.usage["cost"], 4),
        "same_figures": batch.summary == direct.summary,
        "dry_run_input_tokens_match": planned_tokens == direct.usage["input_tokens"],
        "dry_run_ms_per_call": round(dry_run_s / len(planned.requests) * 1000, 3),
    }
    for name, value in figures.items():
        print(f"{name}: {value}")
    write_results(__file__, figures, goals={"batch_overhead_ms_per_call": ("<", 5.0), "batch_cost_ratio": ("<=", 0.5)},
                  notes={"direct_wall_s": "the local server answers at once: the wall is the client's own work",
                         "batch_overhead_ms_per_call": "(batch wall - direct wall) / calls; polling starts at 0.05 s",
                         "dry_run_ms_per_call": "building every judge prompt, reading the cache, counting tokens with bpe-openai"})


if __name__ == "__main__":
    main()
