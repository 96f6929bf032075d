"""`anthropic:MODEL` with `--batch`: the same calls through Anthropic's Message Batches API, at half the price.

A batch is one call, `POST /v1/messages/batches` with `{"requests": [{"custom_id", "params"}]}`, each
`params` the very body a direct call would POST (the SDK's `BatchCreateParams`,
anthropic/types/messages/batch_create_params.py), split under Anthropic's limits (100,000 requests, 256 MB).
It is polled (`GET /v1/messages/batches/{id}`: a `MessageBatch`, `processing_status` `in_progress`,
`canceling`, then `ended`) until it ends, and its results are read from `GET
/v1/messages/batches/{id}/results` (JSONL of `MessageBatchIndividualResponse`: `succeeded` with the
`message`, `errored` with the API's error, `canceled`, `expired`). What every Batch API shares (the same
ledger as OpenAI's batch mode, resuming, rounds of retries, the direct rest, the spending limit) is
`backends.providers.batches`'.

Its requests travel in the creating call, so the submission is recorded in the ledger under a key of its
own before that call is sent, and the call is never retried (a retry after an answer lost on the way
would make a second batch): a submission whose answer never came (a run killed meanwhile, a 5xx, a
timeout) is looked for among the endpoint's batches (`GET /v1/messages/batches`: one created since, with as
many requests) on the next poll or the rerun, and submitted again only when none is there; a submission
the API refused (a 4xx) is forgotten. An `errored` result another try may pass
(`overloaded_error`, `rate_limit_error`, `api_error`, ...), a `canceled` or `expired` one goes in a next batch;
one that names a retired model stops the run (`ModelUnavailableError`), as a direct call does.
"""

from __future__ import annotations

import datetime
import json
import logging
import time
import uuid
from typing import Any

from ..base import CallError, ModelUnavailableError, Request
from ..http import short
from ..retirement import unavailable_reason
from .anthropic import MESSAGES_PATH
from .batches import BatchBackend, BatchCollection, BatchLine, BatchUnsupported, SubmittedBatch, custom_id

log = logging.getLogger(__name__)

BATCHES_PATH = MESSAGES_PATH + "/batches"
MAX_REQUESTS = 100_000
"""Requests per Message Batch at most: Anthropic's limit."""
MAX_BYTES = 256 * 1000 * 1000
"""Bytes of one Message Batch at most: Anthropic's limit (256 MB)."""
RETRYABLE_ERRORS = frozenset({"api_error", "overloaded_error", "rate_limit_error", "timeout_error", "gateway_timeout_error"})
"""Error types of an `errored` result (anthropic/types/shared/error_object.py) that another try may pass."""
RETRYABLE_RESULTS = frozenset({"canceled", "expired"})
"""Result types of a request that was never run: another batch may run it."""
FOUND_SKEW_S = 300.0
"""A batch created this long before a submission was recorded may still be it (the clocks differ)."""


class MessageBatches(BatchCollection):
    """Anthropic's Message Batches API, for one `complete` call."""

    first_call = f"POST {BATCHES_PATH}"

    def line(self, request: Request) -> BatchLine:
        path, body = self.backend.direct.path_and_body(request)
        line_id = custom_id(path, body)
        return BatchLine(line_id, request, path, b'{"custom_id":"' + line_id.encode() + b'","params":' + body + b"}")

    async def _create(self, chunk: list[BatchLine]) -> SubmittedBatch | None:
        key = f"submission-{uuid.uuid4().hex}"
        ids = [line.custom_id for line in chunk]
        submitted = time.time()
        self.ledger.uploaded(key, BATCHES_PATH, self.base_url, ids)  # before the call: a kill now is found again
        created = await self._post(chunk, key, first=True)
        if isinstance(created, CallError):
            self._fail(chunk, created)
            return None
        return SubmittedBatch(key, created, BATCHES_PATH, frozenset(ids), "in_progress", submitted=submitted)

    async def _post(self, chunk: list[BatchLine], key: str, *, first: bool = False) -> str | None | CallError:
        """Create the batch of `chunk` recorded under `key`, once: its id; None when it may have been made
        (a 5xx, a timeout: the answer is lost, and a retry could make a second batch), for the next poll to
        look for it; a `CallError` when the API refused it (4xx), which is then forgotten."""
        body = b'{"requests":[' + b",".join(line.data for line in chunk) + b"]}"
        try:
            created = await self._api(lambda: self.session.post(BATCHES_PATH, body), "create a message batch",
                                      first=first, once=True)
        except BatchUnsupported:
            self.ledger.forget(key)
            raise
        if isinstance(created, CallError):
            if created.retryable:
                log.warning("%s; looking for it before submitting it again", created.reason)
                return None
            self.ledger.forget(key)
            return created
        self.ledger.created(key, created["id"], created.get("processing_status", "in_progress"))
        self.backend.submitted.append(created["id"])
        log.info("message batch %s submitted: %d request(s)", created["id"], len(chunk))
        return str(created["id"])

    async def _find_or_create(self, batch: SubmittedBatch) -> str | None:
        listed = await self._api(lambda: self.session.get(f"{BATCHES_PATH}?limit=100"), "list message batches")
        if isinstance(listed, CallError):
            return None
        for entry in listed.get("data") or ():
            if _created_at(entry) >= batch.submitted - FOUND_SKEW_S and _total(entry) == len(batch.ids):
                log.info("message batch %s is the one a run that died submitted", entry["id"])
                self.ledger.created(batch.key, entry["id"], entry.get("processing_status", "in_progress"))
                return str(entry["id"])
        chunk = [self.lines[line_id] for line_id in sorted(batch.ids & self.lines.keys(), key=self._order)]
        if not chunk:
            return None
        created = await self._post(chunk, batch.key)
        return created if isinstance(created, str) else None

    def batch_path(self, batch: str) -> str:
        return f"{BATCHES_PATH}/{batch}"

    def progress(self, info: dict[str, Any]) -> tuple[str, dict[str, int]]:
        counts = {name: int(value) for name, value in (info.get("request_counts") or {}).items()}
        failed = sum(counts.get(name, 0) for name in ("errored", "canceled", "expired"))
        return str(info["processing_status"]), {"total": sum(counts.values()), "completed": counts.get("succeeded", 0),
                                                "failed": failed}

    def ended(self, info: dict[str, Any]) -> bool:
        return info["processing_status"] == "ended"

    async def results(self, batch: SubmittedBatch, info: dict[str, Any]) -> tuple[dict[str, str], dict[str, CallError]] | CallError:
        content = await self._api(lambda: self.session.get(f"{self.batch_path(str(batch.batch))}/results"),
                                  f"read the results of message batch {batch.batch}", parse=False)
        if isinstance(content, CallError):
            return content
        answers: dict[str, str] = {}
        failures: dict[str, CallError] = {}
        retired = None
        for number, raw in enumerate(content.splitlines(), 1):
            if raw.strip():
                retired = _read_result(raw, f"message batch {batch.batch} result {number}", answers, failures) or retired
        if retired is not None:  # every call would fail so: the run stops here, the batch collected
            self.ledger.collected(batch.key, self.base_url, answers)
            raise ModelUnavailableError(self.backend.spec, short(retired))
        return answers, failures


class AnthropicBatchBackend(BatchBackend):
    """An `AnthropicBackend`'s calls through the Message Batches API. See the module docstring."""

    collection = MessageBatches
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES


def _read_result(raw: bytes, where: str, answers: dict[str, str], failures: dict[str, CallError]) -> str | None:
    """One line of the results, into `answers` (custom id -> the `Message` as JSON) or `failures`; the
    provider's words when it says the model is retired."""
    try:
        line = json.loads(raw)
        line_id, result = str(line["custom_id"]), line["result"]
        kind = str(result["type"])
    except (ValueError, KeyError, TypeError):
        log.warning("%s is not a batch result line; skipped", where)
        return None
    if kind == "succeeded" and isinstance(result.get("message"), dict):
        answers[line_id] = json.dumps(result["message"], ensure_ascii=False)
        return None
    if kind in RETRYABLE_RESULTS:
        failures[line_id] = CallError(f"the batch did not run it ({kind})", retryable=True)
        return None
    error = (result.get("error") or {}).get("error") or {}
    failures[line_id] = CallError(f"the batch failed it: {error.get('type') or kind}: {short(str(error.get('message') or ''))}",
                                  retryable=error.get("type") in RETRYABLE_ERRORS)
    return unavailable_reason(404 if error.get("type") == "not_found_error" else 400, result.get("error"))


def _created_at(entry: dict[str, Any]) -> float:
    """A `MessageBatch`'s `created_at` (RFC 3339) as a timestamp; 0 when it has none."""
    try:
        return datetime.datetime.fromisoformat(str(entry["created_at"]).replace("Z", "+00:00")).timestamp()
    except (KeyError, ValueError):
        return 0.0


def _total(entry: dict[str, Any]) -> int:
    return sum(int(value) for value in (entry.get("request_counts") or {}).values())
