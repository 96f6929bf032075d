"""Helpers for the data tests: copy a synthetic release, corrupt one of its tables, a stand-in HfApi."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


class FakeHfApi:
    """Stands in for the Hub at the HfApi boundary; records what would have been sent."""

    instances: list[FakeHfApi] = []

    def __init__(self, token=None):
        self.token = token
        self.calls: list[tuple[str, dict]] = []
        FakeHfApi.instances.append(self)

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", kwargs))
        return type("CommitInfo", (), {"commit_url": f"https://huggingface.co/datasets/{kwargs['repo_id']}/commit/1"})()
