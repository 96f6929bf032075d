"""`hf:` judge throughput on a GPU machine with no network: batched generation vs one prompt at a time.

Builds a small random causal LM in place (no downloads), scores the full-size synthetic release with it
through the real `hf:` judge (per-claim recall: 1 + claims prompts per query), once with adaptive
batching and once with batch size 1 on the first `--sequential-queries` queries, and prints prompts/s,
generated tokens/s and the ratio. The model is random, so its answers do not parse: the judge records
them as failures (with `--max-parse-retries 0`, each prompt is generated exactly once); this measures
the engine, not the judgments. Writes `benchmarks/results/gpu_judge.json`.

    python benchmarks/gpu_judge.py                      # on the GPU machine, about a minute
    python benchmarks/gpu_judge.py --device cpu --queries 4 --sequential-queries 1 --hidden-size 64 --layers 2
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from record import write_results  # first: it notes the load the run starts under


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    parser.add_argument("--queries", type=int, default=150, help="queries scored batched (default: all 150)")
    parser.add_argument("--sequential-queries", type=int, default=8, help="queries scored one prompt at a time")
    parser.add_argument("--hidden-size", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens generated per prompt at most")
    args = parser.parse_args()

    import torch

    from bespoke_dataset.rows import load_rows
    from bespoke_dataset.synthetic import write_release
    from bespoke_metric.calls.scheduler import run_sync
    from bespoke_metric.judging.factory import make_judge
    from bespoke_metric.judging.judge import JudgeItem
    from bespoke_metric.testing.tiny_model import build_tiny_model

    work = Path(tempfile.mkdtemp(prefix="bespoke-gpu-judge-"))
    release = write_release(work / "release")
    model = build_tiny_model(work / "model", hidden_size=args.hidden_size, num_layers=args.layers, vocab_size=4096)
    # pyarrow alone (no `datasets`): the GPU machine has torch and transformers, not the data stack
    rows = load_rows("benchmark", release)
    items = [JudgeItem(row, row["shots"][0]["response"]) for row in rows]
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(f"device: {name}  model: {args.layers} layers x {args.hidden_size} hidden (random)  max tokens: {args.max_tokens}")

    common = dict(device=device, max_tokens=args.max_tokens, max_parse_retries=0, progress=False)

    def run(queries: int, **options: object) -> tuple[float, float, int]:
        # the judge alone (no response guards): this measures the engine
        judge = make_judge(f"hf:{model}", **common, **options)
        start = time.perf_counter()
        run_sync(judge.judge(items[:queries]))
        wall = time.perf_counter() - start
        judge.close()
        prompts = judge.usage.calls
        return prompts / wall, judge.usage.output_tokens / wall, prompts

    run(1, batch_size=1)  # warm-up: weights to the device, kernels compiled
    batched = run(args.queries)
    single = run(args.sequential_queries, batch_size=1)
    for label, (prompts_s, tokens_s, prompts) in (("batched", batched), ("one at a time", single)):
        print(f"{label:>14}: {prompts:5d} prompts  {prompts_s:8.2f} prompts/s  {tokens_s:9.1f} generated tokens/s")
    print(f"batched / one at a time: {batched[0] / single[0]:.1f}x prompts/s, {batched[1] / single[1]:.1f}x tokens/s")
    write_results(__file__, {
        "device": name, "layers": args.layers, "hidden_size": args.hidden_size, "max_tokens": args.max_tokens,
        "batched": {"prompts": batched[2], "prompts_per_s": round(batched[0], 2), "tokens_per_s": round(batched[1], 1)},
        "one_at_a_time": {"prompts": single[2], "prompts_per_s": round(single[0], 2), "tokens_per_s": round(single[1], 1)},
        "batched_over_one_at_a_time": round(batched[0] / single[0], 2),
    }, notes={"model": "random weights: the answers do not parse; this measures the engine, not judgments"})


if __name__ == "__main__":
    main()
