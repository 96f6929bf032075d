"""The leaderboard Space's app (Gradio, the `spaces` extra, imported when the app is built).

It reads every results file of a folder or a Hub dataset repo, ranks the systems within groups of
comparable results (same judge, protocol, data and query set: `leaderboard.build_leaderboard`, never
across), and shows per group a table (rank, system, average with its 95% interval, the five figures,
judge, context, queries covered of the benchmark's, guarded responses) that a text filter narrows, and the per-dimension chart. Its submit tab
checks an uploaded results file as `bespoke submit` does and says why one is refused, or where it would
rank. A file the board cannot show is listed with the reason, never silently dropped.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bespoke_dataset.source import is_repo_id
from bespoke_metric.analysis.leaderboard import COLUMNS, LABELS, Group, Row, build_leaderboard, system_row
from bespoke_metric.results import stats

from .eval_results import context
from .submission import SubmissionError, read_submission


@dataclass
class Board:
    groups: list[Group]
    skipped: list[str] = field(default_factory=list)
    """Why each file of the source that is not shown was refused."""


def results_folder(results: str | os.PathLike[str], *, token: str | None = None) -> Path:
    """A local folder of results files: `results` itself, or a download of the Hub dataset repo it names."""
    folder = Path(results)
    if folder.is_dir():
        return folder
    if not is_repo_id(os.fspath(results)):
        raise FileNotFoundError(f"{results}: neither a folder of results files nor a Hub dataset repo id ORG/NAME")
    from huggingface_hub import HfApi

    return Path(HfApi(token=token).snapshot_download(repo_id=os.fspath(results), repo_type="dataset", allow_patterns=["*.json"]))


def read_board(folder: Path, *, allow_proxy: bool = False, allow_incomplete: bool = False,
               n_resamples: int = stats.DEFAULT_RESAMPLES) -> Board:
    """Every `*.json` under `folder`, checked as a submission (an incomplete file is skipped, with the reason,
    unless `allow_incomplete`: then its row is marked), ranked in its group."""
    accepted, skipped = [], []
    for path in sorted(p for p in folder.rglob("*.json") if p.is_file()):
        try:
            accepted.append(read_submission(path, allow_proxy=allow_proxy, allow_incomplete=allow_incomplete,
                                            allow_synthetic=True, name=path.relative_to(folder).as_posix()))
        except SubmissionError as error:
            skipped.append(str(error))
    return Board(build_leaderboard(accepted, allow_proxy=allow_proxy, allow_incomplete=allow_incomplete,
                                   n_resamples=n_resamples), skipped)


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _matches(row: Row, query: str) -> bool:
    text = f"{row.system} {context(row.entry) or ''}".lower()
    return all(word in text for word in query.lower().split())


def group_table(group: Group, query: str = "") -> str:
    """One group's ranked rows as an HTML table; `query` keeps the rows whose system or context holds
    every word of it."""
    header = ["Rank", "System", f"{LABELS['average']} [95% CI]"] + [LABELS[c] for c in COLUMNS if c != "average"]
    header += ["Judge", "Context", "Queries", "Guarded"]
    rows = [row for row in group.rows if _matches(row, query)]
    if not rows:
        return f'<p class="empty">No system of this table matches “{html.escape(query)}”.</p>'
    body = []
    for row in rows:
        ci = row.cis["average"]
        average = _figure(row.values["average"]) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
        cells = [str(row.rank), row.system, average] + [_figure(row.values[c]) for c in COLUMNS if c != "average"]
        cells += [str(group.judge["spec"]), context(row.entry) or "—", row.coverage, str(row.guarded)]
        body.append('<tr class="system-row">' + "".join(f"<td>{html.escape(cell)}</td>" for cell in cells) + "</tr>")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    return f'<table class="leaderboard"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def board_html(board: Board, query: str = "") -> str:
    """Every group under its own heading: ranks never cross groups."""
    if not board.groups:
        return "<p>No results to rank yet.</p>"
    parts = []
    for group in board.groups:
        parts.append(f"<h3>{html.escape(group.title)}</h3>")
        parts.append(f"<p>Judge settings: {html.escape(group.settings or 'none')}</p>")
        parts.append(group_table(group, query))
    return "\n".join(parts)


def verdict(path: str | os.PathLike[str] | None, board: Board, *, allow_proxy: bool = False, allow_incomplete: bool = False,
            n_resamples: int = stats.DEFAULT_RESAMPLES) -> str:
    """What the submit tab says of an uploaded file: why it is refused, or where it would rank."""
    if path is None:
        return ""
    name = Path(path).name
    try:
        results = read_submission(path, allow_proxy=allow_proxy, allow_incomplete=allow_incomplete, allow_synthetic=True,
                                  name=name)
    except SubmissionError as error:
        return f"**Refused.** {error}"
    row = system_row(results, n_resamples=n_resamples)
    average = row.values["average"]
    group = next((g for g in board.groups if g.rows and g.rows[0].entry.group_key == results.group_key), None)
    head = f"**Accepted.** {name}: {results.system}, average {_figure(average)}."
    if group is None:
        return (f"{head} No result on this board was scored like it (judge, protocol, data and query set), "
                "so it would open a table of its own.")
    rank = 1 + sum(1 for other in group.rows if (other.values["average"] or 0.0) > (average or 0.0))
    return f"{head} It would rank {rank} of {len(group.rows) + 1} in the table: {group.title}."


def build_app(results: str | os.PathLike[str], *, allow_proxy: bool = False, allow_incomplete: bool = False,
              n_resamples: int = stats.DEFAULT_RESAMPLES, token: str | None = None) -> Any:
    """The Gradio app of a leaderboard Space over `results` (a folder, or a Hub dataset repo id); proxy and
    incomplete results shown only when allowed."""
    import gradio as gr

    from bespoke_metric.analysis.report_html import bars_figure

    board = read_board(results_folder(results, token=token), allow_proxy=allow_proxy, allow_incomplete=allow_incomplete,
                       n_resamples=n_resamples)
    systems = sum(len(group.rows) for group in board.groups)
    with gr.Blocks(title="BESPOKE leaderboard") as app:
        gr.Markdown(
            "# BESPOKE leaderboard\n"
            f"{systems} systems in {len(board.groups)} table(s). Each table ranks only results of one judge, "
            "prompt protocol, data revision and query set, by the average of the five figures (0-100, higher is "
            f"better; {int(stats.CONFIDENCE * 100)}% bootstrap interval over queries)."
        )
        with gr.Tab("Leaderboard"):
            query = gr.Textbox(label="Filter by system or context", elem_id="filter")
            table = gr.HTML(board_html(board), elem_id="board")
            query.change(lambda text: board_html(board, text), query, table)
            if board.skipped:
                gr.Markdown("Not shown:\n" + "\n".join(f"- {reason}" for reason in board.skipped), elem_id="skipped")
        with gr.Tab("Chart"):
            for group in board.groups:
                gr.Markdown(f"### {group.title}")
                gr.Plot(bars_figure(group.rows))
        with gr.Tab("Submit"):
            gr.Markdown("Upload a results file of `bespoke score` or `bespoke run` to check it before submitting.")
            upload = gr.File(label="Results file (.json)", file_types=[".json"], elem_id="upload")
            message = gr.Markdown(elem_id="verdict")
            upload.upload(lambda path: verdict(path, board, allow_proxy=allow_proxy, allow_incomplete=allow_incomplete,
                                               n_resamples=n_resamples), upload, message)
            upload.clear(lambda: "", None, message)
    return app
