"""`vllm:` on Ray: `ray.data.llm`'s vLLM processor, set up as the in-process vLLM engine is.

Same engine arguments (the in-process backend's defaults: prefix caching on, greedy, seed 0), same chat
messages (the processor applies the model's chat template, as `LLM.chat` does), the request's token
limit, and its JSON schema as structured output. Replicas are the processor's `concurrency`; each
replica spans `tensor_parallel_size * pipeline_parallel_size` GPUs. A prompt the engine rejects fails
alone (`should_continue_on_error`): its row comes back with `__inference_error__` and becomes a
`CallError` on its item. Requests are submitted sorted by their messages, so calls sharing a prefix (one
query's rubric and examples) sit in the same batches, as in-process.

vLLM is imported only on the cluster's GPU workers; building the configuration here needs `ray[data]` alone.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from bespoke_metric.backends.schema import GRAMMAR

from ..base import CallError, Outcome, Request
from ..local.vllm_backend import engine_args, sampling_args, structured_schema, vllm_identity
from ..options import VLLMOptions
from .rows import decode_request, row_outcome

VLLM_ROWS_PER_TASK = 64
"""Rows per batch handed to a vLLM replica, which schedules them continuously with the others in flight."""
INFERENCE_ERROR = "__inference_error__"
"""The column `ray.data.llm` fills on a row whose generation failed (`should_continue_on_error`)."""


class VLLMPlan:
    """How a `vllm:` engine runs on Ray: the processor's configuration and the rows it reads and writes."""

    one_batch = True
    takes_tools = False
    searches = False
    constraint = GRAMMAR

    def __init__(self, model: str, replicas: int, pipeline_parallel_size: int, options: VLLMOptions) -> None:
        if pipeline_parallel_size < 1:
            raise ValueError(f"pipeline_parallel_size must be at least 1, got {pipeline_parallel_size}")
        self.model = model
        self.replicas = replicas
        self.engine_kwargs = engine_args(model, options)
        del self.engine_kwargs["model"]  # the processor's `model_source`
        self.engine_kwargs["pipeline_parallel_size"] = pipeline_parallel_size
        self.identity = vllm_identity(model, options.revision, self.engine_kwargs["dtype"], seed=self.engine_kwargs["seed"])

    def config(self) -> Any:
        """The `vLLMEngineProcessorConfig` of this plan."""
        from ray.data.llm import vLLMEngineProcessorConfig

        return vLLMEngineProcessorConfig(
            model_source=self.model,
            engine_kwargs=dict(self.engine_kwargs),
            concurrency=self.replicas,
            batch_size=VLLM_ROWS_PER_TASK,
            should_continue_on_error=True,
            log_engine_metrics=False,
        )

    def processor(self) -> Any:
        from ray.data.llm import build_processor

        return build_processor(self.config(), preprocess=preprocess, postprocess=postprocess)

    def order(self, requests: Sequence[Request]) -> list[int]:
        # Neighbours share their prefix: vLLM reuses the cached blocks sooner.
        return sorted(range(len(requests)), key=lambda i: json.dumps(requests[i].messages))

    def run(self, dataset: Any) -> Any:
        return self.processor()(dataset)

    def outcome(self, row: dict[str, Any]) -> Outcome:
        error = row.get(INFERENCE_ERROR)
        if error:  # failed rows skip `postprocess`: they come back in the processor's own columns
            return CallError(f"vLLM generation failed: {error}")
        return row_outcome(row)


def preprocess(row: dict[str, Any]) -> dict[str, Any]:
    """A request row -> the processor's input: chat messages and this request's sampling parameters."""
    request = decode_request(row["request"])
    sampling = sampling_args(request)
    # The schema as JSON text: rows with different schemas still share one column type.
    schema = structured_schema(request)
    sampling["structured_outputs"] = None if schema is None else {"json": json.dumps(schema)}
    return {
        "position": row["position"],
        "messages": [dict(m) for m in request.messages],
        "sampling_params": sampling,
        "max_tokens": request.max_tokens,
    }


def postprocess(row: dict[str, Any]) -> dict[str, Any]:
    """The processor's output -> an outcome row (`ray_backend.outcome_row`'s columns)."""
    generated = int(row["num_generated_tokens"])
    return {
        "position": row["position"],
        "text": row["generated_text"],
        "input_tokens": int(row["num_input_tokens"]),
        "output_tokens": generated,
        # The processor does not pass vLLM's finish reason on; a reply that used its whole budget is
        # taken as cut off (parsing then asks for a repair rather than trusting it).
        "truncated": generated >= int(row["max_tokens"]),
        "error": None,
        "retryable": False,
    }
