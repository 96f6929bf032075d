"""A run that lost judgments never looks complete: through the real command line against a local judge whose
calls for some responses fail (a 400 the client does not retry), its results file carries the `incomplete`
field, its exit status is 3 and its last line on stderr says what was lost and the command that fills the
gaps from its cache, with no key in any of them; that command, once the judge answers, pays only for the
gaps. The leaderboard, `bespoke submit` and the leaderboard Space refuse such a file unless told
(`--allow-incomplete`), and mark its row when told."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any, Iterator

import pytest
from output_lines import own_lines

from bespoke_cli.cli import main
from bespoke_cli.incomplete import EXIT_INCOMPLETE, HIDDEN, hide_secrets
from bespoke_metric.hub.eval_results import eval_result_entries
from bespoke_metric.hub.leaderboard_app import group_table, read_board
from bespoke_metric.hub.submission import check_submission
from bespoke_metric.results import Results
from bespoke_metric.scoring.pipeline import write_results
from bespoke_metric.testing.server import Fault, RecordedRequest, TestServer, serve
from bespoke_metric.testing.system_responder import answer_any

SAMPLE = Path(__file__).resolve().parents[2] / "bespoke_dataset" / "sample" / "predictions.jsonl"
KEY = "sk-incomplete-secret-0123456789"
MARK = "ZZQX-lost"
"""Written into the responses whose judge calls fail."""
LOST_USERS = ("user1",)


def failing(record: RecordedRequest) -> Fault | None:
    """A 400 (not retried: a request the endpoint refuses) for every call about a marked response."""
    if MARK in json.dumps(record.body):
        return Fault(status=400, body={"error": {"message": "bad request for this one", "type": "invalid_request_error"}})
    return None


def marked_predictions(folder: Path) -> Path:
    """The bundled sample's predictions, those of `LOST_USERS` marked so that their judge calls fail."""
    lines = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if line["user"] in LOST_USERS:
            line["response"] += f" {MARK}"
    path = folder / "marked.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def failed_calls(server: TestServer) -> int:
    return sum(1 for call in server.calls if call.status == 400)


def score_args(server: TestServer, predictions: Path, output: Path, *more: str) -> list[str]:
    return ["score", "--predictions", str(predictions), "--judge", "openai:judge", "--source", "sample",
            "--base-url", server.base_url, "--api-key", KEY, "--output", str(output), *more]


def last_line(err: str) -> str:
    return own_lines(err)[-1]


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def lost_run(judge_server: TestServer, tmp_path: Path, capsys: pytest.CaptureFixture) -> dict[str, Any]:
    """`bespoke score` of the marked predictions with a cache: what it wrote and said."""
    judge_server.rule = failing
    predictions, output, cache = marked_predictions(tmp_path), tmp_path / "lost.json", tmp_path / "judge.sqlite"
    code = main(score_args(judge_server, predictions, output, "--cache", str(cache)))
    printed = capsys.readouterr()
    return {"code": code, "out": printed.out, "err": printed.err, "output": output, "cache": cache,
            "predictions": predictions, "failed": failed_calls(judge_server)}


def test_a_score_that_lost_judgments_exits_3_marks_its_file_and_names_the_rerun_last(lost_run, judge_server):
    assert lost_run["code"] == EXIT_INCOMPLETE == 3
    results = read(lost_run["output"])
    lost = results["incomplete"]
    items = [item for item in results["items"] if item["user"] in LOST_USERS]
    assert lost_run["failed"] > 0 and lost["judgments_failed"] == lost_run["failed"]
    assert lost["items_affected"] == len(items) and lost["items"] == 15
    assert lost["failed"] == {metric: count for metric, count in results["summary"]["failures"].items() if count}
    [(cause, count)] = lost["causes"].items()  # one cause, said once
    assert count == lost_run["failed"] and cause.startswith("HTTP 400") and "bad request for this one" in cause
    assert lost["answers_missing"] == 0
    assert lost["cache"] == str(lost_run["cache"])
    line = last_line(lost_run["err"])
    assert line.startswith(f"incomplete: {lost_run['failed']} judgment(s) failed on {len(items)} of 15 items (")
    assert f"the same command fills the gaps from its cache {lost_run['cache']}, paying only for them: bespoke score " in line
    assert line.endswith(lost["rerun"])
    given = score_args(judge_server, lost_run["predictions"], lost_run["output"], "--cache", str(lost_run["cache"]))
    assert shlex.split(lost["rerun"]) == ["bespoke", *[HIDDEN if word == KEY else word for word in given]]
    # no key anywhere: the file, the lines, the command recorded
    assert KEY not in lost_run["output"].read_text(encoding="utf-8") + lost_run["out"] + lost_run["err"]


def test_the_recorded_rerun_fills_the_gaps_from_the_cache_paying_only_for_them(lost_run, judge_server, capsys):
    judge_server.rule = None  # the judge answers again
    judge_server.reset()
    words = [KEY if word == HIDDEN else word for word in shlex.split(read(lost_run["output"])["incomplete"]["rerun"])]
    assert words[0] == "bespoke"
    assert main(words[1:]) == 0
    assert len(judge_server.calls) == lost_run["failed"]  # the gaps, and nothing the cache kept
    results = read(lost_run["output"])
    assert "incomplete" not in results and not any(results["summary"]["failures"].values())
    assert "incomplete" not in capsys.readouterr().err


def test_a_run_without_a_cache_says_a_rerun_pays_for_everything(judge_server, tmp_path, capsys):
    judge_server.rule = failing
    output = tmp_path / "lost.json"
    assert main(score_args(judge_server, marked_predictions(tmp_path), output)) == EXIT_INCOMPLETE
    line = last_line(capsys.readouterr().err)
    assert "; no --cache was given, so the same command pays again for every judgment (give --cache FILE next time" in line
    lost = read(output)["incomplete"]
    assert lost["cache"] is None and lost["rerun"] == line.rsplit("): ", 1)[1]


def test_strict_still_exits_1_and_still_names_what_was_lost_last(judge_server, tmp_path, capsys):
    judge_server.rule = failing
    output = tmp_path / "lost.json"
    assert main(score_args(judge_server, marked_predictions(tmp_path), output, "--strict")) == 1
    lines = own_lines(capsys.readouterr().err)
    assert lines[-2].startswith("error: ") and lines[-2].endswith(" judgment(s) failed (--strict)")
    assert lines[-1].startswith("incomplete: ")
    assert read(output)["incomplete"]["judgments_failed"] > 0


def test_a_run_that_lost_nothing_is_as_before(judge_server, tmp_path, capsys):
    output = tmp_path / "whole.json"
    assert main(score_args(judge_server, SAMPLE, output)) == 0
    assert "incomplete" not in read(output)
    assert "incomplete" not in capsys.readouterr().err


def test_several_predictions_files_say_which_lost_judgments_in_one_last_line(judge_server, tmp_path, capsys):
    judge_server.rule = failing
    out = tmp_path / "results"
    assert main(["score", "--predictions", str(marked_predictions(tmp_path)), str(SAMPLE), "--judge", "openai:judge",
                 "--source", "sample", "--base-url", judge_server.base_url, "--api-key", KEY, "--output-dir", str(out)]) == 3
    line = last_line(capsys.readouterr().err)
    assert line.startswith("incomplete: ") and " of 30 items (" in line and " in 1 of 2 results files; " in line
    assert "incomplete" in read(out / "marked.json") and "incomplete" not in read(out / "predictions.json")


@pytest.mark.parametrize(("words", "shown"), [
    (["--api-key", KEY, "--base-url", "http://h/v1"], ["--api-key", HIDDEN, "--base-url", "http://h/v1"]),
    ([f"--api-key={KEY}"], [f"--api-key={HIDDEN}"]),
    (["--model-api-key", "short-one", "--token", "hf_abcdefghijklmnop"], ["--model-api-key", HIDDEN, "--token", HIDDEN]),
    (["--base-url", f"https://api.example/v1?api_key={KEY}"], ["--base-url", f"https://api.example/v1?api_key={HIDDEN}"]),
    (["--base-url", "https://me:pa55word@proxy.example/v1"], ["--base-url", f"https://me:{HIDDEN}@proxy.example/v1"]),
    (["--judge", "openai:gpt-5", "--note", f"key {KEY}"], ["--judge", "openai:gpt-5", "--note", f"key {HIDDEN}"]),
    (["--max-new-tokens", "8", "--tokenizer", "gpt2"], ["--max-new-tokens", "8", "--tokenizer", "gpt2"]),
])
def test_a_command_line_is_recorded_without_its_secrets(words, shown):
    assert hide_secrets(words) == shown


def test_a_results_file_without_the_field_is_complete_as_before(lost_run, tmp_path, capsys):
    """Files of earlier releases never had the field: one with failures in its summary still reads, and ranks, as
    complete. Written again by this release (as `bespoke import` writes results it built), it is marked."""
    content = read(lost_run["output"])
    del content["incomplete"]
    older = tmp_path / "older.json"
    older.write_text(json.dumps(content), encoding="utf-8")
    assert Results.from_json(content).incomplete is None
    assert main(["leaderboard", str(older)]) == 0
    assert "INCOMPLETE" not in capsys.readouterr().out
    again = tmp_path / "again.json"
    write_results(Results.from_json(content), again)
    lost = read(again)["incomplete"]
    assert lost["judgments_failed"] == lost_run["failed"] and lost["rerun"] is None and lost["cache"] is None


# ------------------------------------------------------------------------------------- what refuses them

def test_the_leaderboard_refuses_an_incomplete_file_unless_told_and_then_marks_its_row(lost_run, judge_server, tmp_path, capsys):
    whole = tmp_path / "whole.json"
    judge_server.rule = None
    assert main(score_args(judge_server, SAMPLE, whole)) == 0
    capsys.readouterr()
    lost = read(lost_run["output"])["incomplete"]
    assert main(["leaderboard", str(lost_run["output"]), str(whole)]) == 2
    [line] = own_lines(capsys.readouterr().err)
    assert line.startswith(f"error: incomplete results are not leaderboard material: {lost_run['output']} (lost "
                           f"{lost['judgments_failed']} judgment(s) on {lost['items_affected']} of 15 items); ")
    assert line.endswith("; the command that wrote each, run again, fills the gaps (its file's incomplete.rerun); "
                         "or give --allow-incomplete to show them marked INCOMPLETE.")
    assert judge_server.base_url not in line  # a Space shows its refusals to everyone
    assert main(["leaderboard", str(lost_run["output"]), str(whole), "--allow-incomplete"]) == 0
    table = capsys.readouterr().out
    marked = [row for row in table.splitlines() if "[INCOMPLETE: lost " in row]
    assert len(marked) == 1 and f"lost {lost['judgments_failed']} judgment(s) on {lost['items_affected']} of 15 items]" in marked[0]


def test_submit_refuses_an_incomplete_file_unless_told_and_its_notes_say_so(lost_run, tmp_path, capsys):
    args = ["submit", str(lost_run["output"]), "--model", "org/model", "--dataset", "org/bespoke", "--out", str(tmp_path / "out")]
    assert main(args) == 2
    [line] = own_lines(capsys.readouterr().err)
    assert line.startswith(f"error: incomplete results are not leaderboard material: {lost_run['output']} (lost ")
    assert not (tmp_path / "out").exists()
    # told, the file goes on to the next check (the bundled sample is synthetic, which the Hub never takes) ...
    assert main([*args, "--allow-incomplete"]) == 2
    assert "synthetic data" in capsys.readouterr().err
    # ... and an allowed file's Eval Results entries say what it lost
    entry = check_submission(read(lost_run["output"]), "lost.json", allow_incomplete=True, allow_synthetic=True)
    [note, *_] = [item["notes"] for item in eval_result_entries(entry, "org/bespoke")]
    assert note.startswith(f"INCOMPLETE: the run lost {lost_run['failed']} judgment(s) on ")


def test_the_leaderboard_space_refuses_an_incomplete_file_unless_told(lost_run, tmp_path, capsys):
    folder = tmp_path / "board"
    folder.mkdir()
    (folder / "lost.json").write_text(lost_run["output"].read_text(encoding="utf-8"), encoding="utf-8")
    args = ["space", "leaderboard", "--results", str(folder), "--out", str(tmp_path / "space"), "--package-from", "registry"]
    assert main(args) == 2
    [line] = own_lines(capsys.readouterr().err)
    assert "incomplete results are not leaderboard material: " in line and "lost.json (lost " in line
    assert main([*args, "--allow-incomplete"]) == 0
    assert "ALLOW_INCOMPLETE = True" in (tmp_path / "space" / "app.py").read_text(encoding="utf-8")
    # the Space's app reading the folder: the file is listed as not shown, with the reason, unless allowed
    refused = read_board(folder, n_resamples=10)
    assert refused.groups == [] and len(refused.skipped) == 1 and "incomplete results are not leaderboard material" in refused.skipped[0]
    shown = read_board(folder, allow_incomplete=True, n_resamples=10)
    assert "INCOMPLETE: lost " in group_table(shown.groups[0])


# ------------------------------------------------------------------------------------- the other commands

def lost_queries() -> list[str]:
    """The questions of `LOST_USERS`' queries in the bundled sample: a call that holds one fails."""
    import bespoke_dataset

    return [row["query"] for row in bespoke_dataset.load("benchmark", source="sample") if row["user"] in LOST_USERS]


def failing_queries(record: RecordedRequest) -> Fault | None:
    """A 400 for every call about one of `lost_queries`."""
    text = json.dumps(record.body, ensure_ascii=False)
    return Fault(status=400, body={"error": {"message": "refused"}}) if any(query in text for query in QUERIES) else None


QUERIES = lost_queries()


@pytest.fixture
def model_server() -> Iterator[TestServer]:
    with serve(responder=answer_any) as server:
        yield server


def model_flags(server: TestServer) -> list[str]:
    return ["--model", "openai:system", "--model-base-url", server.base_url, "--model-api-key", KEY, "--context", "none"]


def test_run_marks_its_results_and_fills_the_gaps_with_the_same_command(model_server, judge_server, tmp_path, capsys):
    output, cache = tmp_path / "results" / "system.json", tmp_path / "judge.sqlite"
    args = ["run", *model_flags(model_server), "--judge", "openai:judge", "--base-url", judge_server.base_url,
            "--api-key", KEY, "--source", "sample", "--cache", str(cache), "--output", str(output)]
    judge_server.rule = failing_queries
    assert main(args) == EXIT_INCOMPLETE
    err = capsys.readouterr().err
    lost = read(output)["incomplete"]
    failed = failed_calls(judge_server)
    assert failed > 0 and lost["judgments_failed"] == failed and lost["items_affected"] == len(QUERIES)
    assert last_line(err).startswith(f"incomplete: {failed} judgment(s) failed on {len(QUERIES)} of 15 items (")
    assert last_line(err).endswith(f"from its cache {cache}, paying only for them: {lost['rerun']}")
    assert shlex.split(lost["rerun"])[:2] == ["bespoke", "run"] and KEY not in output.read_text(encoding="utf-8") + err
    judge_server.rule = None
    model_server.reset(), judge_server.reset()
    assert main(args) == 0
    assert len(model_server.calls) == 0 and len(judge_server.calls) == failed
    assert "incomplete" not in read(output)


def test_run_that_could_not_answer_some_queries_is_incomplete_too(model_server, judge_server, tmp_path, capsys):
    output = tmp_path / "system.json"
    model_server.rule = failing_queries
    assert main(["run", *model_flags(model_server), "--judge", "openai:judge", "--base-url", judge_server.base_url,
                 "--api-key", KEY, "--source", "sample", "--output", str(output)]) == EXIT_INCOMPLETE
    line = last_line(capsys.readouterr().err)
    assert line.startswith(f"incomplete: {len(QUERIES)} quer(ies) have no answer (first: HTTP 400 ")
    lost = read(output)["incomplete"]
    assert (lost["answers_missing"], lost["judgments_failed"]) == (len(QUERIES), 0)


def test_generate_that_could_not_answer_some_queries_says_so_last_and_the_same_command_asks_only_them(
        model_server, tmp_path, capsys):
    predictions = tmp_path / "p.jsonl"
    args = ["generate", "--model", "openai:system", "--base-url", model_server.base_url, "--api-key", KEY,
            "--context", "none", "--source", "sample", "--output", str(predictions)]
    model_server.rule = failing_queries
    assert main(args) == EXIT_INCOMPLETE
    line = last_line(capsys.readouterr().err)
    assert line.startswith(f"incomplete: {len(QUERIES)} quer(ies) have no answer (first: HTTP 400 ")
    assert f"from its cache {tmp_path / 'p.cache.sqlite'}, paying only for them: bespoke generate " in line
    assert KEY not in line and f"--api-key {shlex.quote(HIDDEN)}" in line
    model_server.rule = None
    model_server.reset()
    assert main(args) == 0
    assert len(model_server.calls) == len(QUERIES)


def test_rescore_marks_the_new_results(judge_server, tmp_path, capsys):
    whole = tmp_path / "runs" / "whole.json"
    assert main(score_args(judge_server, SAMPLE, whole)) == 0
    judge_server.faults.extend([Fault(status=400, body={"error": {"message": "refused"}})] * 2)
    out = tmp_path / "rescored"
    assert main(["rescore", str(whole), "--judge", "openai:judge", "--base-url", judge_server.base_url, "--api-key", KEY,
                 "--out", str(out)]) == EXIT_INCOMPLETE
    line = last_line(capsys.readouterr().err)
    assert line.startswith("incomplete: 2 judgment(s) failed on ") and " bespoke rescore " in line
    assert read(out / "whole.json")["incomplete"]["judgments_failed"] == 2


def test_meta_eval_marks_its_results(judge_server, tmp_path, capsys):
    judge_server.faults.extend([Fault(status=400, body={"error": {"message": "refused"}})] * 2)
    output = tmp_path / "meta.json"
    assert main(["meta-eval", "--judge", "openai:judge", "--source", "sample", "--base-url", judge_server.base_url,
                 "--api-key", KEY, "--no-feedback-accuracy", "--resamples", "50", "--output", str(output)]) == EXIT_INCOMPLETE
    line = last_line(capsys.readouterr().err)
    assert line.startswith("incomplete: 2 judgment(s) failed on 2 of ") and " bespoke meta-eval " in line
    assert read(output)["incomplete"]["judgments_failed"] == 2


@pytest.mark.slow
def test_a_sweep_cell_that_lost_judgments_is_incomplete_and_judged_again_by_the_same_command(
        model_server, judge_server, tmp_path, capsys):
    out = tmp_path / "sweep"
    args = ["sweep", "--models", "openai:system", "--contexts", "none", "oracle", "--model-base-url", model_server.base_url,
            "--model-api-key", KEY, "--judge", "openai:judge", "--base-url", judge_server.base_url, "--api-key", KEY,
            "--source", "sample", "--out", str(out)]
    judge_server.rule = failing_queries
    assert main(args) == EXIT_INCOMPLETE
    line = last_line(capsys.readouterr().err)
    failed = failed_calls(judge_server)
    assert line.startswith(f"incomplete: {failed} judgment(s) failed on {2 * len(QUERIES)} of 30 items (")
    assert f"from its cache {out / 'judge.cache.sqlite'}, paying only for them: bespoke sweep " in line
    sweep = read(out / "sweep.json")
    assert sweep["status"] == "incomplete" and {cell["status"] for cell in sweep["cells"]} == {"incomplete"}
    assert sweep["incomplete"]["cells"] == [cell["name"] for cell in sweep["cells"]]
    assert all("incomplete" in read(out / cell["files"]["results"]) for cell in sweep["cells"])
    judge_server.rule = None
    model_server.reset(), judge_server.reset()
    assert main(args) == 0
    assert len(model_server.calls) == 0 and len(judge_server.calls) == failed
    assert read(out / "sweep.json")["status"] == "done"


# ------------------------------------------------------------------------------------- in a training loop

@pytest.mark.filterwarnings("ignore::bespoke_metric.hub.evaluate_metric.CaveatWarning")  # synthetic data: said, and beside the point
def test_the_evaluate_metric_returns_how_many_judgments_failed(judge_server):
    import evaluate  # noqa: F401 - the metric's module needs it

    import bespoke_dataset
    from bespoke_metric.hub.evaluate_metric import Bespoke, JudgeFailureWarning

    rows = list(bespoke_dataset.load("benchmark", source="sample"))[:3]
    metric = Bespoke(judge="openai:judge", source="sample", base_url=judge_server.base_url, api_key=KEY)
    inputs = {"predictions": [row["shots"][-1]["response"] for row in rows], "references": [f"{row['user']}/{row['query_id']}" for row in rows]}
    judge_server.faults.extend([Fault(status=400, body={"error": {"message": "refused"}})] * 2)
    with pytest.warns(JudgeFailureWarning):
        result = metric.compute(**inputs)
    assert result["judgments_failed"] == 2
    assert Bespoke(judge="openai:judge", source="sample", base_url=judge_server.base_url, api_key=KEY).compute(**inputs)["judgments_failed"] == 0
