"""LLM engines behind one interface (`base.Backend`), chosen by a spec string `ENGINE:MODEL`.

    make_backend("openai:gpt-5")                          # OpenAI, or any compatible server (base_url=)
    make_backend("hf:Qwen/Qwen3-8B", batch_size=16)       # transformers, local
    make_backend("vllm:meta-llama/Llama-3.1-8B-Instruct", tensor_parallel_size=2)

Engines are imported only when asked for, so `vllm` (and even `torch`) stay optional.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from bespoke_metric.backends.base import Backend, CallError, Completion, Request, Usage

ENGINES = ("openai", "hf", "vllm")


def _engine_class(engine: str) -> Callable[..., Backend]:
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


def make_backend(spec: str, **options: Any) -> Backend:
    """Build the backend named by `spec` (`openai:MODEL`, `hf:MODEL`, `vllm:MODEL`); `options` go to
    its constructor (options set to None are dropped, so CLI flags can be passed through as they are)."""
    engine, sep, model = spec.partition(":")
    if not sep or not model:
        raise ValueError(f"backend spec {spec!r} must look like ENGINE:MODEL with ENGINE one of {', '.join(ENGINES)}")
    cls = _engine_class(engine)
    options = {name: value for name, value in options.items() if value is not None}
    accepted = set(inspect.signature(cls).parameters) - {"model"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ValueError(
            f"the {engine} backend does not take {', '.join(unknown)}; it takes: {', '.join(sorted(accepted))}"
        )
    return cls(model, **options)


__all__ = ["Backend", "CallError", "Completion", "ENGINES", "Request", "Usage", "make_backend"]
