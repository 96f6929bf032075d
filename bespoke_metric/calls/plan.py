"""A dry run: every call a run would make, found by running it with nothing sent and nothing written.

The run goes through its own code (prompts built, the cache asked, identical requests merged, guards
applied) with each backend wrapped in a `PlanningBackend`, which records what reaches it, the calls the
run would pay for, and answers without sending anything; the cache is read through a `ReadOnlyCache`.
So the count of calls and their input tokens are those of the real run (its first round: the repairs an
unreadable answer would need are not known before it comes).
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from bespoke_metric.backends.base import Backend, BackendWrapper, CallError, Completion, OnDone, Request
from bespoke_metric.backends.providers.openai_backend import is_reasoning_model
from bespoke_metric.backends.registry import EngineConfig, Spec, split_spec

from .cache import Cache
from .pricing import PriceTable, Tokens

PLANNED = "not sent: a dry run"
"""The reason a planned call ends with: it was not made."""
PLACEHOLDER_KEY = "dry-run"
"""The key a dry run builds an `openai:` backend with where none is given: nothing is sent."""


def keyless(config: EngineConfig) -> EngineConfig:
    """An engine's config for a dry run: an `openai:` model gets a placeholder key when none is given, as a
    run that sends nothing needs none."""
    if config.spec.name == "openai" and not config.options.api_key and not os.environ.get("OPENAI_API_KEY"):
        return dataclasses.replace(config, options=dataclasses.replace(config.options, api_key=PLACEHOLDER_KEY))
    return config


def filler(tokens: int) -> str:
    """A stand-in answer about `tokens` tokens long (one word a token in OpenAI's encodings): what a dry
    run answers where the real answer would be read on (a profile in a prompt, a response to judge), so
    the prompts built from it count at most what the real ones would."""
    return " ".join(["word"] * max(1, tokens))


class ReadOnlyCache:
    """A cache read but never written: the answers its file holds are served (and counted); an answer put
    in it stays in memory for the rest of the dry run (a later step finds it, as it would in the real run)
    and never reaches the file. `missed` holds every key looked up and found in neither."""

    def __init__(self, cache: Cache | None, path: str | os.PathLike[str] | None = None) -> None:
        self.cache = cache
        self.path = Path(path) if path is not None else cache.path if cache is not None else None
        """The file the run would write to (it may not exist yet)."""
        self.served = 0
        self.served_output_tokens = 0
        self.missed: set[str] = set()
        self._memory: dict[str, Completion] = {}

    @classmethod
    def of_file(cls, path: str | os.PathLike[str]) -> "ReadOnlyCache":
        """The cache file at `path` (none yet is an empty cache), opened read-only."""
        return cls(Cache.read_only(path), path)

    def get_many(self, keys: Iterable[str]) -> dict[str, Completion]:
        wanted = list(dict.fromkeys(keys))
        found = {key: self._memory[key] for key in wanted if key in self._memory}
        rest = [key for key in wanted if key not in found]
        try:
            stored = self.cache.get_many(rest) if self.cache is not None and rest else {}
        except sqlite3.OperationalError:  # a file that holds no cache table yet: nothing in it
            stored = {}
        self.served += len(stored)
        self.served_output_tokens += sum(completion.output_tokens for completion in stored.values())
        found.update(stored)
        self.missed.update(key for key in wanted if key not in found)
        return found

    def put(self, key: str, completion: Completion) -> None:
        self._memory[key] = completion

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


class PlanningBackend(BackendWrapper):
    """Wraps a backend (never calling it): records every request given to it and answers each at once,
    with a `CallError` (`PLANNED`), or with `filler` text as long as the request's output cap when
    `fill=True` (for runs that read answers on: generation)."""

    def __init__(self, backend: Backend, *, fill: bool = False) -> None:
        super().__init__(backend)
        self.fill = fill
        self.requests: list[Request] = []

    @property
    def batch(self) -> bool:
        """The wrapped backend sends its calls through a Batch API (priced at its rates)."""
        return hasattr(self.backend, "batch_usage")

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        for index, request in enumerate(requests):
            self.requests.append(request)
            on_done(index, Completion(filler(request.max_tokens), stand_in=True) if self.fill else CallError(PLANNED))


@dataclass
class Planned:
    """The calls one model would make in a run."""

    spec: str | Spec
    """The model's spec: as parsed where the command read it, or as read back."""
    role: str
    requests: list[Request]
    """The calls it would pay for: cache misses, identical requests once."""
    cached: int
    """Answers the cache already holds for the run (no call)."""
    batch: bool = False
    response_bound: bool = False
    """Some prompts hold a stand-in for an answer not yet written (counted at its cap): input is a bound."""
    served_output_tokens: int = 0
    """Output tokens of the cached answers, to estimate what new answers will be."""


@dataclass(frozen=True)
class Estimate:
    """What a planned model's calls would cost."""

    calls: int
    cached: int
    input_tokens: int
    output_tokens: int
    output_basis: str
    """How `output_tokens` was estimated: the cached answers' mean, or the requests' caps."""
    cost: float | None
    reasoning: bool
    """A reasoning model, whose hidden reasoning is billed as output beyond any cap."""


def estimate(planned: Planned, count_prompt: Callable[[str, Sequence[Mapping[str, str]]], int], prices: PriceTable) -> Estimate:
    """The input tokens of the planned calls (counted with `count_prompt`), their output (the mean of the
    cached answers where there are some, else each request's `max_tokens` cap), and the cost at `prices`
    (None when the model's price is not known)."""
    calls = len(planned.requests)
    input_tokens = sum(count_prompt(planned.spec, request.messages) for request in planned.requests)
    if planned.cached and planned.served_output_tokens:
        output_tokens = round(planned.served_output_tokens / planned.cached * calls)
        basis = f"the {planned.cached} cached answers' mean"
    else:
        output_tokens = sum(request.max_tokens for request in planned.requests)
        basis = "the requests' output caps"
    price = prices.price(str(planned.spec))
    cost = None if price is None else price.cost(Tokens(input=input_tokens, output=output_tokens), batch=planned.batch)
    engine, model = split_spec(planned.spec)
    return Estimate(calls, planned.cached, input_tokens, output_tokens, basis, cost, engine == "openai" and is_reasoning_model(model))
