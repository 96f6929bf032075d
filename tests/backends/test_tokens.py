"""Token counters for budgets: a real tokenizer, OpenAI's offline encodings, the estimate, and tokenizers
that are not available offline failing in seconds with their name (the Hub is unreachable here, and
HF_HUB_OFFLINE with an empty Hub cache makes that certain)."""

from __future__ import annotations

import logging
from pathlib import Path

import huggingface_hub.constants
import pytest
from transformers import AutoTokenizer

from bespoke_metric.backends.local.model_files import ModelNotFoundError
from bespoke_metric.systems.tokens import TokenCounter, openai_token_counter, token_counter


@pytest.fixture(scope="module")
def counter(tiny_model_dir: Path) -> TokenCounter:
    return TokenCounter.from_hf(AutoTokenizer.from_pretrained(tiny_model_dir))


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No Hub, and a Hub cache that holds nothing."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))


@pytest.mark.slow
def test_truncate_gives_the_longest_prefix_within_the_budget(counter: TokenCounter) -> None:
    text = "Crème brûlée, naïve café — 東京 🚀 " * 20
    for budget in (1, 7, 50, 10_000):
        cut = counter.truncate(text, budget)
        assert counter.count(cut) <= budget
        assert text.startswith(cut)
    assert counter.truncate(text, 10_000) == text
    assert counter.count(counter.truncate(text, 50)) >= 45  # not needlessly short


def test_approximate_counter_overcounts_english() -> None:
    approx = TokenCounter.approximate()
    text = "The quick brown fox jumps over the lazy dog. " * 10
    assert approx.count(text) == -(-len(text) // 3)
    assert approx.truncate(text, 10) == text[:30]


def test_openai_counters_work_offline() -> None:
    # bpe-openai ships OpenAI's encodings, so counts work offline; "hello world" is two tokens in o200k.
    counter = openai_token_counter("gpt-4o")
    assert counter.count("hello world") == 2
    assert counter.name.endswith("o200k_base")
    assert token_counter("openai:gpt-5").name.endswith("o200k_base")


def test_a_local_tokenizer_counts_like_the_model(tiny_model_dir: Path, counter: TokenCounter, offline: None) -> None:
    text = "Sourdough starter hydration, explained."
    for found in (token_counter(f"hf:{tiny_model_dir}"), token_counter("openai:served-model", tokenizer=str(tiny_model_dir))):
        assert found.name == f"hf:{tiny_model_dir}"
        assert found.count(text) == counter.count(text)


def test_a_tokenizer_asked_for_and_not_here_is_named(offline: None) -> None:
    with pytest.raises(ModelNotFoundError, match=r"^model org/unknown is not in the local Hub cache and HF_HUB_OFFLINE is set$"):
        token_counter("hf:org/unknown")  # the model itself: named as the model
    with pytest.raises(ModelNotFoundError, match=r"^the tokenizer that counts token budgets \(--tokenizer\) is not available: "
                                                 r"model org/unknown is not in the local Hub cache"):
        token_counter("openai:served-model", tokenizer="org/unknown")


def test_an_open_model_behind_openai_without_its_tokenizer_counts_in_o200k(offline: None, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="bespoke_metric.systems.tokens"):
        found = token_counter("openai:org/unknown")
    assert found.name.endswith("o200k_base")
    assert "no tokenizer found for org/unknown" in caplog.text
    assert "pass --tokenizer to fix" in caplog.text
