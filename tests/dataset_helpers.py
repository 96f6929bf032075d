"""Helpers for the data tests: copy a synthetic release and corrupt one of its tables."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

Rows = list[dict[str, Any]]


def copy_release(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def edit_table(release: Path, relative: str, edit: Callable[[Rows], Rows]) -> None:
    """Rewrite one parquet table of a release through `edit(rows) -> rows`."""
    path = release / relative
    table = pq.read_table(path)
    rows = edit(table.to_pylist())
    same_columns = bool(rows) and list(rows[0]) == table.schema.names
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema if same_columns else None), path)
