"""LLM engines behind one interface (`base.Backend`). They are built from a spec by
`bespoke_metric.scoring.engines.make_backend`, which imports each engine only when asked for it."""

from .base import Backend, CallError, Completion, EngineError, Request, Usage

__all__ = ["Backend", "CallError", "Completion", "EngineError", "Request", "Usage"]
