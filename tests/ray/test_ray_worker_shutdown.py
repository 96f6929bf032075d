"""An `openai:` engine actor that ends releases its HTTP client: Ray Data deletes the actor's worker object
when the actor exits, and the client's open connections must be closed then, not reported unclosed by
aiohttp on stderr at the end of every `--executor ray` run.

The worker is driven as Ray Data drives an async worker (its batches on an event loop of another thread),
without a Ray instance: what is tested is the worker and the engine up to that boundary."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import warnings
from typing import Iterator

import pyarrow as pa
import pytest

from bespoke_metric.backends.base import Request
from bespoke_metric.backends.options import OpenAIOptions
from bespoke_metric.backends.ray.rows import encode_request
from bespoke_metric.backends.ray.workers import EngineWorker
from bespoke_metric.backends.registry import make_backend, parse_spec
from bespoke_metric.testing.server import serve


@pytest.fixture
def actor_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running on a thread of its own, as Ray Data runs an async worker's batches."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)
    loop.close()


def test_an_openai_worker_deleted_at_actor_exit_closes_its_client(actor_loop, caplog):
    with serve(responder=lambda body: "fine") as server:
        given = {"base_url": server.base_url, "api_key": "x"}
        # as the driver hands it to each actor: the engine's options, an instance of its class
        worker = EngineWorker(build=parse_spec("openai:judge").engine.backend, model="judge", options=OpenAIOptions(**given),
                              identity=make_backend("openai:judge", **given).identity())
        request = Request(({"role": "user", "content": "hello"},), max_tokens=8)
        batch = pa.table({"position": [0, 1], "request": [encode_request(request)] * 2})
        answers = asyncio.run_coroutine_threadsafe(worker(batch), actor_loop).result(timeout=30)
        assert answers.column("text").to_pylist() == ["fine", "fine"]

        with caplog.at_level(logging.ERROR, logger="asyncio"), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del worker  # what Ray Data's `__ray_shutdown__` does to the worker object
            gc.collect()
    unclosed = [r.getMessage() for r in caplog.records if "Unclosed" in r.getMessage()]
    assert unclosed == []
    assert [str(w.message) for w in caught if "Unclosed" in str(w.message)] == []
