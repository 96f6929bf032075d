"""Progress: the hook every long run reports to, and the bar that shows it."""

from __future__ import annotations

from typing import Callable

ProgressHook = Callable[[str, int], None]
"""`hook(kind, n)`: `kind` is `"done"`, `"cached"` or `"failed"`; called as requests or items finish."""


class ProgressBar:
    """A tqdm progress bar usable as a `ProgressHook`: counts requests done, cached and failed."""

    def __init__(self, total: int, desc: str = "calls", disable: bool | None = None) -> None:
        from tqdm.auto import tqdm

        self.counts = {"done": 0, "cached": 0, "failed": 0}
        self._bar = tqdm(total=total, desc=desc, unit="call", disable=disable, dynamic_ncols=True)

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
