"""`load(config, source)`: one config of BESPOKE as a typed `datasets.Dataset` (split `test`), cached."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import datasets
from datasets.exceptions import DatasetGenerationError

from .builder import WARNINGS_FILE, BespokeBuilder
from .errors import BespokeDataError, BespokeDataWarning
from .rows import resolve_config_source
from .source import DEFAULT_SOURCE, ResolvedSource, default_cache_dir
from .vocabulary import SPLIT

DATASETS_CACHE = "datasets"
"""The `default_cache_dir` kind of built configs: ``$BESPOKE_CACHE/datasets`` (``~/.cache/bespoke/datasets``)."""
_CATEGORIES: dict[str, type[Warning]] = {BespokeDataWarning.__name__: BespokeDataWarning}


def _build_warnings(builder: BespokeBuilder) -> list[tuple[type[Warning], str]]:
    """The warnings saved with a built config (see `builder.WARNINGS_FILE`); none for a build without it."""
    file = Path(builder.cache_dir) / WARNINGS_FILE
    if not file.is_file():
        return []
    saved = json.loads(file.read_text(encoding="utf-8"))["warnings"]
    return [(_CATEGORIES.get(w["category"], BespokeDataWarning), w["message"]) for w in saved]


def load(config: str, source: str | Path | ResolvedSource = DEFAULT_SOURCE, revision: str | None = None,
         cache_dir: str | Path | None = None) -> datasets.Dataset:
    """Load one config (see `CONFIGS`) from a source (Hub repo id, local folder in either layout, or
    ``"sample"``), building it into the Arrow cache the first time.

    The cache key includes a fingerprint of the source's files and the package version, so a second load
    of unchanged data is served from the cache and changed data or a new version is rebuilt.
    `cache_dir` (default: `default_cache_dir("datasets")`) also holds Hub downloads when given. Problems in
    the data raise BespokeDataError, or warn (BespokeDataWarning) about what was dropped; the warnings are
    saved with the build, and every load of it, from the cache too, shows them again.
    """
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir(DATASETS_CACHE)
    resolved = resolve_config_source(config, source, revision,
                                     hub_cache_dir=None if cache_dir is None else cache / "hub")
    builder = BespokeBuilder(resolved, config, cache_dir=cache)
    try:
        builder.download_and_prepare()
    except DatasetGenerationError as error:
        # `datasets` wraps what the generator raised; our error already names table, row and field
        if isinstance(error.__cause__, BespokeDataError):
            raise error.__cause__ from None
        raise
    for category, message in _build_warnings(builder):
        warnings.warn(message, category, stacklevel=2)
    dataset = builder.as_dataset(split=SPLIT)
    assert isinstance(dataset, datasets.Dataset)
    return dataset
