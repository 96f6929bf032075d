"""Progress: the hook every long run reports to, and the bar that shows it, on a terminal only.

A bar is drawn only where someone watches it: when stderr is a terminal. Into a pipe or a log file it
would write hundreds of carriage-return lines. The loading bars of the libraries underneath
(`datasets`, `huggingface_hub`, `transformers`) are the command line's to silence (`quiet_library_bars`);
`transformers` draws its model-loading bar into a pipe too, so a model loads under `backends.model_files.loading_bar_on_terminal`.
"""

from __future__ import annotations

import os
import sys
from typing import Callable

ProgressHook = Callable[[str, int], None]
"""`hook(kind, n)`: `kind` is `"done"`, `"cached"` or `"failed"`; called as requests or items finish."""


def on_terminal() -> bool:
    """Whether progress may be drawn: stderr is a terminal (never a pipe or a log file)."""
    return sys.stderr.isatty()


class ProgressBar:
    """A tqdm progress bar usable as a `ProgressHook`: counts requests done, cached and failed.

    `disable=True` hides it; otherwise it is drawn only when stderr is a terminal."""

    def __init__(self, total: int, desc: str = "calls", disable: bool | None = None, unit: str = "call") -> None:
        from tqdm.auto import tqdm

        self.counts = {"done": 0, "cached": 0, "failed": 0}
        # tqdm's disable=None is "only on a terminal"
        self._bar = tqdm(total=total, desc=desc, unit=unit, disable=True if disable else None, dynamic_ncols=True)

    def __call__(self, kind: str, n: int = 1) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + n
        self._bar.set_postfix(self.counts, refresh=False)
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def quiet_library_bars() -> None:
    """Silence the loading bars of `datasets` ("Generating test split"), `huggingface_hub` (downloads)
    and `transformers` ("Loading weights"): the command line shows its own progress, not theirs. Through
    their environment variables, read when they are imported, so none of them is imported for this (a
    run with an API judge never needs `datasets`); those already imported are told directly."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers follows huggingface_hub
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    if "huggingface_hub" in sys.modules:
        sys.modules["huggingface_hub"].utils.disable_progress_bars()
    if "datasets" in sys.modules:
        sys.modules["datasets"].disable_progress_bars()
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()
