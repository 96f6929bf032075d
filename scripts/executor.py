"""Where engines run: the flags shared by `score`, `meta-eval`, `generate` and `run`.

`--executor ray` runs every engine of the command on a Ray cluster (`--ray-address` to join one, else a
local instance); the parallelism flags size it. Each flag reaches only the engines it applies to
(`--tensor-parallel-size` a `vllm:` model, `--gpus-per-replica` an `hf:` one), and a flag that applies to
none of the command's engines is an error rather than silently ignored.
"""

from __future__ import annotations

import argparse
from typing import Sequence

from bespoke_metric.backends.config import shared_options
from bespoke_metric.backends.options import ExecutorOptions, VLLMOptions
from bespoke_metric.backends.registry import Spec, as_spec

from .options import add_option_arguments


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("where engines run")
    add_option_arguments(group, ExecutorOptions)
    add_option_arguments(group, VLLMOptions, only=("tensor_parallel_size",))


def check_executor_flags(args: argparse.Namespace, specs: Sequence[str | Spec | None]) -> None:
    """An `OptionError` for an executor flag that applies to none of the command's engines (`specs`); a
    command that calls models checks them as it builds its context (`bespoke_cli.context`)."""
    shared_options.check_executor_options(vars(args), [as_spec(spec) for spec in specs if spec])
