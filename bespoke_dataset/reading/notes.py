"""What reading a release met, table by table: the forms its rows came in and every fallback taken.

The readers record here instead of warning per row. `Notes.warn` then gives one `BespokeDataWarning` per
table that fell back (how many rows, and why, with the first places), and `report.check` prints the same
notes as figures. Each fact is kept once per place, so a table that two configs read is counted once.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from ..errors import BespokeDataWarning

SHOWN_PLACES = 3
"""Places named per fallback reason in a warning or a check."""


def _place(where: str, field_name: str | None, detail: str | None) -> str:
    place = where if field_name is None else f"{where}, field {field_name}"
    return place if detail is None else f"{place}: {detail}"


@dataclass
class Fallback:
    """One reason a table's rows fell back, and where."""

    reason: str
    rows: dict[str, None] = field(default_factory=dict)
    """The rows it happened in (an ordered set)."""
    places: dict[str, None] = field(default_factory=dict)
    """Each occurrence: its row, field and detail (an ordered set)."""

    def shown(self) -> str:
        """The first places, and how many more."""
        places = list(self.places)
        more = f"; and {len(places) - SHOWN_PLACES} more" if len(places) > SHOWN_PLACES else ""
        return "; ".join(places[:SHOWN_PLACES]) + more


@dataclass
class TableNotes:
    """What was met reading one table."""

    table: str
    unit: str = "rows"
    """What a row of it is called in messages (``rows``, ``sessions``, ``queries``)."""
    rows: dict[str, None] = field(default_factory=dict)
    forms: dict[str, dict[str, None]] = field(default_factory=dict)
    """How rows were read (``one row per query``, ``transcript``, ``JSON list``): form -> rows."""
    counts: dict[str, dict[str, None]] = field(default_factory=dict)
    """Facts worth counting that lost nothing (``scores written as text``): what -> places."""
    fallbacks: dict[str, Fallback] = field(default_factory=dict)

    def fell_back(self) -> int:
        """Rows with at least one fallback."""
        return len({row for fallback in self.fallbacks.values() for row in fallback.rows})

    def summary(self) -> str:
        """How many rows fell back, then a line per reason with its count and first places."""
        lines = [f"{self.table}: {self.fell_back()} of {len(self.rows)} {self.unit} fell back"]
        lines += [f"  {reason}: {len(f.places)} ({f.shown()})" for reason, f in self.fallbacks.items()]
        return "\n".join(lines)


class Notes:
    """The notes of one read of a release (one `build_records` call, or a whole `report.check`)."""

    def __init__(self) -> None:
        self.tables: dict[str, TableNotes] = {}

    def table(self, table: str, unit: str = "rows") -> TableNotes:
        notes = self.tables.get(table)
        if notes is None:
            notes = self.tables[table] = TableNotes(table, unit)
        return notes

    def row(self, table: str, where: str, unit: str = "rows") -> None:
        self.table(table, unit).rows[where] = None

    def form(self, table: str, form: str, where: str) -> None:
        self.table(table).forms.setdefault(form, {})[where] = None

    def count(self, table: str, what: str, where: str) -> None:
        self.table(table).counts.setdefault(what, {})[where] = None

    def fallback(self, table: str, reason: str, where: str, field_name: str | None = None,
                 detail: str | None = None) -> None:
        """Row `where` of `table` fell back for `reason` (generic, so rows group under it); `field_name` and
        `detail` (the value at fault) say exactly where."""
        notes = self.table(table)
        fallback = notes.fallbacks.get(reason)
        if fallback is None:
            fallback = notes.fallbacks[reason] = Fallback(reason)
        notes.rows.setdefault(where, None)
        fallback.rows[where] = None
        fallback.places[_place(where, field_name, detail)] = None

    def warn(self, stacklevel: int = 3) -> None:
        """One BespokeDataWarning per table with a fallback."""
        for notes in self.tables.values():
            if notes.fallbacks:
                warnings.warn(notes.summary(), BespokeDataWarning, stacklevel=stacklevel)
