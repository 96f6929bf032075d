"""What a command that calls models builds once from its flags, before any work, and hands on: its engines'
specs parsed (the executor and Batch API flags checked against them), the price table, the spending limit
(`--max-cost`) and the caches that keep what it paid for. `score`, `run`, `meta-eval` and `rescore` each
build one (`command_context`) and ask it whether the run stopped at its limit (`CommandContext.stopped`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Sequence

from bespoke_metric.backends.config.shared_options import check_cost_options, check_executor_options
from bespoke_metric.backends.registry import Spec, as_spec
from bespoke_metric.calls.pricing import PriceTable
from bespoke_metric.calls.spending import SpendingLimit

from .cost import price_table, spending_limit, stopped_by_limit


@dataclass(frozen=True)
class CommandContext:
    """One command's engines, prices, spending limit and answer caches, built once (`command_context`)."""

    specs: tuple[Spec, ...]
    """Every engine of the command, parsed, in the order given (the system model, its profiler, the judges)."""
    prices: PriceTable
    """The built-in prices with `--prices` over them."""
    caches: tuple[str, ...] = ()
    """The answer caches that keep what the run paid for: named in the line of a run stopped at its limit."""
    spending: SpendingLimit | None = field(default=None, repr=False)
    """The run's one limit (`--max-cost`), shared by every model of the command; None without one, or in a dry run."""

    def stopped(self) -> bool:
        """Whether the run stopped at its spending limit; if so, it says so in one line on stderr."""
        return stopped_by_limit(self.spending, self.caches)


def command_context(args: argparse.Namespace, specs: Sequence[str | Spec | None], *, caches: Sequence[str] = (),
                    kept: Sequence[str | None] = ()) -> CommandContext:
    """The context of the command whose flags are `args` and whose engines are `specs` (None for one not
    given; a string is parsed here, once): an `OptionError` for an executor or Batch API flag that applies to
    none of them, a `PricesError` for a `--prices` file that cannot be read, and, outside a dry run, the
    spending limit of `--max-cost` (a `UserError` when a cache of `kept`, which must keep what it paid for, is
    not given). `caches` are the answer caches a stopped run names."""
    parsed = tuple(as_spec(spec) for spec in specs if spec is not None)
    check_executor_options(vars(args), parsed)
    check_cost_options(vars(args), parsed)
    prices = price_table(args)
    spending = None if getattr(args, "dry_run", False) else spending_limit(args, prices, kept)
    return CommandContext(parsed, prices, tuple(caches), spending)
