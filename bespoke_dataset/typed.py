"""The typed layout: the folder `bespoke export` writes, read back as a source.

One parquet file per config, `<config>/test-00000-of-00001.parquet`, holding that config's records as
`load` gives them (the card's YAML declares the same files for `datasets.load_dataset`). Reading one
back is reading its rows: they were built, checked and typed when the export was written. Light: pyarrow
only, as the raw tables are read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from .errors import BespokeDataError

SPLIT = "test"
"""The one split of every config (`datasets` refuses the raw release's `all`)."""


def data_file(config: str) -> str:
    """Where an export keeps `config`, relative to its folder."""
    return f"{config}/{SPLIT}-00000-of-00001.parquet"


def is_typed(path: Path) -> bool:
    """Whether `path` holds an export: some config folder with its data file."""
    return any(path.glob(data_file("*")))


def typed_files(path: Path) -> list[Path]:
    """Every config's data file in an export, in a fixed order."""
    return sorted(path.glob(data_file("*")))


def typed_configs(path: Path) -> list[str]:
    """The configs an export holds."""
    return [file.parent.name for file in typed_files(path)]


def typed_rows(path: Path, config: str) -> list[dict[str, Any]]:
    """The records of `config` in the export at `path`; a BespokeDataError names a config it does not hold."""
    file = path / data_file(config)
    if not file.is_file():
        held = ", ".join(typed_configs(path)) or "none"
        raise BespokeDataError(data_file(config), f"this export (under {path}) has no {config!r} config (it holds: {held})")
    try:
        with pq.ParquetFile(file) as parquet:  # not pq.read_table, whose dataset layer imports pandas
            return parquet.read().to_pylist()
    except Exception as error:  # pyarrow raises several types for unreadable files
        raise BespokeDataError(data_file(config), f"not a readable parquet file ({error})") from error
