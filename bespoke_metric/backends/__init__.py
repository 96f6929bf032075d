"""LLM engines behind one interface (`base.Backend`). They are built from a spec by
`bespoke_metric.engines.make_backend`, which imports each engine only when asked for it."""

from bespoke_metric.backends.base import Backend, CallError, Completion, Request, Usage

__all__ = ["Backend", "CallError", "Completion", "Request", "Usage"]
