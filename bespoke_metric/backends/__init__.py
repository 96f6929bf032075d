"""LLM engines behind one interface (`base.Backend`). They are built from a spec by
`bespoke_metric.backends.registry.make_backend` (the engine registry, options in `options`), which imports each engine only when asked for it; an
`openai:` or `anthropic:` engine with `batch=True` sends its calls through its provider's Batch API
(`batches`, `openai_batch`, `providers.anthropic_batch`; the batches kept in a `batch_ledger`)."""

from .base import Backend, CallError, Completion, EngineError, ModelUnavailableError, Request, Usage

__all__ = ["Backend", "CallError", "Completion", "EngineError", "ModelUnavailableError", "Request", "Usage"]
