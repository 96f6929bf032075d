"""`load(config, source)`: one config of BESPOKE as a typed `datasets.Dataset` (split `test`), cached."""

from __future__ import annotations

import os
from pathlib import Path

import datasets

from .builder import SPLIT, BespokeBuilder
from .errors import BespokeDataError
from .features import CONFIGS
from .source import DEFAULT_SOURCE, ResolvedSource, resolve_source


def default_cache_dir() -> Path:
    """`$BESPOKE_CACHE` if set, else a `bespoke` folder in the `datasets` cache."""
    env = os.environ.get("BESPOKE_CACHE")
    return Path(env) if env else Path(datasets.config.HF_DATASETS_CACHE) / "bespoke"


def load(config: str, source: str | Path | ResolvedSource = DEFAULT_SOURCE, revision: str | None = None,
         cache_dir: str | Path | None = None) -> datasets.Dataset:
    """Load one config (see `CONFIGS`) from a source (Hub repo id, local folder in either layout, or
    ``"sample"``), building it into the Arrow cache the first time.

    The cache key includes a fingerprint of the source's files and the package version, so a second load
    of unchanged data is served from the cache and changed data or a new version is rebuilt.
    `cache_dir` also holds Hub downloads when given.
    """
    if config not in CONFIGS:
        raise ValueError(f"unknown config {config!r}; choose one of {', '.join(CONFIGS)}")
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    resolved = source if isinstance(source, ResolvedSource) else resolve_source(
        source, revision, hub_cache_dir=None if cache_dir is None else cache / "hub")
    if config == "histories" and resolved.layout == "github":
        raise BespokeDataError(str(resolved.path), "the GitHub layout has no histories; load 'histories' from "
                               "the Hub repo or a local copy of it")
    builder = BespokeBuilder(resolved, config, cache_dir=cache)
    builder.download_and_prepare()
    dataset = builder.as_dataset(split=SPLIT)
    assert isinstance(dataset, datasets.Dataset)
    return dataset
