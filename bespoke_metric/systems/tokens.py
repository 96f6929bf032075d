"""Token counting for budgets: the system model's own tokenizer, OpenAI's encodings, or an estimate.

A Hugging Face tokenizer is found with `bespoke_metric.backends.local.model_files.locate_model` first (a local folder,
the Hub cache, or a download of the tokenizer files alone), so a tokenizer that is not here and cannot be
fetched is a `ModelNotFoundError` in seconds, not a minute of retries.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bespoke_dataset.atomic import atomic_write_text
from bespoke_metric.backends.local.gguf_cache import load_tokenizer
from bespoke_metric.backends.local.model_files import ModelNotFoundError, locate_model_files
from bespoke_metric.backends.registry import Spec, as_spec

log = logging.getLogger(__name__)

TOKENIZER_FILES = ("*.json", "*.model", "*.txt", "*.tiktoken", "*.py")
"""The files a tokenizer loads from (vocabularies, merges, configs, custom code), never the weights."""

_OPENAI_MODEL = re.compile(r"^(gpt-|o\d|chatgpt-|text-|davinci|babbage|ft:gpt)", re.IGNORECASE)


class TokenCounter:
    """Counts and truncates text in the tokens of one tokenizer.

    `encode` maps text to a token list and `decode` maps a prefix of it back to text: a Hugging Face
    tokenizer (`TokenCounter.from_hf`), a tiktoken-style encoding, or the documented character
    approximation (`TokenCounter.approximate`)."""

    def __init__(self, name: str, encode: Callable[[str], Sequence[Any]], decode: Callable[[Sequence[Any]], str]):
        self.name = name
        self._encode = encode
        self._decode = decode

    @classmethod
    def from_hf(cls, tokenizer: Any, name: str | None = None) -> TokenCounter:
        return cls(
            name or f"hf:{getattr(tokenizer, 'name_or_path', type(tokenizer).__name__)}",
            lambda text: tokenizer.encode(text, add_special_tokens=False),
            lambda ids: tokenizer.decode(ids, skip_special_tokens=True),
        )

    @classmethod
    def approximate(cls, chars_per_token: float = 3.0) -> TokenCounter:
        """One token per `chars_per_token` characters. English averages about four characters per token
        in OpenAI's encodings; three over-counts on purpose, so a budget is kept, not exceeded."""
        step = max(1, int(chars_per_token))

        def encode(text: str) -> list[str]:
            return [text[i : i + step] for i in range(0, len(text), step)]

        return cls(f"approx:{step}-chars-per-token", encode, "".join)

    def count(self, text: str) -> int:
        return len(self._encode(text)) if text else 0

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix (by tokens) that counts at most `max_tokens` tokens."""
        if max_tokens <= 0:
            return ""
        tokens = self._encode(text)
        if len(tokens) <= max_tokens:
            return text
        keep = max_tokens
        # Decoding then re-encoding can merge or split tokens at the cut; shrink until it fits.
        while keep > 0:
            prefix = self._decode(tokens[:keep])
            if self.count(prefix) <= max_tokens:
                return prefix
            keep -= 1
        return ""


@functools.lru_cache(maxsize=None)  # building an encoding's rank tables takes tens of ms; every run of a process shares it
def openai_token_counter(model: str) -> TokenCounter:
    """The token counter of an OpenAI model.

    `bpe-openai` ships OpenAI's encodings (`o200k_base`, `cl100k_base`, ...) inside its wheel and counts
    the same tokens as `tiktoken`, offline. `tiktoken` is used when bpe-openai is not installed; it
    downloads its encoding files on first use, so it fails offline unless they are cached. Models unknown
    to the package get `o200k_base`, the encoding of gpt-4o and later. With neither package, counts fall
    back to `TokenCounter.approximate()` (one token per three characters: an over-count for English, so
    budgets are kept, not exceeded), with a warning."""
    for package in ("bpe_openai", "tiktoken"):
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        try:
            try:
                encoding = module.encoding_for_model(model)
            except (KeyError, ValueError):
                encoding = module.get_encoding("o200k_base")
        except (OSError, ValueError, KeyError) as error:  # tiktoken offline: its files cannot be fetched
            log.debug("%s cannot load an encoding for %s: %s", package, model, error)
            continue
        return TokenCounter(f"{package}:{encoding.name}", encoding.encode, encoding.decode)
    log.warning("neither bpe-openai nor tiktoken can count tokens for %s; approximating 3 characters a token", model)
    return TokenCounter.approximate()


def hf_token_counter(name: str, revision: str | None = None) -> TokenCounter:
    """The counter of the Hugging Face tokenizer `name` (a Hub id, a folder, or a GGUF file, which holds its
    tokenizer); `ModelNotFoundError` naming it when it is neither here nor downloadable."""
    files = locate_model_files(name, revision, allow_patterns=TOKENIZER_FILES)
    return TokenCounter.from_hf(load_tokenizer(files), f"hf:{name}")


def token_counter(spec: str | Spec, *, tokenizer: str | None = None, revision: str | None = None) -> TokenCounter:
    """The token counter of a model spec (`hf:`, `vllm:`, `openai:`), or of the tokenizer named by
    `tokenizer` (a Hub id or folder, for an `openai:` endpoint serving an open model).

    A tokenizer that was asked for (`tokenizer`, or the model of an `hf:`/`vllm:` spec) and cannot be had
    is a `ModelNotFoundError`; an `openai:` model that is neither an OpenAI model nor a tokenizer to be
    found is counted in OpenAI's `o200k_base`, with a warning."""
    parsed = as_spec(spec)
    model = parsed.model
    revision = revision or (None if tokenizer else parsed.revision)  # a pinned hf:/vllm: model's tokenizer is pinned too
    if tokenizer or parsed.engine.own_tokenizer:
        name = tokenizer or model
        try:
            return hf_token_counter(name, revision)
        except ModelNotFoundError as error:
            if not tokenizer:  # the model itself is not to be had: say so, not what its tokenizer is for
                raise
            raise ModelNotFoundError(f"the tokenizer that counts token budgets (--tokenizer) is not available: {error}") from None
    if _OPENAI_MODEL.match(model):
        return openai_token_counter(model)
    # An OpenAI-compatible server of an open model usually serves it under its Hub id.
    try:
        return hf_token_counter(model, revision)
    except (OSError, ValueError) as error:  # ModelNotFoundError is a ValueError
        log.warning("no tokenizer found for %s (%s); using OpenAI's o200k_base counts (pass --tokenizer to fix)", model, error)
        return openai_token_counter(model)


@functools.lru_cache(maxsize=None)
def _counter(spec: str | Spec) -> TokenCounter:
    return token_counter(spec)


def counted_prompt_tokens(spec: str | Spec, messages: Sequence[Mapping[str, str]]) -> int:
    """A prompt's input tokens in the model's own tokens, as OpenAI counts chat prompts (what a spending
    limit and a dry run's estimate count)."""
    from bespoke_metric.calls.pricing import prompt_tokens

    return prompt_tokens(messages, _counter(spec).count)


TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
"""Where tiktoken downloads an encoding's file on first use (its cache names the file by this URL's SHA-1)."""


def seed_tiktoken_cache(folder: str | os.PathLike[str], name: str = "o200k_base") -> Path:
    """tiktoken's cached file of encoding `name`, written into `folder` from the copy `bpe-openai` ships (the
    same bytes, gzipped), so tiktoken works offline with `TIKTOKEN_CACHE_DIR=folder` (inspect's `openai/` and
    `mockllm/` models count tokens with it). The file's path; an `ImportError` without bpe-openai."""
    import bpe_openai

    packed = Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz"
    target = Path(folder) / hashlib.sha1(TIKTOKEN_URL.format(name=name).encode()).hexdigest()
    if not target.exists():
        atomic_write_text(target, gzip.decompress(packed.read_bytes()).decode("ascii"))  # base64 lines: text
    return target
