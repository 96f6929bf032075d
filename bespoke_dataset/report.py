"""`check(source)`: what was read from each table of a release, and every fallback taken (`bespoke info
--check`).

Every config the source has is built from the raw tables (no `datasets`, no cache) with one `Notes`, and
its figures are read off the records and the notes: rows per table, sessions with a time, chats with turns,
searches with a query, judged responses and claims per query (min/median/max), scores written as text or
dropped, ids normalised, the forms rows came in, and the fallbacks with their first places.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import BespokeDataError
from .keys import query_key
from .reading.notes import Notes, TableNotes
from .reading.raw import TABLES, RawRelease
from .reading.records import BENCHMARK, Record, build_records
from .rows import available_configs
from .source import DEFAULT_SOURCE, ResolvedSource, resolve_source

_JUDGED = {"rj_pairs": "evaluation_shot", "meta_test": "meta_test"}


@dataclass(frozen=True)
class Spread:
    """Smallest, median and largest of some counts (one per query)."""

    min: int
    median: float
    max: int

    @classmethod
    def of(cls, values: list[int]) -> "Spread | None":
        return cls(min(values), statistics.median(values), max(values)) if values else None

    def __str__(self) -> str:
        median = int(self.median) if float(self.median).is_integer() else self.median
        return f"{self.min}/{median}/{self.max}"


@dataclass
class TableCheck:
    """What was read from one table (or the joined `benchmark`)."""

    table: str
    unit: str
    rows: int
    figures: dict[str, Any] = field(default_factory=dict)
    """Read off the records: ``{"with a time": 40, "responses per query": Spread(5, 5, 5), ...}``."""
    forms: dict[str, int] = field(default_factory=dict)
    """How many rows came in each form (``transcript``, ``JSON list``, ``one row per query``)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Facts that lost nothing: ``scores written as text``, ``query ids normalised``, ..."""
    fallbacks: dict[str, int] = field(default_factory=dict)
    """Reason -> how many times it happened."""
    places: dict[str, str] = field(default_factory=dict)
    """Reason -> its first places."""
    fell_back: int = 0
    """Rows with at least one fallback."""

    @classmethod
    def of(cls, notes: TableNotes, figures: dict[str, Any]) -> "TableCheck":
        return cls(notes.table, notes.unit, len(notes.rows), figures,
                   {form: len(rows) for form, rows in notes.forms.items()},
                   {what: len(places) for what, places in notes.counts.items()},
                   {reason: len(f.places) for reason, f in notes.fallbacks.items()},
                   {reason: f.shown() for reason, f in notes.fallbacks.items()}, notes.fell_back())

    def lines(self) -> list[str]:
        figures = [f"{value} {name}" if isinstance(value, int) else f"{name} {value}"
                   for name, value in self.figures.items() if value is not None]
        head = f"{self.table:<20} {self.rows} {self.unit}" + "".join(f", {figure}" for figure in figures)
        lines = [head]
        if self.forms:
            lines.append("  read as: " + ", ".join(f"{form} {n}" for form, n in self.forms.items()))
        if self.counts:
            lines.append("  " + ", ".join(f"{what} {n}" for what, n in self.counts.items()))
        if self.fallbacks:
            lines.append(f"  fell back: {self.fell_back} of {self.rows} {self.unit}")
            lines += [f"    {reason}: {n} ({self.places[reason]})" for reason, n in self.fallbacks.items()]
        return lines


@dataclass
class CheckReport:
    """The check of a whole release: a `TableCheck` per table read, the rows of each config, and the
    errors of configs that could not be built at all."""

    source: ResolvedSource
    tables: list[TableCheck]
    configs: dict[str, int]
    errors: dict[str, str] = field(default_factory=dict)
    """Config -> the BespokeDataError that stopped it."""

    @property
    def fallbacks(self) -> int:
        """Rows that fell back, over every table."""
        return sum(table.fell_back for table in self.tables)

    def table(self, name: str) -> TableCheck:
        return next(t for t in self.tables if t.table == name)

    def format(self) -> str:
        """What `bespoke info --check` prints."""
        source = self.source
        lines = [f"source: {source.source} ({source.layout} layout)  revision: {source.revision or 'local'}  "
                 f"fingerprint: {source.fingerprint[:16]}"]
        for table in self.tables:
            lines += table.lines()
        lines.append("configs: " + ", ".join(f"{config} {n}" for config, n in self.configs.items()))
        lines += [f"error: {config}: {message}" for config, message in self.errors.items()]
        tables = sum(1 for t in self.tables if t.fell_back)
        lines.append(f"{self.fallbacks} row(s) fell back in {tables} table(s)" if self.fallbacks else "no fallback")
        return "\n".join(lines)


def _per_query(records: list[Record]) -> Spread | None:
    """How many of `records` each query has."""
    return Spread.of(list(Counter(query_key(r["user"], r["query_id"]) for r in records).values()))


def _figures(table: str, built: dict[str, list[Record]]) -> dict[str, Any]:
    """The figures of `table` read off the records of the configs built."""
    if table in ("chat_history", "search_history") and "histories" in built:
        source = "chat" if table == "chat_history" else "search"
        sessions = [r for r in built["histories"] if r["source"] == source]
        figures: dict[str, Any] = {"with a time": sum(1 for s in sessions if s["timestamp"])}
        if source == "chat":
            figures["with turns"] = sum(1 for s in sessions if s["turns"])
        else:
            figures["with a search query"] = sum(1 for s in sessions if s["search_queries"])
        return figures
    config = next((c for c, t in _JUDGED.items() if t == table), None)
    if config is not None and config in built:
        records = built[config]
        return {"queries": len({query_key(r["user"], r["query_id"]) for r in records}),
                "responses per query (min/median/max)": _per_query(records)}
    if table == "gold_information" and "gold_claims" in built:
        return {"claims per query (min/median/max)": Spread.of([len(r["claims"]) for r in built["gold_claims"]])}
    if table == BENCHMARK and BENCHMARK in built:
        return {"complete": len(built[BENCHMARK])}
    return {}


def check(source: str | Path | ResolvedSource = DEFAULT_SOURCE, revision: str | None = None) -> CheckReport:
    """Read every config of `source` and report, per table, what was read and what fell back (see the module
    docstring). Warns nothing: the report says it all. A config whose data cannot be read at all is
    reported in `errors` (the others are still checked)."""
    resolved = source if isinstance(source, ResolvedSource) else resolve_source(source, revision)
    release = RawRelease(resolved.path)
    notes = Notes()
    built: dict[str, list[Record]] = {}
    errors: dict[str, str] = {}
    for config in available_configs(resolved):
        try:
            built[config] = build_records(config, release, notes)
        except BespokeDataError as error:
            errors[config] = str(error)
    order = [*TABLES, BENCHMARK]
    tables = [TableCheck.of(notes.tables[name], _figures(name, built)) for name in order if name in notes.tables]
    return CheckReport(resolved, tables, {config: len(records) for config, records in built.items()}, errors)
