"""The leaderboard as one self-contained HTML page: tables and matplotlib plots embedded as PNG.

Per group of comparable results: the ranked table with 95% intervals, per-dimension bars with CI
whiskers, a per-user heat map for each system (users x metrics, 0-100), and, when anything failed, the
distribution of failures per metric. The page has no external resource, so it can be mailed, uploaded or
opened offline.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
from collections import defaultdict
from typing import Any, Mapping, Protocol, Sequence

from bespoke_dataset.errors import require_extra

require_extra("matplotlib", "plots", "the HTML report, for its charts,")
import matplotlib  # noqa: E402
import matplotlib.ticker  # noqa: E402

matplotlib.use("Agg")  # headless: never open a window, never need a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from bespoke_dataset.keys import natural_key  # noqa: E402
from bespoke_metric.results import stats  # noqa: E402
from bespoke_metric.results.figure_stats import figure_matrix  # noqa: E402
from bespoke_metric.results.metrics import METRIC_NAMES  # noqa: E402

from .bridge import judges_line  # noqa: E402
from .leaderboard import COLUMNS, COUNTS, LABELS, Group, Row  # noqa: E402

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.85em; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; }
th { background: #f3f3f3; } td.system { text-align: left; font-weight: 600; }
.ci { color: #777; font-size: 0.85em; } .settings { color: #555; font-size: 0.85em; }
img { max-width: 100%; display: block; margin: 1em 0; }
"""


def png_bytes(fig: plt.Figure, caption: str) -> bytes:
    """The figure as a PNG file's bytes (the figure is closed), `caption` written above it and kept as the
    file's `Description`: what its figures are of (the judge, the data, and their `caveats.marks`), so a PNG
    shown alone, away from the page's title, still says that a proxy judged it or the data is synthetic."""
    fig.text(0.0, 1.01, caption, ha="left", va="bottom", fontsize=8, color="#555")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight", metadata={"Description": caption})
    plt.close(fig)
    return buffer.getvalue()


def img_tag(png: bytes, alt: str) -> str:
    """An `<img>` holding the PNG itself, so the page needs no other file."""
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def _img(fig: plt.Figure, alt: str, caption: str) -> str:
    return img_tag(png_bytes(fig, caption), alt)


class Scored(Protocol):
    """What a bar chart draws: a label, and each column's value and 95% interval (a leaderboard `Row`)."""

    system: str
    values: Mapping[str, float | None]
    cis: Mapping[str, tuple[float, float] | None]


def bars_figure(rows: Sequence[Scored]) -> plt.Figure:
    """Grouped bars: one group per metric, one bar per system, whiskers at the 95% CI."""
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / max(len(rows), 1)
    x = np.arange(len(COLUMNS))
    for i, row in enumerate(rows):
        heights = np.array([row.values[c] if row.values[c] is not None else np.nan for c in COLUMNS])
        low = np.array([h - row.cis[c][0] if row.cis[c] else 0.0 for c, h in zip(COLUMNS, heights, strict=True)])
        high = np.array([row.cis[c][1] - h if row.cis[c] else 0.0 for c, h in zip(COLUMNS, heights, strict=True)])
        ax.bar(x + (i - (len(rows) - 1) / 2) * width, np.nan_to_num(heights), width, yerr=[low, high], capsize=3, label=row.system)
    ax.set_xticks(x, [LABELS[c] for c in COLUMNS])
    ax.set_ylim(0, 100)
    ax.set_ylabel("score (0-100), 95% CI")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return fig


def per_user_table(row: Row) -> tuple[list[str], np.ndarray]:
    """Users (sorted) and their mean per metric on the 0-100 scale (NaN where nothing was scored)."""
    items = row.entry.results.items
    matrix = figure_matrix(items)
    by_user: dict[str, list[int]] = defaultdict(list)
    for index, item in enumerate(items):
        by_user[item.user].append(index)
    users = sorted(by_user, key=natural_key)
    table = np.array([stats.rowwise_nanmean(matrix[by_user[u]].T) for u in users])
    return users, table.reshape(len(users), len(METRIC_NAMES))


def heatmap_figure(row: Row) -> plt.Figure:
    users, table = per_user_table(row)
    fig, ax = plt.subplots(figsize=(6, max(2.5, 0.25 * len(users) + 1)))
    image = ax.imshow(np.ma.masked_invalid(table), cmap="viridis", vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(len(METRIC_NAMES)), [LABELS[m] for m in METRIC_NAMES], rotation=30, ha="right")
    ax.set_yticks(range(len(users)), users, fontsize=7)
    ax.set_title(f"{row.system}: mean per user")
    fig.colorbar(image, ax=ax, label="0-100")
    return fig


def failure_counts(row: Row) -> dict[str, int]:
    """Failed judgments per metric (items with an error on it), as the results summary counts them."""
    failures = row.entry.results.summary["failures"]
    return {metric: int(failures.get(metric, 0)) for metric in METRIC_NAMES}


def failures_figure(rows: Sequence[Row]) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(10, 3))
    width = 0.8 / max(len(rows), 1)
    x = np.arange(len(METRIC_NAMES))
    for i, row in enumerate(rows):
        counts = failure_counts(row)
        ax.bar(x + (i - (len(rows) - 1) / 2) * width, [counts[m] for m in METRIC_NAMES], width, label=row.system)
    ax.set_xticks(x, [LABELS[m] for m in METRIC_NAMES])
    ax.set_ylabel("failed items")
    ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_title("Failures per metric (left out of the means)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return fig


def _table(group: Group) -> str:
    header = "".join(f"<th>{html.escape(h)}</th>" for h in ["Rank", "System"] + [LABELS[c] for c in COLUMNS] + list(COUNTS))
    body = []
    for row in group.rows:
        cells = [f"<td>{row.rank}</td>", f'<td class="system">{html.escape(row.system)}</td>']
        for column in COLUMNS:
            value, ci = row.values[column], row.cis[column]
            shown = "n/a" if value is None else f"{value:.2f}"
            interval = f'<br><span class="ci">[{ci[0]:.2f}, {ci[1]:.2f}]</span>' if ci else ""
            cells.append(f"<td>{shown}{interval}</td>")
        cells += [f"<td>{html.escape(count)}</td>" for count in row.counts().values()]
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{header}</tr>{''.join(body)}</table>"


def bridge_section(bridge: Mapping[str, Any]) -> str:
    """The move to a new judge (`bespoke bridge`'s `bridge.json`): Kendall's tau, each system's ranks and
    average shift, and the pairs whose order flips."""
    tau = bridge["kendall_tau"]
    value = "n/a" if tau["value"] is None else f"{tau['value']:.2f}"
    interval = f" (95% CI {tau['ci'][0]:.2f} to {tau['ci'][1]:.2f})" if tau.get("ci") else ""
    rows = []
    for system in bridge["systems"]:
        shift = system["shift"]["average"]
        shown = "n/a" if shift["value"] is None else f"{shift['value']:+.2f}"
        ci = f'<br><span class="ci">[{shift["ci"][0]:+.2f}, {shift["ci"][1]:+.2f}]</span>' if shift.get("ci") else ""
        rows.append(f'<tr><td class="system">{html.escape(system["name"])}</td><td>{system["old"]["rank"]}</td>'
                    f'<td>{system["new"]["rank"]}</td><td>{shown}{ci}</td></tr>')
    flips = "".join(f"<li>{html.escape(flip['ahead_before'])} was ahead of {html.escape(flip['ahead_after'])}; now behind "
                    f"(significant under: {html.escape(', '.join(flip['significant_under']) or 'neither judge')})</li>"
                    for flip in bridge["flips"]) or "<li>No pair of systems changes order.</li>"
    judges = judges_line(bridge, lambda mark: f"<strong>{mark}</strong>", html.escape) if "judged_by" in bridge else ""  # older files lack it
    return (f"<h2>Moved from {html.escape(bridge['old_judge'])} to {html.escape(bridge['new_judge'])}</h2>"
            f'<p class="settings">{judges}</p>'
            f"<p>Kendall's tau between the rankings: {value}{interval}.</p>"
            "<table><tr><th>System</th><th>Rank before</th><th>Rank after</th><th>Average shift</th></tr>"
            f"{''.join(rows)}</table><ul>{flips}</ul>")


def render_html(groups: Sequence[Group], title: str = "BESPOKE leaderboard", bridge: Mapping[str, Any] | None = None) -> str:
    """A standalone HTML page for the given leaderboard groups, and the move to a new judge if given."""
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    sections = []
    for group in groups:
        parts = [f"<h2>{html.escape(group.title)}</h2>",
                 f'<p class="settings">Judge settings: {html.escape(group.settings or "none")}. '
                 "Systems are ranked only against others scored by the same judge on the same data.</p>",
                 _table(group),
                 _img(bars_figure(group.rows), "scores per dimension with 95% confidence intervals", group.title)]
        parts += [_img(heatmap_figure(row), f"per-user heat map of {row.system}", group.title) for row in group.rows]
        if any(row.failures for row in group.rows):  # an empty chart would only say "nothing failed"
            parts.append(_img(failures_figure(group.rows), "failures per metric", group.title))
        sections.append("\n".join(parts))
    if bridge is not None:
        sections.append(bridge_section(bridge))
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
            f"<p>Generated {created}. Cells show the score on the 0-100 scale and its 95% bootstrap interval over queries.</p>"
            + "\n".join(sections) + "</body></html>\n")
