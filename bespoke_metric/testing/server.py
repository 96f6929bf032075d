"""An OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

It speaks just enough of the API for the official `openai` SDK: `POST /v1/chat/completions`,
`POST /v1/responses`, `GET /v1/models` and `GET /v1/models/{id}` (OpenAI's `Model` object, with the
`shutdown_date` set in `shutdown_dates`; a 404 `model_not_found` for a model it does not serve). What it answers comes from a `responder(body) -> str`
callback (or a whole response body as a dict, sent as it is: a provider's own shape, see the
tests' `fakes.provider_servers`; `paths` then names the routes it answers besides those two); how it answers can be made slow (`latency`) or faulty (a scripted queue of `Fault`s, or a
`rule` consulted per call): 429 with `Retry-After`, 5xx, or hanging past the client's timeout. Every
request is recorded with its arrival and completion times, and the peak number of calls in flight is
tracked, so tests can assert behaviour (overlap, waits, retries) from the server's side. With `limits`
(`provider_limits.Limits`) it enforces a provider's rate limits and quota as the provider does: headers on
every answer, 429s in its words, a spent account (`server.meter.top_up()` pays it again).

    with serve(responder=lambda body: "hello", latency=0.2) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test")
        ...
        assert server.max_in_flight > 1
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import signal
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, TypeVar

from .bodies import messages_of
from .provider_limits import Limits, Meter, Provider, count_tokens, model_of, usage_of

Responder = Callable[[dict[str, Any]], "str | Cutoff | dict[str, Any]"]


@dataclass(frozen=True)
class Cutoff:
    """A responder's answer that the output limit cut short: sent with `finish_reason: "length"` (chat)
    or `status: "incomplete"` (Responses API)."""

    text: str

MAX_HANG_S = 30.0
"""A hanging call never holds its thread longer than this (or than the server's life)."""


@dataclass(frozen=True)
class Fault:
    """What to do instead of (or before) answering one call.

    `status` (e.g. 429, 500, 503) answers with that error; `retry_after` adds a `Retry-After` header
    (seconds as text, or an HTTP date) and `headers` any others (`retry-after-ms`); `hang` waits that many
    seconds before doing anything, so a client with a shorter timeout gives up; `body` replaces the JSON
    error body."""

    status: int | None = None
    retry_after: str | None = None
    hang: float = 0.0
    body: dict[str, Any] | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class RecordedRequest:
    """One request the server received, as it arrived, with when and how it was answered."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    received: float
    """`time.monotonic()` when the request arrived."""
    finished: float | None = None
    status: int | None = None


# -- OpenAI's answer bodies, as the installed SDK's types have them (tests/backends/test_fixture_types.py) ------


def chat_usage(prompt_tokens: int, completion_tokens: int, *, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    """A chat completion's `usage` (openai/types/completion_usage.py)."""
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": reasoning}}


def chat_body(id: str, model: Any, message: dict[str, Any], finish_reason: str, usage: dict[str, Any]) -> dict[str, Any]:
    """A whole chat completion of one choice (openai/types/chat/chat_completion.py `ChatCompletion`)."""
    return {"id": id, "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
            "usage": usage}


def responses_usage(input_tokens: int, output_tokens: int, *, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    """A Responses API `usage` (openai/types/responses/response_usage.py: `cache_write_tokens` required from
    openai 3.63)."""
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": reasoning}}


def responses_body(id: str, model: Any, output: list[dict[str, Any]], usage: dict[str, Any], *,
                   incomplete: str | None = None) -> dict[str, Any]:
    """A whole Responses API answer (openai/types/responses/response.py `Response`), `incomplete` for the
    reason it was cut off."""
    return {"id": id, "object": "response", "created_at": int(time.time()), "model": model,
            "status": "incomplete" if incomplete else "completed",
            "incomplete_details": {"reason": incomplete} if incomplete else None, "output": output,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": usage}


def output_message(id: str, text: str, annotations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A Responses API `message` output item of one `output_text` part."""
    return {"type": "message", "id": id, "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": annotations or [], "logprobs": []}]}


def tool_call(body: dict[str, Any], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A whole chat-completions answer (for a responder to return) in which the model calls the function
    `name` with `arguments`, as OpenAI's API sends a tool call."""
    call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return chat_body("chatcmpl-tool", body.get("model"), {"role": "assistant", "content": None, "tool_calls": [call]},
                     "tool_calls", chat_usage(0, 0))


def default_responder(body: dict[str, Any]) -> str:
    """What a server answers when given no responder: `ok` to every call."""
    return "ok"


_Served = TypeVar("_Served", bound="TestServer")


class TestServer:
    """The running server's state; configure it by assigning its attributes between calls."""

    __test__ = False  # not a pytest test class
    handler: type["RequestHandler"]
    """The request handler class (`RequestHandler`, set below; a server offering more routes subclasses it)."""
    url_path = "/v1"
    """Where the API lives under the server's address (`base_url`)."""
    provider: Provider = "openai"
    """Whose limits it enforces (`provider_limits`; OpenAI's and Gemini's are alike, a Gemini route answers in
    Gemini's words)."""

    def __init__(
        self,
        responder: Responder = default_responder,
        *,
        latency: float | Callable[[], float] = 0.0,
        faults: list[Fault | None] | None = None,
        rule: Callable[[RecordedRequest], Fault | None] | None = None,
        model_ids: tuple[str, ...] = ("test-model",),
        keep_requests: int | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.responder = responder
        self.latency = latency
        """Seconds each answered call takes, or a function drawing them per call (a latency's distribution)."""
        if limits is not None:
            limits.per_minute(self.provider)  # a limit the provider does not have fails here, not in a call
        self.meter = Meter(limits) if limits is not None and limits.metered else None
        """The account's limits and quota as they stand (`Meter`; assign one with an injected clock), or None."""
        self.faults: collections.deque[Fault | None] = collections.deque(faults or [])
        """Consumed one per completion call, in arrival order; `None` entries answer normally."""
        self.rule = rule
        """Consulted for every completion call the queue does not script."""
        self.model_ids = model_ids
        self.answer_fields: dict[str, Any] = {}
        """Top-level fields every answer made from a responder's text carries besides, or instead: OpenAI's
        `system_fingerprint` and `service_tier`, or a `model` other than the one asked for (a rerouted call)."""
        self.shutdown_dates: dict[str, str] = {}
        """Model id -> the `shutdown_date` `GET /v1/models/{id}` gives (such a model is served, too)."""
        self.paths: tuple[str, ...] = ("/chat/completions", "/responses")
        """POST routes answered (by how the path ends)."""
        self.requests: list[RecordedRequest] = []
        self.keep_requests = keep_requests
        """Requests kept in `requests`, the latest (None: all; a long-lived server keeps few)."""
        self.in_flight = 0
        self.max_in_flight = 0
        self.base_url = ""
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def counts(self, record: RecordedRequest) -> bool:
        """Whether a request is a call of the API (faults and the in-flight count apply to it)."""
        return record.method == "POST"

    @property
    def calls(self) -> list[RecordedRequest]:
        """The completion calls received (chat and responses), in arrival order."""
        with self._lock:
            return [r for r in self.requests if self.counts(r)]

    def reset(self) -> None:
        """Forget recorded requests and the in-flight peak (not the configuration)."""
        with self._lock:
            self.requests.clear()
            self.max_in_flight = self.in_flight

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self, port: int = 0) -> "TestServer":
        """Serve on `port` of 127.0.0.1 (0: a free one) in a thread of its own."""
        server = self

        class Handler(self.handler):  # type: ignore[name-defined]
            state = server

        httpd = _Server(("127.0.0.1", port), Handler)
        self._httpd = httpd
        self.base_url = f"http://127.0.0.1:{httpd.server_address[1]}{self.url_path}"
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __enter__(self: _Served) -> _Served:
        """Serving for the `with` block: started now on a free port, unless it was started already."""
        return self if self._httpd is not None else self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stopping.set()  # wakes hanging handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- request handling (called from handler threads) ------------------------------------------

    def _begin(self, record: RecordedRequest) -> Fault | None:
        with self._lock:
            self.requests.append(record)
            if self.keep_requests is not None:
                del self.requests[: -self.keep_requests or None]
            if not self.counts(record):
                return None
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            fault = self.faults.popleft() if self.faults else None
        if fault is None and self.rule is not None:
            fault = self.rule(record)
        return fault

    def _end(self, record: RecordedRequest, status: int) -> None:
        with self._lock:
            if record.finished is not None:  # recorded already; the client then dropped the connection
                return
            record.finished = time.monotonic()
            record.status = status
            if self.counts(record):
                self.in_flight -= 1

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(min(seconds, MAX_HANG_S))

    def _answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = self.responder(body)
        if isinstance(answer, dict):  # a whole body in the provider's own shape
            return answer
        cut = isinstance(answer, Cutoff)
        text = answer.text if cut else answer
        prompt = " ".join(m["content"] for m in messages_of(body))
        input_tokens, output_tokens = count_tokens(prompt), count_tokens(text)
        number = next(self._ids)
        model = body.get("model", self.model_ids[0])
        if path.endswith("/responses"):
            return {**responses_body(f"resp_{number}", model, [output_message(f"msg_{number}", text)],
                                     responses_usage(input_tokens, output_tokens),
                                     incomplete="max_output_tokens" if cut else None), **self.answer_fields}
        return {**chat_body(f"chatcmpl-{number}", model, {"role": "assistant", "content": text},
                            "length" if cut else "stop", chat_usage(input_tokens, output_tokens)), **self.answer_fields}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # a burst of concurrent connections must not overflow the listen backlog

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):  # a client gone: no traceback
            super().handle_error(request, client_address)


class RequestHandler(BaseHTTPRequestHandler):
    """Reads a call's body, records it, applies the server's faults and latency, and answers in OpenAI's
    JSON; a server offering more routes (a Batch API, a search API) subclasses it."""

    state: TestServer
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # quiet: tests assert on recorded requests, not on stderr

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        record = RecordedRequest("GET", self.path, dict(self.headers.items()), None, time.monotonic())
        self.state._begin(record)
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/models"):
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in self.state.model_ids]
            self._send(record, 200, {"object": "list", "data": data})
        elif "/models/" in path:
            self._send_model(record, urllib.parse.unquote(path.rsplit("/models/", 1)[1]))
        else:
            self._send(record, 404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def _send_model(self, record: RecordedRequest, model: str) -> None:
        # OpenAI's `Model` object and its 404 (openai/types/model.py; developers.openai.com/api/reference/
        # resources/models/methods/retrieve: `shutdown_date`, "format: date", null when none is announced)
        state = self.state
        if model in state.model_ids or model in state.shutdown_dates:
            self._send(record, 200, {"id": model, "object": "model", "created": 0, "owned_by": "test",
                                     "shutdown_date": state.shutdown_dates.get(model)})
        else:
            self._send(record, 404, {"error": {"message": f"The model '{model}' does not exist", "type": "invalid_request_error",
                                               "param": "model", "code": "model_not_found"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = None
        record = RecordedRequest("POST", self.path, dict(self.headers.items()), body, time.monotonic())
        fault = self.state._begin(record)
        try:
            self._handle(record, body, fault)
        except (BrokenPipeError, ConnectionResetError):
            self.state._end(record, 499)  # the client gave up (timeout): nothing to send

    def _handle(self, record: RecordedRequest, body: dict[str, Any] | None, fault: Fault | None) -> None:
        state = self.state
        if fault is not None and fault.hang:
            state._wait(fault.hang)
        if not self.path.endswith(state.paths):
            self._send(record, 404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        if body is None:
            self._send(record, 400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        if fault is not None and fault.status:
            error = fault.body or {"error": {"message": f"scripted failure {fault.status}", "type": "server_error"}}
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            headers.update(fault.headers)
            self._send(record, fault.status, error, headers)
            return
        meter, metered = state.meter, {}
        if meter is not None:  # admitted or refused as the call arrives, before the model works on it
            verdict = meter.admit(self.path, body, model_of(self.path, body))
            if verdict.status is not None and verdict.body is not None:
                self._send(record, verdict.status, verdict.body, verdict.headers)
                return
            metered = verdict.headers
        state._wait(state.latency() if callable(state.latency) else state.latency)
        try:
            answer = state._answer(self.path, body)
        except Exception as err:  # a responder bug shows up as a 500 the test can see
            self._send(record, 500, {"error": {"message": f"responder failed: {err}", "type": "server_error"}})
            return
        if meter is not None:
            meter.answered(*usage_of(self.path, answer))
        self._send(record, 200, answer, metered)

    def _send(
        self, record: RecordedRequest, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.state._end(record, status)  # before the body: a client holding its answer finds the call recorded
        self.wfile.write(data)

    def _send_bytes(self, record: RecordedRequest, content: bytes, content_type: str = "application/octet-stream") -> None:
        """A 200 whose body is `content` as it is (a file's bytes, a JSONL stream), not JSON."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.state._end(record, 200)
        self.wfile.write(content)


TestServer.handler = RequestHandler


def serve_until_stopped(server: TestServer, argv: list[str] | None, *, prog: str, description: str) -> int:
    """A test server's command line, `python -m PROG --url-file FILE`: serve `server` on a free port until
    SIGTERM or Ctrl-C, its base URL written to FILE once it listens (what a docs page waits for)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--url-file", required=True, help="where to write the base URL once the server listens")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.start()
    try:
        with open(args.url_file, "w", encoding="utf-8") as out:
            out.write(server.base_url + "\n")
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    finally:
        server.stop()
    return 0


def serve(
    responder: Responder = default_responder,
    *,
    latency: float | Callable[[], float] = 0.0,
    faults: list[Fault | None] | None = None,
    rule: Callable[[RecordedRequest], Fault | None] | None = None,
    model_ids: tuple[str, ...] = ("test-model",),
    port: int = 0,
    limits: Limits | None = None,
) -> TestServer:
    """Run a `TestServer` on `port` of 127.0.0.1 (default: a free one) for the duration of the `with` block,
    enforcing `limits` (OpenAI's, and Gemini's on its route) where given."""
    return TestServer(responder, latency=latency, faults=faults, rule=rule, model_ids=model_ids,
                      limits=limits).start(port)
