"""What the frameworks wing must hold beside the parity of its figures (test_framework_parity.py): inspect's metric
leaves out a sample whose score failed (as a whole or on one figure), never counting it as 0; an answer inspect's
model cut at the output cap is marked truncated through to `bespoke import`; `bespoke import` carries a whole run's
judge block, every field that tells a judge, a system or a data source apart, and the benchmark's own size; and
lm-eval's filter judges each answer against its own document's query, with every `judge_` option of `--metadata`.

The runs are real: inspect's `eval` in this process (mockllm's model under test, our judge over the OpenAI-compatible
test server on 127.0.0.1), and `lm_eval` itself in a subprocess (the stand-in as the model under test)."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from framework_logs import JUDGE, filter_text, judge_block, judged_item, lm_eval_sample
from output_lines import own_lines

from bespoke_cli.cli import main
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.frameworks.importing import ITEM_KEY, JUDGE_KEY
from bespoke_metric.judging.guards import GUARDS_VERSION
from bespoke_metric.results.metrics import METRIC_NAMES
from bespoke_metric.results.served import SESSION_KEY, judge_identity
from bespoke_metric.scoring.pipeline import load_benchmark
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import serve

ANSWER = ("Keep the rye starter near 26 degrees, feed it twice a day with whole rye flour, and lower the dough to seventy "
          "percent hydration until the starter doubles again within six hours. Answer {index}.")
TRUNCATED = 2
"""The model's answer (in the order they are asked for) that stops at the output cap."""
LIMIT = 6
"""Queries each inspect run answers (of the sample's 15): a partial run."""


# -- inspect's metric: a failed score left out ------------------------------------------------------------------


def figures_of(*values: Any) -> dict[str, float]:
    """inspect's metric of the task over samples scored `values` (a dict of figures, or what a failed score holds:
    NaN is `Score.unscored`'s)."""
    from inspect_ai.scorer import SampleScore, Score

    from bespoke_metric.frameworks.inspect_task import bespoke_figures

    return bespoke_figures()([SampleScore(score=Score(value=value), sample_id=str(index)) for index, value in enumerate(values)])


JUDGED = [{"need_alignment": 80.0, "content_depth": 60.0, "tone": 100.0, "explanation_style": 40.0, "recall": 50.0},
          {"need_alignment": 40.0, "content_depth": 100.0, "tone": 60.0, "explanation_style": 80.0, "recall": 25.0}]


@pytest.mark.parametrize("failed", [math.nan, "E", [], 0], ids=["unscored", "text", "list", "number"])
def test_a_sample_whose_score_failed_as_a_whole_is_left_out_of_every_figure(failed: Any) -> None:
    with_failed = figures_of(JUDGED[0], failed, JUDGED[1])
    # as a results file holds an item judged on no figure: out of every mean, resampled with the others for the errors
    assert with_failed == figures_of(JUDGED[0], dict.fromkeys(METRIC_NAMES, math.nan), JUDGED[1])
    alone = figures_of(*JUDGED)
    assert {name: with_failed[name] for name in (*METRIC_NAMES, "average")} == {name: alone[name] for name in (*METRIC_NAMES, "average")}
    assert alone["need_alignment"] == 60.0 and alone["average"] == pytest.approx((60 + 80 + 80 + 60 + 37.5) / 5)


def test_a_figure_not_judged_is_left_out_of_that_figure_alone() -> None:
    partly = {**JUDGED[1], "recall": math.nan}
    missing = {name: value for name, value in JUDGED[1].items() if name != "tone"}
    for other in (partly, missing):
        figures = figures_of(JUDGED[0], other)
        dropped = "recall" if other is partly else "tone"
        assert figures[dropped] == JUDGED[0][dropped]
        assert all(figures[name] == (JUDGED[0][name] + JUDGED[1][name]) / 2 for name in METRIC_NAMES if name != dropped)
        assert figures["average"] == pytest.approx(np.mean([figures[name] for name in METRIC_NAMES]))


def test_no_figure_judged_gives_no_figure_and_no_average() -> None:
    figures = figures_of({name: math.nan for name in METRIC_NAMES}, math.nan)
    assert {name: figures.get(name) for name in (*METRIC_NAMES, "average")} == dict.fromkeys((*METRIC_NAMES, "average"))


# -- inspect runs, imported -------------------------------------------------------------------------------------


class InspectRuns:
    """Two inspect runs of the task on the sample's first `LIMIT` queries, one sample at a time, judged by `JUDGE`
    over one test server: with the guards (`guarded`) and without (`unguarded`); and a third with the guards on the
    next `LIMIT` queries, all samples at once (`rest`: the rest of `guarded`'s run, in a judge session of its own);
    the judge's calls of each."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.logs: dict[str, Path] = {}
        self.calls: dict[str, int] = {}


@pytest.fixture(scope="module")
def inspect_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InspectRuns]:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, get_model

    from bespoke_metric.frameworks.inspect_task import bespoke
    from bespoke_metric.systems.tokens import seed_tiktoken_cache

    runs = InspectRuns(tmp_path_factory.mktemp("inspect-runs"))
    with pytest.MonkeyPatch.context() as patch, serve(responder=judge_answer) as server:
        # mockllm counts tokens with tiktoken's o200k_base, which it would download
        patch.setenv("TIKTOKEN_CACHE_DIR", str(seed_tiktoken_cache(runs.folder / "tiktoken").parent))
        patch.setenv("HF_HUB_OFFLINE", "1")
        for name, options in (("guarded", {}), ("unguarded", {"no_guards": True})):
            outputs = [ModelOutput.from_content("mockllm/model", ANSWER.format(index=index),
                                                stop_reason="max_tokens" if index == TRUNCATED else "stop") for index in range(LIMIT)]
            before = len(server.calls)
            [log] = inspect_eval(bespoke(source="sample", judge=JUDGE, judge_options={"base_url": server.base_url,
                                                                                      "api_key": "sk-judge", **options}),
                                 model=get_model("mockllm/model", custom_outputs=outputs), limit=LIMIT, max_samples=1,
                                 log_dir=str(runs.folder / name), display="none")
            assert log.status == "success", log.error
            runs.logs[name], runs.calls[name] = Path(log.location), len(server.calls) - before
        before = len(server.calls)
        [log] = inspect_eval(bespoke(source="sample", judge=JUDGE, judge_options={"base_url": server.base_url, "api_key": "sk-judge"}),
                             model=get_model("mockllm/model", custom_outputs=[ModelOutput.from_content(
                                 "mockllm/model", ANSWER.format(index=index)) for index in range(LIMIT, 2 * LIMIT)]),
                             sample_id=list(load_benchmark("sample")[0])[LIMIT:2 * LIMIT], max_samples=LIMIT,
                             log_dir=str(runs.folder / "rest"), display="none")
        assert log.status == "success", log.error
        runs.logs["rest"], runs.calls["rest"] = Path(log.location), len(server.calls) - before
    yield runs


def imported(capsys: pytest.CaptureFixture[str], *logs: Path, output: str = "imported.json") -> dict[str, Any]:
    """The results file `bespoke import` writes of `logs`: its exit 0, or 3 where a judgment was lost (incomplete)."""
    from bespoke_cli.incomplete import EXIT_INCOMPLETE

    code = main(["import", *map(str, logs), "--output", output])
    results = json.loads(Path(output).read_text(encoding="utf-8"))
    assert code == (EXIT_INCOMPLETE if "incomplete" in results else 0), capsys.readouterr().err
    return results


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_an_answer_cut_at_the_output_cap_is_truncated_in_the_score_and_after_import(
        inspect_runs: InspectRuns, here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from inspect_ai.log import read_eval_log

    samples = read_eval_log(str(inspect_runs.logs["guarded"])).samples or []
    cut = {sample.id for sample in samples if sample.output.stop_reason == "max_tokens"}
    assert len(cut) == 1 and len(samples) == LIMIT
    for sample in samples:
        item = sample.scores["bespoke_judge"].metadata[ITEM_KEY]
        assert (item.get("truncated"), item.get("truncation_reason")) == (
            (True, "max_tokens") if sample.id in cut else (None, None)), sample.id
    results = imported(capsys, inspect_runs.logs["guarded"])
    assert results["summary"]["truncated"] == 1
    assert [item["user"] + "/" + item["query_id"] for item in results["items"] if item.get("truncated")] == sorted(cut)
    predictions = [json.loads(line) for line in Path("imported/predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(p["truncated"], p["truncation_reason"]) for p in predictions if p.get("truncated")] == [(True, "max_tokens")]


@pytest.mark.slow
def test_an_imported_run_s_judge_block_counts_every_call_of_the_run(inspect_runs: InspectRuns, here: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    results = imported(capsys, inspect_runs.logs["guarded"])
    # one sample at a time: each sample's block counts the calls made so far; the run's counts them all
    assert results["judge"]["served_models"] == {"judge-model": inspect_runs.calls["guarded"]}
    assert results["judge"]["spec"] == JUDGE and results["judge"]["guards"] == GUARDS_VERSION


@pytest.mark.slow
def test_a_partial_run_keeps_the_benchmark_s_size(inspect_runs: InspectRuns, here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    benchmark, _ = load_benchmark("sample")
    results = imported(capsys, inspect_runs.logs["guarded"])
    assert len(results["items"]) == LIMIT < len(benchmark)
    assert results["summary"]["benchmark_queries"] == len(benchmark)


@pytest.mark.slow
def test_import_carries_the_system_the_data_and_the_answers(inspect_runs: InspectRuns, here: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    results = imported(capsys, inspect_runs.logs["guarded"])
    system = results["system"]
    assert (system["framework"], system["model"], system["context"], system["task"]) == (
        "inspect", "mockllm/model", "none", "bespoke_metric/bespoke")
    assert "judge_options" not in system["task_args"] and system["task_args"]["source"] == "sample"  # it holds the key
    assert "sk-judge" not in Path("imported.json").read_text(encoding="utf-8")
    assert system["served_models"] == {"mockllm/model": LIMIT} and system["imported_from"] == [str(inspect_runs.logs["guarded"])]
    assert results["data"]["source"] == "sample"
    predictions = [json.loads(line) for line in Path("imported/predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    keys = [f"{item['user']}/{item['query_id']}" for item in results["items"]]
    assert [f"{p['user']}/{p['query_id']}" for p in predictions] == keys
    assert all(p["response"].startswith("Keep the rye starter") for p in predictions)


def served(sample: Any) -> int:
    """The judge's answers an inspect sample's judge block counts."""
    return sum(sample.scores["bespoke_judge"].metadata[JUDGE_KEY]["served_models"].values())


def samples_kept(keep: Callable[[Any], bool]) -> Callable[[Any], None]:
    def change(log: Any) -> None:
        log.samples = [sample for sample in log.samples if keep(sample)]
    return change


@pytest.mark.slow
def test_a_run_split_over_logs_counts_its_judge_session_once(inspect_runs: InspectRuns, here: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # one eval's log split in two (as a run resumed from part of its log would be): the files share one judge session
    from inspect_ai.log import read_eval_log

    log = inspect_runs.logs["guarded"]
    samples = read_eval_log(str(log)).samples or []
    assert len({sample.scores["bespoke_judge"].metadata[JUDGE_KEY][SESSION_KEY] for sample in samples}) == 1
    latest = max(samples, key=served)  # its block counts every call of the session: given first, not last
    first = rewritten(log, here / "latest.json", samples_kept(lambda sample: sample.id == latest.id))
    second = rewritten(log, here / "others.json", samples_kept(lambda sample: sample.id != latest.id))
    results = imported(capsys, first, second)
    assert len(results["items"]) == LIMIT
    assert results["judge"]["served_models"] == {"judge-model": inspect_runs.calls["guarded"]}


@pytest.mark.slow
def test_runs_of_one_judge_in_two_sessions_count_the_calls_of_both(inspect_runs: InspectRuns, here: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # two evals of the same judge on disjoint queries, the second's samples judged at once (their blocks logged in
    # no set order): each session counted whole, once
    results = imported(capsys, inspect_runs.logs["guarded"], inspect_runs.logs["rest"])
    assert len(results["items"]) == 2 * LIMIT
    assert results["judge"]["served_models"] == {"judge-model": inspect_runs.calls["guarded"] + inspect_runs.calls["rest"]}
    assert SESSION_KEY not in results["judge"] and results["judge"]["guards"] == GUARDS_VERSION


def rewritten(log: Path, to: Path, change: Callable[[Any], None]) -> Path:
    """`log` written again to `to` in inspect's JSON format, with `change` applied to it."""
    from inspect_ai.log import read_eval_log, write_eval_log

    content = read_eval_log(str(log))
    change(content)
    write_eval_log(content, str(to), format="json")
    return to


def judge_field(name: str, value: Any) -> Callable[[Any], None]:
    def change(log: Any) -> None:
        for sample in log.samples:
            sample.scores["bespoke_judge"].metadata[JUDGE_KEY][name] = value
    return change


def task_arg(name: str, value: Any) -> Callable[[Any], None]:
    def change(log: Any) -> None:
        log.eval.task_args[name] = value
    return change


def model(value: str) -> Callable[[Any], None]:
    def change(log: Any) -> None:
        log.eval.model = value
    return change


@pytest.mark.slow
@pytest.mark.parametrize(("what", "change"), [
    ("judge", judge_field("spec", "openai:other-judge")),
    ("judge", judge_field("protocol_version", "1")),
    ("judge", judge_field("guards", None)),
    ("system", model("mockllm/other")),
    ("system", task_arg("context", "oracle")),
    ("data", task_arg("source", "yonsei-dli/BESPOKE")),
], ids=["spec", "protocol", "guards", "model", "context", "source"])
def test_runs_told_apart_by_any_field_are_never_joined(inspect_runs: InspectRuns, here: Path, what: str,
                                                       change: Callable[[Any], None], capsys: pytest.CaptureFixture[str]) -> None:
    guarded = inspect_runs.logs["guarded"]
    other = rewritten(guarded, here / "other.json", change)
    assert main(["import", str(guarded), str(other), "--output", "joined.json", "--source", "sample"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {other}: another {what} than {guarded}'s")
    assert not Path("joined.json").exists()


@pytest.mark.slow
def test_a_guarded_and_an_unguarded_run_are_two_judges(inspect_runs: InspectRuns, here: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    guarded, unguarded = inspect_runs.logs["guarded"], inspect_runs.logs["unguarded"]
    assert imported(capsys, unguarded)["judge"]["guards"] is None
    assert main(["import", str(guarded), str(unguarded), "--output", "joined.json"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {unguarded}: another judge than {guarded}'s")


# -- lm-eval's filter -------------------------------------------------------------------------------------------


def test_the_filter_judges_with_the_judge_the_metadata_made(tmp_path: Path) -> None:
    """In process, every kind of option (the protocol's, the client's, the cache, the guards): the filter's judge
    block is that of a judge made from the same options directly, and documents out of the benchmark's order are
    judged against their own rows."""
    from bespoke_metric.frameworks import lm_eval_harness
    from bespoke_metric.judging.config import JudgeConfig
    from bespoke_metric.judging.session import JudgeSession

    with serve(responder=judge_answer) as server:
        options = {"base_url": server.base_url, "api_key": "sk-judge", "cache": str(tmp_path / "judge.sqlite"),
                   "no_guards": True, "max_shots": 1, "recall": "none", "max_tokens": 700, "with_feedback": False}
        documents = lm_eval_harness.dataset(source="sample", judge=JUDGE, context="none",
                                            **{f"{lm_eval_harness.JUDGE_PREFIX}{name}": value for name, value in options.items()})["test"]
        docs = [documents[index] for index in (4, 1)]
        judged = [json.loads(text) for text in lm_eval_harness.judge_answers([["ok"], [ANSWER.format(index=1)]], docs)]
        calls = len(server.calls)
        benchmark, _ = load_benchmark("sample")
        expected = JudgeSession(JudgeConfig.from_values({**options, "judge": JUDGE}), list(benchmark.values()))
        try:
            block = expected.describe()
        finally:
            expected.close()
    assert [f"{one[ITEM_KEY]['user']}/{one[ITEM_KEY]['query_id']}" for one in judged] == [doc["key"] for doc in docs]
    assert judged[0][ITEM_KEY].get("guard") is None  # "ok" judged: the guards are off
    assert judge_identity(judged[0][JUDGE_KEY]) == judge_identity(block)  # the same judge, in another session
    assert judged[0][JUDGE_KEY]["served_models"] == {"judge-model": calls} and calls == 2  # one judgment each, no recall
    assert (tmp_path / "judge.sqlite").is_file()


PICKED = [9, 0, 4]
"""The documents lm-eval is asked for (`--samples`): not the benchmark's first ones, so a document's position in
the filter's input is not its row's in the benchmark."""


class LmEvalRun:
    """An `lm_eval` run of `bespoke_none` on `PICKED` with a judge over the test server, every judge option given as
    `--metadata` `judge_` keys: its samples, the judge's calls, the judge's cache."""

    def __init__(self, samples: list[dict[str, Any]], prompts: list[str], cache: Path) -> None:
        self.samples, self.prompts, self.cache = samples, prompts, cache


@pytest.fixture(scope="module")
def lm_eval_run(stand_in, tmp_path_factory: pytest.TempPathFactory) -> LmEvalRun:
    from bespoke_metric.frameworks.lm_eval import TASK_FOLDER
    from bespoke_metric.testing.server import messages_of

    out = tmp_path_factory.mktemp("lm-eval-options")
    cache = out / "judge.sqlite"
    with serve(responder=judge_answer) as server:
        metadata = {"source": "sample", "judge": JUDGE, "judge_base_url": server.base_url, "judge_api_key": "sk-judge",
                    "judge_cache": str(cache), "judge_no_guards": True, "judge_max_shots": 2, "judge_recall": "batched"}
        command = [sys.executable, "-m", "lm_eval", "run", "--model", "local-chat-completions",
                   "--model_args", f"model=gpt-4o-mini,base_url={stand_in.url}/chat/completions", "--include_path", str(TASK_FOLDER),
                   "--tasks", "bespoke_none", "--apply_chat_template", "--samples", json.dumps({"bespoke_none": PICKED}),
                   "--log_samples", "--output_path", str(out), "--metadata", json.dumps(metadata)]
        done = subprocess.run(command, env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-4000:]
        prompts = ["\n".join(message["content"] for message in messages_of(call.body)) for call in server.calls]
    [samples_file] = (out / "gpt-4o-mini").glob("samples_bespoke_none_*.jsonl")
    samples = [json.loads(line) for line in samples_file.read_text(encoding="utf-8").splitlines()]
    return LmEvalRun(samples, prompts, cache)


@pytest.mark.slow
def test_lm_eval_judges_each_answer_against_its_own_document_s_query(lm_eval_run: LmEvalRun) -> None:
    benchmark, _ = load_benchmark("sample")
    keys = list(benchmark)
    assert sorted(sample["doc"]["key"] for sample in lm_eval_run.samples) == sorted(keys[index] for index in PICKED)
    for sample in lm_eval_run.samples:
        item = json.loads(sample["filtered_resps"][0])[ITEM_KEY]
        assert f"{item['user']}/{item['query_id']}" == sample["doc"]["key"]
    # the judge was asked about exactly those queries: each prompt names its own query's gold need
    needs = {keys[index]: str(benchmark[keys[index]]["gold_information_need"]) for index in PICKED}
    asked = {key for key, need in needs.items() if any(need in prompt for prompt in lm_eval_run.prompts)}
    assert asked == set(needs)
    assert not any(str(row["gold_information_need"]) in prompt for key, row in benchmark.items() if key not in needs
                   for prompt in lm_eval_run.prompts)


@pytest.mark.slow
def test_every_judge_option_of_the_metadata_reaches_the_judge(lm_eval_run: LmEvalRun) -> None:
    blocks = [json.loads(sample["filtered_resps"][0])[JUDGE_KEY] for sample in lm_eval_run.samples]
    assert all(block == blocks[0] for block in blocks)
    block = blocks[0]
    # the endpoint (the calls reached the test server), the guards off, the protocol's options, the cache
    assert lm_eval_run.prompts and block["served_models"] == {"judge-model": len(lm_eval_run.prompts)}
    assert block["guards"] is None and block["max_shots"] == 2 and block["recall_mode"] == "batched"
    with sqlite3.connect(lm_eval_run.cache) as cache:
        tables = [name for (name,) in cache.execute("select name from sqlite_master where type = 'table'")]
        assert sum(cache.execute(f"select count(*) from {table}").fetchone()[0] for table in tables) >= len(lm_eval_run.prompts)


# -- bespoke import of lm-eval's samples, written here in lm-eval's format (fast: no run) ---------------------------

BLOCK = judge_block(40)


def logged(folder: Path, name: str, answers: list[tuple[str, list[int | None], float | None]],
           each: Sequence[Mapping[str, Any]] = (), **block: Any) -> Path:
    """lm-eval's samples file `samples_bespoke_none_NAME.jsonl` of the sample's first queries, as `--log_samples`
    writes it: per query its document, the answer (`resps`) and the filter's item and judge block (`BLOCK` with
    `block`, and the answer's own of `each` where given); with lm-eval's results file beside it naming the model."""
    benchmark, _ = load_benchmark("sample")
    lines = [lm_eval_sample(index, key, answer, filter_text(judged_item(key, scores, recall),
                                                            {**BLOCK, **block, **(each[index] if each else {})}))
             for index, ((answer, scores, recall), key) in enumerate(zip(answers, benchmark, strict=False))]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results_2026-12-06T00-00-00.json").write_text(json.dumps({"model_name": "gpt-4o-mini"}), encoding="utf-8")
    path = folder / f"samples_bespoke_none_{name}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


ANSWERS = [("Feed it twice a day.", [5, 4, 3, 2], 0.5), ("Keep it warm.", [None, 3, 3, 3], 0.25), ("Use rye.", [2, 2, 4, 4], None)]


def test_an_lm_eval_run_imports_as_the_results_file_of_its_items(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bespoke_metric.results import ItemResult
    from bespoke_metric.results.aggregation import summarize

    samples = logged(here / "out", "2026", ANSWERS)
    results = imported(capsys, samples)
    items = [ItemResult.from_json(item) for item in results["items"]]
    assert [item.scores for item in items] == [dict(zip(DIMENSIONS, scores, strict=True)) for _, scores, _ in ANSWERS]
    assert {name: results["summary"][name] for name in (*METRIC_NAMES, "average")} == pytest.approx(
        {name: value for name, value in summarize(items).items() if name in (*METRIC_NAMES, "average")}, nan_ok=True)
    assert results["summary"]["benchmark_queries"] == 15 and len(results["items"]) == 3
    assert results["judge"] == BLOCK and results["model_name"] == "gpt-4o-mini"
    assert (results["system"]["framework"], results["system"]["model"], results["system"]["context"], results["system"]["task"]) == (
        "lm-eval", "gpt-4o-mini", "none", "bespoke_none")
    assert results["data"]["source"] == "sample" and results["system"]["imported_from"] == [str(samples)]
    predictions = [json.loads(line) for line in Path("imported/predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [p["response_raw"] for p in predictions] == [answer for answer, _, _ in ANSWERS]
    assert results["system"]["predictions"] == "imported/predictions.jsonl"


@pytest.mark.parametrize(("field", "value"), [
    ("spec", "openai:another-judge"), ("protocol_version", "1"), ("guards", None), ("max_shots", 2),
    ("recall_mode", "batched"), ("with_feedback", False), ("personalized", False), ("structured", True),
    ("constraint", "json_schema"), ("recall_effort", "low"), ("max_tokens", 700), ("proxy", True), ("repeat", 1),
    ("base_url", "http://127.0.0.1:8001/v1"), ("settings", {"temperature": 0.0, "reasoning_effort": "high"})])
def test_lm_eval_runs_of_two_judges_are_never_joined(here: Path, capsys: pytest.CaptureFixture[str], field: str,
                                                    value: Any) -> None:
    # every field of the judge's block but who answered its calls tells judges apart, as the leaderboard's groups do
    first = logged(here / "a", "a", ANSWERS[:2])
    second = logged(here / "b", "b", ANSWERS[2:], **{field: value})
    assert main(["import", str(first), str(second), "--output", "joined.json"]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"error: {second}: another judge than {first}'s ({field}: {value!r} vs ")
    assert f"vs {BLOCK[field]!r})" in error if field in BLOCK else "vs absent)" in error
    assert "incomplete" in imported(capsys, first, logged(here / "c", "c", ANSWERS[2:]), output="joined.json")


def test_a_file_judged_by_two_judges_is_refused(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # an inspect log retried, or lm-eval's samples, whose sessions were not of one judge: one results file is one judge's
    samples = logged(here / "a", "a", ANSWERS, each=[{SESSION_KEY: "one"}, {SESSION_KEY: "one"}, {SESSION_KEY: "two", "max_shots": 2}])
    assert main(["import", str(samples), "--output", "imported.json"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {samples}: another judge than its other samples' (max_shots: 2 vs 5)")


def test_lm_eval_runs_of_one_judge_are_joined_whoever_answered_its_calls(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the counts of who answered, the provider's word on the model and the session differ between runs of one judge
    first = logged(here / "a", "a", ANSWERS[:2], **{SESSION_KEY: "one"})
    second = logged(here / "b", "b", ANSWERS[2:], served_models={"judge-model": 30, "judge-model-mini": 2}, stand_in=3,
                    model_status={"stage": "DEPRECATED"}, **{SESSION_KEY: "two"})
    judge = imported(capsys, first, second, output="joined.json")["judge"]
    assert judge == {**BLOCK, "served_models": {"judge-model": 70, "judge-model-mini": 2}, "stand_in": 3,
                     "model_status": {"stage": "DEPRECATED"}}


@pytest.mark.parametrize(("sessions", "counted"), [
    (("one", "one"), 30),  # one session's run split over two files: its latest block alone
    (("one", "two"), 20 + 30),  # two sessions: each one's latest block
    ((None, None), 20 + 30),  # blocks written before sessions were named: a session per file
], ids=["one-session-split", "two-sessions", "unnamed"])
def test_an_import_counts_each_judge_session_once_by_its_latest_block(
        here: Path, capsys: pytest.CaptureFixture[str], sessions: tuple[str | None, str | None], counted: int) -> None:
    # each sample's block counts the session's answers as they stood when it was judged; samples judged at once are
    # logged in no set order, so a file's last sample may not hold its session's latest counts
    def blocks(session: str | None, *answers: int) -> list[dict[str, Any]]:
        return [{"served_models": {"judge-model": count}, **({SESSION_KEY: session} if session else {})} for count in answers]

    first = logged(here / "a", "a", ANSWERS[:1], each=blocks(sessions[0], 20))
    second = logged(here / "b", "b", ANSWERS[1:], each=blocks(sessions[1], 30, 25))
    judge = imported(capsys, first, second, output="joined.json")["judge"]
    assert judge == {**BLOCK, "served_models": {"judge-model": counted}}


def test_an_imported_run_that_lost_judgments_never_looks_complete(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a judgment the framework's judge could not make: the import is marked, exits 3, and says how to fill the gap
    from bespoke_cli.incomplete import EXIT_INCOMPLETE

    samples = logged(here / "out", "lost", ANSWERS)
    assert main(["import", str(samples), "--output", "imported.json"]) == EXIT_INCOMPLETE
    last = own_lines(capsys.readouterr().err)[-1]
    assert last.startswith("incomplete: 1 judgment(s) failed on 1 of 3 items")
    assert "judged in lm-eval" in last and "bespoke rescore imported.json --judge " + JUDGE in last
    lost = json.loads(Path("imported.json").read_text(encoding="utf-8"))["incomplete"]
    assert (lost["judgments_failed"], lost["items_affected"], lost["rerun"].split()[:3]) == (1, 1, ["bespoke", "rescore", "imported.json"])
    assert main(["import", str(logged(here / "whole", "whole", ANSWERS[::2])), "--output", "whole.json"]) == 0
    assert "incomplete" not in json.loads(Path("whole.json").read_text(encoding="utf-8"))
