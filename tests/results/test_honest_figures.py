"""Numbers that say what they are (issue 20): how much of the benchmark a run covers and how many
responses a guard caught, beside the figures in `score`'s output, the results summary and every leaderboard
(markdown, CSV, HTML, the Space's table); the standard error column; one bootstrap count for the CLI and the
Space; each file's own usage in a multi-file `score`; synthetic results refused by `submit`; and results
files of 0.1.0 still read everywhere."""

from __future__ import annotations

import csv
import inspect
import io
import json
from pathlib import Path

import pytest

from bespoke_cli.cli import build_parser, main
from bespoke_dataset.rows import load_rows
from bespoke_metric.analysis.leaderboard import build_leaderboard, gather_results
from bespoke_metric.analysis.report import to_csv, to_markdown
from bespoke_metric.analysis.report_html import render_html
from bespoke_metric.hub import leaderboard_app
from bespoke_metric.results import stats

EMPTY = "ok"  # caught by the `empty` guard: lowest scores, no judge call


@pytest.fixture(scope="module")
def rows(synthetic_hub) -> list[dict]:
    return load_rows("benchmark", synthetic_hub)


def write_predictions(path: Path, rows: list[dict], *, empty: int = 0) -> Path:
    """One prediction per row (its best example response), the first `empty` of them empty."""
    path.write_text("".join(
        json.dumps({"user": r["user"], "query_id": r["query_id"], "response": EMPTY if i < empty else r["shots"][-1]["response"]}) + "\n"
        for i, r in enumerate(rows)))
    return path


@pytest.fixture
def scored(rows, synthetic_hub, judge_server, tmp_path, capsys):
    """`bespoke score` of 5 of the 20 queries, 2 of the 5 answers empty: (its results, what it printed)."""
    predictions = write_predictions(tmp_path / "partial.jsonl", rows[:5], empty=2)
    output = tmp_path / "results" / "partial.json"
    assert main(["score", "--predictions", str(predictions), "--judge", "openai:judge", "--source", str(synthetic_hub),
                 "--base-url", judge_server.base_url, "--api-key", "sk-test", "--output", str(output)]) == 0
    return json.loads(output.read_text()), capsys.readouterr().out, output


def test_the_summary_records_coverage_and_guarded_items(scored, rows):
    results, _, _ = scored
    summary = results["summary"]
    assert (summary["items"], summary["queries"], summary["benchmark_queries"]) == (5, 5, len(rows))
    assert summary["guarded"] == {metric: 2 for metric in summary["scored"]}
    assert results["guarded"] == {"empty": 2}


def test_score_prints_standard_errors_guarded_counts_and_coverage(scored, rows):
    results, out, _ = scored
    lines = out.splitlines()
    assert lines[0].split() == ["metric", "score", "±", "se", "scored", "guarded", "failed"]
    for line in lines[1:6]:
        metric, score, se, scored_, guarded, failed = line.split()
        assert float(score) == pytest.approx(results["summary"][metric], abs=0.005)
        assert float(se) == pytest.approx(results["stderr"][metric], abs=0.005)
        assert (int(scored_), int(guarded), int(failed)) == (5, 2, 0)
    assert lines[6].split()[:3] == ["average", f"{results['summary']['average']:.2f}", f"{results['stderr']['average']:.2f}"]
    assert lines[7].startswith(f"5 items, 5 of the benchmark's {len(rows)} queries; ")
    assert "2 of 5 responses caught by a guard (empty 2): lowest scores, no judge call" in out
    assert f"note: the predictions cover 5 of the benchmark's {len(rows)} queries" in out


def test_every_leaderboard_shows_coverage_and_guarded_counts(scored, rows):
    _, _, output = scored
    groups = build_leaderboard(gather_results([output]).entries, n_resamples=50)
    [row] = groups[0].rows
    assert (row.coverage, row.guarded) == (f"5 of {len(rows)}", 2)
    assert f"· 5 of {len(rows)} queries" in groups[0].title
    markdown = to_markdown(groups)
    header, _, line = markdown.splitlines()[4:7]
    assert header.endswith("| Items | Queries | Guarded | Failures | Cut off | Served by |")
    assert line.endswith(f"| 5 | 5 of {len(rows)} | 2 | 0 | 0 | not said |")
    [written] = csv.DictReader(io.StringIO(to_csv(groups)))
    assert (written["queries"], written["benchmark_queries"], written["guarded"]) == ("5", str(len(rows)), "2")
    assert f"<td>5 of {len(rows)}</td><td>2</td><td>0</td><td>0</td><td>not said</td></tr>" in render_html(groups)
    space = leaderboard_app.group_table(groups[0])
    assert "<th>Queries</th><th>Guarded</th>" in space
    assert f"<td>5 of {len(rows)}</td><td>2</td></tr>" in space


def test_an_html_leaderboard_says_where_it_was_written(scored, tmp_path, capsys):
    _, _, output = scored
    board = tmp_path / "board.html"
    assert main(["leaderboard", str(output), "--output", str(board), "--resamples", "50"]) == 0  # format from the suffix
    assert board.read_text().startswith("<!DOCTYPE html>")
    assert f"html leaderboard of 1 system(s) in 1 group(s) written to {board}" in capsys.readouterr().out


def test_one_bootstrap_count_for_the_command_line_and_the_space():
    for argv in (["leaderboard", "a.json"], ["meta-eval", "--judge", "openai:judge"]):
        assert build_parser(argv[0]).parse_args(argv).resamples == stats.DEFAULT_RESAMPLES
    for function in (leaderboard_app.read_board, leaderboard_app.verdict, leaderboard_app.build_app):
        assert inspect.signature(function).parameters["n_resamples"].default == stats.DEFAULT_RESAMPLES


def test_each_file_of_a_multi_file_score_prints_its_own_usage(rows, synthetic_hub, judge_server, tmp_path, capsys):
    small = write_predictions(tmp_path / "small.jsonl", rows[:2])
    large = write_predictions(tmp_path / "large.jsonl", rows[2:8])
    assert main(["score", "--predictions", str(small), str(large), "--judge", "openai:judge", "--source", str(synthetic_hub),
                 "--base-url", judge_server.base_url, "--api-key", "sk-test", "--output-dir", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    usage = {json.loads((tmp_path / "out" / f"{name}.json").read_text())["usage"]["calls"]: name for name in ("small", "large")}
    assert sum(usage) == len(judge_server.calls)  # the run's calls, each counted once, on its own file
    for calls, name in usage.items():
        block = out.split(str(tmp_path / f"{name}.jsonl"))[1]
        assert f"; {calls} calls, 0 from cache, 0 failed" in block.splitlines()[8]
    assert len(usage) == 2  # two files, two different counts


def as_written_by_0_1_0(results: dict) -> dict:
    """A results file as bespoke-eval 0.1.0 wrote it: no standard errors, sample counts, guard records,
    coverage or guarded counts in the summary, no token details or cost in the usage block."""
    kept = {key: results[key] for key in ("summary", "items", "judge", "data", "usage", "created", "system") if key in results}
    kept["summary"] = {key: value for key, value in results["summary"].items() if key not in ("queries", "benchmark_queries", "guarded")}
    kept["items"] = [{key: value for key, value in item.items() if key != "guard"} for item in results["items"]]
    kept["usage"] = {key: results["usage"][key] for key in ("calls", "cached", "failed", "input_tokens", "output_tokens",
                                                             "wall_seconds")}
    kept["judge"] = {**results["judge"], "protocol_version": "1"}
    kept["bespoke_eval_version"] = "0.1.0"
    return kept


def test_results_written_by_0_1_0_still_load_rank_compare_and_submit(scored, tmp_path, capsys):
    results, _, output = scored
    old = tmp_path / "old.json"
    content = as_written_by_0_1_0(results)
    content["data"] = {"source": "org/bespoke", "revision": None, "fingerprint": "f" * 16}  # real data, to submit
    old.write_text(json.dumps(content))
    [entry] = gather_results([old]).entries
    assert entry.results.bespoke_eval_version == "0.1.0"
    [row] = build_leaderboard([entry], n_resamples=50)[0].rows
    assert (row.coverage, row.guarded) == ("5", 0)  # the file does not say the benchmark's size, nor the guards
    assert main(["leaderboard", str(old), "--format", "csv", "--resamples", "50"]) == 0
    assert main(["compare", str(old), str(old), "--resamples", "50"]) == 0
    assert main(["submit", str(old), "--model", "org/m", "--dataset", "org/bespoke", "--out", str(tmp_path / "repo")]) == 0
    from bespoke_cli.judging.score import print_summary
    from bespoke_metric.results import Results

    shown = io.StringIO()
    print_summary(Results.from_json(content), shown)
    assert shown.getvalue().splitlines()[-1].startswith("5 items; ")  # no coverage claimed that the file lacks
