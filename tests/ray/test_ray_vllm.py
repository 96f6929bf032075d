"""`vllm:` on Ray up to the boundary of `ray.data.llm`'s vLLM processor.

vLLM needs a GPU and is not installed here. What is real: the processor configuration and the processor
Ray Data builds from it (its stages and their arguments), the rows our preprocess hands to the engine
stage (messages, greedy sampling, the token limit, the schema as structured output), and how the rows it
returns (answers, and failed rows with `__inference_error__`) become outcomes. `benchmarks/gpu_ray.py`
runs it for real on a GPU machine.
"""

from __future__ import annotations

import json

import pytest

from bespoke_metric.backends.base import CallError, Completion, Request
from bespoke_metric.backends.local.vllm_backend import vllm_identity
from bespoke_metric.backends.ray.rows import encode_request
from bespoke_metric.backends.ray.vllm_processor import INFERENCE_ERROR, postprocess, preprocess
from bespoke_metric.backends.registry import make_backend

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "boolean"}}, "required": ["verdict"]}


def judge_request(content: str, schema: dict | None = SCHEMA) -> Request:
    return Request(({"role": "system", "content": "You judge."}, {"role": "user", "content": content}), 300, schema)


def test_processor_configuration_carries_parallelism_and_the_in_process_engine_settings(tiny_model_dir):
    backend = make_backend(f"vllm:{tiny_model_dir}", executor="ray", replicas=3, tensor_parallel_size=2,
                           pipeline_parallel_size=2, max_model_len=4096)
    config = backend._plan.config()
    assert config.model_source == str(tiny_model_dir)
    assert config.concurrency == 3
    assert config.should_continue_on_error is True
    engine = config.engine_kwargs
    assert engine["tensor_parallel_size"] == 2
    assert engine["pipeline_parallel_size"] == 2
    assert engine["max_model_len"] == 4096
    # the in-process engine's defaults, read from its signature
    assert engine["enable_prefix_caching"] is True
    assert engine["seed"] == 0
    assert engine["dtype"] == "auto"
    assert engine["gpu_memory_utilization"] == 0.9
    assert "revision" not in engine
    assert backend.identity() == vllm_identity(str(tiny_model_dir), None, "auto")


def test_processor_builds_its_stages_with_our_engine_arguments(ray_cluster, tiny_model_dir):
    backend = make_backend(f"vllm:{tiny_model_dir}", executor="ray", replicas=2, tensor_parallel_size=2)
    processor = backend._plan.processor()
    names = processor.list_stage_names()
    assert names == ["ChatTemplateStage", "TokenizeStage", "vLLMEngineStage", "DetokenizeStage"]
    engine = processor.get_stage_by_name("vLLMEngineStage")
    assert engine.fn_constructor_kwargs["model"] == str(tiny_model_dir)
    assert engine.fn_constructor_kwargs["engine_kwargs"]["tensor_parallel_size"] == 2
    assert engine.fn_constructor_kwargs["should_continue_on_error"] is True
    compute = engine.map_batches_kwargs["compute"]
    assert compute.max_size == 2


def test_preprocess_sends_the_messages_greedy_with_the_token_limit_and_the_schema():
    request = judge_request("Does the response convey this claim?")
    row = preprocess({"position": 7, "request": encode_request(request)})
    assert row["position"] == 7
    assert row["messages"] == [dict(m) for m in request.messages]
    assert row["max_tokens"] == 300
    sampling = row["sampling_params"]
    assert sampling["temperature"] == 0.0
    assert sampling["max_tokens"] == 300
    assert json.loads(sampling["structured_outputs"]["json"]) == SCHEMA
    plain = preprocess({"position": 8, "request": encode_request(judge_request("Answer freely.", schema=None))})
    assert plain["sampling_params"]["structured_outputs"] is None


def test_rows_in_prefix_order_and_back_into_outcomes(tiny_model_dir):
    plan = make_backend(f"vllm:{tiny_model_dir}", executor="ray")._plan
    requests = [judge_request("query B claim"), judge_request("query A claim 2"), judge_request("query A claim 1")]
    assert plan.order(requests) == [2, 1, 0]
    answered = {"position": 2, "generated_text": '{"verdict": true}', "num_input_tokens": 40,
                "num_generated_tokens": 6, "max_tokens": 300}
    assert plan.outcome(postprocess(answered)) == Completion('{"verdict": true}', 40, 6, False)
    cut = plan.outcome(postprocess({**answered, "num_generated_tokens": 300}))
    assert isinstance(cut, Completion)
    assert cut.truncated is True
    # a prompt the engine rejects comes back in the processor's own columns, skipping postprocess
    failed = plan.outcome({"position": 1, INFERENCE_ERROR: "ValueError: prompt is longer than max_model_len", "generated_text": ""})
    assert isinstance(failed, CallError)
    assert "longer than max_model_len" in failed.reason


@pytest.mark.parametrize(
    "options, message",
    [
        ({"gpus_per_replica": 1}, "tensor_parallel_size x pipeline_parallel_size"),
        ({"batch_size": 8}, "--batch-size does not apply to the vllm engine"),
        ({"replicas": 0}, "replicas must be at least 1"),
    ],
)
def test_options_that_do_not_fit_are_errors(tiny_model_dir, options, message):
    with pytest.raises(ValueError, match=message):
        make_backend(f"vllm:{tiny_model_dir}", executor="ray", **options)
