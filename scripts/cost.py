"""What a run costs: the flags shared by `score`, `run` and `meta-eval` (and reusable by any command that
makes model calls), what `--dry-run` prints, and the line a run stopped by `--max-cost` ends with.

`--batch` and its limits reach only the engines that offer a Batch API (`openai:`), as the executor flags
reach only theirs; given to a command none of whose models takes them, they are an error. One spending
limit is shared by every model of a command.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence, TextIO

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.options import BatchOptions
from bespoke_metric.calls.plan import Planned, estimate
from bespoke_metric.calls.pricing import PriceTable, is_local
from bespoke_metric.calls.spending import SpendingLimit
from bespoke_metric.systems.tokens import counted_prompt_tokens

from .options import add_option_arguments


def add_cost_arguments(parser: argparse.ArgumentParser, *, dry_run: bool = True) -> None:
    """`--batch` and its limits, `--prices`, `--max-cost`, and `--dry-run` unless `dry_run=False`."""
    group = parser.add_argument_group("cost")
    add_option_arguments(group, BatchOptions)
    group.add_argument("--prices", metavar="FILE", help='JSON prices overriding the built-in table, dollars per million '
                       'tokens: {"MODEL": {"input": 1.25, "cached_input": 0.125, "output": 10.0}} (batch prices half '
                       'unless given as batch_input, batch_output)')
    group.add_argument("--max-cost", type=float, metavar="DOLLARS", help="stop sending new requests once what the run "
                       "spent plus what it has in flight would pass DOLLARS (needs a cache: the answers it paid for "
                       "are kept for the rerun); exits 1")
    if dry_run:
        group.add_argument("--dry-run", action="store_true", help="print the calls the run would make, their input "
                           "tokens and estimated cost, and what the cache holds; make no call, write nothing")


def price_table(args: argparse.Namespace) -> PriceTable:
    """The built-in prices with `--prices` over them (`PricesError` for a file that cannot be read)."""
    return PriceTable.load(getattr(args, "prices", None))


def spending_limit(args: argparse.Namespace, prices: PriceTable, caches: Sequence[str | None]) -> SpendingLimit | None:
    """The run's limit from `--max-cost`, or None; a `UserError` when no cache would keep what it paid for."""
    if getattr(args, "max_cost", None) is None:
        return None
    if not all(caches):
        raise UserError("--max-cost keeps every answer it paid for in the cache, for the rerun: give --cache FILE")
    return SpendingLimit(args.max_cost, prices, count_prompt=counted_prompt_tokens)


def print_plan(planned: Sequence[Planned], prices: PriceTable, out: TextIO | None = None, *,
               without_calls: Sequence[str] = ()) -> None:
    """What a dry run found: per model its calls, what the cache holds, input tokens, estimated cost; a line
    for each judge of `without_calls` (an `embed:` judge: it calls no model), so every judge has its line."""
    out = out or sys.stdout
    for spec in without_calls:
        print(f"judge {spec}: no model call to make (it judges on this machine, calling no model); no cost", file=out)
    if not planned and not without_calls:
        print("no model call to make (the judge makes none of its own)", file=out)
    total: float | None = 0.0
    unknown = []
    for part in planned:
        found = estimate(part, counted_prompt_tokens, prices)
        mode = "batch" if part.batch else "direct"
        bound = "at most " if part.response_bound else ""
        local = found.cost is None and is_local(part.spec)
        cost = (f"${found.cost:.4f}" if found.cost is not None else "local, no price per token" if local
                else "unknown (no price: give one with --prices FILE)")
        print(f"{part.role} {part.spec} ({mode}): {found.calls} call(s) to make, {found.cached} answer(s) in the cache; "
              f"{bound}{found.input_tokens} input tokens, ~{found.output_tokens} output tokens (from {found.output_basis}); "
              f"estimated cost {cost}", file=out)
        if part.response_bound:
            print("  (what is not written yet, a profile or a response, counts at its output cap in the prompts built "
                  "on it, and no response is taken as caught by a guard: an upper bound)", file=out)
        if found.reasoning and not found.output_basis.endswith("mean"):
            print(f"  ({part.spec} is a reasoning model: its hidden reasoning is billed as output beyond the caps; a run "
                  "with --limit first measures it, and a dry run then estimates from its cached answers)", file=out)
        if found.cost is None and not local:
            unknown.append(str(part.spec))
            total = None
        elif total is not None:
            total += found.cost or 0.0
    shown = f"${total:.4f}" if total is not None else f"unknown (no price for {', '.join(unknown)})"
    print(f"dry run: no call made, nothing written; estimated cost {shown} (repairs of unreadable answers not included)", file=out)


def stopped_by_limit(spending: SpendingLimit | None, caches: Sequence[str]) -> bool:
    """Whether the run stopped at its limit; if so, say so in one line on stderr."""
    if spending is None or not spending.stopped:
        return False
    print(f"error: {spending.line(' and '.join(caches))}", file=sys.stderr)
    return True
