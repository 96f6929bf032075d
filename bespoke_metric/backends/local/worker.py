"""A local engine's blocking generation, run in a worker thread: answers reported as they end, and stopped
at once when the run is interrupted.

`hf:` (and `vllm:`) generate with a blocking call. Run in a worker thread, it leaves the event loop free (the
progress bar, other engines); `run_in_worker` adds the two things such a call needs besides:

- `report(index, outcome)`, callable from the worker thread as each answer ends, hands the outcome to the
  run's `on_done` on the event loop (which caches it and moves the progress bar), in order, and before
  `run_in_worker` returns;
- `stop`, a `threading.Event` set when the awaiting task is cancelled (Ctrl-C: `asyncio.run` cancels the run):
  the work checks it between steps and returns early. Then the answers it reported are delivered and the
  cancellation goes on. Without it, `generate` would run its batch to the end in a thread nobody waits for,
  the interpreter would wait for it at exit, and a second Ctrl-C there would abort the process.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Callable, TypeVar

from ..base import OnDone, Outcome

T = TypeVar("T")

Report = Callable[[int, Outcome], None]
"""`report(index, outcome)`: one answer ended; callable from any thread."""
Work = Callable[[Report, threading.Event], T]
"""`work(report, stop)`: the blocking part, run in the worker thread; returns soon once `stop` is set."""


async def run_in_worker(work: Work[T], on_done: OnDone) -> T:
    """Run `work(report, stop)` in a worker thread and return what it returns. Each `report(index, outcome)`
    reaches `on_done(index, outcome)` on the event loop, in the order reported, before this returns. When
    the awaiting task is cancelled, `stop` is set, the worker is awaited (it returns promptly), what it
    reported is delivered, and `CancelledError` is raised again."""
    loop = asyncio.get_running_loop()
    stop = threading.Event()

    def report(index: int, outcome: Outcome) -> None:
        # Delivered on the loop, first in first out: before the worker's own completion wakes the awaiting task.
        loop.call_soon_threadsafe(on_done, index, outcome)

    future = loop.run_in_executor(None, work, report, stop)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        stop.set()
        await asyncio.wait([future])  # what it reported meanwhile lands before the run ends
        if not future.cancelled():
            future.exception()  # looked at: the cancellation goes on, not the worker's own end
        raise
