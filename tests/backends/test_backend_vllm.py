"""The `vllm:` backend up to the `vllm.LLM` boundary.

vLLM needs a GPU and is not installed here, so a stand-in `vllm` module (recording what it is given and
answering like `LLM.chat` does: one `RequestOutput` per conversation, in order) is put in `sys.modules`.
Everything on our side of the boundary — engine arguments, one submission with every prompt, sampling
parameters, structured outputs in both API generations, mapping outputs back to requests — is real.
"""

from __future__ import annotations

import asyncio
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import pytest

from bespoke_metric.backends.base import CallError, Completion, EngineError, Request
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.calls.scheduler import run_requests_sync

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "boolean"}}, "required": ["verdict"]}


@dataclass
class FakeSampling:
    kwargs: dict[str, Any]


@dataclass
class FakeStructured:
    json: Any = None


@dataclass
class FakeCompletionOutput:
    text: str
    token_ids: list[int]


@dataclass
class FakeRequestOutput:
    prompt_token_ids: list[int]
    outputs: list[FakeCompletionOutput] = field(default_factory=list)


def fake_vllm(structured_name: str | None = "StructuredOutputsParams", fail: Exception | None = None,
              tokenizer: Any = None) -> types.ModuleType:
    """A stand-in `vllm`; `tokenizer`: what `LLM.get_tokenizer()` gives (default: one whose chat template
    renders no tools)."""
    from bespoke_metric.testing.tiny_model import CHAT_TEMPLATE

    module = types.ModuleType("vllm")
    module.__version__ = "0.0-fake"
    module.engines = []
    sampling = types.ModuleType("vllm.sampling_params")
    if structured_name is not None:
        setattr(sampling, structured_name, FakeStructured)
    module.sampling_params = sampling
    module.SamplingParams = lambda **kwargs: FakeSampling(kwargs)

    class LLM:
        def __init__(self, **kwargs):
            self.kwargs = kwargs
            self.chat_calls: list[tuple[list, list, dict]] = []
            module.engines.append(self)

        def get_tokenizer(self):
            return tokenizer if tokenizer is not None else types.SimpleNamespace(chat_template=CHAT_TEMPLATE)

        def chat(self, messages, sampling_params, **kwargs):
            self.chat_calls.append((messages, sampling_params, kwargs))
            if fail is not None:
                raise fail
            outputs = []
            for conversation in messages:
                prompt = " ".join(m["content"] for m in conversation)
                text = f"reply to {conversation[-1]['content']}"
                outputs.append(FakeRequestOutput(list(range(len(prompt.split()))), [FakeCompletionOutput(text, [7] * len(text.split()))]))
            return outputs

    module.LLM = LLM
    return module


@pytest.fixture
def vllm_module(monkeypatch):
    module = fake_vllm()
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


def requests() -> list[Request]:
    shared = {"role": "system", "content": "rubric and examples for query 1"}
    return [
        Request(messages=({"role": "system", "content": "rubric for query 2"}, {"role": "user", "content": "z claim"}), max_tokens=64),
        Request(messages=(shared, {"role": "user", "content": "b claim"}), max_tokens=32, json_schema=SCHEMA),
        Request(messages=(shared, {"role": "user", "content": "a claim"}), max_tokens=16),
    ]


def test_engine_arguments(vllm_module):
    backend = make_backend("vllm:org/model", tensor_parallel_size=4, max_model_len=8192, revision="abc")
    (engine,) = vllm_module.engines
    assert engine.kwargs == {
        "model": "org/model",
        "tensor_parallel_size": 4,
        "dtype": "auto",
        "gpu_memory_utilization": 0.9,
        "enable_prefix_caching": True,
        "seed": 0,
        "trust_remote_code": False,
        "max_model_len": 8192,
        "revision": "abc",
    }
    assert backend.identity() == {
        "engine": "vllm",
        "model": "org/model",
        "revision": "abc",
        "settings": {"temperature": 0.0, "dtype": "auto", "schema_format": True},
    }


def test_everything_in_one_submission_and_results_mapped_back(vllm_module):
    backend = make_backend("vllm:m")
    outcomes: dict[int, Any] = {}
    asyncio.run(backend.complete(requests(), lambda i, o: outcomes.__setitem__(i, o)))
    (engine,) = vllm_module.engines
    (call,) = engine.chat_calls
    conversations, params, kwargs = call
    assert kwargs == {"use_tqdm": False}
    assert len(conversations) == 3
    # Sorted by messages: the two requests sharing the query-1 prefix are neighbours.
    assert [c[-1]["content"] for c in conversations] == ["a claim", "b claim", "z claim"]
    assert [p.kwargs["max_tokens"] for p in params] == [16, 32, 64]
    assert all(p.kwargs["temperature"] == 0.0 for p in params)
    assert "structured_outputs" not in params[0].kwargs
    assert params[1].kwargs["structured_outputs"] == FakeStructured(json=SCHEMA)
    assert outcomes == {
        0: Completion("reply to z claim", input_tokens=6, output_tokens=4),
        1: Completion("reply to b claim", input_tokens=8, output_tokens=4),
        2: Completion("reply to a claim", input_tokens=8, output_tokens=4),
    }


def test_older_vllm_guided_decoding(monkeypatch):
    module = fake_vllm("GuidedDecodingParams")
    monkeypatch.setitem(sys.modules, "vllm", module)
    backend = make_backend("vllm:m")
    params = backend.sampling_params(requests()[1])
    assert params.kwargs == {"temperature": 0.0, "max_tokens": 32, "guided_decoding": FakeStructured(json=SCHEMA)}


def test_vllm_without_structured_outputs_is_refused(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm(None))
    with pytest.raises(ImportError, match="no structured-output API"):
        make_backend("vllm:m")


def test_vllm_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ImportError, match=r"bespoke-eval\[vllm\]"):
        make_backend("vllm:m")


class EngineDeadError(Exception):
    """As `vllm.v1.engine.exceptions.EngineDeadError`: the engine process is gone."""


CUDA_ERROR = RuntimeError("CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be "
                          "asynchronously reported at some other API call.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1")


@pytest.mark.parametrize("failure, line", [
    (CUDA_ERROR, "RuntimeError: CUDA error: an illegal memory access was encountered"),
    (EngineDeadError("EngineCore encountered an issue. See stack trace (above) for the root cause."),
     "EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause."),
])
def test_an_engine_failure_stops_the_run_in_one_line(monkeypatch, failure, line):
    """Not bisected into 2n doomed calls each recorded as failed: one `chat`, one `EngineError`."""
    module = fake_vllm(fail=failure)
    monkeypatch.setitem(sys.modules, "vllm", module)
    with pytest.raises(EngineError) as raised:
        run_requests_sync(make_backend("vllm:m"), requests())
    assert str(raised.value) == f"the vLLM engine failed, so the run stops: {line}"
    assert raised.value.__cause__ is failure
    (engine,) = module.engines
    assert len(engine.chat_calls) == 1


def test_cli_engine_failure_is_one_line_and_exit_1(monkeypatch, synthetic_hub, tmp_path, capsys):
    import json

    from bespoke_cli import cli
    from bespoke_dataset.rows import load_rows

    monkeypatch.setitem(sys.modules, "vllm", fake_vllm(fail=CUDA_ERROR))
    rows = load_rows("benchmark", synthetic_hub)[:2]  # not through `datasets`: its first build prints a bar
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps({"user": r["user"], "query_id": r["query_id"],
                                               "response": r["shots"][0]["response"]}) + "\n" for r in rows))
    cache, output = tmp_path / "judge.sqlite", tmp_path / "results.json"
    code = cli.main(["score", "--predictions", str(predictions), "--judge", "vllm:m", "--source", str(synthetic_hub),
                     "--cache", str(cache), "--output", str(output)])
    printed = capsys.readouterr()
    assert code == 1
    assert printed.err.strip().splitlines() == [
        "error: the vLLM engine failed, so the run stops: RuntimeError: CUDA error: an illegal memory access was "
        f"encountered; 0 answer(s) saved in {cache} (0 by this run); rerun the same command to resume"]
    assert not output.exists()  # nothing half-written


def test_one_rejected_prompt_fails_alone(monkeypatch):
    """vLLM refuses a whole `chat` for one prompt longer than max_model_len: the others still run."""
    module = fake_vllm()
    chat = module.LLM.chat

    def picky_chat(self, messages, sampling_params, **kwargs):
        if any(conversation[-1]["content"] == "b claim" for conversation in messages):
            raise ValueError("prompt is longer than the maximum model length")
        return chat(self, messages, sampling_params, **kwargs)

    module.LLM.chat = picky_chat
    monkeypatch.setitem(sys.modules, "vllm", module)
    results = run_requests_sync(make_backend("vllm:m"), requests())
    assert [r.text for r in results] == ["reply to z claim", None, "reply to a claim"]
    assert results[1].error == "vLLM generation failed: ValueError: prompt is longer than the maximum model length"
    (engine,) = module.engines
    # [a, b, z] and [b, z] are refused (unrecorded), [a] and [z] answered: each good prompt generated once
    assert [[c[-1]["content"] for c in call[0]] for call in engine.chat_calls] == [["a claim"], ["z claim"]]


def test_through_the_scheduler(vllm_module):
    results = run_requests_sync(make_backend("vllm:m"), requests())
    assert [r.text for r in results] == ["reply to z claim", "reply to b claim", "reply to a claim"]


def test_a_prompt_without_output_is_a_call_error(vllm_module):
    from bespoke_metric.backends.vllm_backend import _completion

    assert _completion(FakeRequestOutput([1, 2], [])) == CallError("vLLM returned no completion for this prompt")


def test_vllm_judge_uses_guided_json_for_every_call(monkeypatch, synthetic_hub):
    """`score(..., "vllm:...")` up to the `vllm.LLM` boundary: one `chat` for the whole run, every
    request constrained to the protocol's JSON schema, answers parsed into scores."""
    import json

    import bespoke_dataset
    from bespoke_dataset.vocabulary import DIMENSIONS
    from bespoke_metric.scoring.pipeline import score

    module = fake_vllm()

    def answer(conversation: list[dict[str, str]], schema: Any) -> str:
        properties = schema["properties"]
        if "verdicts" in properties:
            return json.dumps({"verdicts": [{"claim": 1, "verdict": True}]})
        if "verdict" in properties:
            return json.dumps({"reasoning": "stated", "verdict": True})
        return json.dumps({"reasoning": "...", **{d: {"score": 4, "feedback": "fits"} for d in DIMENSIONS}})

    class LLM(module.LLM):
        def chat(self, messages, sampling_params, **kwargs):
            self.chat_calls.append((messages, sampling_params, kwargs))
            outputs = []
            for conversation, params in zip(messages, sampling_params):
                text = answer(conversation, params.kwargs["structured_outputs"].json)
                outputs.append(FakeRequestOutput([1, 2, 3], [FakeCompletionOutput(text, [7, 7])]))
            return outputs

    module.LLM = LLM
    monkeypatch.setitem(sys.modules, "vllm", module)
    row = bespoke_dataset.load("benchmark", source=synthetic_hub)[0]
    records = [{"user": row["user"], "query_id": row["query_id"], "response": "An answer that covers the question."}]
    results = score(records, "vllm:org/judge", source=synthetic_hub).to_json()
    (engine,) = module.engines
    assert len(engine.chat_calls) == 1
    assert len(engine.chat_calls[0][0]) == 1 + len(row["claims"])
    assert results["judge"]["structured"] is True
    (item,) = results["items"]
    assert item["scores"] == {d: 4 for d in DIMENSIONS}
    assert item["recall"] == 1.0
    assert not item["errors"]


def test_finish_reason_length_marks_the_completion_truncated():
    from bespoke_metric.backends.vllm_backend import _completion

    @dataclass
    class Output:
        text: str
        token_ids: list[int]
        finish_reason: str

    cut = _completion(FakeRequestOutput([1, 2], [Output("Need Alignment Score: 5", [3] * 4, "length")]))
    whole = _completion(FakeRequestOutput([1, 2], [Output("done", [3], "stop")]))
    assert cut.truncated
    assert not whole.truncated
    assert cut.output_tokens == 4


def test_tools_rendered_by_the_chat_template_and_calls_parsed_here(monkeypatch, tmp_path):
    """`LLM.chat(..., tools=...)` renders the tools through the model's own template (here the real tiny
    tools tokenizer, as vLLM's `chat` does); the answer's tool-call text is parsed on our side, not by
    vLLM's server-side parsers. One submission per tool set."""
    import transformers

    from bespoke_metric.backends.base import ToolCall
    from bespoke_metric.testing.tiny_model import build_tiny_model

    tokenizer = transformers.AutoTokenizer.from_pretrained(build_tiny_model(tmp_path / "tools", tools=True))
    search = {"type": "function", "function": {"name": "search", "parameters": {"type": "object",
                                                                                 "properties": {"query": {"type": "string"}}}}}
    module = fake_vllm(tokenizer=tokenizer)
    prompts: list[str] = []

    class LLM(module.LLM):
        def chat(self, messages, sampling_params, **kwargs):
            self.chat_calls.append((messages, sampling_params, kwargs))
            outputs = []
            for conversation in messages:
                prompt = tokenizer.apply_chat_template(conversation, tools=kwargs.get("tools"), tokenize=False,
                                                       add_generation_prompt=True)
                prompts.append(prompt)
                text = ('<think>look it up</think><tool_call>{"name": "search", "arguments": {"query": "'
                        + conversation[-1]["content"] + '"}}</tool_call>') if "<tools>" in prompt else "plain answer"
                outputs.append(FakeRequestOutput([1, 2, 3], [FakeCompletionOutput(text, [7, 7])]))
            return outputs

    module.LLM = LLM
    monkeypatch.setitem(sys.modules, "vllm", module)
    backend = make_backend("vllm:m")
    assert backend.takes_tools
    asked = [Request(({"role": "user", "content": f"q{i}"},), max_tokens=16, tools=(search,)) for i in range(3)]
    plain = Request(({"role": "user", "content": "no tools"},), max_tokens=16)
    outcomes: dict[int, Any] = {}
    asyncio.run(backend.complete([asked[0], plain, asked[1], asked[2]], outcomes.__setitem__))
    (engine,) = module.engines
    # one submission per tool set: the three offered the tool together, the other alone, without tools
    submissions = sorted((len(conversations), options) for conversations, _, options in engine.chat_calls)
    assert submissions == [(1, {"use_tqdm": False}), (3, {"use_tqdm": False, "tools": [search]})]
    assert sum('"name": "search"' in prompt for prompt in prompts) == 3
    for index, question in ((0, "q0"), (2, "q1"), (3, "q2")):
        assert outcomes[index].tool_calls == (ToolCall("search", {"query": question}, ""),)
        assert outcomes[index].text == "<think>look it up</think>"
    assert outcomes[1] == Completion("plain answer", input_tokens=3, output_tokens=2)


def test_a_template_without_tools_takes_none(vllm_module):
    backend = make_backend("vllm:m")
    assert not backend.takes_tools
    tools = ({"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}},)
    with pytest.raises(ValueError, match="renders no tools"):
        asyncio.run(backend.complete([Request(({"role": "user", "content": "q"},), tools=tools)], lambda i, o: None))
