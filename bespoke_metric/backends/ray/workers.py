"""`hf:` and the API engines (`openai:`, `perplexity:`, `gemini:`) on Ray: `map_batches` over a fixed pool
of actors, each holding the in-process engine.

An `hf:` actor loads the model once and runs one batch at a time on its GPUs (`gpus_per_replica`); an API
engine's actor is an async client with its share of `concurrency`, running several small batches at
once (the engine's own semaphore bounds its calls in flight; retries and `Retry-After` are the engine's).
Tool calls, search records and token details travel back in the rows (`ray_rows`), so an API engine takes
tools and searches on Ray as in-process; an `hf:` engine on Ray takes no tools (its chat template is read
on the actors, not here).
The actor checks that its engine has the identity the driver keys the cache with, so an answer is never
cached under another engine's settings.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Sequence

from bespoke_metric.backends.schema import GRAMMAR

from ..base import Backend, Outcome, Request
from .rows import decode_request, outcome_row, row_outcome

HF_ROWS_PER_TASK = 64
"""Requests per Ray task for `hf:` actors unless `batch_size` is set: the engine batches within it (by
free memory on a GPU); a killed actor repeats at most this many generations."""

OPENAI_TASKS_PER_ACTOR = 4
"""Batches running at once in each API engine's actor, splitting its share of `concurrency`. A killed actor's
batches are retried whole: a kill costs the calls it had in flight and the answers its unfinished
batches held, at most about twice its share."""


class ActorPlan:
    """How an `hf:` or API engine runs on Ray: the actors' options, resources and batch shape."""

    one_batch = False

    def __init__(
        self, engine: str, model: str, replicas: int, gpus_per_replica: float | None, options: Any,
        build: Callable[[str, Any], Backend],
    ) -> None:
        self.engine = engine
        self.build = build
        self.model = model
        self.replicas = replicas
        self.options = options
        self.takes_tools = False
        self.searches = False
        self.constraint: str | None = None
        if engine != "hf":
            if gpus_per_replica:
                raise ValueError(f"gpus_per_replica is for hf and vllm: a {engine} actor is a client")
            # Built here only to check the options and know the identity and abilities: it makes no call.
            local = build(model, self.options)
            self.identity = local.identity()
            self.takes_tools, self.searches, self.constraint = local.takes_tools, local.searches, local.constraint
            # each actor its share of the calls in flight and of the account's limits: one limit for them all
            self.options = dataclasses.replace(options, concurrency=share(local.concurrency, replicas),
                                               limit_share=(options.limit_share or 1.0) / replicas)
            local.close()
            self.gpus = 0.0
            # Batches of a quarter of the actor's share of calls, four running at once: the share stays
            # busy, and answers travel back a few at a time (a killed actor takes few with it).
            self.rows_per_task = share(self.options.concurrency, OPENAI_TASKS_PER_ACTOR)
            self.tasks_per_actor = OPENAI_TASKS_PER_ACTOR
        else:
            from ..local.hf_backend import default_dtype, hf_identity

            self.gpus = float(_driver_gpus() if gpus_per_replica is None else gpus_per_replica)
            # Fixed here, not left to each actor: the identity (and so the cache key) names the dtype.
            device = options.device or ("cuda" if self.gpus > 0 else "cpu")
            self.options = dataclasses.replace(options, device=device, dtype=options.dtype or default_dtype(device))
            grammar = bool(self.options.grammar)
            self.identity = hf_identity(model, self.options.revision, self.options.dtype, grammar)
            self.constraint = GRAMMAR if grammar else None
            self.rows_per_task = self.options.batch_size or HF_ROWS_PER_TASK
            self.tasks_per_actor = 1  # one batch at a time on a model: its memory is sized for one

    def order(self, requests: Sequence[Request]) -> list[int]:
        return list(range(len(requests)))

    def run(self, dataset: Any) -> Any:
        """The dataset of outcome rows (`ray_backend.outcome_row`) for a dataset of request rows."""
        import ray

        return dataset.map_batches(
            EngineWorker,
            fn_constructor_kwargs={
                "build": self.build,
                "model": self.model,
                "options": self.options,
                "identity": self.identity,
            },
            batch_size=self.rows_per_task,
            batch_format="pyarrow",
            # One more batch waits at each actor than it runs, so the next starts without a round trip.
            compute=ray.data.ActorPoolStrategy(size=self.replicas, max_tasks_in_flight_per_actor=self.tasks_per_actor + 1,
                                               max_concurrent_calls_per_actor=self.tasks_per_actor),
            num_cpus=1,
            num_gpus=self.gpus,
        )

    def outcome(self, row: dict[str, Any]) -> Outcome:
        return row_outcome(row)


class EngineWorker:
    """A Ray Data actor holding one in-process engine; each call runs one batch of requests through it."""

    def __init__(self, build: Callable[[str, Any], Backend], model: str, options: Any,
                 identity: dict[str, Any]) -> None:
        self.backend = build(model, options)
        found = self.backend.identity()
        if found != identity:
            raise RuntimeError(f"the engine on this worker has identity {found}, the driver expects {identity}")

    def __del__(self) -> None:
        # Ray Data deletes the worker when its actor exits gracefully, while the actor's event loop still
        # runs: the engine releases what it holds then (an openai client's open connections).
        backend = getattr(self, "backend", None)  # absent when the constructor failed
        if backend is not None:
            backend.close()

    async def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        positions = batch.column("position").to_pylist()
        requests = [decode_request(text) for text in batch.column("request").to_pylist()]
        outcomes: dict[int, Outcome] = {}

        def on_done(index: int, outcome: Outcome) -> None:
            outcomes[index] = outcome

        keep_session = getattr(self.backend, "keep_session", None)
        if keep_session is not None:  # one client, and its open connections, for the actor's life
            await keep_session()
        await self.backend.complete(requests, on_done)
        # An index the engine left unanswered is left out: the scheduler records it as a failure.
        return pa.Table.from_pylist([outcome_row(positions[i], outcomes[i]) for i in sorted(outcomes)], schema=OUTCOME_SCHEMA)


def share(total: int, parts: int) -> int:
    """Each of `parts` workers' share of `total` (rounded up: no worker gets none)."""
    return max(1, math.ceil(total / parts))


def _driver_gpus() -> int:
    """1 if the driver has a GPU (then, most likely, so do the workers), else 0."""
    import torch

    return 1 if torch.cuda.is_available() else 0


def _outcome_schema() -> Any:
    import pyarrow as pa

    return pa.schema([
        ("position", pa.int64()), ("text", pa.string()), ("input_tokens", pa.int64()), ("output_tokens", pa.int64()),
        ("truncated", pa.bool_()), ("error", pa.string()), ("retryable", pa.bool_()), ("extras", pa.string()),
    ])


OUTCOME_SCHEMA = _outcome_schema()
