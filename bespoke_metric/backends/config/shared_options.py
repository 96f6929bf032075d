"""The options a command gives once for all its engines (where they run, the Batch API, what they may
spend), and which of them reach each engine.

`executor="ray"` places every LLM engine of a command on Ray; a parallelism option reaches only the
engines it sizes (`gpus_per_replica` an `hf:` one, `tensor_parallel_size` a `vllm:` one); the batch
options reach engines with a Batch API; a spending limit reaches the API engines. An option that reaches
none of a command's engines is an `OptionError` rather than silently ignored. `values` are the options by
name (a command's parsed flags, a config's keys); a None is an option not given. The engines come as parsed
`Spec`s (`backends.registry.as_spec`): what each engine takes is asked of its `Engine`, never of the spec's text.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from bespoke_metric.backends.options import BatchOptions, OptionError, option_names
from bespoke_metric.backends.registry import ENGINES, Engine, Spec

APPLIES_TO: dict[str, tuple[str, ...] | None] = {
    "executor": None,
    "ray_address": None,
    "replicas": None,
    "gpus_per_replica": ("hf",),
    "tensor_parallel_size": ("vllm",),
    "pipeline_parallel_size": ("vllm",),
}
"""Each placement option -> the engines it applies to (None: every LLM engine; a judge of its own, such
as `embed:`, runs in this process and takes none of them)."""


def _applies(name: str, engine: Engine) -> bool:
    engines = APPLIES_TO[name]
    return engine.llm and (engines is None or engine.name in engines)


def executor_options(values: Mapping[str, Any], spec: Spec) -> dict[str, Any]:
    """The placement options given that apply to the engine of `spec`."""
    engine = spec.engine
    return {name: values[name] for name in APPLIES_TO if values.get(name) is not None and _applies(name, engine)}


def check_executor_options(values: Mapping[str, Any], specs: Sequence[Spec | None]) -> None:
    """`OptionError` for a placement option that applies to none of the command's engines (`specs`)."""
    engines = [spec.engine for spec in specs if spec is not None]
    for name, applies in APPLIES_TO.items():
        if values.get(name) is None or any(_applies(name, engine) for engine in engines):
            continue
        flag = "--" + name.replace("_", "-")
        names = ", ".join(sorted({engine.name for engine in engines}))
        if applies is None:
            llms = ", ".join(f"{engine.name}:" for engine in ENGINES.values() if engine.llm)
            raise OptionError(f"{flag} places LLM engines ({llms}), and this command has none: its {names} judge "
                              "runs in this process")
        raise OptionError(f"{flag} applies to {' and '.join(applies)}: engines, and this command has none ({names})")


def batch_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The Batch API options given."""
    return {name: values[name] for name in sorted(option_names(BatchOptions)) if values.get(name) is not None}


def cost_options(values: Mapping[str, Any], spec: Spec) -> dict[str, Any]:
    """The cost options for the engine of `spec`: the batch options given (engines with a Batch API). The
    command's spending limit is no option: it goes to `build_backend` as its own argument."""
    return batch_values(values) if spec.engine.batch_api else {}


def check_cost_options(values: Mapping[str, Any], specs: Sequence[Spec | None]) -> None:
    """`OptionError` for batch options given to a command none of whose engines has a Batch API."""
    given = batch_values(values)
    engines = [spec.engine for spec in specs if spec is not None]
    if given and not any(engine.batch_api for engine in engines):
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        names = ", ".join(sorted({engine.name for engine in engines}))
        batched = " and ".join(f"{engine.name}:" for engine in ENGINES.values() if engine.batch_api)
        raise OptionError(f"{flags} applies to {batched} engines (their Batch APIs), and this command has none ({names})")
