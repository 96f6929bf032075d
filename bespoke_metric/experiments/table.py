"""The paper's table from a sweep's cells: one row per system and context, each of the five numbers and
the average with its 95% interval, the paired difference to the same system's `none` row with its
p-value (the leaderboard's paired test), and, on a noise axis, the relative drop of the average.

The pairing and the drop are pure functions of the cells' axis values (`baselines`, `relative_drops`),
so they are the same for any axis a sweep is given.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from bespoke_metric.analysis.leaderboard import COLUMNS, LABELS, Entry, compare, system_row
from bespoke_metric.backends.registry import model_label
from bespoke_metric.results import stats
from bespoke_metric.results.caveats import marks

from .grid import BASELINE_CONTEXT, CONTEXT, MODEL, NOISE, Axis, Cell
from .outputs import FAILED

HEADINGS: dict[str, str] = {**LABELS, "explanation_style": "Style"}
"""Column headings as the paper's tables write them."""


@dataclass(frozen=True)
class TableRow:
    """One cell of the sweep as a row of the table; figures are None for a cell without results."""

    cell: Cell
    status: str
    values: Mapping[str, float | None]
    cis: Mapping[str, tuple[float, float] | None]
    versus_none: Mapping[str, Mapping[str, Any]] | None = None
    """`compare(this, the same system's none row)["metrics"]`: per column `difference`, `ci`, `p_value`, `n`."""
    noise_drop: float | None = None
    """The average's relative change, in percent, from the same system at the lowest noise."""
    items: int = 0
    failures: int = 0
    model: str = ""
    """The cell's model as the table names it (`shown_models`)."""


def shown_models(cells: Sequence[Cell], entries: Mapping[str, Entry]) -> dict[str, str]:
    """Each model spec of the grid -> its name in the table: the name given to it (`--model-name`, as its
    cells' results record it), else the spec with a local file or folder by its own name (`model_label`);
    the spec itself where two models would show the same name."""
    given = {str(cell.values[MODEL]): entries[cell.name].results.model_name for cell in cells if cell.name in entries}
    specs = list(dict.fromkeys(str(cell.values[MODEL]) for cell in cells if MODEL in cell.values))
    shown = {spec: given.get(spec) or model_label(spec) for spec in specs}
    taken = list(shown.values())
    return {spec: name if taken.count(name) == 1 else spec for spec, name in shown.items()}


def baselines(cells: Sequence[Cell], axis: str, value: Any) -> dict[str, str]:
    """Cell name -> the name of the cell equal to it on every axis but `axis`, where `axis` is `value`
    (cells already at `value`, and cells without such a partner, are left out)."""
    at_value = {cell.without(axis): cell.name for cell in cells if axis in cell.values and cell.values[axis] == value}
    return {cell.name: at_value[cell.without(axis)] for cell in cells
            if axis in cell.values and cell.values[axis] != value and cell.without(axis) in at_value}


def relative_drops(cells: Sequence[Cell], averages: Mapping[str, float | None], axis: str = NOISE) -> dict[str, float | None]:
    """Cell name -> `100 * (average - baseline) / baseline`, the baseline being the same system at the
    lowest value of `axis` (the paper's −23.13% for sonar-reasoning at 70% noise); None where either
    average is missing or the baseline is 0. Empty when the grid has no such axis."""
    values = [cell.values[axis] for cell in cells if axis in cell.values]
    if not values:
        return {}
    drops: dict[str, float | None] = {}
    for name, base in baselines(cells, axis, min(values)).items():
        value, reference = averages.get(name), averages.get(base)
        drops[name] = None if value is None or not reference else 100.0 * (value - reference) / reference
    return drops


def build_table(cells: Sequence[Cell], entries: Mapping[str, Entry], statuses: Mapping[str, str], *,
                n_resamples: int = stats.DEFAULT_RESAMPLES, seed: int = 0) -> list[TableRow]:
    """One row per cell, in the grid's order; `entries` holds the results of the cells that have them."""
    figures = {name: system_row(entry, n_resamples=n_resamples, seed=seed) for name, entry in entries.items()}
    versus = {name: compare(entries[name], entries[base], seed=seed)["metrics"]
              for name, base in baselines(cells, CONTEXT, BASELINE_CONTEXT).items() if name in entries and base in entries}
    drops = relative_drops(cells, {name: row.values["average"] for name, row in figures.items()})
    models = shown_models(cells, entries)
    rows = []
    for cell in cells:
        row = figures.get(cell.name)
        rows.append(TableRow(cell, statuses.get(cell.name, ""),
                             row.values if row else dict.fromkeys(COLUMNS), row.cis if row else dict.fromkeys(COLUMNS),
                             versus.get(cell.name), drops.get(cell.name),
                             row.items if row else 0, row.failures if row else 0, models.get(str(cell.values.get(MODEL)), "")))
    return rows


def _shown_axes(axes: Sequence[Axis]) -> list[Axis]:
    """The model and context columns always; the other axes where they vary."""
    return [axis for axis in axes if axis.name in (MODEL, CONTEXT) or len(axis.values) > 1]


def _heading(axis: Axis) -> str:
    return {MODEL: "System", CONTEXT: "Context"}.get(axis.name, axis.flag.lstrip("-"))


def _figure(row: TableRow, column: str) -> str:
    value, ci = row.values[column], row.cis[column]
    if value is None:
        return "" if row.status == FAILED else "n/a"
    return f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{value:.2f}"


def _versus(row: TableRow, column: str = "average") -> str:
    found = (row.versus_none or {}).get(column)
    if not found or found.get("difference") is None:
        return ""
    return f"{found['difference']:+.2f} (p={found['p_value']:.3g})"


def _drop(value: float | None) -> str:
    return "" if value is None else f"{value:+.2f}%"


def text_table(rows: Sequence[TableRow], axes: Sequence[Axis]) -> tuple[list[str], list[list[str]]]:
    """The table as text cells (header, body): `value [95% CI]`, `Δ Average vs none` as `difference
    (p=...)`, the noise drop where the grid has a noise axis (for Markdown and HTML alike)."""
    shown = _shown_axes(axes)
    noise = any(axis.name == NOISE for axis in axes)
    header = ([_heading(axis) for axis in shown] + [HEADINGS[c] for c in COLUMNS] + [f"Δ Average vs {BASELINE_CONTEXT} (p)"]
              + (["Noise drop"] if noise else []) + ["Items", "Failures", "Status"])
    body = [[row.model if axis.name == MODEL else str(row.cell.values[axis.name]) for axis in shown] + [_figure(row, c) for c in COLUMNS]
            + [_versus(row)] + ([_drop(row.noise_drop)] if noise else []) + [str(row.items), str(row.failures), row.status]
            for row in rows]
    return header, body


NOTES = (f"Cells: score on the 0-100 scale [95% bootstrap interval over queries]. Δ: paired difference to the same "
         f"system's `{BASELINE_CONTEXT}` row on the queries both scored, with the paired permutation test's p-value.",
         f"Noise drop: relative change of the average from the same system at the lowest {NOISE}.")
"""What the table's cells mean (the second line only for a grid with a noise axis)."""


def table_notes(axes: Sequence[Axis]) -> list[str]:
    return list(NOTES if any(axis.name == NOISE for axis in axes) else NOTES[:1])


def sweep_title(sweep: Mapping[str, Any]) -> str:
    """The table's title from `sweep.json`: the judge, the data, `PROXY judge` and `SYNTHETIC data` where
    they apply (as a leaderboard's groups are marked), and the number of cells."""
    judge, data = sweep["judge"], sweep["data"]
    where = f"data {data.get('source')}@{data.get('revision') or 'local'} {(data.get('fingerprint') or '')[:12]}".rstrip()
    return " · ".join([f"judge {judge.get('spec')}", where, *marks(judge, data), f"{sweep['grid']['cells']} cells"])


def to_markdown(rows: Sequence[TableRow], axes: Sequence[Axis], *, title: str = "") -> str:
    """The table in Markdown, under `title` when given, with what its cells mean below it."""
    header, body = text_table(rows, axes)
    lines = ([f"### {title}", ""] if title else []) + ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |" for cells in body]
    return "\n".join(lines + [""] + table_notes(axes)) + "\n"


def to_csv(rows: Sequence[TableRow], axes: Sequence[Axis]) -> str:
    """One line per cell: its name and axis values, each column with its 95% bounds, each column's paired
    difference to `none` with its p-value, the noise drop, counts and status."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["cell"] + [axis.name for axis in axes]
                    + [f"{c}{suffix}" for c in COLUMNS for suffix in ("", "_low", "_high")]
                    + [f"{c}_vs_{BASELINE_CONTEXT}{suffix}" for c in COLUMNS for suffix in ("", "_p")]
                    + ["noise_drop_percent", "items", "failures", "status"])
    for row in rows:
        numbers: list[Any] = []
        for column in COLUMNS:
            ci = row.cis[column]
            numbers += [_round(row.values[column]), _round(ci[0]) if ci else "", _round(ci[1]) if ci else ""]
        paired: list[Any] = []
        for column in COLUMNS:
            found = (row.versus_none or {}).get(column) or {}
            paired += [_round(found.get("difference")), _round(found.get("p_value"))]
        writer.writerow([row.cell.name] + [row.cell.values[axis.name] for axis in axes] + numbers + paired
                        + [_round(row.noise_drop), row.items, row.failures, row.status])
    return out.getvalue()


def _round(value: float | None) -> Any:
    return "" if value is None or not math.isfinite(value) else round(value, 4)
