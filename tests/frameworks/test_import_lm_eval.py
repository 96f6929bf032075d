"""`bespoke import` of lm-eval's samples files written here in lm-eval's own format (no lm_eval run: fast): the model
named by the latest results file beside them that says one, each malformed line named with its number, the
answers kept as written, whatever the machine's locale; and lm-eval's filter (`judge_answers`) and aggregation
(`average`) in this process over the OpenAI-compatible test server. (Real `lm_eval` runs: test_frameworks_held.py.)"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from framework_logs import JUDGE, filter_text, judge_block, judged_item, lm_eval_sample

from bespoke_metric.frameworks import lm_eval_harness
from bespoke_metric.frameworks.importing import (
    ITEM_KEY,
    JUDGE_KEY,
    ImportRunError,
    import_runs,
    read_lm_eval_samples,
    write_imported,
)
from bespoke_metric.results.metrics import METRIC_NAMES
from bespoke_metric.scoring.pipeline import load_benchmark
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import TestServer, serve

BLOCK = judge_block(2, session="s1")
KEYS = list(load_benchmark("sample")[0])
ANSWER = ("Keep the rye starter near 26 °C, feed it twice a day with whole rye flour — and lower the dough to seventy "
          "percent hydration until the starter doubles again within six hours.")


def lm_eval_line(index: int, answer: str = ANSWER, *, filtered: Any = None) -> str:
    """One line of lm-eval's samples file of `bespoke_none` (`--log_samples`): the document, the model's answer, and
    our filter's JSON text (`filtered`: another filtered response in its place)."""
    key = KEYS[index]
    return lm_eval_sample(index, key, answer, filter_text(judged_item(key, (4, 4, 4, 4), 0.5), BLOCK)
                          if filtered is None else filtered)


def samples_file(folder: Path, *lines: str) -> Path:
    path = folder / "samples_bespoke_none_2026-12-06T00-00-00.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_the_model_is_named_by_the_latest_results_file_that_names_one(tmp_path: Path) -> None:
    path = samples_file(tmp_path, lm_eval_line(0))
    assert read_lm_eval_samples(str(path)).system["model"] is None  # no results file beside it
    (tmp_path / "results_2026-12-04T00-00-00.json").write_text(json.dumps({"model_name": "old-model"}), encoding="utf-8")
    # lm-eval's --model_args without a model_name: the config's model; a task description in another script
    (tmp_path / "results_2026-12-05T00-00-00.json").write_text(
        json.dumps({"config": {"model": "openai-chat-completions"}, "task": "personnalisé"}, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "results_2026-12-06T00-00-00.json").write_text("{cut", encoding="utf-8")  # the newest, unreadable
    run = read_lm_eval_samples(str(path))
    assert run.system == {"framework": "lm-eval", "model": "openai-chat-completions", "context": "none", "task": "bespoke_none"}
    assert run.source == "sample" and [sample.response for sample in run.samples] == [ANSWER]


@pytest.mark.parametrize(("line", "said"), [
    ("{not json", "line 2 is not a sample lm-eval logged (JSONDecodeError: "),
    (json.dumps({"doc": {}, "resps": [["a"]]}), "line 2 is not a sample lm-eval logged (KeyError: 'filtered_resps')"),
    (lm_eval_line(1, filtered="4"), "line 2 is not a sample of a bespoke_* task (its filtered response holds no BESPOKE item)"),
    (lm_eval_line(1, filtered=json.dumps({ITEM_KEY: {"user": "u"}})),
     "line 2 holds no BESPOKE item and judge (KeyError: "),
], ids=["not-json", "not-lm-eval", "another-task", "no-judge-block"])
def test_a_line_that_is_not_our_sample_is_named_by_its_number(tmp_path: Path, line: str, said: str) -> None:
    path = samples_file(tmp_path, lm_eval_line(0), line)
    with pytest.raises(ImportRunError) as raised:
        read_lm_eval_samples(str(path))
    assert str(raised.value).startswith(f"{path}: {said}")


def test_a_samples_file_that_cannot_be_read_is_named_with_why(tmp_path: Path) -> None:
    with pytest.raises(ImportRunError, match=r": cannot be read \(Is a directory\)$"):
        read_lm_eval_samples(str(tmp_path))
    empty = samples_file(tmp_path)
    with pytest.raises(ImportRunError, match=f"^{empty}: no samples in it$"):
        read_lm_eval_samples(str(empty))


def test_answers_in_any_script_are_read_and_written_as_given_whatever_the_locale(tmp_path: Path) -> None:
    """In a Python whose locale is ASCII (`LC_ALL=C`, no UTF-8 mode): the samples and the results beside them read,
    the predictions written with the answers' own characters."""
    samples_file(tmp_path, lm_eval_line(0), lm_eval_line(1))
    (tmp_path / "results_2026-12-06T00-00-00.json").write_text(json.dumps({"model_name": "modèle-ü"}, ensure_ascii=False),
                                                              encoding="utf-8")
    here = read_lm_eval_samples(str(tmp_path / "samples_bespoke_none_2026-12-06T00-00-00.jsonl"))
    assert here.system["model"] == "modèle-ü" and [sample.response for sample in here.samples] == [ANSWER, ANSWER]
    write_imported(import_runs([here.path]), tmp_path / "here.json", tmp_path / "here.jsonl")
    assert all(ANSWER in line for line in (tmp_path / "here.jsonl").read_text(encoding="utf-8").splitlines())  # not escaped
    script = ("import sys; from bespoke_cli.cli import main; "
              "sys.exit(main(['import', sys.argv[1], '--output', 'out.json']))")
    environment = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
                   "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run([sys.executable, "-c", script, "samples_bespoke_none_2026-12-06T00-00-00.jsonl"], cwd=tmp_path,
                          env=environment, capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert done.returncode == 0, done.stderr
    predictions = (tmp_path / "out" / "predictions.jsonl").read_text(encoding="utf-8")
    lines = predictions.splitlines()
    assert [json.loads(line)["response"] for line in lines] == [ANSWER, ANSWER]
    assert all(ANSWER in line for line in lines)  # as given, not escaped
    results = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert results["system"]["model"] == "modèle-ü"


def test_runs_of_two_frameworks_are_never_joined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The same model, context and data answered in inspect and in lm-eval: two systems (each framework sends its
    own messages), never one run."""
    from test_import_logs import TASK_ARGS, Answer, inspect_log

    from bespoke_cli.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "lm").mkdir()
    samples = samples_file(tmp_path / "lm", lm_eval_line(0))
    (tmp_path / "lm" / "results_2026-12-06T00-00-00.json").write_text(json.dumps({"model_name": "openai/gpt-4o-mini"}),
                                                                     encoding="utf-8")
    log = inspect_log(tmp_path / "run.eval", [Answer(1, "Feed it.")], task_args={**TASK_ARGS, "context": "none"})
    assert main(["import", str(log), str(samples), "--output", "out.json"]) == 2
    assert capsys.readouterr().err == (f"error: {samples}: another system than {log}'s (('lm-eval', 'openai/gpt-4o-mini', "
                                       "'none') vs ('inspect', 'openai/gpt-4o-mini', 'none')): import each run to its own "
                                       "results file\n")
    assert not (tmp_path / "out.json").exists()


# -- lm-eval's filter and aggregation, in this process -------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[TestServer]:
    with serve(responder=judge_answer) as running:
        yield running


def documents(server: TestServer, *picked: int, context_block: str = "") -> list[Mapping[str, Any]]:
    made = lm_eval_harness.dataset(source="sample", judge=JUDGE, context="none", judge_base_url=server.base_url,
                                   judge_api_key="sk-judge")["test"]
    return [{**made[index], "context_block": context_block} for index in picked]


def filtered(resps: Sequence[Sequence[str]], docs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(text) for text in lm_eval_harness.judge_answers(resps, docs)]


def test_a_run_of_one_document_is_judged(server: TestServer) -> None:
    [judged] = filtered([[ANSWER]], documents(server, 3))
    assert f"{judged[ITEM_KEY]['user']}/{judged[ITEM_KEY]['query_id']}" == KEYS[3]
    assert judged[JUDGE_KEY]["spec"] == JUDGE and judged[ITEM_KEY].get("guard") is None


def test_each_answer_is_guarded_as_bespoke_score_guards_it(server: TestServer) -> None:
    context = ("My sourdough starter lives on my kitchen counter and I feed it rye flour every morning before work, "
               "then bake a loaf each Saturday for my family of four.")
    answers = [[ANSWER], [], [context]]
    judged = filtered(answers, documents(server, 0, 1, 2, context_block=context))
    assert judged[0][ITEM_KEY].get("guard") is None
    # no answer at all: judged as an empty one
    assert judged[1][ITEM_KEY]["guard"]["guard"] == "empty"
    assert judged[1][ITEM_KEY]["guard"]["reason"].startswith("the response has nothing but whitespace")
    assert judged[2][ITEM_KEY]["guard"]["guard"] == "echo"  # its own context block copied back
    assert len(server.calls) == 5  # the guarded ones cost no call: one judgment and four claims for the first


def test_answers_for_fewer_documents_than_the_filter_holds_are_refused(server: TestServer) -> None:
    with pytest.raises(ValueError, match="zip"):
        lm_eval_harness.judge_answers([[ANSWER]], documents(server, 0, 1))
    assert lm_eval_harness.judge_answers([], []) == []


def test_a_filter_in_a_process_that_did_not_make_the_dataset_judges_by_the_spec(monkeypatch: pytest.MonkeyPatch,
                                                                                 server: TestServer) -> None:
    docs = documents(server, 0)
    monkeypatch.setattr(lm_eval_harness, "_JUDGES", {})  # lm-eval's filter may run where the dataset was cached
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    [judged] = filtered([[ANSWER]], docs)
    assert judged[JUDGE_KEY]["spec"] == JUDGE and judged[JUDGE_KEY]["served_models"] == {"judge-model": 5}
    assert len(server.calls) == 5


def test_the_average_of_documents_judged_on_nothing_is_nan() -> None:
    nothing = dict.fromkeys(METRIC_NAMES, math.nan)
    headline = lm_eval_harness.average([nothing, nothing])
    assert isinstance(headline, float) and math.isnan(headline)  # lm-eval's table takes a float, never None
    one = {**nothing, "tone": 80.0}
    assert math.isnan(lm_eval_harness.average([one]))  # the average wants every figure judged somewhere
    whole = dict(zip(METRIC_NAMES, (20.0, 40.0, 60.0, 80.0, 100.0), strict=True))
    assert lm_eval_harness.average([whole, one]) == pytest.approx((20 + 40 + 70 + 80 + 100) / 5)


@pytest.mark.parametrize(("metadata", "said"), [
    ({"task_context": "selected-history", "context": "none", "judge": JUDGE},
     "\"context\": 'none': the task chooses the context (bespoke_selected_history runs selected-history); drop it from "
     "--metadata and run the task of the context you want: bespoke_none, bespoke_history, bespoke_selected_history, "
     "bespoke_oracle"),
    ({"judge": None}, "the bespoke tasks need a judge: --metadata '{\"judge\": \"ENGINE:MODEL\", \"source\": ...}'"),
    ({"judge": JUDGE, "context": "selected-profile"},
     "context 'selected-profile': the lm-eval tasks run none, history, selected-history, oracle; the profile contexts "
     "run in inspect (inspect eval bespoke_metric/bespoke -T context=...)"),
    ({"judge": JUDGE, "judge_recall": "bogus"}, "\"judge_recall\" must be one of per-claim, batched, none, got 'bogus'"),
], ids=["context-twice", "no-judge", "profile-context", "judge-option-value"])
def test_a_metadata_mistake_says_what_to_do_in_one_line(metadata: dict[str, Any], said: str) -> None:
    with pytest.raises(lm_eval_harness.MetadataError) as raised:
        lm_eval_harness.dataset(source="sample", **metadata)
    assert str(raised.value) == said


def test_the_spending_limit_is_a_command_s_not_a_judge_option() -> None:
    with pytest.raises(lm_eval_harness.MetadataError) as raised:
        lm_eval_harness.dataset(source="sample", judge=JUDGE, judge_api_key="sk-judge", judge_spending=5)
    said = str(raised.value)
    assert said.startswith('"judge_spending": not an option of the judge openai:judge-model; the judge\'s keys are ')
    assert "judge_spending" not in said.split("keys are ")[1] and "judge_max_shots" in said


def test_each_document_holds_the_messages_bespoke_generate_sends(server: TestServer) -> None:
    from bespoke_metric.systems.messages import Prompter

    made = lm_eval_harness.dataset(source="sample", judge=JUDGE, context="history", judge_base_url=server.base_url,
                                   judge_api_key="sk-judge")["test"]
    prompter = Prompter.load(source="sample", context="history")
    assert len(made) == len(prompter.rows) == len(KEYS)
    for document, row in zip(made, prompter.rows, strict=True):
        asked = prompter.messages_now(row)
        [system, user] = asked.messages
        assert document == {"user": asked.user, "query_id": asked.query_id, "key": asked.key, "context": "history",
                            "system": system["content"], "prompt": user["content"], "context_block": asked.context_block,
                            "context_tokens": asked.context_tokens, "session_ids": list(asked.session_ids),
                            "source": "sample", "judge": JUDGE}
        assert asked.context_block and asked.context_block in user["content"] + system["content"]
