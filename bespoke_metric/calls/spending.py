"""A run's spending limit (`--max-cost DOLLARS`): no new request once what the run has spent plus what
it has in flight would pass it.

Every request is admitted just before it is sent (a direct call when a slot frees, a batch request when
its batch is written) with its estimated cost reserved: its input tokens at the model's input price, and
as output its `max_tokens` cap or the longest answer this model has given in the run, whichever is more
(a reasoning model's hidden reasoning counts as output, past any cap). When the call ends, its real cost
from the provider's usage (and its web searches, where priced) replaces the reservation. Once one request does not fit, the limit stops the run
for good: the requests not sent end as failed calls with `refusal` as the reason, and every answer that
came is kept in the cache, so a rerun with a higher limit pays only for the rest.

One limit is shared by every model of a run (the system model, its profiler and the judge of `bespoke
run`), and a model without a known price cannot be limited: `SpendingLimitError`, before any call.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Callable, Mapping, Sequence

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import Backend, BackendWrapper, CallError, Completion, OnDone, Outcome, Request
from bespoke_metric.backends.web_search import searches_made

from .pricing import Price, PriceTable, Tokens, prompt_tokens

PromptCounter = Callable[[str, Sequence[Mapping[str, str]]], int]
"""`count(spec, messages) -> input tokens` of a prompt to the model `spec`."""

_ROUNDING = 1e-12
"""Dollars of floating-point noise a sum of costs may carry: reaching the limit exactly is within it."""
DIRECT_WINDOW = 32
"""Requests in flight at most through `SpendLimited` when the backend does not say its concurrency."""


class SpendingLimitError(UserError):
    """A spending limit on a model whose price is not known."""


def approximate_prompt_tokens(spec: str, messages: Sequence[Mapping[str, str]]) -> int:
    """Input tokens at one per three characters: more than OpenAI's encodings count for English, so the
    limit errs on the safe side where no tokenizer is at hand."""
    return prompt_tokens(messages, lambda text: (len(text) + 2) // 3)


class SpendingLimit:
    """Dollars a run may spend, shared by every model of the run. See the module docstring."""

    def __init__(self, limit: float, prices: PriceTable | None = None, count_prompt: PromptCounter = approximate_prompt_tokens) -> None:
        if not limit > 0:
            raise SpendingLimitError(f"--max-cost must be a positive number of dollars, got {limit}")
        self.limit = float(limit)
        self.prices = prices or PriceTable()
        self.count_prompt = count_prompt
        self.spent = 0.0
        self.reserved = 0.0
        self.stopped = False
        self.not_sent = 0
        self._longest: dict[str, int] = {}
        self._lock = threading.Lock()

    def limited(self, backend: Backend) -> Backend:
        """`backend`, its every request admitted against this limit first (`SpendLimited`)."""
        return SpendLimited(backend, self)

    @property
    def refusal(self) -> str:
        return f"not sent: the run's spending limit (--max-cost {self.limit:g}) would be passed"

    def price(self, spec: str) -> Price:
        """The price of `spec`'s model; `SpendingLimitError` when there is none to limit it by."""
        price = self.prices.price(spec)
        if price is None:
            raise SpendingLimitError(f"--max-cost needs the price of {spec}, and none is known: give it with --prices FILE")
        return price

    def admit(self, spec: str, request: Request, *, batch: bool, force: bool = False) -> "Ticket | None":
        """Reserve a request's estimated cost, or None (and stop the run's spending) when it would pass the
        limit; `force` reserves it whatever the limit (a request already submitted)."""
        price = self.price(spec)
        tokens = Tokens(input=self.count_prompt(spec, request.messages),
                        output=max(request.max_tokens, self._longest.get(spec, 0)))
        estimate = price.cost(tokens, batch=batch)
        with self._lock:
            if not force and (self.stopped or self.spent + self.reserved + estimate > self.limit + _ROUNDING):
                self.stopped = True
                self.not_sent += 1
                return None
            self.reserved += estimate
        return Ticket(self, spec, price, estimate, batch)

    def line(self, where: str) -> str:
        """The one line a stopped run ends with; `where` says where its answers are kept."""
        return (f"stopped at the spending limit: ${self.spent:.4f} spent of --max-cost {self.limit:g}, "
                f"{self.not_sent} call(s) not sent; the answers are kept in {where}: rerun with a higher --max-cost to finish")

    def _settle(self, ticket: "Ticket", outcome: Outcome | None) -> None:
        with self._lock:
            self.reserved -= ticket.estimate
            if isinstance(outcome, Completion):
                tokens = Tokens(outcome.input_tokens, outcome.cached_input_tokens, outcome.output_tokens, outcome.reasoning_tokens)
                searches = ticket.price.search_cost(searches_made(outcome.search)) or 0.0  # unpriced: not counted
                self.spent += ticket.price.cost(tokens, batch=ticket.batch) + searches
                self._longest[ticket.spec] = max(self._longest.get(ticket.spec, 0), outcome.output_tokens)


class Ticket:
    """One admitted request's reservation."""

    def __init__(self, limit: SpendingLimit, spec: str, price: Price, estimate: float, batch: bool) -> None:
        self.limit = limit
        self.spec = spec
        self.price = price
        self.estimate = estimate
        self.batch = batch
        self._settled = False

    def settle(self, outcome: Outcome | None) -> None:
        """The call ended (None: it was never made): its real cost replaces the reservation, once."""
        if not self._settled:
            self._settled = True
            self.limit._settle(self, outcome)


class SpendLimited(BackendWrapper):
    """A backend whose direct calls are admitted one by one as they would be sent, against a limit.

    Requests go to the wrapped backend one at a time as slots free (as many at once as its concurrency),
    so that a request is admitted at the moment it would go out, not when the run starts."""

    def __init__(self, backend: Backend, limit: SpendingLimit) -> None:
        super().__init__(backend)
        self.limit = limit
        self.spec = f"{backend.name}:{backend.model}"
        limit.price(self.spec)  # a model without a price is refused now, before any call
        self.window = int(getattr(backend, "concurrency", DIRECT_WINDOW))

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        slots = asyncio.Semaphore(self.window)
        await asyncio.gather(*(self._one(index, request, slots, on_done) for index, request in enumerate(requests)))

    async def _one(self, index: int, request: Request, slots: asyncio.Semaphore, on_done: OnDone) -> None:
        async with slots:
            ticket = self.limit.admit(self.spec, request, batch=False)
            if ticket is None:
                on_done(index, CallError(self.limit.refusal, retryable=True))
                return
            outcomes: list[Outcome] = []
            try:
                await self.backend.complete([request], lambda _, outcome: outcomes.append(outcome))
            finally:
                ticket.settle(outcomes[0] if outcomes else None)
        on_done(index, outcomes[0] if outcomes else CallError(f"{self.name} backend returned no outcome"))
