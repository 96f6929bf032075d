"""What calls cost: the models' prices, from a maintained source, and the cost of a run's tokens.

Prices are dollars per million tokens, as the providers list them: input, cached input (tokens the
provider served from its prompt cache), output (hidden reasoning included: it is billed as output), and
the Batch API's, which are half unless given; and the provider's own web search, in dollars per 1,000
searches (`web_search`, the same through a batch). They come, in this order, from:

1. `--prices FILE`, which adds or overrides entries (`date` optional: else the file's modification day):

       {"gpt-5": {"input": 1.25, "cached_input": 0.125, "output": 10.0, "date": "2026-11-20"},
        "openai:my-finetune": {"input": 3.0, "output": 12.0, "batch_input": 1.5, "batch_output": 6.0}}

   A key is a model name as the endpoint knows it (looked up for `openai:` models) or a whole spec
   (`vllm:Qwen/Qwen3-8B`, to price a model of any engine);
2. `genai-prices` (pydantic's maintained price data, with each price's history), for `openai:`,
   `perplexity:` and `gemini:` models: the price in effect on the day of the lookup;
3. the small built-in table read off OpenAI's pricing page in 2025-11 (`DEFAULT_PRICES`), only where
   `genai-prices` is not installed (it needs Python 3.11).

Every price says where it came from and its date (`source`, `date`). A model no source knows has no
price: its cost is said to be unknown, never guessed. A `perplexity:` preset has none either: the model it
resolves to varies; Perplexity's own cost of each call (`usage.cost`) is recorded beside ours.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import importlib.metadata
import importlib.util
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from bespoke_dataset.errors import UserError
from bespoke_dataset.source import default_cache_dir
from bespoke_dataset.version import __version__
from bespoke_metric.backends.base import Usage
from bespoke_metric.backends.registry import Spec, engine_of, split_spec

PRICES_CHECKED = "2025-11"
"""When the built-in table was read off openai.com/api/pricing (standard tier): its prices' `date`."""

PRICE_FIELDS = ("input", "cached_input", "output", "batch_input", "batch_output", "web_search")
"""The numbers of one entry of a prices file, dollars per million tokens (`web_search`: per 1,000 searches);
`input` and `output` are required (an entry may also give its `date`, YYYY-MM-DD)."""
BUILT_IN = "built-in table"
"""The `source` of a price of `DEFAULT_PRICES`."""
MAINTAINED_PROVIDERS = {"openai": "openai", "perplexity": "perplexity", "gemini": "google", "google": "google",
                        "anthropic": "anthropic", "xai": "x-ai"}
"""genai-prices' provider of an engine (and of the provider prefix of a Perplexity Agent API slug, whose
third-party models Perplexity bills at their provider's price)."""

BATCH_DISCOUNT = 0.5
"""The Batch API's price as a share of the direct one, where an entry gives no batch price."""

_DATED = re.compile(r"-\d{4}-\d{2}-\d{2}$")


class PricesError(UserError):
    """A prices file that cannot be read, naming the file and the entry."""


@dataclass(frozen=True)
class Tokens:
    """Token counts of some calls. `cached_input` is part of `input`, `reasoning` part of `output`."""

    input: int = 0
    cached_input: int = 0
    output: int = 0
    reasoning: int = 0

    @classmethod
    def of(cls, usage: Usage) -> "Tokens":
        return cls(usage.input_tokens, usage.cached_input_tokens, usage.output_tokens, usage.reasoning_tokens)

    def __add__(self, other: "Tokens") -> "Tokens":
        return Tokens(self.input + other.input, self.cached_input + other.cached_input,
                      self.output + other.output, self.reasoning + other.reasoning)

    def __sub__(self, other: "Tokens") -> "Tokens":
        return Tokens(self.input - other.input, self.cached_input - other.cached_input,
                      self.output - other.output, self.reasoning - other.reasoning)

    def to_json(self) -> dict[str, int]:
        return {"input_tokens": self.input, "cached_input_tokens": self.cached_input,
                "output_tokens": self.output, "reasoning_tokens": self.reasoning}


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens of one model."""

    input: float
    output: float
    cached_input: float | None = None
    """Default: `input` (no prompt-cache discount known)."""
    batch_input: float | None = None
    """Default: `input` × `BATCH_DISCOUNT`."""
    batch_output: float | None = None
    """Default: `output` × `BATCH_DISCOUNT`."""
    web_search: float | None = None
    """Dollars per 1,000 searches of the provider's own web search, billed besides the tokens, batch or not
    (no provider publishes a batch rate for them); None: not known."""
    source: str = BUILT_IN
    """Where the price came from: `genai-prices 0.2.3 (openai gpt-5)`, a prices file, the built-in table."""
    date: str = PRICES_CHECKED
    """The day (or month) the source gives the price for: the lookup's day for genai-prices, an entry's
    `date` or the file's modification day for a prices file, when it was read for the built-in table."""

    def rates(self, *, batch: bool) -> tuple[float, float, float]:
        """(input, cached input, output) dollars per million tokens, direct or through the Batch API."""
        cached = self.input if self.cached_input is None else self.cached_input
        if not batch:
            return self.input, cached, self.output
        batch_input = self.input * BATCH_DISCOUNT if self.batch_input is None else self.batch_input
        batch_output = self.output * BATCH_DISCOUNT if self.batch_output is None else self.batch_output
        # the prompt-cache discount applies to batch input as to direct input
        batch_cached = cached * (batch_input / self.input) if self.input else cached * BATCH_DISCOUNT
        return batch_input, batch_cached, batch_output

    def cost(self, tokens: Tokens, *, batch: bool = False) -> float:
        """Dollars for `tokens`: uncached input, cached input and output at their rates."""
        input_rate, cached_rate, output_rate = self.rates(batch=batch)
        return ((tokens.input - tokens.cached_input) * input_rate + tokens.cached_input * cached_rate
                + tokens.output * output_rate) / 1e6

    def search_cost(self, searches: int) -> float | None:
        """Dollars for `searches` web searches; None when there were some and their price is not known."""
        if not searches:
            return 0.0
        return None if self.web_search is None else searches * self.web_search / 1000

    def to_json(self) -> dict[str, Any]:
        input_rate, cached_rate, output_rate = self.rates(batch=False)
        batch_input, _, batch_output = self.rates(batch=True)
        searches = {"web_search": self.web_search} if self.web_search is not None else {}
        return {"input": input_rate, "cached_input": cached_rate, "output": output_rate,
                "batch_input": batch_input, "batch_output": batch_output, **searches, "source": self.source, "date": self.date}


def _openai(input: float, cached_input: float, output: float) -> Price:
    return Price(input=input, cached_input=cached_input, output=output)


DEFAULT_PRICES: dict[str, Price] = {
    "gpt-5.1": _openai(1.25, 0.125, 10.0),
    "gpt-5": _openai(1.25, 0.125, 10.0),
    "gpt-5-chat-latest": _openai(1.25, 0.125, 10.0),
    "gpt-5-mini": _openai(0.25, 0.025, 2.0),
    "gpt-5-nano": _openai(0.05, 0.005, 0.40),
    "gpt-4.1": _openai(2.0, 0.50, 8.0),
    "gpt-4.1-mini": _openai(0.40, 0.10, 1.60),
    "gpt-4.1-nano": _openai(0.10, 0.025, 0.40),
    "gpt-4o": _openai(2.50, 1.25, 10.0),
    "gpt-4o-mini": _openai(0.15, 0.075, 0.60),
    "o3": _openai(2.0, 0.50, 8.0),
    "o4-mini": _openai(1.10, 0.275, 4.40),
    "o3-mini": _openai(1.10, 0.55, 4.40),
    "o1": _openai(15.0, 7.50, 60.0),
}
"""OpenAI's list prices (standard tier) of the models a BESPOKE run usually names, by model name."""


class PriceTable:
    """Prices by model name or spec: given entries (a prices file's) over genai-prices over the built-in
    table (see the module docstring). A table made from a mapping holds that mapping's prices only."""

    def __init__(self, prices: Mapping[str, Price] | None = None, *, maintained: bool = True) -> None:
        """`prices`: the only prices of the table; None: genai-prices (`maintained`, where installed), then
        the built-in table."""
        self.prices = dict(prices or {})
        self.sources = prices is None
        """The maintained source and the built-in table are looked up (past `prices`)."""
        self.maintained = maintained and self.sources and maintained_prices_installed()

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None) -> "PriceTable":
        """The maintained prices overridden by the prices file at `path` (none: those alone);
        `PricesError` naming the file and entry for one that cannot be read."""
        table = cls()
        if path is not None:
            table.prices.update(read_prices(path))
        return table

    def price(self, spec: str) -> Price | None:
        """The price of a model spec (`openai:gpt-5-2025-08-07`) or name, or None when none is known.

        Looked up as the whole spec, then (for `openai:` models and bare names) as the model name, the
        name without a `-YYYY-MM-DD` snapshot date, and the name after a `provider/` prefix: in the given
        entries, then in genai-prices, then in the built-in table."""
        given = _lookup(self.prices, spec)
        if given is not None or not self.sources:
            return given
        if self.maintained:
            return maintained_price(spec)
        return _lookup(DEFAULT_PRICES, spec)


def _lookup(prices: Mapping[str, Price], spec: str) -> Price | None:
    if spec in prices:
        return prices[spec]
    engine, model = split_spec(spec)
    if engine not in ("", "openai"):  # a bare name is an OpenAI model's
        return None
    for name in (model, _DATED.sub("", model), model.rsplit("/", 1)[-1], _DATED.sub("", model.rsplit("/", 1)[-1])):
        if name in prices:
            return prices[name]
    return None


def maintained_prices_installed() -> bool:
    """Whether genai-prices is installed (it needs Python 3.11): found, not imported, for its price data
    takes a third of a second to load and is loaded where a price is first looked up."""
    return importlib.util.find_spec("genai_prices") is not None


PRICES_CACHE = "prices"
"""The `default_cache_dir` kind of genai-prices' answers: ``$BESPOKE_CACHE/prices`` (``~/.cache/bespoke/prices``)."""


def maintained_price(spec: str, *, day: _dt.date | None = None) -> Price | None:
    """The price genai-prices gives a model spec on `day` (default today, UTC), or None where it knows none.

    A `perplexity:` model is priced as the Agent API model it runs as (a retired Sonar name as its
    substitute); a third-party slug (`openai/gpt-5.1`) at that provider's price; a preset not at all.

    Loading genai-prices' data takes about a fifth of a second, as long as a short run's calls: a process that
    has not loaded it reads the answer from `$BESPOKE_CACHE/prices/genai-prices-VERSION.json` (the day's
    answers of that release of genai-prices, written as they are looked up), and loads it only for a model
    not in it. A process that has loaded it (or set a snapshot of its own) asks it."""
    day = day or _dt.datetime.now(_dt.timezone.utc).date()
    if "genai_prices" in sys.modules:
        return _genai_price(spec, day)
    path = default_cache_dir(PRICES_CACHE) / f"genai-prices-{importlib.metadata.version('genai-prices')}.json"
    written = {"day": day.isoformat(), "bespoke_eval_version": __version__}
    answers = _cached_answers(path, written)
    if spec in answers:
        try:
            return None if answers[spec] is None else Price(**answers[spec])
        except TypeError:
            pass  # an entry that is no price: asked again
    price = _genai_price(spec, day)
    answers[spec] = None if price is None else dataclasses.asdict(price)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({**written, "prices": answers}), encoding="utf-8")
        temporary.replace(path)  # whole or not at all, whoever writes last
    except OSError:
        pass  # a cache that cannot be written: the next run asks genai-prices again
    return price


def _cached_answers(path: Path, written: Mapping[str, str]) -> dict[str, Any]:
    """The answers in the cache file at `path` if it was `written` on that day by this version; none when it
    is missing, unreadable, or another day's or version's."""
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(cached, dict) or any(cached.get(key) != value for key, value in written.items()):
        return {}
    answers = cached.get("prices")
    return dict(answers) if isinstance(answers, dict) else {}


def _genai_price(spec: str, day: _dt.date) -> Price | None:
    """`maintained_price`, from genai-prices itself."""
    import genai_prices
    from genai_prices.data_snapshot import get_snapshot

    engine, model = split_spec(spec)
    engine = engine or "openai"  # a bare name is an OpenAI model's
    provider = MAINTAINED_PROVIDERS.get(engine)
    if engine == "perplexity":
        from bespoke_metric.backends.providers.perplexity import PRESET_PREFIX, agent_model

        model = agent_model(model)
        if model.startswith(PRESET_PREFIX):
            return None
        prefix, slash, name = model.partition("/")
        if slash and prefix != "perplexity":
            provider, model = MAINTAINED_PROVIDERS.get(prefix), name
    elif engine == "openai" and model.startswith("openai/"):
        model = model.removeprefix("openai/")
    if provider is None:
        return None
    moment = _dt.datetime(day.year, day.month, day.day, 12, tzinfo=_dt.timezone.utc)
    try:
        _, info = get_snapshot().find_provider_model(model, None, provider, None)
    except LookupError:
        return None
    direct = info.get_prices(moment)
    batch = info.get_prices(moment, {"processing": "batch"})
    if direct.input_mtok is None or direct.output_mtok is None:
        return None
    rates = {"input": direct.input_mtok, "output": direct.output_mtok, "cached_input": direct.cache_read_mtok,
             "web_search": getattr(direct, "web_searches_kcount", None)}
    if batch is not direct and batch.input_mtok != direct.input_mtok:  # genai-prices knows a batch price
        rates.update(batch_input=batch.input_mtok, batch_output=batch.output_mtok)
    return Price(**{name: _per_million(value) for name, value in rates.items() if value is not None},
                 source=f"genai-prices {genai_prices.__version__} ({provider} {info.id})", date=day.isoformat())


def _per_million(value: Any) -> float:
    """A genai-prices rate (a Decimal, or tiered prices: their base tier) as a float (per million tokens, or
    `web_searches_kcount` per 1,000 searches)."""
    return float(getattr(value, "base", value))


def read_prices(path: str | os.PathLike[str]) -> dict[str, Price]:
    """The entries of a prices file (see the module docstring), checked."""
    file = Path(path)
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PricesError(f"prices file {file} not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise PricesError(f"prices file {file} is not JSON: {err}") from None
    modified = _dt.datetime.fromtimestamp(file.stat().st_mtime, _dt.timezone.utc).date().isoformat()
    if not isinstance(raw, dict):
        raise PricesError(f"prices file {file}: expected an object of MODEL: {{input, output, ...}}, got {type(raw).__name__}")
    prices = {}
    for model, entry in raw.items():
        if not isinstance(entry, dict):
            raise PricesError(f"prices file {file}, {model!r}: expected an object with input and output, got {entry!r}")
        date = entry.pop("date", None)
        if date is not None and not (isinstance(date, str) and re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", date)):
            raise PricesError(f"prices file {file}, {model!r}: date must be YYYY-MM-DD, got {date!r}")
        unknown = sorted(set(entry) - set(PRICE_FIELDS))
        missing = [name for name in ("input", "output") if name not in entry]
        if unknown or missing:
            what = f"unknown key(s) {', '.join(unknown)}" if unknown else f"missing {' and '.join(missing)}"
            raise PricesError(f"prices file {file}, {model!r}: {what}; an entry has {', '.join(PRICE_FIELDS)} "
                              "(dollars per million tokens, web_search per 1,000 searches; input and output required) "
                              "and may give its date")
        for name, value in entry.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise PricesError(f"prices file {file}, {model!r}: {name} must be a number of dollars >= 0, got {value!r}")
        prices[str(model)] = Price(**{name: float(value) for name, value in entry.items()}, source=str(file),
                                   date=date or modified)
    return prices


@dataclass(frozen=True)
class ModelUse:
    """The calls one backend made in a run: the model (`spec`), what it did (`roles`: judge, system,
    profiler, grader), its counters, and the part of them its Batch API served."""

    spec: str
    roles: tuple[str, ...]
    usage: Usage
    batch: Usage | None = None


def backend_use(backend: Any, spec: str, roles: Sequence[str], usages: Sequence[Usage]) -> ModelUse:
    """One backend's use over the parts of a run that shared it (`usages`: each part's counters); the
    batch part is the backend's own count (`OpenAIBatchBackend.batch_usage`), which covers them all."""
    return ModelUse(spec, tuple(roles), Usage.total(usages), getattr(backend, "batch_usage", None))


USAGE_COUNTS = ("calls", "cached", "failed", "input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens")
"""The counters of `Usage` that add up over runs of calls (and are in every usage block)."""


def usage_models(uses: Sequence[ModelUse], prices: PriceTable) -> dict[str, Any]:
    """The `models` and `cost` of a results file's `usage` block: per model spec (the uses of one spec
    added together) its roles, calls, tokens and cost; the run's total `cost`, or None and `cost_unknown`
    when some model's price is not known."""
    grouped: dict[str, list[ModelUse]] = {}
    for use in uses:
        grouped.setdefault(use.spec, []).append(use)
    models = {}
    for spec, group in grouped.items():
        roles = sorted({role for use in group for role in use.roles})
        batch = Usage.total([use.batch for use in group if use.batch is not None])
        models[spec] = {"roles": roles, **model_usage(Usage.total([use.usage for use in group]), prices.price(spec), batch=batch,
                                                      local=is_local(spec))}
    return {"models": models, **cost_summary(models)}


def is_local(spec: str | Spec) -> bool:
    """Whether the model of `spec` runs here (`hf:`, `vllm:`: `Engine.local`), with no provider's price."""
    engine = engine_of(spec)
    return engine is not None and engine.local


LOCAL_NOTE = "a local model: no price per token (give one with --prices FILE to count its machine time)"
STAND_IN_NOTE = "answered by a stand-in (a rule or a test server), not the model: no cost"


def model_usage(usage: Usage, price: Price | None, *, batch: Usage | None = None, local: bool = False) -> dict[str, Any]:
    """One model's entry of a results file's `usage.models`: its calls, tokens, web searches, and cost.

    `batch` is the part of `usage` served through the Batch API (priced at its rates); the provider's own
    web searches (`web_searches`, where it made any) at the price per 1,000; `cost` is None, and
    `price_note` says why, when no price is known (of the tokens, or of searches it made). Where the provider reported what its calls cost,
    `provider_cost` (dollars) and `provider_costed` (of how many calls) stand beside `cost`. A `local` model
    (marked so) has no price, for it has none per token; answers a stand-in made (`Usage.stand_in`) cost
    nothing, whatever the model's price."""
    batch = batch or Usage()
    total = Tokens.of(usage)
    record: dict[str, Any] = {"calls": usage.calls, "batch_calls": batch.calls, "cached": usage.cached, **total.to_json()}
    if usage.provider_costed:
        record.update(provider_cost=round(usage.provider_cost, 6), provider_costed=usage.provider_costed)
    if usage.stand_in:  # one backend's answers are all a stand-in's or none: its endpoint is part of its identity
        record.update(cost=0.0, price=None, stand_in=usage.stand_in, price_note=STAND_IN_NOTE)
        return record
    if price is None and local:
        record.update(cost=None, price=None, local=True, price_note=LOCAL_NOTE)
        return record
    if price is None:
        record.update(cost=None, price=None, price_note="no price known for this model: give one with --prices FILE")
        return record
    if usage.web_searches:
        record["web_searches"] = usage.web_searches
    searches = price.search_cost(usage.web_searches)
    if searches is None:
        record.update(cost=None, price=price.to_json(), price_note=f"no price known for its {usage.web_searches} web "
                      "search(es): give web_search (dollars per 1,000) with --prices FILE")
        return record
    batched = Tokens.of(batch)
    record["cost"] = round(price.cost(total - batched) + price.cost(batched, batch=True) + searches, 6)
    record["price"] = price.to_json()
    return record


def cost_summary(models: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The run's total `cost` over its models' entries, or None with `cost_unknown` naming the models
    whose price is not known (a partial sum would read as the whole). A local model without a price adds
    nothing: it is paid in machine time."""
    unknown = sorted(name for name, record in models.items()
                     if record.get("cost") is None and record.get("calls") and not record.get("local"))
    if unknown:
        return {"cost": None, "cost_unknown": unknown}
    return {"cost": round(sum(record.get("cost") or 0.0 for record in models.values()), 6)}


TOKENS_PER_MESSAGE = 3
"""What OpenAI's chat format adds per message (its start, role and end markers), as OpenAI's cookbook
counts prompt tokens; the reply's own start adds as many again."""


def prompt_tokens(messages: Sequence[Mapping[str, str]], count: Callable[[str], int]) -> int:
    """The input tokens of a chat prompt, counted as OpenAI's cookbook does for its chat models: each
    message's role and content in the model's tokens, `TOKENS_PER_MESSAGE` per message and for the reply."""
    return sum(TOKENS_PER_MESSAGE + count(message["role"]) + count(message["content"]) for message in messages) + TOKENS_PER_MESSAGE
