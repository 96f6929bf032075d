"""What Ray prints that says nothing about the run, kept off the terminal unless debug logging is on
(`bespoke -v`); everything else Ray says passes as it is.

- Starting a local instance, Ray 2.60 warns that token authentication is on, its own default
  (`~/.ray/auth_token`): every run, for a setting the user did not change. `connect` filters that one
  record (`quiet_ray_notices`).
- Its core worker logs an error for every Ray Data actor pool it starts ("Actor with class name:
  'MapWorker(...)' ... has constructor arguments in the object store and max_restarts > 0",
  ray-project/ray#57733), though nothing is wrong with the run: Ray Data itself passes those arguments,
  and a killed worker is restarted (`tests/ray/test_ray.py` kills one). The driver's C++ logger writes it
  straight to file descriptor 2, which no logging setting reaches; so while a run streams from Ray,
  descriptor 2 goes through a pipe that drops those lines and passes everything else on at once
  (`without_false_alarms`).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

FALSE_ALARMS: tuple[re.Pattern[bytes], ...] = (
    re.compile(rb"\[[^\[\]\n]*\] core_worker\.cc:\d+: Actor with class name: .* has constructor arguments in the "
               rb"object store.*"),
)
"""Log lines of Ray's C++ core that say nothing about the run, from their `[time level pid tid]` prefix on."""
_LOG_LINE_START = b"[dddd-dd-dd dd:dd:dd,ddd "
"""How a line of Ray's C++ logger begins, `d` for a digit: text that may still become one is held back."""

TOKEN_NOTICE = "Token authentication is enabled for this Ray cluster"
"""The start of Ray's warning that a new local instance has token authentication, its default."""
_TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"

_DRAIN_S = 5.0
"""How long the filter may take, once the run is over, to pass on what it still holds."""


class _DefaultTokenNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(TOKEN_NOTICE)


_TOKEN_FILTER = _DefaultTokenNotice()


def quiet_ray_notices() -> None:
    """Leave out Ray's notice of its default token authentication (unless debug logging is on)."""
    token_logger = logging.getLogger(_TOKEN_LOGGER)
    if log.isEnabledFor(logging.DEBUG):
        token_logger.removeFilter(_TOKEN_FILTER)
    else:
        token_logger.addFilter(_TOKEN_FILTER)  # once: a filter already there is not added again


@contextmanager
def without_false_alarms() -> Iterator[None]:
    """Filter this process's stderr (descriptor 2) for `FALSE_ALARMS` while the block runs; with debug
    logging on, or where stderr cannot be redirected, pass everything."""
    if log.isEnabledFor(logging.DEBUG):
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no descriptor 2 (an embedding host), or no sys.stderr
        yield
        return
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    forwarder = threading.Thread(target=_forward, args=(read_end, saved), name="ray-stderr", daemon=True)
    forwarder.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # the pipe's last write end is closed: the forwarder reads to its end
        forwarder.join(_DRAIN_S)
        os.close(saved)


def _forward(read_end: int, out: int) -> None:
    """Pass what arrives on `read_end` on to `out`, whole lines matching `FALSE_ALARMS` left out."""
    stream = AlarmFilter()
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while chunk := pipe.read(1 << 16):
            if kept := stream.feed(chunk):
                os.write(out, kept)
    if rest := stream.end():
        os.write(out, rest)


class AlarmFilter:
    """A byte stream with `FALSE_ALARMS` left out, fed in chunks as a pipe delivers them; what comes out does
    not depend on where the chunks break. Text is held back only while it could still be one of Ray's log
    lines (from a '[' on that begins as they do, `_LOG_LINE_START`): anything else, a progress bar's update
    say, is passed on as it comes. An alarm that ends a line whose start was passed on leaves its newline."""

    def __init__(self) -> None:
        self._pending = b""
        self._started = False  # part of the current line has been passed on

    def feed(self, chunk: bytes) -> bytes:
        """What of `chunk` (with what was held from before) to pass on now."""
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        kept = []
        for line in lines:
            cleaned = _without_alarms(line)
            if cleaned is not None or self._started:
                kept.append((cleaned or b"") + b"\n")
            self._started = False
        held = _log_line_from(self._pending)
        if held:
            kept.append(self._pending[:held])
            self._pending, self._started = self._pending[held:], True
        return b"".join(kept)

    def end(self) -> bytes:
        """What is still held once the stream has ended."""
        rest, self._pending = self._pending, b""
        return rest


def _log_line_from(text: bytes) -> int:
    """Where in `text` (a line's part, no newline) one of Ray's log lines may begin: its length if nowhere."""
    start = text.find(b"[")
    while start != -1:
        head = text[start:start + len(_LOG_LINE_START)]  # shorter where the text ends: a start that may go on
        if all(have == want or (want == ord("d") and chr(have).isdigit()) for have, want in zip(head, _LOG_LINE_START, strict=False)):
            return start
        start = text.find(b"[", start + 1)
    return len(text)


def _without_alarms(line: bytes) -> bytes | None:
    """`line` without the false alarms in it (one may follow a progress bar's text on the same line);
    None when nothing else was on it."""
    for alarm in FALSE_ALARMS:
        line, found = alarm.subn(b"", line)
        if found and not line.strip():
            return None
    return line
