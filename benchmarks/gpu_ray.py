"""`vllm:` on Ray for real, on a GPU machine: `ray.data.llm`'s vLLM processor scoring a release.

Needs `pip install 'bespoke-eval[ray,vllm]'` (vLLM and Ray Data's LLM stages) and a GPU. The model is a
folder: by default a small random model built in place (no network: answers do not parse, so this
measures the engine and the plumbing, with `--max-parse-retries 0` each prompt is generated once); pass
`--model` with a real checkpoint folder to judge for real. Scores the full-size synthetic release
(1 + claims prompts per query) on Ray and, in the same run, in-process with `vllm.LLM`, and prints
prompts/s for each, their ratio, whether the two runs' items are identical, and a warm rerun's calls;
writes `benchmarks/results/gpu_ray.json`.

    python benchmarks/gpu_ray.py                                   # one GPU, tiny model
    python benchmarks/gpu_ray.py --model /models/gpt-oss-120b --replicas 4 --tensor-parallel-size 2
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from record import write_results  # first: it notes the load the run starts under


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="model folder (default: a tiny random model built in place)")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--tensor-parallel-size", type=int, default=1)
    parser.add_argument("--pipeline-parallel-size", type=int, default=1)
    parser.add_argument("--max-model-len", type=int, default=32768)
    parser.add_argument("--ray-address", help="cluster to join (default: a local instance)")
    parser.add_argument("--skip-in-process", action="store_true", help="only the Ray run (a model too big for one replica's GPUs in-process)")
    args = parser.parse_args()

    import bespoke_dataset
    from bespoke_dataset.synthetic import write_release
    from bespoke_metric.scoring.pipeline import score
    from bespoke_metric.testing.tiny_model import build_tiny_model

    work = Path(tempfile.mkdtemp(prefix="bespoke-gpu-ray-"))
    release = write_release(work / "release")
    rows = list(bespoke_dataset.load("benchmark", source=release))[: args.queries]
    predictions = [{"user": r["user"], "query_id": r["query_id"], "response": r["shots"][-1]["response"]} for r in rows]
    (work / "preds.jsonl").write_text("".join(json.dumps(p) + "\n" for p in predictions))
    model = args.model or str(build_tiny_model(work / "tiny", hidden_size=256, num_layers=4))
    judge = f"vllm:{model}"
    common = dict(source=release, max_model_len=args.max_model_len, progress=False, max_parse_retries=0 if not args.model else 2)
    on_ray = dict(executor="ray", ray_address=args.ray_address, replicas=args.replicas,
                  tensor_parallel_size=args.tensor_parallel_size, pipeline_parallel_size=args.pipeline_parallel_size)

    runs = {}
    start = time.perf_counter()
    runs["ray"] = score(work / "preds.jsonl", judge, cache=str(work / "ray.sqlite"), **on_ray, **common).to_json()
    ray_s = time.perf_counter() - start
    warm = score(work / "preds.jsonl", judge, cache=str(work / "ray.sqlite"), **on_ray, **common).to_json()
    prompts = runs["ray"]["usage"]["calls"]
    print(f"Ray ({args.replicas} replica(s), TP {args.tensor_parallel_size}, PP {args.pipeline_parallel_size}): "
          f"{prompts} prompts in {ray_s:.1f} s, {prompts / ray_s:.1f} prompts/s; warm rerun calls: {warm['usage']['calls']}")
    figures = {"model": "tiny random" if args.model is None else args.model, "replicas": args.replicas,
               "tensor_parallel_size": args.tensor_parallel_size, "pipeline_parallel_size": args.pipeline_parallel_size,
               "prompts": prompts, "ray_s": round(ray_s, 2), "ray_prompts_per_s": round(prompts / ray_s, 2),
               "warm_rerun_calls": warm["usage"]["calls"]}
    if not args.skip_in_process:
        start = time.perf_counter()
        runs["local"] = score(work / "preds.jsonl", judge, cache=str(work / "local.sqlite"),
                              tensor_parallel_size=args.tensor_parallel_size, **common).to_json()
        local_s = time.perf_counter() - start
        print(f"in-process: {prompts} prompts in {local_s:.1f} s, {prompts / local_s:.1f} prompts/s")
        print(f"Ray / in-process wall time: {ray_s / local_s:.2f}x")
        same = runs["ray"]["items"] == runs["local"]["items"]
        print(f"items identical: {same}")
        figures.update({"in_process_s": round(local_s, 2), "in_process_prompts_per_s": round(prompts / local_s, 2),
                        "ray_over_in_process": round(ray_s / local_s, 2), "items_identical": same})
    write_results(__file__, figures, goals={"warm_rerun_calls": ("<=", 0)})


if __name__ == "__main__":
    main()
