"""The `datasets` builder for every config. datasets 5 refuses loading scripts, so it is instantiated
directly (see `loading.load`) with a cache hash derived from the data and the package version."""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets
from datasets.builder import Key

from .errors import BespokeDataWarning
from .features import CONFIGS, DESCRIPTIONS, FEATURES
from .reading.raw import RawRelease
from .reading.records import build_records
from .registration import CITATION, HOMEPAGE
from .source import ResolvedSource
from .version import __version__
from .vocabulary import SPLIT

RECORDS_VERSION = "4"
"""Bump when the way records are built changes without a package version change."""

WARNINGS_FILE = "bespoke_warnings.json"
"""Saved in each built config's cache folder: the BespokeDataWarnings its build emitted, which `loading.load`
emits again whenever it serves that build."""

BUILDER_NAME = "bespoke"
"""The builder's and the dataset's name (`ds.info.builder_name`, `ds.info.dataset_name`)."""

_RELEASE = re.match(r"\d+\.\d+\.\d+", __version__)
VERSION = datasets.Version(_RELEASE.group(0) if _RELEASE else "0.0.0")


def cache_hash(source: ResolvedSource) -> str:
    """Cache key of a build: the data's fingerprint, the package version and the records version."""
    key = f"{source.fingerprint}|{source.layout}|{__version__}|{RECORDS_VERSION}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


class BespokeBuilder(datasets.GeneratorBasedBuilder):
    """Builds one config of BESPOKE from a resolved source into the Arrow cache (one split, `test`)."""

    BUILDER_CONFIGS = [datasets.BuilderConfig(name=name, version=VERSION, description=DESCRIPTIONS[name])
                       for name in CONFIGS]

    def __init__(self, source: ResolvedSource, config_name: str, cache_dir: str | Path | None = None) -> None:
        self.source = source
        super().__init__(cache_dir=None if cache_dir is None else str(cache_dir), dataset_name=BUILDER_NAME,
                         config_name=config_name, hash=cache_hash(source))
        # `datasets` names a builder after the module that defines it ("builder"), and a cached build's info
        # keeps the name it was built under: both are set here
        self.name = self.info.builder_name = BUILDER_NAME

    def _download_and_prepare(self, dl_manager: Any, verification_mode: Any, **kwargs: Any) -> None:
        """Build as `datasets` does, saving the BespokeDataWarnings of the build (category and text) in
        WARNINGS_FILE inside the folder being prepared, so the file is part of the cached build. They are not
        shown here: `loading.load` shows them from the file, for this build and for every cached load. Other
        warnings pass through; if the build fails, every warning is shown."""
        error: BaseException | None = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                super()._download_and_prepare(dl_manager, verification_mode, **kwargs)
            except BaseException as raised:  # noqa: BLE001 -- shown with every warning, then raised again below
                error = raised
        saved = []
        for warning in caught:
            if issubclass(warning.category, BespokeDataWarning) and error is None:
                saved.append({"category": warning.category.__name__, "message": str(warning.message)})
            else:
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno,
                                       source=warning.source)
        if error is not None:
            raise error
        Path(self._output_dir, WARNINGS_FILE).write_text(json.dumps({"warnings": saved}, indent=1), encoding="utf-8")

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(description=DESCRIPTIONS[self.config.name], features=FEATURES[self.config.name],
                                    citation=CITATION, homepage=HOMEPAGE, license="MIT")

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        return [datasets.SplitGenerator(name=SPLIT)]

    def _generate_examples(self) -> Iterator[tuple[Key, dict[str, Any]]]:
        records = build_records(self.config.name, RawRelease(self.source.path))
        for index, record in enumerate(records):
            yield Key(0, index), record
