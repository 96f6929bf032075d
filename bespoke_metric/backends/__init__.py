"""LLM engines behind one interface (`base.Backend`). They are built from a spec by
`bespoke_metric.backends.registry.make_backend` (the engine registry, each engine's options in `options`), which
imports each engine only when asked for it: the hosted APIs in `providers`, the in-process models in `local`,
any of them on a Ray cluster through `ray`. An `openai:` or `anthropic:` engine with `batch=True` sends its
calls through its provider's Batch API (`providers.batches`). Every API call goes out through the HTTP core
(`http`) and the retrying caller (`retries`); what a command or config file gives its engines is read in
`config`. Any async text-generation function (another framework's model) is a backend through `callable_backend`."""

from bespoke_dataset.lazy import serve_moved

from .base import Backend, CallError, Completion, EngineError, ModelUnavailableError, Request, Usage

__all__ = ["Backend", "CallError", "Completion", "EngineError", "ModelUnavailableError", "Request", "Usage"]

MOVED: dict[str, str] = {
    "shared_options": ".config.shared_options", "config_values": ".config.values",
    **{name: f".providers.{name}" for name in ("openai_backend", "openai_models", "openai_session", "openai_batch",
                                             "batches", "batch_ledger")},
    **{name: f".local.{name}" for name in ("hf_backend", "vllm_backend", "worker", "model_files", "gguf_cache", "encoders")},
}
"""The modules of 0.4 that moved into a sub-folder (issue 33) -> where they live now. Their old paths still
import, as the same module with a `DeprecationWarning`, until 0.6."""

serve_moved(__name__, MOVED, removed_in="0.6")
