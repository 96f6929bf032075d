"""Making many model calls well: the scheduler in front of every backend, the answer cache, progress.

| module | concern |
|---|---|
| `scheduler` | `run_requests`: concurrency, the cache, parse-and-repair turns, failures kept with their reason |
| `cache` | `Cache`: every answer in SQLite, keyed by everything that determines it (never a secret) |
| `progress` | the progress hook and bar every long run reports through |
| `pricing` | `PriceTable`: what the usual models cost per token, and what a run's tokens cost |
| `spending` | `SpendingLimit`: `--max-cost`, admitting each call only while the run stays under it |
| `plan` | a dry run: the calls a run would make, found by running it with nothing sent |
"""

from .cache import Cache, key_for
from .plan import Planned
from .pricing import Price, PriceTable
from .progress import ProgressBar, ProgressHook
from .scheduler import CallResult, ParseError, run_requests, run_requests_sync, run_sync
from .spending import SpendingLimit

__all__ = [
    "Cache", "CallResult", "ParseError", "Planned", "Price", "PriceTable", "ProgressBar", "ProgressHook",
    "SpendingLimit", "key_for", "run_requests", "run_requests_sync", "run_sync",
]
