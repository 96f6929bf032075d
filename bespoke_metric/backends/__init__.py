"""LLM engines behind one interface (`base.Backend`), chosen by a spec string `ENGINE:MODEL`.

    make_backend("openai:gpt-5")                          # OpenAI, or any compatible server (base_url=)
    make_backend("hf:Qwen/Qwen3-8B", batch_size=16)       # transformers, local
    make_backend("vllm:meta-llama/Llama-3.1-8B-Instruct", tensor_parallel_size=2)
    make_backend("vllm:openai/gpt-oss-120b", executor="ray", replicas=4, tensor_parallel_size=2)  # on Ray

Engines are imported only when asked for, so `vllm` (and even `torch`) stay optional.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from bespoke_metric.backends.base import Backend, CallError, Completion, Request, Usage

ENGINES = ("openai", "hf", "vllm")
EXECUTORS = ("local", "ray")


def engine_class(engine: str) -> Callable[..., Backend]:
    """The in-process backend class of an engine name (imported on demand)."""
    if engine == "openai":
        from bespoke_metric.backends.openai_backend import OpenAIBackend

        return OpenAIBackend
    if engine == "hf":
        from bespoke_metric.backends.hf_backend import HFBackend

        return HFBackend
    if engine == "vllm":
        from bespoke_metric.backends.vllm_backend import VLLMBackend

        return VLLMBackend
    raise ValueError(f"unknown engine {engine!r}: expected one of {', '.join(ENGINES)}")


def check_options(engine: str, options: dict[str, Any], *, extra: tuple[str, ...] = ()) -> None:
    """Raise ValueError naming the options the engine's constructor (or `extra`) does not take."""
    accepted = (set(inspect.signature(engine_class(engine)).parameters) - {"model"}) | set(extra)
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ValueError(
            f"the {engine} backend does not take {', '.join(unknown)}; it takes: {', '.join(sorted(accepted))}"
        )


def make_backend(spec: str, *, executor: str | None = None, **options: Any) -> Backend:
    """Build the backend named by `spec` (`openai:MODEL`, `hf:MODEL`, `vllm:MODEL`); `options` go to
    its constructor (options set to None are dropped, so CLI flags can be passed through as they are).

    `executor="ray"` runs the engine on a Ray cluster instead (`ray_backend.RayBackend`, which takes the
    executor options `ray_address`, `replicas`, `gpus_per_replica`, `pipeline_parallel_size` besides the
    engine's own); the default, `"local"`, runs it in this process."""
    engine, sep, model = spec.partition(":")
    if not sep or not model:
        raise ValueError(f"backend spec {spec!r} must look like ENGINE:MODEL with ENGINE one of {', '.join(ENGINES)}")
    cls = engine_class(engine)
    options = {name: value for name, value in options.items() if value is not None}
    if executor == "ray":
        from bespoke_metric.backends.ray_backend import RayBackend

        return RayBackend(engine, model, **options)
    if executor not in (None, "local"):
        raise ValueError(f"unknown executor {executor!r}: expected one of {', '.join(EXECUTORS)}")
    from bespoke_metric.backends.ray_backend import EXECUTOR_OPTIONS

    misplaced = sorted(set(options) & set(EXECUTOR_OPTIONS))
    if misplaced:
        raise ValueError(f"{', '.join(misplaced)} only apply with executor='ray' (--executor ray)")
    check_options(engine, options)
    return cls(model, **options)


__all__ = ["Backend", "CallError", "Completion", "ENGINES", "EXECUTORS", "Request", "Usage", "make_backend"]
