"""The `datasets` builder for every config. datasets 5 refuses loading scripts, so it is instantiated
directly (see `loading.load`) with a cache hash derived from the data and the package version."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets
from datasets.builder import Key

from .features import CONFIGS, DESCRIPTIONS, FEATURES
from .raw import RawRelease
from .records import build_records
from .source import ResolvedSource
from .version import __version__

CITATION = """@misc{kim2025bespokebenchmarksearchaugmentedlarge,
  title={BESPOKE: Benchmark for Search-Augmented Large Language Model Personalization via Diagnostic Feedback},
  author={Hyunseo Kim and Sangam Lee and Kwangwook Seo and Dongha Lee},
  year={2025},
  eprint={2509.21106},
  archivePrefix={arXiv},
  primaryClass={cs.CL},
  url={https://arxiv.org/abs/2509.21106}
}"""
HOMEPAGE = "https://huggingface.co/datasets/yonsei-dli/BESPOKE"
SPLIT = "test"
RECORDS_VERSION = "1"
"""Bump when the way records are built changes without a package version change."""

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
        super().__init__(cache_dir=None if cache_dir is None else str(cache_dir), dataset_name="bespoke",
                         config_name=config_name, hash=cache_hash(source))

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(description=DESCRIPTIONS[self.config.name], features=FEATURES[self.config.name],
                                    citation=CITATION, homepage=HOMEPAGE, license="MIT")

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        return [datasets.SplitGenerator(name=SPLIT)]

    def _generate_examples(self) -> Iterator[tuple[Key, dict[str, Any]]]:
        records = build_records(self.config.name, RawRelease(self.source.path))
        for index, record in enumerate(records):
            yield Key(0, index), record
