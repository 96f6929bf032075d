"""`executor="ray"`: an engine's calls run on a Ray cluster, as a Ray Data dataset.

The driver keeps what it owns: the scheduler in front of this backend looks every request up in the
cache, sends only the misses here, caches each answer the moment it comes back, parses, and sends
repairs through this same backend. What this backend does is execute: the misses become a dataset of
`{position, request}` rows, and the answers stream back while the run goes on (`iter_batches` in the
driver), each reported once to `on_done`.

On the cluster:
- `vllm:` goes through `ray.data.llm`'s vLLM processor (`vllm_processor.py`): replicas, tensor and
  pipeline parallelism, greedy sampling and the JSON schema as structured output, as in-process.
- `hf:` and the API engines (`openai:`, `perplexity:`, `gemini:`) go through `map_batches` with a fixed
  pool of actors (`workers.EngineWorker`), each holding the in-process backend: one model per actor (with
  `gpus_per_replica` GPUs) for `hf:`, one async client with its share of `concurrency` (retries and
  `Retry-After` as in-process) for an API engine. An API engine's tool calls, search records and token
  details come back in the rows, so it takes tools and searches as in-process; `hf:` and `vllm:` on Ray
  take no tools (the text protocol serves them).

A worker killed mid-batch is restarted by Ray and its batch retried; an answer that arrives twice (a
batch that finished as its worker died) is reported once. `identity()` is the in-process engine's, so the
cache is shared both ways: a run on Ray after an in-process run (or the reverse) makes no call.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from functools import partial
from typing import Any, AsyncIterator, Callable, Mapping, Protocol, Sequence

from bespoke_dataset.errors import MissingExtraError

from ..base import Backend, OnDone, Outcome, Request
from ..options import ExecutorOptions
from .noise import quiet_ray_notices, without_false_alarms
from .rows import encode_request

log = logging.getLogger(__name__)

class Plan(Protocol):
    """How one engine runs on Ray (`workers.ActorPlan`, `vllm_processor.VLLMPlan`)."""

    identity: dict[str, Any]
    """The in-process engine's identity: same cache keys."""
    one_batch: bool
    """As the in-process engine: schedules best seeing every request at once."""
    takes_tools: bool
    searches: bool
    constraint: str | None
    """What the engine can do on Ray (`Backend.takes_tools`, `Backend.searches`, `Backend.constraint`)."""

    def order(self, requests: Sequence[Request]) -> list[int]:
        """The order to put the requests in the dataset."""
        ...

    def run(self, dataset: Any) -> Any:
        """The lazy dataset of answer rows for a dataset of `{position, request}` rows."""
        ...

    def outcome(self, row: dict[str, Any]) -> Outcome:
        """The outcome an answer row carries."""
        ...


class RayBackend:
    """An engine run on Ray. See the module docstring; built by `make_backend(spec, executor="ray")`."""

    def __init__(
        self,
        engine: str,
        model: str,
        options: Any,
        executor: ExecutorOptions,
        *,
        build: Callable[..., Backend],
        preloaded: Mapping[str, Any] | None = None,
    ) -> None:
        """
        Args:
            engine, model: as in the spec `ENGINE:MODEL`.
            options: the in-process engine's options (an instance of its options class).
            executor: where it runs (`ExecutorOptions`): `ray_address`, the cluster to join (`auto`,
                `ray://host:10001`, `host:6379`; default: the Ray instance this process is already connected
                to, else a new local one); `replicas`, engines run at once (actors; vLLM engine replicas; 1);
                `gpus_per_replica`, GPUs per `hf:` actor (default 1 when the driver sees a GPU, else 0; a
                `vllm:` replica uses `tensor_parallel_size * pipeline_parallel_size` GPUs);
                `pipeline_parallel_size`, `vllm:` pipeline stages per replica (default 1).
            build: `(model, options, **preloaded) -> Backend`, the engine's in-process backend, built on each actor.
            preloaded: objects already in memory the engine reuses (`registry.Preloaded`), shipped to each actor.
        """
        replicas = 1 if executor.replicas is None else executor.replicas
        gpus_per_replica, pipeline_parallel_size = executor.gpus_per_replica, executor.pipeline_parallel_size
        ray_address = executor.ray_address
        try:
            import ray.data  # noqa: F401 - fail here, before any work, if the extra is missing
        except ImportError as err:
            raise MissingExtraError("--executor ray needs Ray Data, which is not installed: pip install 'bespoke-eval[ray]'") from err
        if replicas < 1:
            raise ValueError(f"replicas must be at least 1, got {replicas}")
        self.name = engine
        self.model = model
        self.ray_address = ray_address
        self.replicas = replicas
        self._plan: Plan
        if engine == "vllm":
            if gpus_per_replica is not None:
                raise ValueError("gpus_per_replica is for hf: a vllm replica uses tensor_parallel_size x pipeline_parallel_size GPUs")
            from .vllm_processor import VLLMPlan

            if preloaded:
                raise ValueError("a ready vllm.LLM cannot be shipped to a Ray cluster: pass the model instead")
            self._plan = VLLMPlan(model, replicas, pipeline_parallel_size or 1, options)
        else:
            if pipeline_parallel_size is not None:
                raise ValueError(f"pipeline_parallel_size is for vllm, not the {engine} engine")
            from .workers import ActorPlan

            self._plan = ActorPlan(engine, model, replicas, gpus_per_replica, options, partial(build, **(preloaded or {})))
        self.one_batch = self._plan.one_batch
        self.takes_tools: bool = self._plan.takes_tools
        self.searches: bool = self._plan.searches
        self.constraint: str | None = self._plan.constraint

    # -- Backend interface -------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return self._plan.identity

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        if not requests:
            return
        connect(self.ray_address)
        dataset = self._plan.run(request_dataset(requests, self._plan.order(requests)))
        reported: set[int] = set()
        with without_false_alarms():  # Ray's error line for every actor pool it starts (ray_noise)
            async for row in stream_rows(dataset):
                position = int(row["position"])
                if position in reported:  # a retried batch answering again: the first answer stands
                    continue
                reported.add(position)
                on_done(position, self._plan.outcome(row))

    def close(self) -> None:
        # The Ray instance outlives the backend: other backends of this process (a judge after a system)
        # use it next, and Ray ends a local instance when this process exits.
        pass


# -- driver side ---------------------------------------------------------------------------------------


def connect(address: str | None) -> None:
    """Join the cluster at `address`, or start a local instance, unless this process is connected."""
    import ray
    from ray.data import DataContext

    if not ray.is_initialized():
        # No address means a new local instance, as --ray-address says (RAY_ADDRESS, Ray's own setting, is
        # still honoured): Ray's None would join any cluster a `ray start` left on this machine, anyone's.
        given = address or os.environ.get("RAY_ADDRESS")
        log.info("%s Ray", f"joining the cluster at {given}:" if given else "starting a local")
        quiet_ray_notices()
        ray.init(address=given or "local", include_dashboard=False, logging_level=logging.WARNING, log_to_driver=True)
    context = DataContext.get_current()
    context.enable_progress_bars = False  # the scheduler's own bar counts answers; Ray's would interleave
    context.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # one "execution finished" line per round
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "bars disabled": ours count


def request_dataset(requests: Sequence[Request], order: Sequence[int]) -> Any:
    """The requests as a dataset of `{position, request}` rows (the request as JSON text: schemas differ
    from row to row, which a typed column could not hold), in `order`."""
    import ray

    return ray.data.from_items([{"position": i, "request": encode_request(requests[i])} for i in order])


async def stream_rows(dataset: Any) -> AsyncIterator[dict[str, Any]]:
    """The dataset's output rows as they are produced, iterated on a thread so the event loop (and the
    scheduler caching each answer) keeps running."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    done = object()

    def pump() -> None:
        try:
            for batch in dataset.iter_batches(batch_size=None, batch_format="pyarrow"):
                loop.call_soon_threadsafe(queue.put_nowait, batch.to_pylist())
        except BaseException as err:  # handed to the event loop, raised there
            loop.call_soon_threadsafe(queue.put_nowait, err)
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, done)

    threading.Thread(target=pump, name="ray-results", daemon=True).start()
    while True:
        item = await queue.get()
        if item is done:
            return
        if isinstance(item, BaseException):
            raise RuntimeError(f"the Ray run failed: {_root_cause(item)}") from item
        for row in item:
            yield row


def _root_cause(error: BaseException) -> str:
    while error.__cause__ is not None:
        error = error.__cause__
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[-500:]}"
