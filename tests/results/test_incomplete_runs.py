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
from typing import Any

import pytest
from output_lines import own_lines

from bespoke_cli.cli import main
from bespoke_cli.incomplete import EXIT_INCOMPLETE, HIDDEN, hide_secrets
from bespoke_metric.results import Results
from bespoke_metric.testing.server import Fault, RecordedRequest, TestServer

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


def test_a_results_file_without_the_field_is_complete_as_before():
    """Files of earlier releases never had the field: one with failures in its summary still reads as complete."""
    written = Results.from_json(json.loads((Path(__file__).parent / "old_results.json").read_text(encoding="utf-8"))) if (
        Path(__file__).parent / "old_results.json").exists() else None
    assert written is None or written.incomplete is None
