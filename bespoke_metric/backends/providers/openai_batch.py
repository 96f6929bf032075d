"""`openai:MODEL` with `--batch`: the same calls through the OpenAI Batch API, at about half the price.

Any OpenAI-compatible endpoint that offers `/v1/files` and `/v1/batches` will do. A run's requests are
written as JSONL lines (`custom_id`, `method`, `url`, `body`: the very body a direct call would POST),
uploaded with purpose `batch`, and a batch is created on the endpoint they use (`/v1/chat/completions` or
`/v1/responses`), split under OpenAI's limits. The batches are polled until they end (`completed`,
`failed`, `expired`, `cancelled`); the output and error files are read back. What every Batch API shares
(the ledger, resuming, rounds of retries, the direct rest, the spending limit) is `batches`'.

An input file is recorded in the ledger when it is uploaded, before its batch is created: a rerun finds a
batch made from it (`GET /v1/batches`), else makes one. A line of the error file whose code another try
may pass (`batch_expired`, `rate_limit_exceeded`, ...) goes in a next batch; a batch that failed
validation fails its requests.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

from ..base import CallError, Request
from ..http import short
from .batches import BatchBackend, BatchCollection, BatchLine, BatchUnsupported, SubmittedBatch, custom_id

log = logging.getLogger(__name__)

__all__ = ["BatchUnsupported", "OpenAIBatchBackend"]

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


class FilesAndBatches(BatchCollection):
    """OpenAI's Files and Batch APIs, for one `complete` call."""

    first_call = "POST /files"

    def line(self, request: Request) -> BatchLine:
        path, body = self.backend.direct.path_and_body(request)
        url = "/v1" + path
        line_id = custom_id(url, body)
        prefix = json.dumps({"custom_id": line_id, "method": "POST", "url": url}, separators=(",", ":"))[:-1]
        return BatchLine(line_id, request, path, prefix.encode() + b',"body":' + body + b"}")

    async def _create(self, chunk: list[BatchLine]) -> SubmittedBatch | None:
        endpoint = "/v1" + chunk[0].path
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
        return SubmittedBatch(input_file, created["id"], endpoint, frozenset(ids), created.get("status", "validating"))

    async def _find_or_create(self, batch: SubmittedBatch) -> str | None:
        listed = await self._api(lambda: self.session.get("/batches?limit=100"), "list batches")
        if isinstance(listed, CallError):
            return None
        for entry in listed.get("data") or ():
            if entry.get("input_file_id") == batch.key:
                self.ledger.created(batch.key, entry["id"], entry.get("status", "validating"))
                return str(entry["id"])
        body = json.dumps({"input_file_id": batch.key, "endpoint": batch.endpoint,
                           "completion_window": COMPLETION_WINDOW}).encode()
        created = await self._api(lambda: self.session.post("/batches", body), "create a batch")
        if isinstance(created, CallError):
            return None
        self.ledger.created(batch.key, created["id"], created.get("status", "validating"))
        self.backend.submitted.append(created["id"])
        return str(created["id"])

    def batch_path(self, batch: str) -> str:
        return f"/batches/{batch}"

    def progress(self, info: dict[str, Any]) -> tuple[str, dict[str, int]]:
        return str(info["status"]), {name: int(value) for name, value in (info.get("request_counts") or {}).items()}

    def ended(self, info: dict[str, Any]) -> bool:
        return info["status"] in TERMINAL

    async def results(self, batch: SubmittedBatch, info: dict[str, Any]) -> tuple[dict[str, str], dict[str, CallError]] | CallError:
        """The output and error files' lines; every request of a batch that failed as a whole fails."""
        answers: dict[str, str] = {}
        failures: dict[str, CallError] = {}
        for kind in ("output_file_id", "error_file_id"):
            if not info.get(kind):
                continue
            content = await self._api(functools.partial(self.session.get, f"/files/{info[kind]}/content"),
                                      f"read the results of batch {batch.batch}", parse=False)
            if isinstance(content, CallError):
                return content
            for number, raw in enumerate(content.splitlines(), 1):
                if raw.strip():
                    _read_line(raw, f"batch {batch.batch} {kind.split('_')[0]} line {number}", answers, failures)
        if info["status"] == "failed":
            failures.update(_batch_failure(batch, info, answers))
        return answers, failures


class OpenAIBatchBackend(BatchBackend):
    """An `OpenAIBackend`'s calls through the OpenAI Batch API. See the module docstring."""

    collection = FilesAndBatches
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES


def _read_line(raw: bytes, where: str, answers: dict[str, str], failures: dict[str, CallError]) -> None:
    """One line of an output or error file, into `answers` (custom id -> response body JSON) or `failures`."""
    try:
        line = json.loads(raw)
        line_id = str(line["custom_id"])
    except (ValueError, KeyError, TypeError):
        log.warning("%s is not a batch result line; skipped", where)
        return
    response = line.get("response") or {}
    error = line.get("error")
    status = response.get("status_code")
    if not error and status == 200 and isinstance(response.get("body"), dict):
        answers[line_id] = json.dumps(response["body"], ensure_ascii=False)
        return
    if error:
        code = str(error.get("code") or "")
        failures[line_id] = CallError(f"the batch failed it: {code}: {short(str(error.get('message') or ''))}",
                                      retryable=code in RETRYABLE_LINE_ERRORS)
        return
    body = response.get("body") if isinstance(response.get("body"), dict) else {}
    message = (body.get("error") or {}).get("message") if isinstance(body.get("error"), dict) else None
    failures[line_id] = CallError(f"the batch failed it: HTTP {status}: {short(str(message or body))}",
                                  retryable=isinstance(status, int) and (status in _RETRYABLE_STATUS or status >= 500))


def _batch_failure(batch: SubmittedBatch, info: dict[str, Any], answers: dict[str, str]) -> dict[str, CallError]:
    """The requests of a batch that failed as a whole (validation, a full queue)."""
    errors = (info.get("errors") or {}).get("data") or [{}]
    code = str(errors[0].get("code") or "")
    message = short(str(errors[0].get("message") or "no reason given"))
    error = CallError(f"batch {batch.batch} failed: {code + ': ' if code else ''}{message}",
                      retryable=code in RETRYABLE_BATCH_ERRORS)
    return {line_id: error for line_id in batch.ids - answers.keys()}
