"""Where engines run: the flags shared by `score`, `meta-eval`, `generate` and `run`.

`--executor ray` runs every engine of the command on a Ray cluster (`--ray-address` to join one, else a
local instance); the parallelism flags size it. Each flag reaches only the engines it applies to
(`--tensor-parallel-size` a `vllm:` model, `--gpus-per-replica` an `hf:` one), and a flag that applies to
none of the command's engines is an error rather than silently ignored.
"""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.registry import ENGINES, Engine, parse_spec
from bespoke_metric.backends.options import ExecutorOptions, VLLMOptions

from .options import add_option_arguments

# flag destination -> the engines it applies to (None: every LLM engine; a judge of its own, such as
# `embed:`, runs in this process and takes none of them)
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
    add_option_arguments(group, ExecutorOptions)
    add_option_arguments(group, VLLMOptions, only=("tensor_parallel_size",))


def _applies(name: str, engine: Engine) -> bool:
    engines = _APPLIES_TO[name]
    return engine.llm and (engines is None or engine.name in engines)


def executor_options(args: argparse.Namespace, spec: str) -> dict[str, Any]:
    """The executor flags given that apply to the engine of `spec` (`ENGINE:MODEL`)."""
    engine = parse_spec(spec).engine
    return {name: getattr(args, name) for name in _APPLIES_TO
            if getattr(args, name, None) is not None and _applies(name, engine)}


def check_executor_flags(args: argparse.Namespace, specs: Sequence[str | None]) -> None:
    """ValueError for an executor flag that applies to none of the command's engines (`specs`)."""
    engines = [parse_spec(spec).engine for spec in specs if spec]
    for name, applies in _APPLIES_TO.items():
        if getattr(args, name, None) is None or any(_applies(name, engine) for engine in engines):
            continue
        flag = "--" + name.replace("_", "-")
        names = ", ".join(sorted({engine.name for engine in engines}))
        if applies is None:
            llms = ", ".join(f"{engine.name}:" for engine in ENGINES.values() if engine.llm)
            raise UserError(f"{flag} places LLM engines ({llms}), and this command has none: its {names} judge "
                             "runs in this process")
        raise UserError(f"{flag} applies to {' and '.join(applies)}: engines, and this command has none ({names})")
