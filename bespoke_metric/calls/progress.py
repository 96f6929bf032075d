"""Progress: the hook every long run reports to, and what shows it: a bar on a terminal, a plain line now and
then into a log file. Both say when a provider's rate limit holds calls back, and for how long
(`backends.limits.holding`); where the limit leaves more than `LONG_RUN_S` of the run, one `note:` says what
the provider's Batch API would cost and take instead.

A bar is drawn only where someone watches it: when stderr is a terminal. Into a pipe or a log file it
would write hundreds of carriage-return lines; there a run writes instead one plain line every
`log_every_s()` seconds (`BESPOKE_PROGRESS_EVERY`, default 30) while it lasts, and a last one when it ends,
so a long run is never silent for minutes and a short one adds nothing to the log. The loading bars of the libraries underneath
(`datasets`, `huggingface_hub`, `transformers`) are the command line's to silence (`quiet_library_bars`);
`transformers` draws its model-loading bar into a pipe too, so a model loads under `backends.local.model_files.loading_bar_on_terminal`.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import time
from typing import Callable

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.pacing import Pacer, duration, holding

ProgressHook = Callable[[str, int], None]
"""`hook(kind, n)`: `kind` is `"done"`, `"cached"` or `"failed"`; called as requests or items finish."""

LOG_EVERY_S = 30.0
"""Seconds between two progress lines of a run that writes into a log file, unless `BESPOKE_PROGRESS_EVERY` says."""
WATCH_S = 1.0
"""Seconds between two looks at the rate limits while a run shows progress (the bar is redrawn with them)."""
LONG_RUN_S = 3600.0
"""Time left past which a run held by a rate limit is told what `--batch` would cost and take instead."""


def on_terminal() -> bool:
    """Whether progress may be drawn: stderr is a terminal (never a pipe or a log file)."""
    return sys.stderr.isatty()


def log_every_s() -> float:
    """Seconds between two progress lines into a log file: `BESPOKE_PROGRESS_EVERY`, else `LOG_EVERY_S`."""
    value = os.environ.get("BESPOKE_PROGRESS_EVERY", "")
    try:
        seconds = float(value) if value else LOG_EVERY_S
    except ValueError:
        raise UserError(f"BESPOKE_PROGRESS_EVERY must be a number of seconds, not {value!r}") from None
    if seconds <= 0:
        raise UserError(f"BESPOKE_PROGRESS_EVERY must be more than 0 seconds, not {value!r}")
    return seconds


class ProgressBar:
    """Progress usable as a `ProgressHook`: counts requests done, cached and failed, and shows them as a tqdm
    bar when stderr is a terminal, as a `LogLines` line now and then when it is not; both with the rate limit
    that holds calls back, if one does (`limit_line`), and the `batch_note` of a run it makes long.

    `disable=True` shows nothing."""

    def __init__(self, total: int, desc: str = "calls", disable: bool | None = None, unit: str = "call") -> None:
        self.counts = {"done": 0, "cached": 0, "failed": 0}
        self.total, self.unit, self.started = total, unit, time.monotonic()
        terminal = on_terminal()
        self._bar = None
        if terminal and not disable:
            from tqdm.auto import tqdm  # here: a run that draws no bar starts without it (and its multiprocessing)

            self._bar = tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True)
        self._lines = None if disable or terminal else LogLines(total, desc, unit, self.counts, log_every_s())
        self._noted = False
        self._closed = threading.Event()
        self._watch = None if disable else threading.Thread(target=self._watching, name=f"limits: {desc}", daemon=True)
        if self._watch is not None:
            self._watch.start()

    def __call__(self, kind: str, n: int = 1) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + n
        if self._bar is not None:
            self._bar.set_postfix_str(self._postfix(), refresh=False)
            self._bar.update(n)

    def close(self) -> None:
        self._closed.set()
        if self._watch is not None:
            self._watch.join()
        if self._bar is not None:
            self._bar.close()
        if self._lines is not None:
            self._lines.close()

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _postfix(self) -> str:
        counts = ", ".join(f"{kind}={n}" for kind, n in self.counts.items())
        limit = limit_line()
        return f"{counts}; {limit}" if limit else counts

    def _watching(self) -> None:
        # a run held by a limit lands no answer for a while: the bar is redrawn here, not only as answers land
        while not self._closed.wait(WATCH_S):
            if self._bar is not None:
                self._bar.set_postfix_str(self._postfix(), refresh=True)
            left = time_left(self.total, self.counts, time.monotonic() - self.started)
            note = None if self._noted or left is None else batch_note(self.total - sum(self.counts.values()), self.unit, left)
            if note:
                self._noted = True
                print(note, file=sys.stderr, flush=True)


def time_left(total: int, counts: dict[str, int], elapsed: float) -> float | None:
    """Seconds a run has left at its pace so far, or None before it has one. Answers from the cache take no
    time (a resumed run starts with them): the pace is that of calls made."""
    finished = sum(counts.values())
    timed = finished - counts.get("cached", 0)
    return elapsed * (total - finished) / timed if timed > 0 and finished < total else None


def limit_line(pacer: Pacer | None = None) -> str | None:
    """What the rate limit holding calls back does (`pacer`'s, default the one `holding`), for a progress line:
    `openai:gpt-5 rate limit: holding 32 calls for 8s (3m40s held in all, 5 refused)`; None when it held none."""
    pacer = pacer or holding()
    said = pacer.status().line() if pacer is not None else None
    return f"{pacer.spec} {said}" if pacer is not None and said else None


def batch_note(left: int, unit: str, left_s: float, pacer: Pacer | None = None) -> str | None:
    """The `note:` of a run a rate limit makes long (more than `LONG_RUN_S` left): what its provider's Batch API
    would cost for the `left` calls (`unit`s) and take instead; None for a short run, one no limit holds (`pacer`,
    default the one `holding`), or an engine with no Batch API."""
    pacer = pacer or holding()
    if pacer is None or left_s <= LONG_RUN_S or left <= 0:
        return None
    from bespoke_metric.backends.registry import ENGINES

    from .pricing import PriceTable, Tokens

    engine = ENGINES.get(pacer.spec.split(":", 1)[0])
    if engine is None or not engine.batch_api:
        return None
    answered, input_tokens, output_tokens = pacer.answers
    price = PriceTable().price(pacer.spec)
    cost = "half the direct price"
    if price is not None and answered:
        rest = Tokens(input=round(input_tokens / answered * left), output=round(output_tokens / answered * left))
        cost = f"about ${price.cost(rest, batch=True):.2f} (half the direct price)"
    return (f"note: {pacer.spec}'s rate limit leaves this run about {duration(left_s)} more; with --batch the {left} "
            f"{unit}s left go through the provider's Batch API instead, outside these limits: {cost}, answered within "
            "24 h (the same command with --batch; the cache keeps every answer so far)")


class LogLines:
    """Progress as plain lines into stderr when it is no terminal (a log file, a pipe): one every `every_s`
    seconds while the run lasts, written by a timer thread (so a run whose answers all land late, a long
    batch, still says it is alive), and a last one at `close` if any was written.

        generating (none): 40/150 calls (27%), 38 done, 2 cached, 0 failed; 1m05s so far, about 2m59s left
    """

    def __init__(self, total: int, desc: str, unit: str, counts: dict[str, int], every_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.desc, self.unit, self.counts, self.clock = total, desc, unit, counts, clock
        self.started = clock()
        self.written = 0
        self._closed = threading.Event()
        self._timer = threading.Thread(target=self._every, args=(every_s,), name=f"progress: {desc}", daemon=True)
        self._timer.start()

    def line(self) -> str:
        """The progress so far, in one line, and the rate limit holding calls back, if one does."""
        finished = sum(self.counts.values())
        elapsed = self.clock() - self.started
        share = f" ({100 * finished // self.total}%)" if self.total else ""
        counts = ", ".join(f"{n} {kind}" for kind, n in self.counts.items())
        left_s = time_left(self.total, self.counts, elapsed)
        left = f", about {duration(left_s)} left" if left_s is not None else ""
        limit = limit_line()
        held = f"; {limit}" if limit else ""
        return f"{self.desc}: {finished}/{self.total} {self.unit}s{share}, {counts}; {duration(elapsed)} so far{left}{held}"

    def write(self) -> None:
        print(self.line(), file=sys.stderr, flush=True)  # stderr looked up now: it may have been replaced
        self.written += 1

    def close(self) -> None:
        """Stop the timer; write the last line if the run wrote any (a short run writes none)."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._timer.join()
        if self.written:
            self.write()

    def _every(self, every_s: float) -> None:
        while not self._closed.wait(every_s):
            self.write()


def quiet_library_bars() -> None:
    """Silence the loading bars of `datasets` ("Generating test split"), `huggingface_hub` (downloads)
    and `transformers` ("Loading weights"): the command line shows its own progress, not theirs. Through
    their environment variables, read when they are imported, so none of them is imported for this (a
    run with an API judge never needs `datasets`); those already imported are told directly."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers follows huggingface_hub
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    if "huggingface_hub" in sys.modules:  # its `utils` is not loaded with it (`huggingface_hub.constants` alone)
        importlib.import_module("huggingface_hub.utils").disable_progress_bars()
    if "datasets" in sys.modules:
        sys.modules["datasets"].disable_progress_bars()
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()
