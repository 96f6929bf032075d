"""The HTML report: self-contained, with its plots, and rendered by a real headless browser."""

from __future__ import annotations

import base64
import io
import json
import re

import numpy as np
import pytest
from PIL import Image

from bespoke_cli import cli
from bespoke_metric.analysis.leaderboard import build_leaderboard, parse_results
from bespoke_metric.analysis.report_html import failure_counts, per_user_table, render_html
from bespoke_metric.testing import browser


def _systems(make_results):
    rng = np.random.default_rng(0)
    good = np.hstack([rng.integers(3, 6, size=(30, 4)).astype(object), (rng.random((30, 1)) * 0.6 + 0.3).astype(object)])
    weak = np.hstack([rng.integers(1, 4, size=(30, 4)).astype(object), (rng.random((30, 1)) * 0.3).astype(object)])
    weak[[2, 7, 11], 0] = None  # planted failures
    weak[[4], 4] = None
    return [parse_results(make_results(good, system="good"), "good.json"),
            parse_results(make_results(weak, system="weak"), "weak.json")]


@pytest.mark.slow
def test_report_embeds_every_plot_as_png(make_results):
    groups = build_leaderboard(_systems(make_results), n_resamples=200)
    page = render_html(groups)
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    # bars + one heat map per system + failures
    assert [alt for alt, _ in images] == ["scores per dimension with 95% confidence intervals",
                                          "per-user heat map of good", "per-user heat map of weak", "failures per metric"]
    for _, data in images:
        image = Image.open(io.BytesIO(base64.b64decode(data)))
        assert image.format == "PNG"
        assert image.width > 300
        assert image.text["Description"] == groups[0].title  # the judge, the data and their marks, on the figure
    assert "http" not in page.replace("http-equiv", "")  # no external resource
    assert page.index(">good<") < page.index(">weak<")  # ranked


def test_per_user_table_and_failure_counts(make_results):
    weak = _systems(make_results)[1]
    row = build_leaderboard([weak], n_resamples=50)[0].rows[0]
    users, table = per_user_table(row)
    assert users == [f"user{i}" for i in range(1, 7)]
    items = weak.results.items[:5]
    expected_tone = np.mean([item.scores["tone"] for item in items]) * 20
    assert table[0, 2] == pytest.approx(expected_tone)
    assert failure_counts(row) == {"need_alignment": 3, "content_depth": 0, "tone": 0, "explanation_style": 0, "recall": 1}


def test_report_renders_in_headless_chromium(make_results, tmp_path):
    html_path = tmp_path / "report.html"
    systems = _systems(make_results)
    paths = []
    for result in systems:
        path = tmp_path / f"{result.system}.json"
        path.write_text(json.dumps(result.results.to_json()))
        paths.append(str(path))
    assert cli.main(["leaderboard", *paths, "--format", "html", "--output", str(html_path), "--resamples", "200"]) == 0
    # What the browser shows: the ranked table, best first, with the leaderboard's own numbers.
    dom = browser.dump_dom(html_path.as_uri())
    rows = re.findall(r"<tr><td>(\d+)</td><td class=\"system\">([^<]+)</td><td>([\d.]+|n/a)", dom)
    [group] = build_leaderboard(systems, n_resamples=200)
    expected = [(str(row.rank), row.system, f"{row.values['need_alignment']:.2f}") for row in group.rows]
    assert rows == expected
    assert [name for _, name, _ in rows] == ["good", "weak"]
    assert len(re.findall(r'<img alt="[^"]+" src="data:image/png;base64,', dom)) == 4
    # And it is drawn: a blank page is one colour; text, tables and plots give a wide spread of grey levels.
    pixels = np.asarray(Image.open(browser.screenshot(html_path.as_uri(), tmp_path / "report.png")).convert("L"), dtype=float)
    assert pixels.shape == (1600, 1200)
    assert pixels.std() > 20
    assert len(np.unique(pixels)) > 50
