"""What a system writes for itself before it answers, and what it did not do, is recorded and counted:
a degenerate profile or rewrite (the answers' `repetition` guard) is marked `degenerate` and not fed on,
a rewrite that fell back to the question says so in `search.fallback`, and an agent that never searched
is counted in the run's summary with a hint that its server may not take tools."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from fakes.search_servers import serve_search

from bespoke_cli.systems.generate import print_report
from bespoke_metric.backends.base import Request
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.systems import GenerationSettings, generate
from bespoke_metric.systems.prompts import PROFILER_SYSTEM_PROMPT
from bespoke_metric.systems.runfiles import sidecar
from bespoke_metric.systems.search import SearchOptions
from bespoke_metric.testing.doubles import ScriptedBackend

LOOP = "Searched: quokka lantern reviews\n" * 30
"""A profile as SmolLM2 writes one: the same line to its token limit."""


@pytest.fixture
def searxng():
    with serve_search("searxng") as server:
        yield server


def predictions(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def summary(report) -> str:
    out = io.StringIO()
    print_report(report, out)
    return out.getvalue()


def is_profiler(request: Request) -> bool:
    return request.messages[0]["content"] == PROFILER_SYSTEM_PROMPT


def test_a_degenerate_profile_is_marked_and_the_system_answers_without_it(tmp_path: Path) -> None:
    asked: list[str] = []

    def answer(request: Request) -> str:
        if is_profiler(request):
            return LOOP
        asked.append(request.messages[-1]["content"])
        return "Check the battery's state of health and the warranty before you buy."

    output = tmp_path / "p.jsonl"
    report = generate(ScriptedBackend(answer), output, GenerationSettings(context="profile", limit=2), source="sample",
                      progress=False)
    records = predictions(output)
    assert report.generated == 2 and report.degenerate == {"profile": 2}
    for record in records:
        assert record["degenerate"]["profile"]["guard"] == "repetition"
        assert record["context_tokens"] == 0  # answered with no profile
    assert asked and not any("quokka" in prompt for prompt in asked)
    [stored] = [json.loads(line) for line in sidecar(output, ".profiles.jsonl").open()]
    assert stored["text"] == LOOP.strip() and stored["degenerate"]["guard"] == "repetition"
    assert "degenerate profile: 2 prediction(s)" in summary(report)
    # the predictions gone, the stored profile is reused (not asked again) and judged the same way
    output.unlink()
    backend = ScriptedBackend(answer)
    again = generate(backend, output, GenerationSettings(context="profile", limit=2), source="sample", progress=False)
    assert again.degenerate == {"profile": 2} and not any(map(is_profiler, backend.requests))


def test_a_sound_profile_carries_no_mark(tmp_path: Path) -> None:
    def answer(request: Request) -> str:
        return "Drives a used EV, compares batteries and warranties, buys on a budget." if is_profiler(request) else "Fine."

    report = generate(ScriptedBackend(answer), tmp_path / "p.jsonl", GenerationSettings(context="profile", limit=1),
                      source="sample", progress=False)
    [record] = predictions(tmp_path / "p.jsonl")
    assert report.degenerate == {} and "degenerate" not in record and record["context_tokens"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("rewrite, degenerate", [("Queries:", False), ("espresso machine espresso machine " * 20, True)],
                         ids=["no usable query", "degenerate"])
def test_a_rewrite_that_falls_back_searches_the_question_and_says_so(rewrite: str, degenerate: bool, searxng,
                                                                     tmp_path: Path) -> None:
    def answer(request: Request) -> str:
        return rewrite if "Write up to" in request.messages[-1]["content"] else "An answer."

    settings = GenerationSettings(search=f"searxng:{searxng.base_url}", search_policy="rewrite", limit=2,
                                  search_options=SearchOptions(k=2))
    report = generate(ScriptedBackend(answer), tmp_path / "p.jsonl", settings, source="sample", progress=False)
    records = predictions(tmp_path / "p.jsonl")
    assert report.fallbacks == 2 and sorted(searxng.queries()) == sorted(r["query"] for r in _queries(2))  # searched at once: either may come first
    for record in records:
        assert record["search"]["fallback"].endswith("the question was searched as asked")
        assert ("degenerate" in record["search"]["fallback"]) == degenerate
        assert ("degenerate" in record) == degenerate
    assert report.degenerate == ({"rewrite": 2} if degenerate else {})
    assert "rewrite fell back to the question: 2 prediction(s) (`search.fallback`)" in summary(report)


def test_a_rewrite_with_queries_records_no_fallback(searxng, tmp_path: Path) -> None:
    def answer(request: Request) -> str:
        return "used EV battery health\nEV warranty transfer" if "Write up to" in request.messages[-1]["content"] else "An answer."

    settings = GenerationSettings(search=f"searxng:{searxng.base_url}", search_policy="rewrite", limit=1)
    report = generate(ScriptedBackend(answer), tmp_path / "p.jsonl", settings, source="sample", progress=False)
    [record] = predictions(tmp_path / "p.jsonl")
    assert report.fallbacks == 0 and "fallback" not in record["search"] and "rewrite fell back" not in summary(report)


def test_an_agent_offered_tools_that_never_searches_is_counted_with_a_hint(openai_server, searxng, tmp_path: Path) -> None:
    """As a llama.cpp server that ignores `tools` answers: plain text, no tool call, every time."""
    openai_server.responder = lambda body: "A used EV: check the battery."
    backend = make_backend("openai:gpt-4o", base_url=openai_server.base_url, api_key="sk-model-key-123456")
    assert backend.takes_tools
    settings = GenerationSettings(search=f"searxng:{searxng.base_url}", search_policy="agent", limit=2)
    report = generate(backend, tmp_path / "p.jsonl", settings, source="sample", progress=False)
    assert report.generated == 2 and report.unsearched == 2 and searxng.queries() == []
    assert all(body.get("tools") for body in (call.body for call in openai_server.calls))
    line = summary(report)
    assert "agent answered with no search at all: 2 of 2 prediction(s)" in line and "may not take tools" in line


def test_an_agent_that_searches_is_not_counted(searxng, tmp_path: Path) -> None:
    def answer(request: Request) -> str:
        searched = any(m["role"] == "assistant" for m in request.messages)
        return "Check the battery [1]." if searched else "SEARCH: used EV battery health"

    settings = GenerationSettings(search=f"searxng:{searxng.base_url}", search_policy="agent", limit=2)
    report = generate(ScriptedBackend(answer), tmp_path / "p.jsonl", settings, source="sample", progress=False)
    assert report.unsearched == 0 and "no search at all" not in summary(report)


def _queries(count: int) -> list[dict[str, Any]]:
    import bespoke_dataset

    return list(bespoke_dataset.load("queries", source="sample"))[:count]


def test_answers_without_their_profile_are_counted_in_the_run_file_the_results_and_the_leaderboard(tmp_path: Path) -> None:
    """One user's profile loops (degenerate), the other's is fine: the run file and the results file count the
    answers written without a profile, the results say so beside the figures, and the leaderboard row's
    `(profile)` is qualified."""
    from bespoke_metric.analysis.leaderboard import build_leaderboard, load_results
    from bespoke_metric.results.caveats import caveats
    from bespoke_metric.scoring.pipeline import score, write_results
    from bespoke_metric.testing.judge_responder import judge_answer
    from bespoke_metric.testing.server import serve

    profiles: list[str] = []

    def answer(request: Request) -> str:
        if is_profiler(request):
            profiles.append(request.messages[-1]["content"])
            return LOOP if len(profiles) == 1 else "This person compares prices before buying and likes plain answers."
        return "Check the battery's state of health and the warranty before you buy."

    output = tmp_path / "p.jsonl"
    report = generate(ScriptedBackend(answer), output, GenerationSettings(context="profile", limit=7), source="sample",
                      progress=False)
    without = sum("degenerate" in record for record in predictions(output))
    assert len(profiles) == 2 and 0 < without < 7 and report.degenerate == {"profile": without}
    run_file = json.loads(sidecar(output, ".run.json").read_text(encoding="utf-8"))
    assert run_file["degenerate"] == {"profile": without}
    # the count is an outcome, not a setting: the same command resumes
    assert generate(ScriptedBackend(answer), output, GenerationSettings(context="profile", limit=7), source="sample",
                    progress=False).already_done == 7

    with serve(responder=judge_answer) as judge:
        results = score(output, "openai:judge", source="sample", base_url=judge.base_url, api_key="sk-test",
                        recall="batched", system={"name": "scripted (profile)", "predictions": str(output)})
    assert results.system["degenerate"] == {"profile": without}
    assert any(f"{without} of the 7 answers were written without their profile" in note for note in caveats(results))
    write_results(results, tmp_path / "results.json")
    [group] = build_leaderboard(load_results([tmp_path / "results.json"]), allow_proxy=True, n_resamples=20)
    assert group.rows[0].system == f"scripted (profile) [{without} of 7 without their profile]"
