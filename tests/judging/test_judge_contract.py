"""The `Judge` contract: every judge has `usage` and `close()` (and `backend`, `cache`, `calibrate`, with
the defaults of a judge that calls no LLM), so the code that judges asks any judge the same questions. A
judge of one's own subclasses `Judge`; one made from a spec is closed by the code that made it, a ready one
is its owner's; the dry run makes its judge through the factory, around a planning backend (over real HTTP:
the test server, which a dry run must never call)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import bespoke_dataset
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.calls.progress import ProgressHook
from bespoke_metric.judging.config import JudgeConfig
from bespoke_metric.judging.factory import make_judge
from bespoke_metric.judging.guarded_judge import GuardedJudge
from bespoke_metric.judging.judge import Judge, JudgeItem
from bespoke_metric.judging.judges import JUDGES, JudgeKind
from bespoke_metric.results import ItemResult
from bespoke_metric.scoring.pipeline import plan_judging, score
from bespoke_metric.testing.judge_responder import judge_answer


class Wordy(Judge):
    """A judge of one's own: every dimension scored by the response's length, each judgment counted as a call."""

    def __init__(self, spec: str = "wordy:any") -> None:
        super().__init__(spec)
        self.closed = False

    def describe(self) -> dict[str, Any]:
        return {"spec": self.spec, "backend": "wordy", "protocol_version": "wordy-1"}

    async def judge(self, items: list[JudgeItem], progress: ProgressHook | None = None) -> list[ItemResult]:
        self.usage.calls += len(items)
        results = []
        for item in items:
            result = ItemResult(str(item.row["user"]), str(item.row["query_id"]))
            for dimension in DIMENSIONS:
                result.scores[dimension] = min(5, 1 + len(item.response.split()) // 40)
                result.feedback[dimension] = "scored by length"
            results.append(result)
        return results

    def close(self) -> None:
        self.closed = True


@dataclasses.dataclass(frozen=True)
class WordyOptions:
    """`wordy:` takes no option."""


@pytest.fixture
def predictions() -> list[dict[str, str]]:
    """The sample's first three queries, each answered with its first R-J example."""
    rows = bespoke_dataset.load("benchmark", source="sample")
    return [{"user": row["user"], "query_id": row["query_id"], "response": row["shots"][0]["response"]} for row in rows][:3]


def test_a_ready_judge_of_ones_own_is_counted_and_left_open(predictions) -> None:
    judge = Wordy()
    results = score(predictions, judge, source="sample", guards=False)
    assert results.usage["calls"] == 3 == judge.usage.calls  # its usage, read through the guards' wrapper
    assert results.summary["items"] == 3 and results.judge["backend"] == "wordy"
    assert (results.usage["models"], results.usage["cost"]) == ({}, 0)  # it calls no LLM: nothing priced
    assert not judge.closed  # a ready judge is its owner's to close
    guarded = GuardedJudge(judge)
    assert (guarded.usage, guarded.backend, guarded.cache, guarded.judges_recall) == (judge.usage, None, None, True)


def test_a_judge_made_from_its_spec_is_closed_and_a_dry_run_builds_none(predictions, monkeypatch) -> None:
    made: list[Wordy] = []

    def build(spec: str, model: str, options: dict[str, Any]) -> Wordy:
        made.append(Wordy(spec))
        return made[-1]

    monkeypatch.setitem(JUDGES, "wordy", JudgeKind("wordy", WordyOptions, build=build))
    results = score(predictions, "wordy:any", source="sample", guards=False)
    assert [judge.closed for judge in made] == [True] and results.judge["spec"] == "wordy:any"
    rows = bespoke_dataset.load("benchmark", source="sample")
    assert plan_judging(JudgeConfig(spec="wordy:any"), [[JudgeItem(rows[0], "An answer.")]]) == []  # it calls no model
    assert len(made) == 1  # nothing built to find that out


def test_a_judge_that_is_not_a_judge_is_refused_in_one_sentence(predictions, monkeypatch) -> None:
    class Shaped:  # the shape of a judge, without the class: no usage, no close
        spec, proxy = "shaped:any", False

    with pytest.raises(TypeError, match="a ready judge is a Shaped, not a bespoke_metric.judging.judge.Judge: subclass Judge"):
        make_judge(Shaped())  # type: ignore[arg-type]
    monkeypatch.setitem(JUDGES, "shaped", JudgeKind("shaped", WordyOptions, build=lambda spec, model, options: Shaped()))
    with pytest.raises(TypeError, match="the shaped judge is a Shaped"):
        score(predictions, "shaped:any", source="sample")


def test_the_dry_run_judge_is_the_factorys_around_a_planning_backend(openai_server, tmp_path) -> None:
    """Nothing sent, no cache file created; once a real run has filled the cache, the dry run counts its
    answers and would send nothing."""
    openai_server.responder = judge_answer
    rows = list(bespoke_dataset.load("benchmark", source="sample"))[:2]
    items = [JudgeItem(row, row["shots"][0]["response"]) for row in rows]
    options = {"base_url": openai_server.base_url, "api_key": "sk-test", "recall": "batched", "cache": str(tmp_path / "judge.sqlite")}
    config = JudgeConfig(spec="openai:judge", options={**options, "cache": None}, cache=options["cache"], guards=False)
    [planned] = plan_judging(config, [items])
    assert openai_server.calls == [] and not (tmp_path / "judge.sqlite").exists()
    assert (len(planned.requests), planned.cached) == (4, 0)  # per item: the dimensions, then the claims in one call
    judge = make_judge("openai:judge", progress=False, **options)
    try:
        results = score([{"user": row["user"], "query_id": row["query_id"], "response": row["shots"][0]["response"]}
                         for row in rows], judge, source="sample", guards=False)
    finally:
        judge.close()
    assert len(openai_server.calls) == results.usage["calls"] == 4
    [planned] = plan_judging(config, [items])
    assert (len(planned.requests), planned.cached) == (0, 4) and len(openai_server.calls) == 4
