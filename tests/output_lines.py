"""What a command printed, without what a library drew beside it."""

from __future__ import annotations

import re

PROGRESS_BAR = re.compile(r"\[\d+:\d+(<|,)")
"""A tqdm bar's `[elapsed<remaining, rate]` or `[elapsed, rate]`: `datasets` draws one building a table on
a cold cache (which test ran first decides), `transformers` one loading a model."""


def own_lines(printed: str) -> list[str]:
    """The lines of `printed` that are not a library's progress bar."""
    return [line for line in printed.strip().splitlines() if not PROGRESS_BAR.search(line)]
