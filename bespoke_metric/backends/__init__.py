"""LLM engines behind one interface (`base.Backend`). They are built from a spec by
`bespoke_metric.scoring.engines.make_backend`, which imports each engine only when asked for it; an
`openai:` engine with `batch=True` sends its calls through the Batch API (`openai_batch`, its batches
kept in a `batch_ledger`)."""

from .base import Backend, CallError, Completion, EngineError, Request, Usage

__all__ = ["Backend", "CallError", "Completion", "EngineError", "Request", "Usage"]
