"""The stand-in server: an OpenAI-compatible server on 127.0.0.1 that answers as a system model, a
profiler, a rubric writer and a judge would (`system_responder.answer_any`, choosing by the request), so
every `openai:` command runs without a key. `bespoke stand-in` runs it.

    bespoke stand-in --url-file stand-in.url &
    export OPENAI_BASE_URL=$(cat stand-in.url) OPENAI_API_KEY=sk-stand-in

With limits (`bespoke stand-in --rpm 1800 --tpm 180000 --quota-calls 100`) it enforces them as OpenAI does
(`provider_limits`: `x-ratelimit-*` headers, 429 `rate_limit_exceeded` with `retry-after-ms`, `insufficient_quota`
once the quota is spent), so a run can rehearse a provider's limits offline; `kill -USR1 PID` tops the account up.

Its answers are deterministic functions of the prompt, not a model's: scores from it test the plumbing,
never a system. Every answer says so (`STAND_IN_FIELD`), so the results from it are marked: its judge a
proxy, its system's answers a stand-in's, and none of it costs anything.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bespoke_dataset.atomic import atomic_write_text
from bespoke_dataset.errors import UserError
from bespoke_metric.backends.providers.openai_backend import STAND_IN_FIELD

from .provider_limits import Limits
from .server import TestServer
from .system_responder import answer_any

MODEL_IDS = ("gpt-5", "gpt-5-mini", "gpt-4o-mini", "gpt-4o")
"""What `GET /v1/models` lists (any model name is answered)."""
KEEP_REQUESTS = 1000
"""The server records each request (for tests); a long-lived one keeps only the latest."""


def serve_stand_in(port: int = 0, *, url_file: str | os.PathLike[str] | None = None,
                   say: Callable[[str], None] = print, limits: Limits | None = None) -> None:
    """Serve on `port` of 127.0.0.1 (0: a free one) until the process is interrupted (KeyboardInterrupt
    goes to the caller), enforcing `limits` as OpenAI does where given (SIGUSR1 tops a spent account up; call
    it from the main thread). The URL (`http://127.0.0.1:PORT/v1`) is said on one line and written to
    `url_file` once the server answers."""
    server = TestServer(_marked, model_ids=MODEL_IDS, keep_requests=KEEP_REQUESTS, limits=limits)
    server.answer_fields = {STAND_IN_FIELD: True}
    meter = server.meter
    if meter is not None and hasattr(signal, "SIGUSR1"):
        def top_up(*_: object) -> None:
            meter.top_up()
            print("stand-in: the account is topped up", file=sys.stderr, flush=True)

        signal.signal(signal.SIGUSR1, top_up)
    try:
        server.start(port)
    except OSError as error:
        raise UserError(f"--port {port}: cannot serve on 127.0.0.1:{port} ({error.strerror or error})") from None
    try:
        if url_file is not None:
            atomic_write_text(Path(url_file), server.base_url + "\n")
        say(server.base_url)
        threading.Event().wait()  # interruptible: Ctrl-C raises KeyboardInterrupt here
    finally:
        server.stop()



def _marked(body: dict[str, Any]) -> Any:
    """`answer_any`'s answer; a whole body (a tool call) carries the stand-in's mark too, as every text
    answer does through `answer_fields`."""
    answer = answer_any(body)
    return {**answer, STAND_IN_FIELD: True} if isinstance(answer, dict) else answer
