"""`openai:MODEL` with `--batch`: the same calls through the OpenAI Batch API, at about half the price.

Any OpenAI-compatible endpoint that offers `/v1/files` and `/v1/batches` will do. A run's requests are
written as JSONL lines (`custom_id`, `method`, `url`, `body`: the very body a direct call would POST),
uploaded with purpose `batch`, and a batch is created on the endpoint they use (`/v1/chat/completions` or
`/v1/responses`), split under the provider's limits (requests and bytes per batch). The batches are polled
with backoff until they end; the output and error files are read back and every answer goes through the
direct backend's own completion parser, so a batch answer is the same `Completion` as a direct one (and
has the same cache key: batch and direct answers are interchangeable).

Resumable: a request's custom id is the hash of its endpoint and body, and every batch is kept in a ledger
beside the cache (`batch_ledger`) from the moment its file is uploaded. A rerun after the driver died asks
the ledger first and waits for the batches already submitted instead of paying for them again.

A request the batch failed (a line of the error file, an expired or cancelled batch, an answer that never
came) is sent again in a next batch (`retries` rounds), then directly; one that fails for good (a 4xx
line, a batch that failed validation) ends as a `CallError` like any failed call, never lost. With a
`spending` limit, a request enters a batch only while the limit allows it (at batch prices).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

from bespoke_dataset.errors import UserError

from .base import CallError, Completion, OnDone, Outcome, Request, Usage, Withheld, backend_description
from .batch_ledger import BatchLedger, LedgerBatch, default_ledger
from .openai_backend import OpenAIBackend
from .openai_session import CallFailed, Session, short

log = logging.getLogger(__name__)

MAX_REQUESTS = 50_000
"""Requests per batch at most: OpenAI's limit."""
MAX_BYTES = 200 * 1024 * 1024
"""Bytes of one batch's input file at most: OpenAI's limit (200 MB)."""
COMPLETION_WINDOW = "24h"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
RETRYABLE_LINE_ERRORS = frozenset({"batch_expired", "batch_cancelled", "rate_limit_exceeded", "server_error"})
"""Error codes of an error-file line that another try may pass."""
RETRYABLE_BATCH_ERRORS = frozenset({"token_limit_exceeded", "rate_limit_exceeded"})
"""Error codes of a failed batch that a later batch may pass (the provider's queue was full)."""
_RETRYABLE_STATUS = frozenset({408, 409, 429})


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
class _Line:
    """One request as a line of a batch input file."""

    custom_id: str
    request: Request
    url: str
    data: bytes


@dataclass
class _Batch:
    """A batch being waited for."""

    input_file: str
    batch: str | None
    endpoint: str
    ids: frozenset[str]
    status: str = "validating"
    counts: dict[str, int] = field(default_factory=dict)


class OpenAIBatchBackend:
    """An `OpenAIBackend`'s calls through the Batch API. See the module docstring."""

    name = "openai"
    one_batch = True  # a batch takes hours whatever its size: give it every request of a run at once

    def __init__(
        self,
        direct: OpenAIBackend,
        *,
        batch_ledger: str | os.PathLike[str] | None = None,
        batch_max_requests: int = MAX_REQUESTS,
        batch_max_bytes: int = MAX_BYTES,
        batch_poll: float = 5.0,
        batch_poll_max: float = 60.0,
        batch_retries: int = 1,
        spending: Admission | None = None,
    ) -> None:
        """
        Args:
            direct: the backend whose calls go through batches; it makes the few direct calls too.
            batch_ledger: the SQLite file keeping the submitted batches (default: `default_ledger()`).
            batch_max_requests, batch_max_bytes: the provider's limits per batch.
            batch_poll, batch_poll_max: the first wait between polls, growing by half each poll up to the max.
            batch_retries: rounds of resubmitting the requests a batch failed, before they go direct.
            spending: the run's spending limit, if it has one.
        """
        if batch_max_requests < 1 or batch_max_bytes < 1:
            raise UserError("--batch-max-requests and --batch-max-bytes must be at least 1")
        if batch_poll <= 0 or batch_poll_max < batch_poll:
            raise UserError("--batch-poll must be > 0, and batch_poll_max= at least --batch-poll")
        self.direct = direct
        self.model = direct.model
        self.takes_tools = direct.takes_tools
        self.searches = direct.searches
        self.constraint = direct.constraint
        self.ledger_path = Path(batch_ledger) if batch_ledger is not None else default_ledger()
        self.max_requests = batch_max_requests
        self.max_bytes = batch_max_bytes
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
        if self._ledger is None:  # opened on first use: a dry run writes nothing
            self._ledger = BatchLedger(self.ledger_path)
        session = self.direct.new_session()
        try:
            await _Collection(self, self._ledger, session, requests, on_done).run()
        finally:
            await session.close()

    def close(self) -> None:
        self.direct.close()
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None


class _Collection:
    """One `complete` call: its requests through batches (and the last few directly), each reported once."""

    def __init__(self, backend: OpenAIBatchBackend, ledger: BatchLedger, session: Session,
                 requests: Sequence[Request], on_done: OnDone) -> None:
        self.backend = backend
        self.ledger = ledger
        self.session = session
        self.on_done = on_done
        self.base_url = session.where
        self.lines: dict[str, _Line] = {}
        self.positions: dict[str, list[int]] = {}
        for position, request in enumerate(requests):
            line = _line(backend.direct, request)
            self.lines.setdefault(line.custom_id, line)
            self.positions.setdefault(line.custom_id, []).append(position)
        self.waiting = set(self.lines)
        """Custom ids not yet reported."""
        self.tickets: dict[str, Ticket] = {}

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

    def _resumed(self, found: list[LedgerBatch]) -> list[_Batch]:
        batches = [_Batch(b.input_file, b.batch, b.endpoint, b.custom_ids, b.status) for b in found]
        if batches:
            names = ", ".join(b.batch or f"(file {b.input_file})" for b in batches)
            log.info("collecting %d batch(es) submitted before: %s", len(batches), names)
        spending = self.backend.spending
        for batch in batches:  # in flight already: what they cost counts against the limit, whatever it is
            for custom_id in batch.ids & self.waiting:
                if spending is not None and custom_id not in self.tickets:
                    self.tickets[custom_id] = spending.admit(self.backend.spec, self.lines[custom_id].request,
                                                             batch=True, force=True)  # type: ignore[assignment]
        return batches

    async def _submit(self, custom_ids: list[str], direct: list[str]) -> list[_Batch]:
        """Upload and create the batches holding `custom_ids`, split under the limits; a request too large
        for any batch is added to `direct`."""
        chunks, alone = _split([self.lines[custom_id] for custom_id in custom_ids], self.backend.max_requests,
                               self.backend.max_bytes)
        direct += alone
        batches = [await self._create(chunk) for chunk in chunks]
        return [batch for batch in batches if batch is not None]

    async def _create(self, chunk: list[_Line]) -> _Batch | None:
        endpoint = chunk[0].url
        content = b"".join(line.data + b"\n" for line in chunk)
        answer = await self._api(lambda: self.session.upload("/files", {"purpose": "batch"}, "bespoke-batch.jsonl", content),
                                 "upload a batch input file", first=True)
        if isinstance(answer, CallError):
            self._fail(chunk, answer)
            return None
        input_file = str(answer["id"])
        ids = [line.custom_id for line in chunk]
        self.ledger.uploaded(input_file, endpoint, self.base_url, ids)
        body = json.dumps({"input_file_id": input_file, "endpoint": endpoint, "completion_window": COMPLETION_WINDOW,
                           "metadata": {"created_by": "bespoke-eval"}}).encode()
        created = await self._api(lambda: self.session.post("/batches", body), "create a batch")
        if isinstance(created, CallError):
            # the file stays in the ledger without a batch: a rerun looks for one made from it, else makes it
            self._fail(chunk, CallError(f"{created.reason}; rerun to submit it", retryable=False))
            return None
        self.ledger.created(input_file, created["id"], created.get("status", "validating"))
        self.backend.submitted.append(created["id"])
        log.info("batch %s submitted: %d request(s) to %s", created["id"], len(chunk), endpoint)
        return _Batch(input_file, created["id"], endpoint, frozenset(ids), created.get("status", "validating"))

    def _fail(self, lines: list[_Line], error: CallError) -> None:
        for line in lines:
            self._finish(line.custom_id, error, via_batch=False)

    # -- waiting and collecting --------------------------------------------------------------------

    async def _wait(self, batches: list[_Batch]) -> dict[str, CallError]:
        """Poll until every batch has ended; deliver the answers; the failures among this run's requests."""
        failures: dict[str, CallError] = {}
        running = list(batches)
        delay = self.backend.poll
        while running:
            for batch in list(running):
                info = await self._poll(batch)
                if info is None or info["status"] in TERMINAL:
                    running.remove(batch)
                    if info is not None:
                        failures.update(await self._read(batch, info))
                    else:
                        failures.update(self._stranded(batch))
            if running:
                await asyncio.sleep(delay)
                delay = min(delay * 1.5, self.backend.poll_max)
        return {custom_id: error for custom_id, error in failures.items() if custom_id in self.waiting}

    async def _poll(self, batch: _Batch) -> dict[str, Any] | None:
        """The batch's state from the endpoint (found by its input file when its creation was never
        recorded, created now when it never was); None when it cannot be had."""
        if batch.batch is None:
            batch.batch = await self._find_or_create(batch)
            if batch.batch is None:
                return None
        info = await self._api(lambda: self.session.get(f"/batches/{batch.batch}"), f"poll batch {batch.batch}")
        if isinstance(info, CallError):
            log.warning("%s", info.reason)
            return None
        self._show(batch, info)
        return info

    async def _find_or_create(self, batch: _Batch) -> str | None:
        listed = await self._api(lambda: self.session.get("/batches?limit=100"), "list batches")
        if isinstance(listed, CallError):
            return None
        for entry in listed.get("data") or ():
            if entry.get("input_file_id") == batch.input_file:
                self.ledger.created(batch.input_file, entry["id"], entry.get("status", "validating"))
                return str(entry["id"])
        body = json.dumps({"input_file_id": batch.input_file, "endpoint": batch.endpoint,
                           "completion_window": COMPLETION_WINDOW}).encode()
        created = await self._api(lambda: self.session.post("/batches", body), "create a batch")
        if isinstance(created, CallError):
            return None
        self.ledger.created(batch.input_file, created["id"], created.get("status", "validating"))
        self.backend.submitted.append(created["id"])
        return str(created["id"])

    def _show(self, batch: _Batch, info: dict[str, Any]) -> None:
        counts = {name: int(value) for name, value in (info.get("request_counts") or {}).items()}
        if info["status"] != batch.status or counts != batch.counts:
            log.info("batch %s: %s, %d of %d done, %d failed", batch.batch, info["status"], counts.get("completed", 0),
                     counts.get("total", len(batch.ids)), counts.get("failed", 0))
        if info["status"] != batch.status:
            self.ledger.status(batch.input_file, info["status"])
        batch.status, batch.counts = info["status"], counts

    async def _read(self, batch: _Batch, info: dict[str, Any]) -> dict[str, CallError]:
        """An ended batch's output and error files: answers delivered (and kept in the ledger for requests
        this run did not ask), failures returned."""
        answers: dict[str, str] = {}
        failures: dict[str, CallError] = {}
        for kind in ("output_file_id", "error_file_id"):
            if not info.get(kind):
                continue
            content = await self._api(functools.partial(self.session.get, f"/files/{info[kind]}/content"),
                                      f"read the results of batch {batch.batch}", parse=False)
            if isinstance(content, CallError):
                return self._stranded(batch, content.reason)
            for number, raw in enumerate(content.splitlines(), 1):
                if raw.strip():
                    _read_line(raw, f"batch {batch.batch} {kind.split('_')[0]} line {number}", answers, failures)
        if info["status"] == "failed":
            failures.update(_batch_failure(batch, info, answers))
        for custom_id in batch.ids - answers.keys() - failures.keys():
            failures[custom_id] = CallError(f"batch {batch.batch} ({info['status']}) returned no answer for it", retryable=True)
        self.ledger.collected(batch.input_file, self.base_url, answers)
        failures.update(self._deliver(answers))
        return failures

    def _stranded(self, batch: _Batch, reason: str | None = None) -> dict[str, CallError]:
        """A batch whose state or results cannot be had now: it may still run, and stays in the ledger."""
        why = reason or f"batch {batch.batch or batch.input_file} could not be polled"
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
                completion = self.backend.direct.parse(self.lines[custom_id].url.removeprefix("/v1"), json.loads(body))
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
        for custom_id, outcome in zip(admitted, results):
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

    async def _api(self, send: Any, what: str, *, first: bool = False, parse: bool = True) -> Any:
        """One call to the files or batches API under the direct backend's retry policy: its JSON answer
        (or bytes with `parse=False`), or a `CallError` saying what could not be done."""

        async def attempt() -> Any:
            raw = await send()
            if not parse:
                return raw
            try:
                return json.loads(raw)
            except ValueError:
                raise CallFailed(f"malformed answer from the Batch API: {short(raw.decode('utf-8', 'replace'))}",
                                 retryable=True) from None

        outcome = await self.backend.direct.retrying(attempt)
        if isinstance(outcome, CallError):
            if first and any(f"HTTP {status}" in outcome.reason for status in (404, 405)):
                raise BatchUnsupported(f"{self.session.where} offers no Batch API (POST /files: {outcome.reason}); "
                                       "run without --batch")
            return CallError(f"could not {what}: {outcome.reason}", retryable=outcome.retryable)
        return outcome


def _line(direct: OpenAIBackend, request: Request) -> _Line:
    path, body = direct.path_and_body(request)
    url = "/v1" + path
    custom_id = "bespoke-" + hashlib.sha256(url.encode() + b"\n" + body).hexdigest()[:40]
    prefix = json.dumps({"custom_id": custom_id, "method": "POST", "url": url}, separators=(",", ":"))[:-1]
    return _Line(custom_id, request, url, prefix.encode() + b',"body":' + body + b"}")


def _split(lines: list[_Line], max_requests: int, max_bytes: int) -> tuple[list[list[_Line]], list[str]]:
    """Lines in order, cut into batches of one endpoint under both limits; the ids too large for any batch."""
    chunks: list[list[_Line]] = []
    alone: list[str] = []
    by_url: dict[str, list[_Line]] = {}
    for line in lines:
        by_url.setdefault(line.url, []).append(line)
    for group in by_url.values():
        chunk: list[_Line] = []
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


def _read_line(raw: bytes, where: str, answers: dict[str, str], failures: dict[str, CallError]) -> None:
    """One line of an output or error file, into `answers` (custom id -> response body JSON) or `failures`."""
    try:
        line = json.loads(raw)
        custom_id = str(line["custom_id"])
    except (ValueError, KeyError, TypeError):
        log.warning("%s is not a batch result line; skipped", where)
        return
    response = line.get("response") or {}
    error = line.get("error")
    status = response.get("status_code")
    if not error and status == 200 and isinstance(response.get("body"), dict):
        answers[custom_id] = json.dumps(response["body"], ensure_ascii=False)
        return
    if error:
        code = str(error.get("code") or "")
        failures[custom_id] = CallError(f"the batch failed it: {code}: {short(str(error.get('message') or ''))}",
                                        retryable=code in RETRYABLE_LINE_ERRORS)
        return
    body = response.get("body") if isinstance(response.get("body"), dict) else {}
    message = (body.get("error") or {}).get("message") if isinstance(body.get("error"), dict) else None
    failures[custom_id] = CallError(f"the batch failed it: HTTP {status}: {short(str(message or body))}",
                                    retryable=isinstance(status, int) and (status in _RETRYABLE_STATUS or status >= 500))


def _batch_failure(batch: _Batch, info: dict[str, Any], answers: dict[str, str]) -> dict[str, CallError]:
    """The requests of a batch that failed as a whole (validation, a full queue)."""
    errors = (info.get("errors") or {}).get("data") or [{}]
    code = str(errors[0].get("code") or "")
    message = short(str(errors[0].get("message") or "no reason given"))
    error = CallError(f"batch {batch.batch} failed: {code + ': ' if code else ''}{message}",
                      retryable=code in RETRYABLE_BATCH_ERRORS)
    return {custom_id: error for custom_id in batch.ids - answers.keys()}
