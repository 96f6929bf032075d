"""Keeping one backend's calls under its account's limits (`limits`): the pace, the calls in flight, the waits.

`Pacer` paces the calls: at the rates the user gives (`--rpm`, `--tpm`: `limits.Tier`), else the ones the
provider's headers state, by `aiolimiter`'s leaky buckets (one per limit: requests, and tokens counted as the
provider counts them, `limits.Cost`) with a burst of at most half a second's worth, so a limit enforced over
shorter periods holds too; a refusal that still comes holds every call of the backend back for the wait the
provider asks (`Retry-After`, the limit's reset), slows the pace a little and comes back as answers flow.
`AdaptiveLimit` does the same to the calls in flight: halved on a refusal, one more per round of answers.
Waiting for a limit is never a failure (`retries.Caller` spends no retry on it), within `max_wait_s` seconds a
call. `LimitStatus` is what a progress bar shows of it.

`aiolimiter` (a leaky bucket for asyncio, kept up, no dependencies, weighted `acquire`) paces: a token limit is a
bucket whose units are tokens, which a request takes in one go. The learned rates, the refusals' hold and the
pace's slowdown are this module's, since they read the providers' own words.
"""

from __future__ import annotations

import asyncio
import collections
import math
import statistics
import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping

from .limits import MINUTE_S, REQUESTS, SHORTEST_WINDOW_S, TOKENS, Cost, Reading, Tier, read_headers

if TYPE_CHECKING:
    from aiolimiter import AsyncLimiter

BURST_S = 0.5
"""The most of a limit that goes at once: half of `SHORTEST_WINDOW_S`' worth, so that calls sent at the limit's
pace and bunched on their way (the network, a busy machine) still arrive within it."""
DEFAULT_MAX_WAIT_S = 3600.0
"""How long one call keeps waiting on rate limits before it fails saying so (`--rate-limit-wait`)."""
SLOWDOWN = 0.85
"""A refusal slows the pace by this factor (once per `BURST_S`), never below `SLOWEST_PACE` of the stated rate."""
SLOWEST_PACE = 0.3
RECOVERY = 0.02
"""Share of the stated rate the pace regains per answer, after a refusal slowed it."""
FIRST_WAIT_S = 1.0
"""A refusal that says no wait waits this long at first, doubling with each refusal in a row up to `LAST_WAIT_S`."""
LAST_WAIT_S = 60.0
WINDOW_READINGS = 9
"""Readings that decide a limit's window (the median of the last so many)."""


@dataclass
class _Limit:
    """What is known of one limit: the rate the user gave (per minute), the limit the provider states, and the
    windows its resets show that limit is enforced over (a limit stated per minute unless they show less)."""

    given: float | None = None
    stated: float | None = None
    windows: collections.deque[float] = field(default_factory=lambda: collections.deque(maxlen=WINDOW_READINGS))

    def rate(self) -> float:
        """Units a second: the lower of the user's rate and the provider's limit over its window."""
        rates = [] if self.given is None else [self.given / MINUTE_S]
        if self.stated is not None:
            rates.append(self.stated / (statistics.median(self.windows) if self.windows else MINUTE_S))
        return min(rates)

    def read(self, reading: Reading) -> None:
        """Take what an answer states of this limit. Its window is read off a bucket at least half spent (where
        the reset is long enough to tell): `limit * reset / spent`, a minute for a bucket that refills in a minute,
        a second for one that refills in a second."""
        self.stated = reading.limit
        spent = reading.limit - (reading.remaining if reading.remaining is not None else reading.limit)
        if reading.reset_s and spent >= reading.limit / 2:
            self.windows.append(min(MINUTE_S, max(SHORTEST_WINDOW_S, reading.limit * reading.reset_s / spent)))


class Pacer:
    """Keeps one backend's calls under its account's limits (see the module docstring). One per backend: what it
    learns of the limits spans every run of the backend; its buckets are per event loop."""

    def __init__(self, tier: Tier | None = None, *, share: float = 1.0, max_wait_s: float | None = None,
                 spec: str = "") -> None:
        """
        Args:
            tier: the limits the user gave (`--rpm`, `--tpm`).
            share: the part of each limit this backend may use (1/N for one of N workers of an endpoint).
            max_wait_s: the longest one call keeps waiting on refusals before it fails (`DEFAULT_MAX_WAIT_S`).
            spec: the engine and model it paces (`openai:gpt-5`), as a progress line names it.
        """
        PACERS.add(self)
        self.spec = spec
        self.share = share
        self.max_wait_s = DEFAULT_MAX_WAIT_S if max_wait_s is None else max_wait_s
        self._limits = {kind: _Limit(given=value) for kind, value in (tier or Tier()).per_minute().items()}
        self._pace = 1.0
        """The share of the limits' rates calls go at: lowered by a refusal, regained as answers flow."""
        self._slowed_at = -math.inf
        self._calibration = 1.0
        """The provider's prompt tokens per estimated one (`Cost.prompt_tokens`), from its answers' usage."""
        self._calibrated = 0
        self._resume_at = 0.0
        """`time.monotonic()` before which no call is sent: a refusal's wait."""
        self._refused_in_row = 0
        self.refusals = 0
        self._held = 0
        self._held_since: float | None = None
        self._held_s = 0.0
        self._sent: collections.deque[tuple[float, Cost]] = collections.deque()
        """The calls sent within the last `BURST_S`: what a bucket made now starts charged with."""
        self._costs = [0.0, 0]
        """The costs of the calls sent so far, in tokens, and their number: the mean call, for `seconds_for`."""
        self.answers = [0, 0, 0]
        """The calls answered, and the input and output tokens the provider counted in them: the mean call's."""
        self._buckets: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, tuple[float, AsyncLimiter]]] = (
            weakref.WeakKeyDictionary()
        )

    # -- what calls do --------------------------------------------------------------------------------

    async def admit(self, cost: Cost) -> None:
        """Wait until `cost` can be sent without exceeding a known limit, nor before a refusal's wait ends."""
        held: float | None = None
        try:
            while True:
                now = time.monotonic()
                if now < self._resume_at:
                    held = held if held is not None else self._hold(now)
                    await asyncio.sleep(self._resume_at - now)
                    continue
                for bucket, charge, amount in self._takes(cost):
                    if charge:  # a bucket made now: what the provider counted in the last second counts here too
                        await bucket.acquire(charge)  # a new bucket has room for it: no wait
                    if held is None and not bucket.has_capacity(min(amount, bucket.max_rate)):
                        held = self._hold(now)
                    while amount > 0:  # a call costing more than a bucket holds takes it in parts, at its rate
                        part = min(amount, bucket.max_rate)
                        await bucket.acquire(part)
                        amount -= part
                if time.monotonic() >= self._resume_at:  # no refusal came while it waited
                    break
        finally:
            if held is not None:
                self._release(held)
        now = time.monotonic()
        self._sent.append((now, cost))
        while self._sent and self._sent[0][0] < now - BURST_S:
            self._sent.popleft()
        self._costs[0] += cost.of(TOKENS, self._calibration)
        self._costs[1] += 1

    def observe(self, headers: Mapping[str, str]) -> None:
        """Learn the limits an answer's headers state (`read_headers`): every answer's, refused or not."""
        self.learn(read_headers(headers))

    def learn(self, readings: Iterable[Reading]) -> None:
        for reading in readings:
            self._limits.setdefault(reading.kind, _Limit()).read(reading)

    def answered(self, prompt_tokens: int, output_tokens: int, cost: Cost) -> None:
        """A call was answered, the provider counting `prompt_tokens` and `output_tokens` in it (0: not said): the
        pace comes back a little, and the prompt estimate is calibrated against the provider's count."""
        self.answers[0] += 1
        self.answers[1] += prompt_tokens
        self.answers[2] += output_tokens
        self._refused_in_row = 0
        self._pace = min(1.0, self._pace + RECOVERY)
        if prompt_tokens > 0 and cost.prompt_tokens > 0:
            ratio = min(4.0, max(0.25, prompt_tokens / cost.prompt_tokens))
            self._calibrated += 1
            weight = max(1 / self._calibrated, 0.1)
            self._calibration += weight * (ratio - self._calibration)

    def refused(self, wait: float | None) -> float:
        """A call was refused for a rate limit, the provider asking to wait `wait` seconds (None: not said). Every
        call is held back that long (else as long as the backoff says, doubling with refusals in a row), and the
        pace slows (once per `BURST_S`: a burst of refusals is one signal). Returns the wait."""
        self.refusals += 1
        self._refused_in_row += 1
        now = time.monotonic()
        if wait is None:
            wait = min(LAST_WAIT_S, FIRST_WAIT_S * 2 ** (self._refused_in_row - 1))
        if now - self._slowed_at >= BURST_S:
            self._slowed_at = now
            self._pace = max(SLOWEST_PACE, self._pace * SLOWDOWN)
        self._resume_at = max(self._resume_at, now + wait)
        return wait

    # -- what it tells ------------------------------------------------------------------------------

    def rates(self) -> dict[str, float]:
        """The rate (units a second) each known limit lets this backend's calls go at now."""
        return {kind: limit.rate() * self.share * self._pace for kind, limit in self._limits.items()}

    def seconds_for(self, calls: int) -> float | None:
        """How long `calls` more calls take at the known request and token limits (each the mean call so far);
        None with neither known."""
        if not self._costs[1]:
            return None
        per_call = {REQUESTS: 1.0, TOKENS: self._costs[0] / self._costs[1]}
        times = [calls * per_call[kind] / rate for kind, rate in self.rates().items() if kind in per_call]
        return max(times) if times else None

    def status(self) -> "LimitStatus":
        rates = self.rates()
        return LimitStatus(self._held, self._held_since, self._held_s + self._holding(time.monotonic()), self.refusals,
                           rates.get(REQUESTS))

    # -- inside ---------------------------------------------------------------------------------------

    def _takes(self, cost: Cost) -> list[tuple[AsyncLimiter, float, float]]:
        """Per known limit: its bucket on this loop (made again when its rate moved by more than a tenth), what it
        starts charged with if made now (the calls sent within `BURST_S`), and what `cost` takes of it."""
        from aiolimiter import AsyncLimiter

        buckets = self._buckets.setdefault(asyncio.get_running_loop(), {})
        takes = []
        for kind, rate in self.rates().items():
            made, charge = buckets.get(kind), 0.0
            if made is None or abs(made[0] - rate) > rate / 10:
                made = buckets[kind] = (rate, AsyncLimiter(rate * BURST_S, BURST_S))
                charge = min(made[1].max_rate, sum(sent.of(kind, self._calibration) for _, sent in self._sent))
            takes.append((made[1], charge, cost.of(kind, self._calibration)))
        return takes

    def _hold(self, now: float) -> float:
        if self._held == 0:
            self._held_since = now
        self._held += 1
        return now

    def _release(self, since: float) -> None:
        self._held -= 1
        if self._held == 0 and self._held_since is not None:
            self._held_s += time.monotonic() - self._held_since
            self._held_since = None

    def _holding(self, now: float) -> float:
        return now - self._held_since if self._held_since is not None else 0.0


PACERS: weakref.WeakSet[Pacer] = weakref.WeakSet()
"""Every pacer alive: a progress bar shows the one holding calls back (`holding`), whatever backend it paces."""


def holding() -> Pacer | None:
    """The pacer that holds calls back now, else the one that held them longest; None when no limit held a call."""
    held = [pacer for pacer in list(PACERS) if pacer.status().line() is not None]
    return max(held, key=lambda pacer: (pacer.status().held, pacer.status().held_s), default=None)


class AdaptiveLimit:
    """The calls in flight at most on one event loop: `most` at first, halved on a refusal (once per `BURST_S`),
    one more per round of answers (a round: as many answers as the limit), never below one. Waiters go in order."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.limit = float(most)
        self.in_flight = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._lowered_at = -math.inf

    async def __aenter__(self) -> None:
        if not self._waiters and self.in_flight < self._slots():
            self.in_flight += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # `_wake` took the slot for it
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # the slot came as it was cancelled: give it on
                self.in_flight -= 1
                self._wake()
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.in_flight -= 1
        self._wake()

    def lower(self) -> None:
        now = time.monotonic()
        if now - self._lowered_at >= BURST_S:
            self._lowered_at = now
            self.limit = max(1.0, self.limit / 2)

    def raise_(self) -> None:
        if self.limit < self.most:
            self.limit = min(float(self.most), self.limit + 1 / self.limit)
            self._wake()

    def _slots(self) -> int:
        return max(1, int(self.limit))

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self._slots():
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)


@dataclass(frozen=True)
class LimitStatus:
    """Where a backend stands with its limits, for a progress bar: calls held back now and since when, the
    seconds calls were held in all, the refusals so far, the pace (calls a second) where a limit sets one."""

    held: int
    held_since: float | None
    held_s: float
    refusals: int
    pace: float | None

    def line(self, now: float | None = None) -> str | None:
        """`rate limit: holding 12 calls for 8s (3m40s held in all, 5 refused)`; None when nothing is or was held."""
        if not self.held and not self.refusals and self.held_s < 1.0:
            return None
        now = time.monotonic() if now is None else now
        held = (f"holding {self.held} call{'s' * (self.held != 1)} for {duration(now - self.held_since)}"
                if self.held and self.held_since is not None else "pacing")
        refused = f", {self.refusals} refused" if self.refusals else ""
        return f"rate limit: {held} ({duration(self.held_s)} held in all{refused})"


def duration(seconds: float) -> str:
    """`45s`, `3m05s`, `2h07m`."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
