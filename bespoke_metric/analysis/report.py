"""Rendering a leaderboard: markdown and CSV tables here, the HTML page with plots in `report_html`."""

from __future__ import annotations

import csv
import io
from typing import Any, Mapping, Sequence

from bespoke_dataset.errors import UserError

from .leaderboard import COLUMNS, COUNTS, LABELS, Group, Row


def _cell(row: Row, metric: str) -> str:
    value = row.values[metric]
    if value is None:
        return "n/a"
    ci = row.cis[metric]
    return f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{value:.2f}"


def to_markdown(groups: Sequence[Group]) -> str:
    """One markdown table per group, each with its own ranking; cells are `value [95% CI]`."""
    parts = []
    for group in groups:
        header = ["Rank", "System"] + [LABELS[c] for c in COLUMNS] + list(COUNTS)
        lines = [f"### {group.title}", "", f"Judge settings: {group.settings or 'none'}", "",
                 "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for row in group.rows:
            cells = [str(row.rank), row.system.replace("|", "\\|")] + [_cell(row, c) for c in COLUMNS] + list(row.counts().values())
            lines.append("| " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def to_csv(groups: Sequence[Group]) -> str:
    """One line per system: its group (judge, protocol, data), rank, and each number with its CI bounds."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["judge", "protocol_version", "data_source", "data_revision", "data_fingerprint", "rank", "system", "file"]
                    + [f"{c}{suffix}" for c in COLUMNS for suffix in ("", "_low", "_high")]
                    + ["items", "queries", "benchmark_queries", "guarded", "failures", "truncated", "served_by"])
    for group in groups:
        for row in group.rows:
            numbers: list[Any] = []
            for column in COLUMNS:
                ci = row.cis[column]
                numbers += [_round(row.values[column]), _round(ci[0]) if ci else "", _round(ci[1]) if ci else ""]
            writer.writerow([group.judge["spec"], group.judge.get("protocol_version", ""), group.data.get("source", ""),
                             group.data.get("revision") or "", group.data.get("fingerprint") or "", row.rank, row.system,
                             row.entry.path] + numbers
                            + [row.items, row.queries, row.benchmark_queries or "", row.guarded, row.failures,
                               row.truncated, row.served])
    return out.getvalue()


def _round(value: float | None) -> Any:
    return "" if value is None else round(value, 4)


def render(groups: Sequence[Group], fmt: str, bridge: Mapping[str, Any] | None = None) -> str:
    """`markdown`, `csv` or `html` (the report with plots, `bespoke_metric.analysis.report`); `bridge` (a
    `bridge.json`, HTML only) adds the move to a new judge."""
    if bridge is not None and fmt != "html":
        raise ValueError("a bridge is shown in the HTML leaderboard only (--format html)")
    if fmt == "markdown":
        return to_markdown(groups)
    if fmt == "csv":
        return to_csv(groups)
    if fmt == "html":
        from .report_html import render_html  # matplotlib is only needed for this format

        return render_html(groups, bridge=bridge)
    raise UserError(f"unknown format {fmt!r}; use markdown, csv or html")
