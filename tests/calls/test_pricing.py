"""Prices, costs and the spending limit's arithmetic (pure: no call)."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from bespoke_cli.cost import print_plan
from bespoke_cli.judging.score import cost_line
from bespoke_metric.backends.base import CallError, Completion, Request, Usage
from bespoke_metric.calls.plan import Planned
from bespoke_metric.calls.pricing import (
    DEFAULT_PRICES,
    ModelUse,
    Price,
    PricesError,
    PriceTable,
    Tokens,
    prompt_tokens,
    read_prices,
    usage_models,
)
from bespoke_metric.calls.spending import SpendingLimit, SpendingLimitError, SpendLimited


def test_a_cost_prices_uncached_input_cached_input_and_output_apart():
    price = Price(input=2.0, cached_input=0.5, output=8.0)
    tokens = Tokens(input=1_000_000, cached_input=400_000, output=250_000, reasoning=200_000)
    assert price.cost(tokens) == pytest.approx(0.6 * 2.0 + 0.4 * 0.5 + 0.25 * 8.0)
    # batch: half of every rate unless given
    assert price.cost(tokens, batch=True) == pytest.approx(price.cost(tokens) / 2)
    given = Price(input=2.0, cached_input=0.5, output=8.0, batch_input=1.5, batch_output=4.0)
    assert given.rates(batch=True) == pytest.approx((1.5, 0.375, 4.0))
    assert Price(input=3.0, output=6.0).rates(batch=False) == (3.0, 3.0, 6.0)  # no cache discount known: none assumed


def test_the_built_in_table_finds_snapshots_and_prefixed_names_but_never_guesses():
    table = PriceTable(maintained=False)  # as where genai-prices is not installed (Python 3.10)
    assert table.price("openai:gpt-5-2025-08-07") is DEFAULT_PRICES["gpt-5"]
    assert table.price("openai:openai/gpt-5-mini") is DEFAULT_PRICES["gpt-5-mini"]
    assert table.price("gpt-4o") is DEFAULT_PRICES["gpt-4o"]
    assert table.price("openai:gpt-5-mini") is not table.price("openai:gpt-5")  # no prefix matching
    assert table.price("openai:my-model") is None
    assert table.price("hf:gpt-5") is None  # a local model named like an API one has no API price
    table.prices["vllm:Qwen/Qwen3-8B"] = Price(input=0.1, output=0.2)
    assert table.price("vllm:Qwen/Qwen3-8B").output == 0.2
    assert (DEFAULT_PRICES["gpt-5"].to_json()["source"], DEFAULT_PRICES["gpt-5"].to_json()["date"]) == ("built-in table", "2025-11")


def test_prices_come_from_genai_prices_dated_and_with_their_history():
    """The maintained source is the default: each price names the package, the provider's model id and the
    day it holds for; a day before a price change gets the price of that day; a Perplexity model is priced
    as what it runs as on the Agent API; what no source knows stays unknown."""
    import datetime

    import genai_prices

    table = PriceTable()
    gpt5 = table.price("openai:gpt-5-2025-08-07")
    assert (gpt5.input, gpt5.cached_input, gpt5.output) == (1.25, 0.125, 10.0)
    assert gpt5.source == f"genai-prices {genai_prices.__version__} (openai gpt-5)"
    assert gpt5.date == datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    assert table.price("openai:openai/gpt-5-mini").source.endswith("(openai gpt-5-mini)")
    # o3's price fell on 2025-06-10 (genai-prices keeps both): a lookup for an earlier day gets the old one
    from bespoke_metric.calls.pricing import maintained_price

    before, after = (maintained_price("openai:o3", day=datetime.date(2025, month, 1)) for month in (5, 7))
    assert (before.input, after.input) == (10.0, 2.0) and before.date == "2025-05-01"
    sonar = table.price("perplexity:sonar")  # runs as perplexity/sonar on the Agent API: that model's price
    assert (sonar.input, sonar.output) == (0.25, 2.5) and sonar.source.endswith("(perplexity perplexity/sonar)")
    assert table.price("perplexity:sonar-reasoning").source.endswith("(openai gpt-5.1)")  # openai/gpt-5.1 at OpenAI's price
    assert table.price("gemini:gemini-2.5-flash").source.endswith("(google gemini-2.5-flash)")
    for unknown in ("perplexity:preset/medium", "openai:my-model", "hf:gpt-5", "vllm:Qwen/Qwen3-8B"):
        assert table.price(unknown) is None, unknown
    assert PriceTable({}).price("openai:gpt-5") is None  # a table of given prices holds those only


def test_a_process_without_genai_prices_loaded_reads_its_answers_from_the_cache(monkeypatch, tmp_path):
    """Loading genai-prices' data costs a short run a fifth of a second: its answers of the day are kept in
    `$BESPOKE_CACHE/prices`, read by a process that has not loaded it; another day, a file that cannot be read,
    a process that has loaded it (or set a snapshot of its own) ask genai-prices."""
    import datetime
    import sys

    from bespoke_metric.calls import pricing

    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path))
    monkeypatch.delitem(sys.modules, "genai_prices", raising=False)  # a fresh process
    asked = []

    def answer(spec: str, day: datetime.date) -> Price | None:
        return Price(input=1.25, cached_input=0.125, output=10.0, source="genai-prices (openai gpt-5)",
                     date=day.isoformat()) if spec == "openai:gpt-5" else None

    def genai_price(spec: str, day: datetime.date) -> Price | None:  # stands in for the lookup in genai-prices
        asked.append((spec, day))
        return answer(spec, day)

    monkeypatch.setattr(pricing, "_genai_price", genai_price)
    day, next_day = datetime.date(2026, 12, 1), datetime.date(2026, 12, 2)
    found = [pricing.maintained_price(spec, day=day) for spec in ("openai:gpt-5", "openai:bench") * 2]
    assert found == [answer("openai:gpt-5", day), None] * 2
    assert asked == [("openai:gpt-5", day), ("openai:bench", day)]  # once each
    [cache] = (tmp_path / pricing.PRICES_CACHE).iterdir()
    assert json.loads(cache.read_text(encoding="utf-8"))["prices"] == {"openai:gpt-5": answer("openai:gpt-5", day).__dict__,
                                                                       "openai:bench": None}
    asked.clear()
    assert pricing.maintained_price("openai:gpt-5", day=next_day).date == "2026-12-02" and asked == [("openai:gpt-5", next_day)]
    cache.write_text("{not json", encoding="utf-8")
    assert pricing.maintained_price("openai:bench", day=day) is None and len(asked) == 2
    monkeypatch.setitem(sys.modules, "genai_prices", object())  # loaded: asked every time
    pricing.maintained_price("openai:bench", day=day)
    pricing.maintained_price("openai:bench", day=day)
    assert len(asked) == 4


def test_a_prices_file_overrides_the_table_and_names_what_is_wrong(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"gpt-5": {"input": 1.0, "output": 2.0, "date": "2026-11-30"},
                                "mine": {"input": 3, "cached_input": 1, "output": 4, "batch_output": 1}}))
    table = PriceTable.load(path)
    assert table.price("openai:gpt-5").rates(batch=False) == (1.0, 1.0, 2.0)
    assert table.price("openai:gpt-5").to_json()["date"] == "2026-11-30"
    assert table.price("openai:mine").rates(batch=True) == pytest.approx((1.5, 0.5, 1.0))
    import datetime

    assert (table.price("openai:mine").source, table.price("openai:mine").date) == (
        str(path), datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc).date().isoformat())
    assert table.price("openai:gpt-4o").source.startswith("genai-prices")  # what the file does not name
    for given, message in [('["gpt-5"]', "expected an object"), ('{"m": {"input": 1, "output": 2, "cache": 1}}', "unknown key\\(s\\) cache"),
                           ('{"m": {"input": 1, "output": 2, "date": "last week"}}', "date must be YYYY-MM-DD"),
                           ('{"m": {"input": true, "output": 2}}', "input must be a number"), ('{"m": 3}', "'m': expected an object")]:
        path.write_text(given)
        with pytest.raises(PricesError, match=message) as caught:
            read_prices(path)
        assert str(path) in str(caught.value)
    with pytest.raises(PricesError, match="not found"):
        read_prices(tmp_path / "missing.json")


def test_usage_models_price_the_batch_share_at_batch_rates_and_add_up_one_model():
    table = PriceTable({"m": Price(input=10.0, output=20.0), "other": Price(input=1.0, output=1.0)})
    judge = Usage(calls=3, input_tokens=300_000, output_tokens=30_000)
    batch = Usage(calls=2, input_tokens=200_000, output_tokens=20_000)
    system = Usage(calls=1, input_tokens=100_000, output_tokens=10_000, reasoning_tokens=5_000)
    block = usage_models([ModelUse("openai:m", ("judge",), judge, batch), ModelUse("openai:m", ("system",), system)], table)
    record = block["models"]["openai:m"]
    assert record["roles"] == ["judge", "system"] and record["calls"] == 4 and record["batch_calls"] == 2
    assert (record["input_tokens"], record["output_tokens"], record["reasoning_tokens"]) == (400_000, 40_000, 5_000)
    direct = Tokens(input=200_000, output=20_000)
    assert record["cost"] == pytest.approx(table.price("m").cost(direct) + table.price("m").cost(Tokens(200_000, 0, 20_000), batch=True))
    assert block["cost"] == record["cost"]
    unknown = usage_models([ModelUse("openai:m", ("judge",), judge), ModelUse("openai:x", ("system",), system)], table)
    assert unknown["cost"] is None and unknown["cost_unknown"] == ["openai:x"]
    assert unknown["models"]["openai:x"]["cost"] is None
    # an unknown price with no call made costs nothing: the total stays known
    assert usage_models([ModelUse("openai:x", ("judge",), Usage(cached=5))], table)["cost"] == 0.0


def test_web_searches_are_priced_per_thousand_besides_the_tokens_or_leave_the_cost_unknown(tmp_path):
    """A provider's own searches are billed per search (genai-prices' `web_searches_kcount`: Anthropic's,
    OpenAI's $10 per 1,000), batch or not; searches whose price no source gives leave the cost unknown."""
    maintained = PriceTable().price("anthropic:claude-sonnet-5-5")
    assert maintained.web_search == 10.0 and maintained.to_json()["web_search"] == 10.0
    assert maintained.source.endswith("(anthropic claude-sonnet-5-5)")
    table = PriceTable({"anthropic:c": Price(input=2.0, output=10.0, web_search=10.0), "openai:m": Price(input=1.0, output=1.0)})
    searched = Usage(calls=2, input_tokens=1_000_000, output_tokens=100_000, web_searches=3)
    block = usage_models([ModelUse("anthropic:c", ("system",), searched)], table)
    record = block["models"]["anthropic:c"]
    assert record["web_searches"] == 3
    assert record["cost"] == pytest.approx(2.0 + 1.0 + 3 * 10.0 / 1000)
    assert "anthropic:c: 1000000 in (0 cached), 100000 out (0 reasoning), 3 web searches, $3.0300;" in cost_line(block)
    unpriced = usage_models([ModelUse("openai:m", ("system",), searched)], table)
    assert unpriced["cost"] is None and unpriced["cost_unknown"] == ["openai:m"]
    assert "web search" in unpriced["models"]["openai:m"]["price_note"]
    assert "web_searches" not in usage_models([ModelUse("openai:m", ("judge",), Usage(calls=1))], table)["models"]["openai:m"]
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"anthropic:mine": {"input": 1, "output": 2, "web_search": 12.5}}))
    assert PriceTable.load(path).price("anthropic:mine").search_cost(4) == pytest.approx(0.05)


def test_prompt_tokens_count_as_openai_counts_a_chat_prompt():
    words = lambda text: len(text.split())  # noqa: E731 - a stand-in tokenizer
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "one two three"}]
    assert prompt_tokens(messages, words) == (3 + 1 + 2) + (3 + 1 + 3) + 3


class Answering:
    """A backend answering at once with a fixed token usage, counting what it was sent."""

    name, model, one_batch, takes_tools, searches, constraint, concurrency = "openai", "m", False, False, False, None, 2

    def __init__(self):
        self.sent = 0

    def identity(self):
        return {"engine": "openai", "model": "m"}

    async def complete(self, requests, on_done):
        for index, _ in enumerate(requests):
            self.sent += 1
            await asyncio.sleep(0)
            on_done(index, Completion("ok", input_tokens=1000, output_tokens=100))

    def close(self):
        pass


def test_the_limit_admits_while_spent_plus_in_flight_fits_then_stops_for_good():
    table = PriceTable({"m": Price(input=1.0, output=1.0)})
    limit = SpendingLimit(0.0055, table, count_prompt=lambda spec, messages: 1000)
    backend = SpendLimited(Answering(), limit)
    requests = [Request(messages=({"role": "user", "content": f"q{i}"},), max_tokens=100) for i in range(10)]
    outcomes: dict[int, object] = {}
    asyncio.run(backend.complete(requests, outcomes.__setitem__))
    sent = [i for i, o in outcomes.items() if isinstance(o, Completion)]
    # each call reserves (1000 + 100) tokens at $1/M = $0.0011 and spends as much: 5 fit in $0.0055
    assert len(sent) == backend.backend.sent == 5
    assert all(isinstance(outcomes[i], CallError) and outcomes[i].reason == limit.refusal for i in range(10) if i not in sent)
    assert limit.spent == pytest.approx(0.0055) and limit.reserved == pytest.approx(0.0)
    assert limit.stopped and limit.not_sent == 5
    assert "$0.0055 spent of --max-cost 0.0055, 5 call(s) not sent" in limit.line("c.sqlite")
    assert limit.admit("openai:m", requests[0], batch=True) is None  # stopped: even a cheaper batch request waits for a rerun


def test_a_limit_needs_a_price_and_a_positive_amount():
    with pytest.raises(SpendingLimitError, match="needs the price of openai:m, and none is known"):
        SpendLimited(Answering(), SpendingLimit(1.0, PriceTable({})))
    with pytest.raises(SpendingLimitError, match="positive"):
        SpendingLimit(0)


def test_the_docs_list_the_built_in_table_as_it_is():
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "cost.md").read_text()
    rows = {}
    for line in page.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 7 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = tuple(float(cell) for cell in cells[1:])
    expected = {name: (*price.rates(batch=False), price.rates(batch=True)[0], price.rates(batch=True)[1], price.rates(batch=True)[2])
                for name, price in DEFAULT_PRICES.items()}
    assert rows.keys() == expected.keys()
    for name, row in rows.items():
        assert row == pytest.approx(expected[name]), name


def test_a_local_model_is_said_to_be_local_not_of_unknown_cost():
    table = PriceTable()
    system, judge = Usage(calls=2, input_tokens=1_000, output_tokens=100), Usage(calls=3, input_tokens=300_000, output_tokens=30_000)
    block = usage_models([ModelUse("hf:tiny-model", ("system",), system), ModelUse("openai:gpt-5", ("judge",), judge)], table)
    local = block["models"]["hf:tiny-model"]
    assert local["local"] is True and local["cost"] is None and local["price_note"].startswith("a local model")
    assert block["cost"] == block["models"]["openai:gpt-5"]["cost"] > 0  # the API's spend, whole: the local model adds none
    line = cost_line(block)
    assert "hf:tiny-model: 1000 in (0 cached), 100 out (0 reasoning), local, no price per token;" in line
    assert "cost unknown" not in line and line.endswith(f"total cost ${block['cost']:.4f}")
    assert "local" not in usage_models([ModelUse("openai:x", ("judge",), judge)], table)["models"]["openai:x"]


def test_a_dry_run_says_a_local_model_is_local_and_keeps_the_total_known(tiny_model_dir):
    request = Request(messages=[{"role": "user", "content": "How do I start running?"}], max_tokens=16)
    out = io.StringIO()
    print_plan([Planned(f"hf:{tiny_model_dir}", "system", [request], 0), Planned("openai:gpt-5", "judge", [request], 0)], PriceTable(), out)
    first, *_, last = out.getvalue().splitlines()
    assert first.endswith("estimated cost local, no price per token")
    assert "estimated cost $" in last and "unknown" not in last
