"""Where engines run: the flags shared by `score`, `meta-eval`, `generate` and `run`.

`--executor ray` runs every engine of the command on a Ray cluster (`--ray-address` to join one, else a
local instance); the parallelism flags size it. Each flag reaches only the engines it applies to
(`--tensor-parallel-size` a `vllm:` model, `--gpus-per-replica` an `hf:` one), and a flag that applies to
none of the command's engines is an error rather than silently ignored.
"""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from bespoke_metric.engines import EXECUTORS, parse_spec

# flag destination -> the engines it applies to (None: every engine)
_APPLIES_TO: dict[str, tuple[str, ...] | None] = {
    "executor": None,
    "ray_address": None,
    "replicas": None,
    "gpus_per_replica": ("hf",),
    "tensor_parallel_size": ("vllm",),
    "pipeline_parallel_size": ("vllm",),
}


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("where engines run")
    group.add_argument("--executor", choices=EXECUTORS, help="local: in this process (default); ray: on a Ray cluster (pip install 'bespoke-eval[ray]')")
    group.add_argument("--ray-address", help="Ray cluster to join, e.g. auto or HEAD_IP:6379 (default: start a local instance)")
    group.add_argument("--replicas", type=int, help="engines running at once on Ray: actors, or vLLM replicas (default 1)")
    group.add_argument("--tensor-parallel-size", type=int, help="vllm: GPUs each model replica is sharded over (default 1)")
    group.add_argument("--pipeline-parallel-size", type=int, help="vllm on Ray: pipeline stages per replica, on as many GPUs or nodes (default 1)")
    group.add_argument("--gpus-per-replica", type=float, help="hf on Ray: GPUs per actor (default 1 if this machine has a GPU, else 0)")


def executor_options(args: argparse.Namespace, spec: str) -> dict[str, Any]:
    """The executor flags given that apply to the engine of `spec` (`ENGINE:MODEL`)."""
    engine = parse_spec(spec).engine.name
    options = {}
    for name, engines in _APPLIES_TO.items():
        value = getattr(args, name, None)
        if value is not None and (engines is None or engine in engines):
            options[name] = value
    return options


def check_executor_flags(args: argparse.Namespace, specs: Sequence[str | None]) -> None:
    """ValueError for an executor flag that applies to none of the command's engines (`specs`)."""
    engines = {parse_spec(spec).engine.name for spec in specs if spec}
    for name, applies in _APPLIES_TO.items():
        if getattr(args, name, None) is not None and applies is not None and not engines & set(applies):
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"{flag} applies to {' and '.join(applies)}: engines, and this command has none ({', '.join(sorted(engines))})")
