"""A sweep drawn for reading (`bespoke report DIR`): one HTML page with the table, a heat map of the Average
by system x context, the five numbers and the average per system as bars (one bar per context, whiskers
at the 95% interval), and the relative drop on the noise axis. Every figure is also written as a PNG file
in `DIR/figures/`, and embedded in the page, which needs no other file.
"""

from __future__ import annotations

import datetime as _dt
import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from bespoke_dataset.atomic import atomic_write_text
from bespoke_metric.analysis.report_html import STYLE, bars_figure, img_tag, plt, png_bytes
from bespoke_metric.results.caveats import marks

from .grid import CONTEXT, MODEL, Axis, Cell
from .outputs import SweepFolder, load_entries, read_sweep
from .table import TableRow, build_table, sweep_title, table_notes, text_table

REPORT_FILE = "report.html"
FIGURES = "figures"


def system_of(row: TableRow, axes: Sequence[Axis]) -> str:
    """A row's system without its context: the model as the table names it, then each other axis that
    varies (`top-k 5`)."""
    return " · ".join([row.model] + [f"{axis.flag.lstrip('-')} {row.cell.values[axis.name]}" for axis in axes
                                     if axis.name not in (MODEL, CONTEXT) and len(axis.values) > 1])


@dataclass(frozen=True)
class _Bar:
    """One context's numbers, labelled for the leaderboard's bar chart."""

    system: str
    values: Mapping[str, float | None]
    cis: Mapping[str, tuple[float, float] | None]


def heatmap_figure(rows: Sequence[TableRow], axes: Sequence[Axis]) -> plt.Figure:
    """Average by system (rows) x context (columns), each cell written on it; blank where there is none."""
    import numpy as np

    contexts = [str(value) for value in next(axis for axis in axes if axis.name == CONTEXT).values]
    systems = list(dict.fromkeys(system_of(row, axes) for row in rows))
    grid = np.full((len(systems), len(contexts)), np.nan)
    for row in rows:
        value = row.values["average"]
        if value is not None:
            grid[systems.index(system_of(row, axes)), contexts.index(str(row.cell.values[CONTEXT]))] = value
    fig, ax = plt.subplots(figsize=(1.6 * len(contexts) + 3, 0.6 * len(systems) + 1.6))
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=0, vmax=100, aspect="auto")
    for (i, j), value in np.ndenumerate(grid):
        if np.isfinite(value):
            ax.text(j, i, f"{value:.1f}", ha="center", va="center", color="white" if value < 60 else "black", fontsize=9)
    ax.set_xticks(range(len(contexts)), contexts, rotation=30, ha="right")
    ax.set_yticks(range(len(systems)), systems, fontsize=8)
    ax.set_title("Average by system and user context")
    fig.colorbar(image, ax=ax, label="0-100")
    return fig


def system_bars(rows: Sequence[TableRow], axes: Sequence[Axis]) -> list[tuple[str, plt.Figure]]:
    """Per system: the five numbers and the average, one bar per context with its 95% interval."""
    figures = []
    for system in dict.fromkeys(system_of(row, axes) for row in rows):
        mine = [row for row in rows if system_of(row, axes) == system and row.values["average"] is not None]
        if not mine:
            continue
        fig = bars_figure([_Bar(str(row.cell.values[CONTEXT]), row.values, row.cis) for row in mine])
        fig.axes[0].set_title(system)
        figures.append((system, fig))
    return figures


def noise_figure(rows: Sequence[TableRow], axes: Sequence[Axis]) -> plt.Figure | None:
    """The average's relative drop per system and context at each noise level; None without a noise axis."""
    dropped = [row for row in rows if row.noise_drop is not None]
    if not dropped:
        return None
    labels = [f"{system_of(row, axes)} ({row.cell.values[CONTEXT]})" for row in dropped]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(dropped) + 1.5))
    bars = ax.barh(range(len(dropped)), [row.noise_drop for row in dropped],
                   color=["#c0392b" if row.noise_drop < 0 else "#27ae60" for row in dropped])
    ax.bar_label(bars, fmt="%+.2f%%", fontsize=8, padding=3)
    ax.set_yticks(range(len(dropped)), labels, fontsize=8)
    ax.axvline(0, color="#333", linewidth=0.8)
    ax.set_xlabel("relative change of the average from the lowest noise (%)")
    ax.set_title("Robustness to search noise")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _html_table(rows: Sequence[TableRow], axes: Sequence[Axis]) -> str:
    header, body = text_table(rows, axes)
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
    lines = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in cells) + "</tr>" for cells in body)
    return f"<table><tr>{head}</tr>{lines}</table>"


def write_report(root: str | os.PathLike[str]) -> Path:
    """Write `ROOT/report.html` and `ROOT/figures/*.png` for the sweep in `ROOT`; returns the page's path."""
    folder = SweepFolder(Path(root))
    sweep = read_sweep(folder.root)
    axes = [Axis(axis["name"], axis["flag"], tuple(axis["values"])) for axis in sweep["grid"]["axes"]]
    cells = [Cell(cell["name"], dict(cell["values"])) for cell in sweep["cells"]]
    rows = build_table(cells, load_entries(folder, cells), {cell["name"]: cell.get("status", "") for cell in sweep["cells"]})
    figures: list[tuple[str, str, plt.Figure]] = [("heatmap", "Average by system and context", heatmap_figure(rows, axes))]
    figures += [(f"bars-{index + 1}", f"{system}: scores by context with 95% intervals", fig)
                for index, (system, fig) in enumerate(system_bars(rows, axes))]
    noise = noise_figure(rows, axes)
    if noise is not None:
        figures.append(("noise", "relative drop of the average under search noise", noise))
    (folder.root / FIGURES).mkdir(exist_ok=True)
    images = []
    judge, data = sweep.get("judge", {}), sweep.get("data", {})
    caption = sweep_title({"judge": judge, "data": data, "grid": {"cells": len(cells)}})
    for name, alt, fig in figures:
        png = png_bytes(fig, caption)
        (folder.root / FIGURES / f"{name}.png").write_bytes(png)
        images.append(f"<h2>{html.escape(alt)}</h2>{img_tag(png, alt)}")
    title = f"BESPOKE sweep: {folder.root.name}"
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    page = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title><style>{STYLE}</style></head>"
            f"<body><h1>{html.escape(title)}</h1>"
            f"<p class=\"settings\">Judge {html.escape(str(judge.get('spec')))} (protocol {html.escape(str(judge.get('protocol_version', '?')))}) · "
            f"data {html.escape(str(data.get('source')))}@{html.escape(str(data.get('revision') or 'local'))} · "
            + "".join(f"<strong>{mark}</strong> · " for mark in marks(judge, data)) +
            f"{len(cells)} cells, status {html.escape(str(sweep.get('status')))} · drawn {created}</p>"
            + _html_table(rows, axes) + "".join(f"<p class=\"settings\">{html.escape(note)}</p>" for note in table_notes(axes))
            + "".join(images) + "</body></html>\n")
    path = folder.root / REPORT_FILE
    atomic_write_text(path, page)
    return path
