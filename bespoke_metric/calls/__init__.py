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

from bespoke_dataset.lazy import lazy_attributes

# name -> the module that defines it, imported on first use: a wing costs nothing until a name is used
_LAZY: dict[str, str] = {
    "Cache": ".cache",
    "Planned": ".plan",
    "Price": ".pricing",
    "PriceTable": ".pricing",
    "SpendingLimit": ".spending",
    "CallResult": ".scheduler",
    "ParseError": ".scheduler",
    "ProgressBar": ".progress",
    "ProgressHook": ".progress",
    "key_for": ".cache",
    "run_requests": ".scheduler",
    "run_requests_sync": ".scheduler",
    "run_sync": ".scheduler",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
