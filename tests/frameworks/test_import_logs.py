"""`bespoke import` of inspect logs written here in inspect's own format (`write_eval_log`, no eval run: fast), and of
what `import_runs` makes of any framework's run: the latest BESPOKE score of each sample, a sample never scored left
out, epochs that agree taken once and those that differ refused or picked (`--epoch`), the system as inspect names it
(its task's arguments without the judge's options), the predictions as `bespoke generate` records them (who answered,
a guard, a cut), and every file that is not such a log named in one line. (Real runs: test_frameworks_held.py.)"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from framework_logs import JUDGE, judge_block, judged_item

from bespoke_cli.cli import main
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.frameworks.importing import (
    CONTEXT_KEY,
    ITEM_KEY,
    JUDGE_KEY,
    ImportRunError,
    import_runs,
    read_framework_run,
    read_inspect_log,
    rejudging,
)
from bespoke_metric.judging.guards import GUARDS_VERSION
from bespoke_metric.results import ItemResult
from bespoke_metric.results.figure_stats import figure_stats
from bespoke_metric.scoring.pipeline import load_benchmark

BLOCK = judge_block(40)
TASK_ARGS = {"source": "sample", "context": "history", "judge": JUDGE, "judge_options": {"api_key": "sk-secret"}}


@dataclass
class Answer:
    """One sample of an inspect log: the answer to the sample's query number `query` (in benchmark order) and its
    judgment, in an epoch; `scores` per dimension (None: not judged)."""

    query: int
    response: str
    scores: Sequence[int | None] = (4, 4, 4, 4)
    recall: float | None = 0.5
    epoch: int = 1
    model: str | None = "openai/gpt-4o-mini"
    stand_in: bool = False
    judge: dict[str, Any] = field(default_factory=dict)
    item: dict[str, Any] = field(default_factory=dict)
    """Fields of the item besides the scores and recall (a guard, a cut)."""
    scored: bool = True
    """False: the sample errored before it was scored (no score at all)."""
    key: str | None = None
    """The query it answers, where not the benchmark's `query`th (one the data may not hold)."""

    @property
    def id(self) -> str:
        return self.key or KEYS[self.query]


KEYS = list(load_benchmark("sample")[0])


def item_of(answer: Answer) -> ItemResult:
    return judged_item(answer.id, answer.scores, answer.recall, **answer.item)


def inspect_log(path: Path, answers: Sequence[Answer], *, task_args: dict[str, Any] | None = None,
                scores: Any = None, status: str = "success") -> Path:
    """An inspect log of the BESPOKE task at `path` (`.eval` or `.json`), each answer scored by our scorer (`scores`:
    a sample's scores by name, where given, for every sample)."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec, write_eval_log
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    samples = []
    for answer in answers:
        carried = {ITEM_KEY: item_of(answer).to_json(), JUDGE_KEY: {**BLOCK, **answer.judge}}
        output = ModelOutput.from_content(answer.model or "", answer.response)
        output.model = answer.model or ""
        samples.append(EvalSample(id=answer.id, epoch=answer.epoch, input="query", target="need", output=output,
                                  scores=scores if scores is not None else {"bespoke_metric/bespoke_judge": Score(
                                      value=1.0, metadata=carried)} if answer.scored else {},
                                  metadata={CONTEXT_KEY: {"stand_in": True}} if answer.stand_in else {}))
    spec = EvalSpec(created="2026-12-06T00:00:00+00:00", task="bespoke_metric/bespoke", task_version="1-A",
                    dataset=EvalDataset(name="bespoke"), model="openai/gpt-4o-mini", config=EvalConfig(),
                    task_args=TASK_ARGS if task_args is None else task_args)
    write_eval_log(EvalLog(eval=spec, samples=samples, status=status), str(path), format="json" if path.suffix == ".json" else "eval")
    return path


def refused(capsys: pytest.CaptureFixture[str], *paths: Path, epoch: int | None = None) -> str:
    """`bespoke import`'s one-line error for `paths` (exit 2, nothing written)."""
    assert main(["import", *map(str, paths), "--output", "out.json", *(["--epoch", str(epoch)] if epoch else [])]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("error: ") and not Path("out.json").exists()
    return error.removeprefix("error: ").strip()


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- what a log holds ----------------------------------------------------------------------------------------------


def test_an_inspect_log_is_read_as_inspect_names_its_run(here: Path) -> None:
    log = inspect_log(here / "run.eval", [Answer(0, "Feed it."), Answer(1, "Keep it warm.")],
                      task_args={**TASK_ARGS, "top_k": 3, "tokenizer": Path("tok")})
    run = read_inspect_log(str(log))
    assert run.path == str(log) and run.source == "sample"
    assert [(sample.response, sample.item.key) for sample in run.samples] == [("Feed it.", KEYS[0]), ("Keep it warm.", KEYS[1])]
    # the judge's options may hold its key: left out; a path as its text
    assert run.system == {"framework": "inspect", "model": "openai/gpt-4o-mini", "context": "history",
                          "task": "bespoke_metric/bespoke", "task_version": "1-A", "eval_id": run.system["eval_id"],
                          "task_args": {"source": "sample", "context": "history", "judge": JUDGE, "top_k": 3, "tokenizer": "tok"}}
    assert run.system["eval_id"]
    assert list(run.judges.values()) == [BLOCK]


def test_a_log_without_a_context_or_a_source_in_its_arguments(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the task's default context; the data then given with --source
    run = read_inspect_log(str(inspect_log(here / "run.eval", [Answer(0, "Feed it.")], task_args={"judge": JUDGE})))
    assert run.system["context"] == "none" and run.source is None and run.system["task_args"] == {"judge": JUDGE}
    assert refused(capsys, Path(run.path)) == f"{run.path}: it does not say which benchmark data it answers: give --source"
    assert main(["import", run.path, "--source", "sample", "--output", "out.json"]) == 0


def test_each_sample_is_judged_by_its_latest_bespoke_score(here: Path) -> None:
    from inspect_ai.scorer import Score

    def score(scores: list[int], judge: str) -> Score:
        answer = Answer(0, "Feed it.", scores=scores, judge={"spec": judge})
        return Score(value=1.0, metadata={ITEM_KEY: item_of(answer).to_json(), JUDGE_KEY: {**BLOCK, "spec": judge}})

    # `inspect score` appends its judge's score after the task's; another scorer's holds no item
    scores = {"bespoke_metric/bespoke_judge": score([2, 2, 2, 2], JUDGE), "rescored": score([5, 5, 5, 5], "openai:other"),
              "match": Score(value="C", metadata={"note": "not ours"})}
    run = read_inspect_log(str(inspect_log(here / "run.eval", [Answer(0, "Feed it.")], scores=scores)))
    assert run.samples[0].item.scores == dict.fromkeys(DIMENSIONS, 5)
    assert [block["spec"] for block in run.judges.values()] == ["openai:other"]


def test_a_sample_that_was_never_scored_is_left_out(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from inspect_ai.scorer import Score

    log = inspect_log(here / "run.eval", [Answer(0, "Feed it."), Answer(1, "Keep it warm.")])
    mixed = inspect_log(here / "mixed.eval", [Answer(2, "Errored.")], scores={})
    run = read_inspect_log(str(log))
    assert len(run.samples) == 2
    assert refused(capsys, mixed) == (f"{mixed}: no sample of this inspect log has a BESPOKE score (each errored before "
                                      "it was judged; status success)")
    other = inspect_log(here / "other.eval", [Answer(2, "x")], scores={"match": Score(value="C")}, status="error")
    assert refused(capsys, other).endswith("(each errored before it was judged; status error)")


def test_a_score_without_our_judge_block_is_named(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from inspect_ai.scorer import Score

    item = item_of(Answer(0, "Feed it.")).to_json()
    log = inspect_log(here / "run.eval", [Answer(0, "Feed it.")], scores={"s": Score(value=1.0, metadata={ITEM_KEY: item})})
    assert refused(capsys, log) == (f"{log}: sample {KEYS[0]} (epoch 1) holds no BESPOKE item and judge "
                                    f"(KeyError: '{JUDGE_KEY}')")


def test_a_log_of_no_sample_is_named_with_its_status(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = inspect_log(here / "empty.eval", [], status="cancelled")
    assert refused(capsys, log) == (f"{log}: the log holds no sample (an eval of none, as --limit 0 makes, or one stopped "
                                    "before its first; status cancelled): there is no answer to import")


# -- epochs --------------------------------------------------------------------------------------------------------


def two_epochs(here: Path, second: Sequence[Answer]) -> Path:
    return inspect_log(here / "epochs.eval", [Answer(0, "Feed it."), Answer(1, "Keep it warm."), *second])


def test_epochs_that_agree_are_one_answer_each(here: Path) -> None:
    log = two_epochs(here, [Answer(0, "Feed it.", epoch=2), Answer(1, "Keep it warm.", epoch=2)])
    run = read_inspect_log(str(log))
    assert [sample.item.key for sample in run.samples] == KEYS[:2] and run.system["epochs"] == 2
    assert "epoch" not in run.system


@pytest.mark.parametrize("differs", [
    {"response": "Feed it more."}, {"scores": (4, 4, 4, 3)}, {"recall": 0.25}], ids=["answer", "scores", "recall"])
def test_epochs_that_differ_are_refused_unless_one_is_picked(here: Path, capsys: pytest.CaptureFixture[str],
                                                            differs: dict[str, Any]) -> None:
    second = {"response": "Keep it warm.", **differs}
    log = two_epochs(here, [Answer(0, "Feed it.", epoch=2), Answer(1, epoch=2, **second)])
    assert refused(capsys, log) == (f"{log}: query {KEYS[1]} was answered or judged differently in its epochs: a results "
                                    "file holds one answer per query; import one epoch (--epoch N), each to its own results file")
    run = read_inspect_log(str(log), epoch=2)
    assert run.samples[1].response == second["response"] and (run.system["epochs"], run.system["epoch"]) == (2, 2)
    assert read_inspect_log(str(log), epoch=1).samples[1].response == "Keep it warm."


@pytest.mark.parametrize("epoch", [0, 3])
def test_an_epoch_the_log_does_not_have_is_named(here: Path, capsys: pytest.CaptureFixture[str], epoch: int) -> None:
    log = two_epochs(here, [Answer(0, "Feed it.", epoch=2)])
    with pytest.raises(ImportRunError, match=rf"^{log}: --epoch {epoch}: the log has epochs 1 to 2$"):
        read_inspect_log(str(log), epoch=epoch)


def test_a_judge_block_of_every_epoch_counts(here: Path) -> None:
    # the epochs share the judge's session: its latest block is that of the last epoch, even when one epoch is picked
    later = {"served_models": {"judge-model": 80}}
    log = two_epochs(here, [Answer(0, "Feed it.", epoch=2, judge=later), Answer(1, "Keep it warm.", epoch=2, judge=later)])
    assert list(read_inspect_log(str(log), epoch=1).judges.values()) == [{**BLOCK, **later}]


# -- one results file --------------------------------------------------------------------------------------------


def test_an_imported_inspect_run_is_the_results_file_of_its_answers(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # logged out of the benchmark's order (inspect logs by id), imported in it
    answers = [Answer(2, "Use rye.", scores=(2, 2, 4, 4), recall=None), Answer(0, "Feed it.", model="openai/gpt-4o"),
               Answer(1, "Keep it warm.", scores=(None, 3, 3, 3), stand_in=True, model="")]
    log = inspect_log(here / "run.json", answers)
    assert main(["import", str(log), "--output", "out.json"]) == 3  # a judgment lost: incomplete
    results = json.loads(Path("out.json").read_text(encoding="utf-8"))
    assert [item["query_id"] for item in results["items"]] == [key.split("/")[1] for key in KEYS[:3]]
    assert results["system"]["name"] == "openai/gpt-4o-mini (history)" and results["system"]["imported_from"] == [str(log)]
    assert results["usage"] == {"imported": "inspect"} and results["summary"]["benchmark_queries"] == len(KEYS)
    assert results["judge"] == BLOCK and results["data"]["source"] == "sample"
    predictions = [json.loads(line) for line in Path(results["system"]["predictions"]).read_text(encoding="utf-8").splitlines()]
    assert [prediction["response_raw"] for prediction in predictions] == ["Feed it.", "Keep it warm.", "Use rye."]
    assert [prediction.get("served_model") for prediction in predictions] == ["openai/gpt-4o", None, "openai/gpt-4o-mini"]
    assert [prediction.get("context") for prediction in predictions] == ["history"] * 3
    stand_in = predictions[1]
    assert stand_in.get("stand_in") is True, stand_in


def test_a_prediction_keeps_the_guard_and_the_cut_the_framework_recorded(here: Path) -> None:
    guard = {"guard": "echo", "reason": "copied from its context", "version": GUARDS_VERSION}
    answers = [Answer(0, "  Feed it.\n", item={"guard": guard}), Answer(1, "Keep it", item={"truncated": True,
                                                                                              "truncation_reason": "max_tokens"}),
               Answer(2, "Use rye.", item={"truncated": True}), Answer(3, "Rest it.", item={"truncated": False,
                                                                                              "truncation_reason": "x"})]
    predictions = import_runs([inspect_log(here / "run.eval", answers)]).predictions
    assert [prediction["response_raw"] for prediction in predictions] == ["  Feed it.\n", "Keep it", "Use rye.", "Rest it."]
    assert predictions[0]["response"] == "Feed it." and predictions[0]["guard"]["guard"] == "echo"
    assert predictions[0]["guard"]["reason"] == "copied from its context"
    assert "guard" not in predictions[1]
    assert [prediction.get("truncation_reason") for prediction in predictions] == [None, "max_tokens", "", None]


def test_runs_of_another_system_or_data_are_never_joined(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = inspect_log(here / "a.eval", [Answer(0, "Feed it.")])
    for name, args in (("context", {**TASK_ARGS, "context": "none"}), ("data", {**TASK_ARGS, "source": "other"})):
        other = inspect_log(here / f"{name}.eval", [Answer(1, "Keep it warm.")], task_args=args)
        error = refused(capsys, first, other)
        assert error.startswith(f"{other}: another {'system' if name == 'context' else name} than {first}'s (")
        assert error.endswith("): import each run to its own results file")
    joined = import_runs([first, inspect_log(here / "b.eval", [Answer(1, "Keep it warm.")])])
    assert [item.key for item in joined.results.items] == KEYS[:2]


def test_answers_to_queries_the_data_does_not_hold_are_named(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = inspect_log(here / "run.eval", [Answer(0, "Feed it.")], task_args={**TASK_ARGS, "source": "elsewhere"})
    error = refused(capsys, log)
    assert error.startswith(f"{log}: its data 'elsewhere' cannot be read from here (") and error.endswith("); give --source")
    other = here / "other.eval"
    inspect_log(other, [Answer(0, "Feed it.")])
    benchmark, _ = load_benchmark("sample")
    assert main(["import", str(other), "--source", "sample", "--output", "fine.json"]) == 0


def test_nothing_to_import_is_refused() -> None:
    with pytest.raises(ImportRunError, match="^no file to import$"):
        import_runs([])


def test_the_rerun_of_an_import_rescores_its_answers_beside_it(here: Path) -> None:
    results = import_runs([inspect_log(here / "run.eval", [Answer(0, "Feed it.")])]).results
    rerun = rejudging(results, Path("runs") / "imported run.json")
    assert rerun.command == f"bespoke rescore 'runs/imported run.json' --judge {JUDGE} --out 'runs/imported run-rejudged'"
    assert rerun.framework == "inspect"
    results.system = None
    assert rejudging(results, "out.json").framework == "another framework"


# -- files that are not a run ------------------------------------------------------------------------------------


def test_a_file_is_read_by_its_kind(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = inspect_log(here / "run.eval", [Answer(0, "Feed it.")])
    assert read_framework_run(log).system["framework"] == "inspect"
    assert read_framework_run(inspect_log(here / "run.json", [Answer(0, "Feed it.")])).system["framework"] == "inspect"
    (here / "samples_bespoke_none_2026.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(ImportRunError, match="samples_bespoke_none_2026.jsonl: --epoch is an inspect log's; lm-eval's "
                                             "samples have no epochs$"):
        read_framework_run(here / "samples_bespoke_none_2026.jsonl", epoch=1)
    with pytest.raises(ImportRunError, match="samples_bespoke_none_2026.jsonl: no samples in it$"):
        read_framework_run(here / "samples_bespoke_none_2026.jsonl")
    (here / "results_2026.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ImportRunError, match=r"results_2026.json: lm-eval's results file holds no answers; give the "
                                             r"samples_\*.jsonl file written beside it \(--log_samples\)$"):
        read_framework_run(here / "results_2026.json")
    with pytest.raises(ImportRunError, match=r"^missing.eval: no such file$"):
        read_framework_run("missing.eval")
    with pytest.raises(ImportRunError, match=r"^\.: a folder; give the inspect log \(.eval, .json\) or lm-eval's "
                                             r"samples_\*.jsonl in it$"):
        read_framework_run(".")
    (here / "run.txt").write_text("x", encoding="utf-8")
    with pytest.raises(ImportRunError, match=r"^run.txt: neither an inspect log \(.eval, .json\) nor lm-eval's samples "
                                             r"\(.jsonl\)$"):
        read_framework_run("run.txt")


def test_a_samples_file_that_is_not_text_is_named(here: Path) -> None:
    path = here / "samples_bespoke_none_2026.jsonl"
    path.write_bytes(bytes(random.Random(0).randrange(128, 256) for _ in range(64)))
    with pytest.raises(ImportRunError, match=r"samples_bespoke_none_2026.jsonl: not a text file, so not lm-eval's samples$"):
        read_framework_run(path)


# -- what each sample and judge block adds ---------------------------------------------------------------------------


def test_a_sample_left_unscored_among_scored_ones_is_passed_over(here: Path) -> None:
    log = inspect_log(here / "run.eval", [Answer(0, "Feed it."), Answer(1, "Errored.", scored=False), Answer(2, "Use rye.")])
    assert [sample.response for sample in read_inspect_log(str(log)).samples] == ["Feed it.", "Use rye."]


def test_an_empty_answer_is_imported_empty(here: Path) -> None:
    [sample] = read_inspect_log(str(inspect_log(here / "run.eval", [Answer(0, "")]))).samples
    assert sample.response == ""
    [prediction] = import_runs([here / "run.eval"]).predictions
    assert (prediction["response_raw"], prediction["response"]) == ("", "")


def test_the_epoch_picked_on_the_command_line_is_the_one_imported(here: Path) -> None:
    log = two_epochs(here, [Answer(0, "Feed it.", epoch=2), Answer(1, "Keep it cool.", epoch=2)])
    assert main(["import", str(log), "--output", "out.json", "--epoch", "2"]) == 0
    results = json.loads(Path("out.json").read_text(encoding="utf-8"))
    predictions = [json.loads(line) for line in Path(results["system"]["predictions"]).read_text(encoding="utf-8").splitlines()]
    assert [prediction["response_raw"] for prediction in predictions] == ["Feed it.", "Keep it cool."]
    assert results["system"]["epoch"] == 2


def test_a_prediction_says_who_answered_and_the_guard_as_recorded(here: Path) -> None:
    answers = [Answer(0, "Feed it.", item={"guard": {"guard": "echo"}}), Answer(1, "Keep it warm.", model=None)]
    predictions = import_runs([inspect_log(here / "run.eval", answers)]).predictions
    assert [(prediction["user"], prediction["query_id"]) for prediction in predictions] == [tuple(key.split("/")) for key in KEYS[:2]]
    assert predictions[0]["guard"] == {"guard": "echo", "reason": "", "version": GUARDS_VERSION}  # no reason recorded
    assert predictions[0]["served_model"] == "openai/gpt-4o-mini" and "served_model" not in predictions[1]


def test_a_stand_in_judge_session_counts_by_its_latest_block(here: Path) -> None:
    # a stand-in judge's blocks count its answers as `stand_in`: the latest block is the one counting the most
    blocks = [{"served_models": {}, "stand_in": count, "session": "judge-session"} for count in (2, 6, 4)]
    log = inspect_log(here / "run.eval", [Answer(index, "Feed it.", judge=block) for index, block in enumerate(blocks)])
    assert read_inspect_log(str(log)).judges == {"judge-session": {**BLOCK, **blocks[1]}}


def test_logs_whose_blocks_name_no_session_are_one_session_each(here: Path) -> None:
    # blocks written before sessions were named: each log its own session, their calls added up
    first = inspect_log(here / "a.eval", [Answer(0, "Feed it.")])
    second = inspect_log(here / "b.eval", [Answer(1, "Keep it warm.")])
    assert import_runs([first, second]).results.judge["served_models"] == {"judge-model": 80}


def test_runs_of_another_judge_are_named_with_the_fields_that_differ(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = inspect_log(here / "a.eval", [Answer(0, "Feed it.")])
    other = inspect_log(here / "b.eval", [Answer(1, "Keep it warm.", judge={"guards": None, "max_shots": 3})])
    assert refused(capsys, first, other) == (f"{other}: another judge than {first}'s (guards: None vs {GUARDS_VERSION!r}, "
                                             "max_shots: 3 vs 5): import each run to its own results file")


def test_a_file_that_is_no_log_inspect_can_read_is_named_with_its_first_line(here: Path) -> None:
    broken = here / "broken.eval"
    broken.write_bytes(b"not a zip archive")
    with pytest.raises(ImportRunError) as raised:
        read_inspect_log(str(broken))
    assert str(raised.value) == f"{broken}: not an inspect log that can be read (ValueError: EOCD not found)"


def test_an_import_records_who_answered_and_the_spread_of_its_figures(here: Path) -> None:
    answers = [Answer(0, "Feed it.", scores=(5, 4, 3, 2)), Answer(1, "Keep it warm.", model="", recall=0.25),
               Answer(2, "Use rye.", stand_in=True, model="openai/standin", scores=(1, 2, 3, 4), recall=1.0)]
    results = import_runs([inspect_log(here / "run.eval", answers)]).results
    # an answer whose model inspect did not name is counted nowhere; a stand-in's apart
    assert results.system["served_models"] == {"openai/gpt-4o-mini": 1} and results.system["stand_in"] == 1
    assert results.summary["judge_truncated"] == 0 and results.summary["benchmark_queries"] == len(KEYS)
    spread = figure_stats(results.items)
    assert (results.stderr, results.n_samples) == (spread["stderr"], spread["n_samples"])
    assert all(value > 0 for value in results.stderr.values())


def test_the_revision_given_is_the_one_the_data_is_read_at(here: Path) -> None:
    log = inspect_log(here / "run.eval", [Answer(0, "Feed it.")])
    with pytest.raises(ImportRunError, match=r"revision='v1' applies to Hub repos only"):
        import_runs([log], revision="v1")


def test_answers_to_queries_the_data_does_not_hold_are_counted_and_named(here: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    log = inspect_log(here / "run.eval", [Answer(0, "Feed it."), Answer(0, "Odd.", key="user9/98"),
                                          Answer(0, "Odder.", key="user9/99")])
    assert refused(capsys, log) == (f"{log}: 2 answer(s) to queries not in sample (first user9/98): give the --source the "
                                    "run was made on")
