"""A direct backend's calls through its provider's Batch API, at about half the price: what every Batch API
shares. `openai_batch` (OpenAI's Files and Batch APIs) and `anthropic_batch` (Anthropic's Message
Batches) are the two providers'.

A run's requests are written as batch lines holding the very body a direct call would send, split under
the provider's limits (requests and bytes per batch), and submitted; the batches are polled with backoff
until they end; their results are read back and every answer goes through the direct backend's own
completion parser, so a batch answer is the same `Completion` as a direct one (and has the same cache key:
batch and direct answers are interchangeable).

Resumable: a request's custom id is the hash of its endpoint and body, and every batch is kept in a ledger
beside the cache (`batch_ledger`) from before its creation is sent. A rerun after the driver died asks the
ledger first and waits for the batches already submitted instead of paying for them again.

A request the batch failed (a failed line, an expired or cancelled batch, an answer that never came) is
sent again in a next batch (`retries` rounds), then directly; one that fails for good (a 4xx, a batch that
failed validation) ends as a `CallError` like any failed call, never lost. With a `spending` limit, a
request enters a batch only while the limit allows it (at batch prices).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

from bespoke_dataset.errors import UserError

from ..base import CallError, Completion, OnDone, Outcome, Request, Usage, Withheld, backend_description
from ..http import CallFailed, Session, short
from ..options import BatchOptions
from .batch_ledger import BatchLedger, LedgerBatch, default_ledger
from .openai_backend import OpenAIBackend

log = logging.getLogger(__name__)


class BatchUnsupported(UserError):
    """The endpoint offers no Batch API."""


class Ticket(Protocol):
    def settle(self, outcome: Outcome | None) -> None:
        """The call ended (None: it was never made): what it cost replaces what was reserved for it."""


class Admission(Protocol):
    """A spending limit (`bespoke_metric.calls.spending.SpendingLimit`), as this backend uses it."""

    refusal: str

    def admit(self, spec: str, request: Request, *, batch: bool, force: bool = False) -> Ticket | None:
        """Reserve a request's estimated cost; None when the limit would be passed (unless `force`)."""


@dataclass(frozen=True)
class BatchLine:
    """One request as a line of a batch."""

    custom_id: str
    request: Request
    path: str
    """The direct call's path (`/chat/completions`, `/v1/messages`), for the direct backend's parser."""
    data: bytes
    """The line as the provider's batch takes it (JSON)."""


def custom_id(path: str, body: bytes) -> str:
    """A request's custom id: the hash of where it goes and what it says, so a rerun finds its batch."""
    return "bespoke-" + hashlib.sha256(path.encode() + b"\n" + body).hexdigest()[:40]


@dataclass
class SubmittedBatch:
    """A batch being waited for."""

    key: str
    """Its key in the ledger (`LedgerBatch.input_file`)."""
    batch: str | None
    endpoint: str
    ids: frozenset[str]
    status: str
    counts: dict[str, int] = field(default_factory=dict)
    submitted: float = 0.0


class BatchBackend:
    """A direct backend's calls through its provider's Batch API (a subclass per provider: `collection`
    speaks its API). See the module docstring."""

    one_batch = True  # a batch takes hours whatever its size: give it every request of a run at once
    collection: type["BatchCollection"]
    """The provider's batch API, one `complete` call at a time."""
    max_requests = 0
    """Requests per batch at most: the provider's limit."""
    max_bytes = 0
    """Bytes of one batch at most: the provider's limit."""

    def __init__(
        self,
        direct: OpenAIBackend,
        options: BatchOptions,
        *,
        spending: Admission | None = None,
    ) -> None:
        """
        Args:
            direct: the backend whose calls go through batches; it makes the few direct calls too.
            options: the Batch API's (`BatchOptions`): the SQLite file keeping the submitted batches (default:
                `default_ledger()`), the limits per batch (default: the provider's), the first wait between
                polls (5 s), growing by half each poll up to the max (60 s), the rounds of resubmitting the
                requests a batch failed before they go direct (1).
            spending: the run's spending limit, if it has one.
        """
        self.max_requests = self.max_requests if options.batch_max_requests is None else options.batch_max_requests
        self.max_bytes = self.max_bytes if options.batch_max_bytes is None else options.batch_max_bytes
        if self.max_requests < 1 or self.max_bytes < 1:
            raise UserError("--batch-max-requests and --batch-max-bytes must be at least 1")
        batch_poll = 5.0 if options.batch_poll is None else options.batch_poll
        batch_poll_max = 60.0 if options.batch_poll_max is None else options.batch_poll_max
        batch_ledger = options.batch_ledger
        batch_retries = 1 if options.batch_retries is None else options.batch_retries
        if batch_poll <= 0 or batch_poll_max < batch_poll:
            raise UserError("--batch-poll must be > 0, and batch_poll_max= at least --batch-poll")
        self.direct = direct
        self.name = direct.name
        self.model = direct.model
        self.takes_tools = direct.takes_tools
        self.searches = direct.searches
        self.constraint = direct.constraint
        self.ledger_path = Path(batch_ledger) if batch_ledger is not None else default_ledger()
        self.poll = batch_poll
        self.poll_max = batch_poll_max
        self.retries = batch_retries
        self.spending = spending
        self.batch_usage = Usage()
        """The calls answered through the Batch API and their tokens (priced at batch rates)."""
        self.submitted: list[str] = []
        """The ids of the batches this backend created."""
        self._ledger: BatchLedger | None = None

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.model}"

    def identity(self) -> dict[str, Any]:
        # the same answer as a direct call: the same cache key
        return self.direct.identity()

    def describe(self) -> dict[str, Any]:
        return backend_description(self.direct)

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        for request in requests:  # as a direct run: one the provider would refuse stops it before any batch is made
            self.direct.check_request(request)
        if self._ledger is None:  # opened on first use: a dry run writes nothing
            self._ledger = BatchLedger(self.ledger_path)
        session = self.direct.new_session()
        try:
            await self.collection(self, self._ledger, session, requests, on_done).run()
        finally:
            await session.close()

    def close(self) -> None:
        self.direct.close()
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None


class BatchCollection:
    """One `complete` call: its requests through batches (and the last few directly), each reported once.

    A subclass speaks its provider's batch API: `line`, `_create`, `_find_or_create`, `batch_path`,
    `progress`, `ended` and `results`; `first_call` names the call an endpoint without that API refuses."""

    first_call = ""

    def __init__(self, backend: BatchBackend, ledger: BatchLedger, session: Session,
                 requests: Sequence[Request], on_done: OnDone) -> None:
        self.backend = backend
        self.ledger = ledger
        self.session = session
        self.on_done = on_done
        self.base_url = session.where
        self.lines: dict[str, BatchLine] = {}
        self.positions: dict[str, list[int]] = {}
        for position, request in enumerate(requests):
            line = self.line(request)
            self.lines.setdefault(line.custom_id, line)
            self.positions.setdefault(line.custom_id, []).append(position)
        self.waiting = set(self.lines)
        """Custom ids not yet reported."""
        self.tickets: dict[str, Ticket] = {}

    # -- the provider's API --------------------------------------------------------------------------

    def line(self, request: Request) -> BatchLine:
        """The request as a line of a batch."""
        raise NotImplementedError

    async def _create(self, chunk: list[BatchLine]) -> SubmittedBatch | None:
        """Submit one batch (recorded in the ledger before its creation is sent); None when it could not be
        (its requests then ended as failed, `_fail`)."""
        raise NotImplementedError

    async def _find_or_create(self, batch: SubmittedBatch) -> str | None:
        """The id of a batch the ledger holds without one (its creation was never recorded): found on the
        endpoint, else created now; None when neither can be done."""
        raise NotImplementedError

    def batch_path(self, batch: str) -> str:
        """Where a batch's state is read (GET)."""
        raise NotImplementedError

    def progress(self, info: dict[str, Any]) -> tuple[str, dict[str, int]]:
        """A batch's status and counts (`total`, `completed`, `failed`) from its state."""
        raise NotImplementedError

    def ended(self, info: dict[str, Any]) -> bool:
        """Whether the batch has ended (its results can be read)."""
        raise NotImplementedError

    async def results(self, batch: SubmittedBatch, info: dict[str, Any]) -> tuple[dict[str, str], dict[str, CallError]] | CallError:
        """An ended batch's answers (custom id -> the direct call's response body, JSON) and failures; a
        `CallError` when they cannot be read now."""
        raise NotImplementedError

    # -- the run ---------------------------------------------------------------------------------------

    async def run(self) -> None:
        self._deliver(self.ledger.answers(self.waiting, self.base_url))  # collected by an earlier run
        batches = self._resumed(self.ledger.open_batches(self.waiting, self.base_url))
        inside = {custom_id for batch in batches for custom_id in batch.ids} & self.waiting
        direct: list[str] = []  # too large for any batch, or failed by every round
        batches += await self._submit(self._admitted(sorted(self.waiting - inside, key=self._order), batch=True), direct)
        failed: dict[str, CallError] = {}
        for round_ in range(self.backend.retries + 1):
            failed.update(await self._wait(batches))
            again = [custom_id for custom_id, error in failed.items() if error.retryable]
            if not again or round_ == self.backend.retries:
                break
            log.info("%d request(s) the batches failed go in a next batch", len(again))
            for custom_id in again:
                del failed[custom_id]
            batches = await self._submit(again, direct)
        await self._direct(direct + [custom_id for custom_id, error in failed.items() if error.retryable])
        for custom_id, error in failed.items():
            self._finish(custom_id, error, via_batch=False)  # those the direct calls did not answer

    # -- admission and submission ------------------------------------------------------------------

    def _order(self, custom_id: str) -> int:
        return self.positions[custom_id][0]

    def _admitted(self, custom_ids: list[str], *, batch: bool) -> list[str]:
        """The requests the spending limit lets in (all without one); the others end at once, not sent."""
        spending = self.backend.spending
        if spending is None:
            return custom_ids
        admitted = []
        for custom_id in custom_ids:
            ticket = spending.admit(self.backend.spec, self.lines[custom_id].request, batch=batch)
            if ticket is None:
                self._finish(custom_id, CallError(spending.refusal, retryable=True), via_batch=False)
            else:
                self.tickets[custom_id] = ticket
                admitted.append(custom_id)
        return admitted

    def _resumed(self, found: list[LedgerBatch]) -> list[SubmittedBatch]:
        batches = [SubmittedBatch(b.input_file, b.batch, b.endpoint, b.custom_ids, b.status, submitted=b.submitted)
                   for b in found]
        if batches:
            names = ", ".join(b.batch or f"(unrecorded: {b.key})" for b in batches)
            log.info("collecting %d batch(es) submitted before: %s", len(batches), names)
        spending = self.backend.spending
        for batch in batches:  # in flight already: what they cost counts against the limit, whatever it is
            for custom_id in batch.ids & self.waiting:
                if spending is not None and custom_id not in self.tickets:
                    self.tickets[custom_id] = spending.admit(self.backend.spec, self.lines[custom_id].request,
                                                             batch=True, force=True)  # type: ignore[assignment]
        return batches

    async def _submit(self, custom_ids: list[str], direct: list[str]) -> list[SubmittedBatch]:
        """Submit the batches holding `custom_ids`, split under the limits; a request too large for any
        batch is added to `direct`."""
        chunks, alone = split_lines([self.lines[custom_id] for custom_id in custom_ids], self.backend.max_requests,
                                    self.backend.max_bytes)
        direct += alone
        batches = [await self._create(chunk) for chunk in chunks]
        return [batch for batch in batches if batch is not None]

    def _fail(self, lines: list[BatchLine], error: CallError) -> None:
        for line in lines:
            self._finish(line.custom_id, error, via_batch=False)

    # -- waiting and collecting --------------------------------------------------------------------

    async def _wait(self, batches: list[SubmittedBatch]) -> dict[str, CallError]:
        """Poll until every batch has ended; deliver the answers; the failures among this run's requests."""
        failures: dict[str, CallError] = {}
        running = list(batches)
        delay = self.backend.poll
        while running:
            for batch in list(running):
                info = await self._poll(batch)
                if info is None or self.ended(info):
                    running.remove(batch)
                    if info is not None:
                        failures.update(await self._read(batch, info))
                    else:
                        failures.update(self._stranded(batch))
            if running:
                await asyncio.sleep(delay)
                delay = min(delay * 1.5, self.backend.poll_max)
        return {custom_id: error for custom_id, error in failures.items() if custom_id in self.waiting}

    async def _poll(self, batch: SubmittedBatch) -> dict[str, Any] | None:
        """The batch's state from the endpoint (found or created first when its creation was never
        recorded); None when it cannot be had."""
        if batch.batch is None:
            batch.batch = await self._find_or_create(batch)
            if batch.batch is None:
                return None
        path = self.batch_path(batch.batch)
        info = await self._api(lambda: self.session.get(path), f"poll batch {batch.batch}")
        if isinstance(info, CallError):
            log.warning("%s", info.reason)
            return None
        self._show(batch, info)
        return info

    def _show(self, batch: SubmittedBatch, info: dict[str, Any]) -> None:
        status, counts = self.progress(info)
        if status != batch.status or counts != batch.counts:
            log.info("batch %s: %s, %d of %d done, %d failed", batch.batch, status, counts.get("completed", 0),
                     counts.get("total", len(batch.ids)), counts.get("failed", 0))
        if status != batch.status:
            self.ledger.status(batch.key, status)
        batch.status, batch.counts = status, counts

    async def _read(self, batch: SubmittedBatch, info: dict[str, Any]) -> dict[str, CallError]:
        """An ended batch's results: answers delivered (and kept in the ledger for requests this run did not
        ask), failures returned."""
        read = await self.results(batch, info)
        if isinstance(read, CallError):
            return self._stranded(batch, read.reason)
        answers, failures = read
        for custom_id in batch.ids - answers.keys() - failures.keys():
            failures[custom_id] = CallError(f"batch {batch.batch} ({self.progress(info)[0]}) returned no answer for it",
                                            retryable=True)
        self.ledger.collected(batch.key, self.base_url, answers)
        failures.update(self._deliver(answers))
        return failures

    def _stranded(self, batch: SubmittedBatch, reason: str | None = None) -> dict[str, CallError]:
        """A batch whose state or results cannot be had now: it may still run, and stays in the ledger."""
        why = reason or f"batch {batch.batch or batch.key} could not be polled"
        error = CallError(f"{why}; it stays recorded: rerun to collect it", retryable=False)
        return {custom_id: error for custom_id in batch.ids}

    def _deliver(self, answers: dict[str, str]) -> dict[str, CallError]:
        """Report the answers this run asked for; the ones that hold no completion come back as failures."""
        failures: dict[str, CallError] = {}
        taken = []
        for custom_id, body in answers.items():
            if custom_id not in self.waiting:
                continue
            taken.append(custom_id)
            try:
                completion = self.backend.direct.parse(self.lines[custom_id].path, json.loads(body))
            except Withheld as withheld:  # a refusal: asking again would get the same
                failures[custom_id] = CallError(f"{self.backend.spec} {withheld.reason}", retryable=False)
                continue
            except (AttributeError, IndexError, KeyError, TypeError, ValueError) as err:
                failures[custom_id] = CallError(f"malformed answer in the batch output: {short(f'{type(err).__name__}: {err}')}",
                                                retryable=True)
                continue
            self._finish(custom_id, completion, via_batch=True)
        self.ledger.delivered(taken, self.base_url)
        return failures

    # -- the direct rest -----------------------------------------------------------------------------

    async def _direct(self, custom_ids: list[str]) -> None:
        """Send the requests no batch could answer as direct calls (at direct prices)."""
        if not custom_ids:
            return
        log.info("%d request(s) the batches failed are sent directly", len(custom_ids))
        for custom_id in custom_ids:
            ticket = self.tickets.pop(custom_id, None)
            if ticket is not None:
                ticket.settle(None)
        admitted = self._admitted(custom_ids, batch=False)
        results = await asyncio.gather(*(self._one_direct(custom_id) for custom_id in admitted))
        for custom_id, outcome in zip(admitted, results, strict=True):
            self._finish(custom_id, outcome, via_batch=False)

    async def _one_direct(self, custom_id: str) -> Outcome:
        box: list[Outcome] = []
        await self.backend.direct.complete([self.lines[custom_id].request], lambda _, outcome: box.append(outcome))
        return box[0] if box else CallError("the direct call returned no outcome")

    def _finish(self, custom_id: str, outcome: Outcome, *, via_batch: bool) -> None:
        if custom_id not in self.waiting:
            return
        self.waiting.discard(custom_id)
        ticket = self.tickets.pop(custom_id, None)
        if ticket is not None:
            ticket.settle(outcome)
        if via_batch and isinstance(outcome, Completion):
            usage = self.backend.batch_usage
            usage.calls += 1
            usage.input_tokens += outcome.input_tokens
            usage.output_tokens += outcome.output_tokens
            usage.cached_input_tokens += outcome.cached_input_tokens
            usage.reasoning_tokens += outcome.reasoning_tokens
        for position in self.positions[custom_id]:
            self.on_done(position, outcome)

    # -- calls to the Batch API ----------------------------------------------------------------------

    async def _api(self, send: Any, what: str, *, first: bool = False, parse: bool = True, once: bool = False) -> Any:
        """One call to the batch API under the direct backend's retry policy: its JSON answer (or bytes with
        `parse=False`), or a `CallError` saying what could not be done; `first`: the call an endpoint
        without the API answers with a 404 or 405 (`BatchUnsupported`); `once`: not retried (a call whose
        retry could make a second batch, when the first was made and its answer lost)."""

        async def attempt() -> Any:
            raw = await send()
            if not parse:
                return raw
            try:
                return json.loads(raw)
            except ValueError:
                raise CallFailed(f"malformed answer from the Batch API: {short(raw.decode('utf-8', 'replace'))}",
                                 retryable=True) from None

        if once:
            try:
                outcome = await attempt()
            except CallFailed as failure:
                outcome = CallError(self.backend.direct.scrub(failure.reason), retryable=failure.retryable)
        else:
            outcome = await self.backend.direct.retrying(attempt)
        if isinstance(outcome, CallError):
            if first and any(f"HTTP {status}" in outcome.reason for status in (404, 405)):
                raise BatchUnsupported(f"{self.session.where} offers no Batch API ({self.first_call}: {outcome.reason}); "
                                       "run without --batch")
            return CallError(f"could not {what}: {outcome.reason}", retryable=outcome.retryable)
        return outcome


def split_lines(lines: list[BatchLine], max_requests: int, max_bytes: int) -> tuple[list[list[BatchLine]], list[str]]:
    """Lines in order, cut into batches of one endpoint under both limits; the ids too large for any batch."""
    chunks: list[list[BatchLine]] = []
    alone: list[str] = []
    by_path: dict[str, list[BatchLine]] = {}
    for line in lines:
        by_path.setdefault(line.path, []).append(line)
    for group in by_path.values():
        chunk: list[BatchLine] = []
        size = 0
        for line in group:
            length = len(line.data) + 1
            if length > max_bytes:
                alone.append(line.custom_id)
                continue
            if chunk and (len(chunk) >= max_requests or size + length > max_bytes):
                chunks.append(chunk)
                chunk, size = [], 0
            chunk.append(line)
            size += length
        if chunk:
            chunks.append(chunk)
    return chunks, alone
