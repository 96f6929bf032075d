"""Reading a raw release folder in either public layout, as rows that remember where they came from.

Hub layout: seven parquet tables (`queries/*.parquet`, `chat_history/*.parquet`, ...). GitHub layout:
per-user files `evaluation_shot/{user}/query-id_{N}.json`, `personalized_rubric/{user}/query-id_{N}.txt`,
`gold_information/{user}/query-id_{N}.json` and optionally `meta_test/{user}/query-id_{N}.json`; it has no
histories and no query table. The layout is detected from what is in the folder.

A folder `bespoke export` wrote is the typed layout (`typed`): one parquet file per config,
`<config>/test-00000-of-00001.parquet`, holding that config's records as `load` gives them (its card's YAML
declares the same files for `datasets.load_dataset`). It is read back whole, config by config
(`typed_rows`): the records were built, checked and typed when the export was written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow.parquet as pq

from ..errors import BespokeDataError
from ..vocabulary import SPLIT

Layout = Literal["hub", "github", "typed"]


@dataclass(frozen=True)
class Table:
    folder: str
    columns: tuple[str, ...]
    hub_file: str
    """The parquet file's name in the public Hub repo (any ``*.parquet`` in the folder is read)."""
    payload: str | None = None
    """The column holding the payload (JSON or text); GitHub-layout files fill it with the file's text."""
    github_suffix: str | None = None
    """File suffix in the GitHub layout; None where the GitHub layout has no such table."""
    optional: tuple[str, ...] = ()
    """Columns read where a table has them (a history's own `timestamp`, which `bespoke build` writes)."""


TABLES: dict[str, Table] = {
    "queries": Table("queries", ("user", "query-id", "query", "gold_information_need"), "query_table.parquet"),
    "chat_history": Table("chat_history", ("user", "id", "history"), "chat_history.parquet", "history",
                          optional=("timestamp",)),
    "search_history": Table("search_history", ("user", "id", "history"), "search_history.parquet", "history",
                            optional=("timestamp",)),
    "gold_information": Table("gold_information", ("user", "query-id", "gold_information_value"),
                              "gold_information.parquet", "gold_information_value", ".json"),
    "personalized_rubric": Table("personalized_rubric", ("user", "query-id", "personalized_rubric_value"),
                                 "personalized_rubric.parquet", "personalized_rubric_value", ".txt"),
    "meta_test": Table("meta_test", ("user", "query-id", "meta_test_set_value"), "meta_test_set.parquet",
                       "meta_test_set_value", ".json"),
    "evaluation_shot": Table("evaluation_shot", ("user", "query-id", "evaluation_shot_value"),
                             "evaluation_shot.parquet", "evaluation_shot_value", ".json"),
}


@dataclass(frozen=True)
class RawRow:
    table: str
    where: str
    """Human-readable location: ``"evaluation_shot/evaluation_shot.parquet row 12"`` or a file path."""
    fields: dict[str, Any]


def detect_layout(path: Path) -> Layout:
    """``"typed"`` for an export (its config folders' data files; checked first, as its `queries/` and
    `meta_test/` folders hold parquet files too), ``"hub"`` when any table folder holds parquet files,
    ``"github"`` when `evaluation_shot/` holds per-user folders; otherwise a BespokeDataError saying what
    was expected."""
    if is_typed(path):
        return "typed"
    if any(next((path / t.folder).glob("*.parquet"), None) for t in TABLES.values()):
        return "hub"
    shots = path / "evaluation_shot"
    if shots.is_dir() and any(p.is_dir() for p in shots.iterdir()):
        return "github"
    raise BespokeDataError(str(path), "not a BESPOKE release: expected parquet tables such as "
                           "queries/*.parquet (Hub layout), evaluation_shot/{user}/query-id_{N}.json (GitHub layout) "
                           "or benchmark/test-00000-of-00001.parquet (a `bespoke export`)")


def table_files(path: Path, layout: Layout, table: str) -> list[Path]:
    """The files that make up `table` (empty when the table is absent)."""
    spec = TABLES[table]
    folder = path / spec.folder
    if layout == "typed":  # an export holds configs, not the raw tables
        return []
    if layout == "hub":
        return sorted(folder.glob("*.parquet"))
    if spec.github_suffix is None:
        return []
    return sorted(folder.glob(f"*/*{spec.github_suffix}"))


class RawRelease:
    """A local release folder; `rows(table)` reads one table, checking that it and its columns exist."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise BespokeDataError(str(self.path), "no such folder")
        self.layout: Layout = detect_layout(self.path)

    def has(self, table: str) -> bool:
        return bool(table_files(self.path, self.layout, table))

    def rows(self, table: str, columns: tuple[str, ...] | None = None) -> list[RawRow]:
        """Every row of `table` (restricted to `columns` in the Hub layout; else its columns and the optional
        ones it has), in file and row order."""
        spec = TABLES[table]
        files = table_files(self.path, self.layout, table)
        if not files:
            if self.layout == "github" and spec.github_suffix is None:
                raise BespokeDataError(f"{spec.folder}/", f"the GitHub layout has no {table} table; "
                                       "use a copy of the Hub repo for it")
            expected = (f"{spec.folder}/*.parquet" if self.layout == "hub"
                        else f"{spec.folder}/{{user}}/query-id_{{N}}{spec.github_suffix}")
            raise BespokeDataError(f"{spec.folder}/", f"missing table {table!r}: no files matching {expected} "
                                   f"under {self.path}")
        if self.layout == "hub":
            return [row for file in files
                    for row in self._parquet_rows(table, file, columns or spec.columns, () if columns else spec.optional)]
        return [self._github_row(table, file) for file in files]

    def _relative(self, file: Path) -> str:
        return file.relative_to(self.path).as_posix()

    def _parquet_rows(self, table: str, file: Path, columns: tuple[str, ...], optional: tuple[str, ...]) -> list[RawRow]:
        name = self._relative(file)
        try:
            present = set(pq.read_schema(file).names)
        except Exception as error:  # pyarrow raises several types for unreadable files
            raise BespokeDataError(name, f"not a readable parquet file ({error})") from error
        missing = [c for c in columns if c not in present]
        if missing:
            raise BespokeDataError(name, f"missing column(s) {missing} (has {sorted(present)})", field=missing[0])
        columns += tuple(c for c in optional if c in present)
        with pq.ParquetFile(file) as parquet:  # not pq.read_table, whose dataset layer imports pandas (~0.5 s)
            records = parquet.read(columns=list(columns)).to_pylist()
        return [RawRow(table, f"{name} row {i}", record) for i, record in enumerate(records)]

    def _github_row(self, table: str, file: Path) -> RawRow:
        spec = TABLES[table]
        assert spec.payload is not None
        name = self._relative(file)
        try:  # bytes decoded as they are: read_text would turn CRLF into LF, altering the payload
            text = file.read_bytes().decode("utf-8")
        except UnicodeDecodeError as error:
            raise BespokeDataError(name, f"not UTF-8 text ({error})") from error
        return RawRow(table, name, {"user": file.parent.name, "query-id": file.stem, spec.payload: text})


# --- the typed layout: a folder `bespoke export` wrote ------------------------------------------------

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
