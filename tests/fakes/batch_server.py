"""A local OpenAI-compatible server with the Files and Batch APIs, on 127.0.0.1, for tests and examples.

Besides the direct calls `server.TestServer` answers (`/v1/chat/completions`, `/v1/responses`,
`/v1/models`), it keeps uploaded files and runs batches as OpenAI documents them:

    POST /v1/files                    multipart `purpose=batch` and `file`: a file object
    GET  /v1/files/{id}[/content]     the file object, or its bytes
    POST /v1/batches                  `{input_file_id, endpoint, completion_window, metadata}`: a batch object
    GET  /v1/batches/{id}             the batch, one status further along on each look
    GET  /v1/batches?limit=N          the latest batches, newest first
    POST /v1/batches/{id}/cancel      `cancelling`, then `cancelled`

A batch is checked when created (every line JSON with a unique `custom_id`, `method` POST, `url` the
batch's endpoint, a `body` with a model), then advances one status per retrieval: `validating`,
`in_progress`, `finalizing`, then its end, `completed` by default. `hold_batches` keeps every batch
`in_progress` until released (to kill a driver while its batches run); `fates` scripts the ends of the
next batches (`expired` and `cancelled` answer the first `partial` share of their requests and put the
rest in the error file as `batch_expired`/`batch_cancelled`; `failed` fails validation); `line_fault(body)`
gives a request an HTTP error status in the error file. Answers come from the same `responder` as
direct calls, and usage is counted as OpenAI's cookbook counts a chat prompt, in the model's tokens
(`systems.tokens.openai_token_counter`), so a dry run's input-token count can be checked against it.

    with serve_batches(responder=judge_answer) as server:
        ... base_url=server.base_url ...
        assert server.direct_calls == [] and len(server.batches) == 1

`python -m fakes.batch_server --url-file FILE` runs one (answering as the stand-in
judge) until it is stopped, writing its base URL to FILE once it listens.
"""

from __future__ import annotations

import collections
import functools
import itertools
import json
import time
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

from bespoke_metric.calls.pricing import prompt_tokens
from bespoke_metric.systems.tokens import TokenCounter, openai_token_counter
from bespoke_metric.testing.server import (
    RecordedRequest,
    RequestHandler,
    Responder,
    TestServer,
    chat_usage,
    default_responder,
    messages_of,
    responses_usage,
    serve_until_stopped,
)

ENDS = ("completed", "expired", "cancelled", "failed")
"""How a batch ends; before, it passes through `validating`, `in_progress` and `finalizing`."""
ENDPOINTS = ("/v1/chat/completions", "/v1/responses")
_LINE_ERRORS = {
    "expired": ("batch_expired", "This request could not be executed before the completion window expired."),
    "cancelled": ("batch_cancelled", "This request was not executed because the batch was cancelled."),
}


@dataclass
class StoredFile:
    id: str
    purpose: str
    filename: str
    content: bytes
    created_at: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "object": "file", "bytes": len(self.content), "created_at": self.created_at,
                "filename": self.filename, "purpose": self.purpose, "status": "processed"}


@dataclass
class Batch:
    """A batch as the server runs it."""

    id: str
    input_file_id: str
    endpoint: str
    lines: list[dict[str, Any]]
    fate: str
    metadata: dict[str, Any] | None
    created_at: int
    status: str = "validating"
    errors: list[dict[str, Any]] = field(default_factory=list)
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0
    times: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        body = {
            "id": self.id, "object": "batch", "endpoint": self.endpoint, "input_file_id": self.input_file_id,
            "completion_window": "24h", "status": self.status, "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id, "created_at": self.created_at, "expires_at": self.created_at + 86400,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "request_counts": {"total": len(self.lines), "completed": self.completed, "failed": self.failed},
            "metadata": self.metadata,
        }
        for name in ("in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled"):
            body[f"{name}_at"] = self.times.get(name)
        return body


class BatchServer(TestServer):
    """A `TestServer` that also offers the Files and Batch APIs. See the module docstring."""

    def __init__(
        self,
        responder: Responder = default_responder,
        *,
        fates: list[str] | None = None,
        partial: float = 0.5,
        line_fault: Callable[[dict[str, Any]], int | None] | None = None,
        api_fault: Callable[[RecordedRequest], int | None] | None = None,
        hold_batches: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(responder, **options)
        self.api_fault = api_fault
        """`api_fault(request) -> HTTP status or None`: a Files or Batch API call answered with that error."""
        self.fates: collections.deque[str] = collections.deque(fates or [])
        """The ends of the next batches created, in order; `completed` once it runs out."""
        self.partial = partial
        self.line_fault = line_fault
        """`line_fault(body) -> HTTP status or None`: a request of a batch that fails with that status."""
        self.hold_batches = hold_batches
        self.files: dict[str, StoredFile] = {}
        self.batches: dict[str, Batch] = {}
        self._file_ids = itertools.count(1)
        self._batch_ids = itertools.count(1)
        self._line_ids = itertools.count(1)

    @property
    def direct_calls(self) -> list[RecordedRequest]:
        """The direct completion calls received (chat and responses), in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and r.path.rstrip("/").endswith(("/chat/completions", "/responses"))]

    @property
    def batch_creations(self) -> list[RecordedRequest]:
        """The `POST /v1/batches` calls received."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and urlsplit(r.path).path.rstrip("/").endswith("/batches")]

    # -- the Files API -------------------------------------------------------------------------------

    def upload(self, purpose: str, filename: str, content: bytes) -> StoredFile:
        with self._lock:
            stored = StoredFile(f"file-{next(self._file_ids)}", purpose, filename, content, int(time.time()))
            self.files[stored.id] = stored
        return stored

    # -- the Batch API -------------------------------------------------------------------------------

    def create_batch(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        endpoint = body.get("endpoint")
        stored = self.files.get(str(body.get("input_file_id")))
        if stored is None:
            return 404, _error(f"No such file: {body.get('input_file_id')}", "invalid_request_error")
        if endpoint not in ENDPOINTS:
            return 400, _error(f"endpoint must be one of {', '.join(ENDPOINTS)}", "invalid_request_error")
        if body.get("completion_window") != "24h":
            return 400, _error("completion_window must be 24h", "invalid_request_error")
        lines, errors = _check_lines(stored.content, endpoint)
        with self._lock:
            fate = self.fates.popleft() if self.fates else "completed"
            batch = Batch(f"batch_{next(self._batch_ids)}", stored.id, endpoint, lines, fate,
                          body.get("metadata"), int(time.time()), errors=errors)
            self.batches[batch.id] = batch
        return 200, batch.to_json()

    def retrieve(self, batch_id: str) -> Batch | None:
        """The batch, advanced one status (not past `in_progress` while `hold_batches`)."""
        batch = self.batches.get(batch_id)
        if batch is None:
            return None
        with self._lock:
            held = self.hold_batches and batch.status == "in_progress"
            if not held and batch.status not in ENDS:
                self._advance(batch)
        return batch

    def cancel(self, batch_id: str) -> Batch | None:
        batch = self.batches.get(batch_id)
        if batch is not None and batch.status not in ENDS:
            with self._lock:
                batch.status, batch.fate = "cancelling", "cancelled"
                batch.times["cancelling"] = int(time.time())
        return batch

    def _advance(self, batch: Batch) -> None:
        now = int(time.time())
        if batch.status == "validating" and (batch.errors or batch.fate == "failed"):
            if not batch.errors:
                batch.errors = [{"code": "invalid_request", "message": "scripted validation failure", "param": None, "line": None}]
            batch.status = "failed"
        elif batch.status == "validating":
            batch.status = "in_progress"
        elif batch.status == "in_progress":
            batch.status = "finalizing"
        else:  # finalizing or cancelling: the end, with its files
            self._run(batch)
            batch.status = batch.fate
        batch.times[batch.status] = now

    def _run(self, batch: Batch) -> None:
        """Answer the batch's requests (a share of them for an expired or cancelled one) into its files."""
        answered = len(batch.lines) if batch.fate == "completed" else int(len(batch.lines) * self.partial)
        output, errors = [], []
        for number, line in enumerate(batch.lines):
            entry = {"id": f"batch_req_{next(self._line_ids)}", "custom_id": line["custom_id"], "response": None, "error": None}
            status = self.line_fault(line["body"]) if self.line_fault is not None and number < answered else None
            if number >= answered:
                code, message = _LINE_ERRORS[batch.fate]
                entry["error"] = {"code": code, "message": message}
                errors.append(entry)
            elif status is not None:
                entry["response"] = {"status_code": status, "request_id": f"req_{entry['id']}",
                                     "body": _error(f"scripted failure {status}", "server_error" if status >= 500 else "invalid_request_error")}
                errors.append(entry)
            else:
                entry["response"] = {"status_code": 200, "request_id": f"req_{entry['id']}",
                                     "body": self._answer(batch.endpoint, line["body"])}
                output.append(entry)
        batch.completed, batch.failed = len(output), len(errors)
        if output:
            batch.output_file_id = self._store_results(batch, output, "output")
        if errors:
            batch.error_file_id = self._store_results(batch, errors, "error")

    def _store_results(self, batch: Batch, entries: list[dict[str, Any]], kind: str) -> str:
        content = "".join(json.dumps(entry) + "\n" for entry in entries).encode()
        stored = StoredFile(f"file-{next(self._file_ids)}", f"batch_{kind}", f"{batch.id}_{kind}.jsonl", content, int(time.time()))
        self.files[stored.id] = stored
        return stored.id

    # -- answers, with usage as OpenAI counts it -------------------------------------------------------

    def _answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The base server's answer, cut at the request's output limit (as a provider cuts it) and with
        usage as OpenAI counts it."""
        answer = super()._answer(path, body)
        counter = _counter(str(body.get("model", "")))
        input_tokens = prompt_tokens(messages_of(body), counter.count)
        limit = next((body[name] for name in ("max_tokens", "max_completion_tokens", "max_output_tokens") if body.get(name)), None)
        if "choices" in answer:
            choice = answer["choices"][0]
            text = choice["message"]["content"] or ""
            if limit is not None and counter.count(text) > limit:
                text = choice["message"]["content"] = counter.truncate(text, limit)
                choice["finish_reason"] = "length"
            answer["usage"] = chat_usage(input_tokens, counter.count(text))
        else:
            part = answer["output"][0]["content"][0]
            text = part["text"]
            if limit is not None and counter.count(text) > limit:
                part["text"] = text = counter.truncate(text, limit)
                answer["status"], answer["incomplete_details"] = "incomplete", {"reason": "max_output_tokens"}
            answer["usage"] = responses_usage(input_tokens, counter.count(text))
        return answer


@functools.lru_cache(maxsize=None)
def _counter(model: str) -> TokenCounter:
    return openai_token_counter(model)


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _check_lines(content: bytes, endpoint: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The lines of a batch input file, and the validation errors OpenAI would report for them."""
    lines, errors, seen = [], [], set()
    for number, raw in enumerate(content.decode("utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            errors.append({"code": "invalid_json_line", "message": "This line is not parseable as valid JSON.", "param": None, "line": number})
            continue
        problem = None
        if not isinstance(line.get("custom_id"), str) or line["custom_id"] in seen:
            problem = ("duplicate_custom_id", "The custom_id for this request is a duplicate of another request.")
        elif line.get("method") != "POST":
            problem = ("invalid_method", "The method for this request must be POST.")
        elif line.get("url") != endpoint:
            problem = ("mismatched_endpoint", f"The url for this request does not match the batch endpoint {endpoint}.")
        elif not isinstance(line.get("body"), dict) or not line["body"].get("model"):
            problem = ("missing_required_parameter", "The body of this request must name a model.")
        if problem:
            errors.append({"code": problem[0], "message": problem[1], "param": None, "line": number})
            continue
        seen.add(line["custom_id"])
        lines.append(line)
    return lines, errors


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart form: name -> (filename, bytes)."""
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    fields = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        fields[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return fields


class _BatchHandler(RequestHandler):
    state: BatchServer

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        route = urlsplit(self.path)
        parts = route.path.rstrip("/").split("/")[2:]  # after "", "v1"
        if not parts or parts[0] not in ("files", "batches"):
            super().do_GET()
            return
        record = self._record(None)
        state = self.state
        if self._faulted(record):
            return
        if parts[0] == "files" and len(parts) >= 2 and parts[1] in state.files:
            stored = state.files[parts[1]]
            if len(parts) == 3 and parts[2] == "content":
                self._send_bytes(record, stored.content)
            else:
                self._send(record, 200, stored.to_json())
        elif parts == ["batches"]:
            limit = int((parse_qs(route.query).get("limit") or ["20"])[0])
            listed = sorted(state.batches.values(), key=lambda b: b.id, reverse=True)[:limit]
            self._send(record, 200, {"object": "list", "data": [b.to_json() for b in listed], "has_more": False})
        elif parts[0] == "batches" and len(parts) == 2 and (batch := state.retrieve(parts[1])) is not None:
            self._send(record, 200, batch.to_json())
        else:
            self._send(record, 404, _error(f"No such object: {route.path}", "invalid_request_error"))

    def do_POST(self) -> None:  # noqa: N802
        parts = urlsplit(self.path).path.rstrip("/").split("/")[2:]
        if not parts or parts[0] not in ("files", "batches"):
            super().do_POST()
            return
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        state = self.state
        if parts == ["files"]:
            record = self._record(None)
            if self._faulted(record):
                return
            fields = _multipart(self.headers.get("Content-Type", ""), raw)
            if "file" not in fields or "purpose" not in fields:
                self._send(record, 400, _error("a file and a purpose are required", "invalid_request_error"))
                return
            filename, content = fields["file"]
            stored = state.upload(fields["purpose"][1].decode(), filename or "upload.jsonl", content)
            self._send(record, 200, stored.to_json())
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = None
        record = self._record(body)
        if self._faulted(record):
            return
        if body is None:
            self._send(record, 400, _error("body is not JSON", "invalid_request_error"))
        elif parts == ["batches"]:
            self._send(record, *state.create_batch(body))
        elif len(parts) == 3 and parts[2] == "cancel" and (batch := state.cancel(parts[1])) is not None:
            self._send(record, 200, batch.to_json())
        else:
            self._send(record, 404, _error(f"No such object: {self.path}", "invalid_request_error"))

    def _record(self, body: dict[str, Any] | None) -> RecordedRequest:
        record = RecordedRequest(self.command, self.path, dict(self.headers.items()), body, time.monotonic())
        with self.state._lock:  # recorded, but not a completion call: no fault, no rule
            self.state.requests.append(record)
            if record.method == "POST":
                self.state.in_flight += 1  # what `_end` takes off again
        return record

    def _faulted(self, record: RecordedRequest) -> bool:
        """Answer with the error `api_fault` scripts for this call, if it does."""
        status = self.state.api_fault(record) if self.state.api_fault is not None else None
        if status is not None:
            self._send(record, status, _error(f"scripted failure {status}", "server_error" if status >= 500 else "invalid_request_error"))
        return status is not None


BatchServer.handler = _BatchHandler


def serve_batches(responder: Responder = default_responder, **options: Any) -> BatchServer:
    """Run a `BatchServer` on a free port of 127.0.0.1 for the duration of the `with` block (options as
    `BatchServer` takes them)."""
    return BatchServer(responder, **options)


def main(argv: list[str] | None = None) -> int:
    from bespoke_metric.testing.judge_responder import judge_answer

    return serve_until_stopped(BatchServer(judge_answer), argv, prog="python -m fakes.batch_server",
                               description="serve the Files and Batch APIs (and direct calls) on 127.0.0.1, answering "
                                           "as the stand-in judge")

if __name__ == "__main__":
    raise SystemExit(main())
