"""LLM engines behind one interface (`base.Backend`). They are built from a spec by
`bespoke_metric.backends.registry.make_backend` (the engine registry, each engine's options in `options`), which
imports each engine only when asked for it: the hosted APIs in `providers`, the in-process models in `local`,
any of them on a Ray cluster through `ray`. An `openai:` or `anthropic:` engine with `batch=True` sends its
calls through its provider's Batch API (`providers.batches`). Every API call goes out through the HTTP core
(`http`) and the retrying caller (`retries`), paced under the account's rate limits (`pacing`; the limits as the
providers state them in `limits`, where a spent quota is a `QuotaExhaustedError`); what a command or config file
gives its engines is read in `config`. Any async text-generation function (another framework's model) is a backend through `callable_backend`."""

from .base import Backend, CallError, Completion, EngineError, ModelUnavailableError, Request, Usage
from .limits import QuotaExhaustedError

__all__ = ["Backend", "CallError", "Completion", "EngineError", "ModelUnavailableError", "QuotaExhaustedError", "Request",
           "Usage"]
