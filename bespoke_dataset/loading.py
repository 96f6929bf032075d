"""`load(config, source)`: one config of BESPOKE as a typed `datasets.Dataset` (split `test`), cached."""

from __future__ import annotations

import os
from pathlib import Path

import datasets
from datasets.exceptions import DatasetGenerationError

from .builder import SPLIT, BespokeBuilder
from .errors import BespokeDataError
from .features import CONFIGS
from .raw import RawRelease
from .source import DEFAULT_SOURCE, ResolvedSource, resolve_source


def default_cache_dir() -> Path:
    """`$BESPOKE_CACHE` if set, else a `bespoke` folder in the `datasets` cache."""
    env = os.environ.get("BESPOKE_CACHE")
    return Path(env) if env else Path(datasets.config.HF_DATASETS_CACHE) / "bespoke"


def available_configs(source: ResolvedSource) -> list[str]:
    """The configs a source can give: all of them from the Hub layout; from the GitHub layout all but
    `histories`, and `meta_test` only when its files are there."""
    if source.layout == "hub":
        return list(CONFIGS)
    has_meta_test = RawRelease(source.path).has("meta_test")
    return [c for c in CONFIGS if c != "histories" and (c != "meta_test" or has_meta_test)]


def load(config: str, source: str | Path | ResolvedSource = DEFAULT_SOURCE, revision: str | None = None,
         cache_dir: str | Path | None = None) -> datasets.Dataset:
    """Load one config (see `CONFIGS`) from a source (Hub repo id, local folder in either layout, or
    ``"sample"``), building it into the Arrow cache the first time.

    The cache key includes a fingerprint of the source's files and the package version, so a second load
    of unchanged data is served from the cache and changed data or a new version is rebuilt.
    `cache_dir` also holds Hub downloads when given. Problems in the data raise BespokeDataError or warn
    (BespokeDataWarning) while a config is built; a load served from the cache does not repeat the warnings.
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
    try:
        builder.download_and_prepare()
    except DatasetGenerationError as error:
        # `datasets` wraps what the generator raised; our error already names table, row and field
        if isinstance(error.__cause__, BespokeDataError):
            raise error.__cause__ from None
        raise
    dataset = builder.as_dataset(split=SPLIT)
    assert isinstance(dataset, datasets.Dataset)
    return dataset
