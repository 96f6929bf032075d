"""`vllm:MODEL`: offline generation with `vllm.LLM`, every prompt of a run submitted at once.

vLLM schedules what it is given continuously, so the fastest use is one `llm.chat` call with the whole
run. Automatic prefix caching is on: the judge's prompts put the per-query part (instructions, rubric,
examples) first, so all calls of one query share a cached prefix; submitting them sorted by their
messages keeps those calls next to each other. A request's JSON schema becomes structured (guided)
decoding, so the output always parses. Greedy decoding (temperature 0).

A model whose chat template renders tools takes them (`takes_tools`): `LLM.chat(..., tools=...)` renders
them (one submission per distinct tool set, in practice one), and the calls the model writes are parsed
here (`tool_calls.parse_tool_calls`), not by vLLM's server-side tool parsers, which are fragile.

vLLM refuses a whole submission for one request it cannot take (`REQUEST_ERRORS`: a prompt longer than
`max_model_len`, a schema it cannot compile): the submission is then halved until only that request
fails. Any other exception is the engine's own (a CUDA error, `EngineDeadError`): no request could
succeed after it, so it stops the run as one `EngineError` line instead of failing every call.

`vllm` is an optional extra, imported only when this backend is built. Both structured-output APIs are
supported: `StructuredOutputsParams` / `structured_outputs=` (vLLM >= 0.10.2; the old one was removed in
0.12) and `GuidedDecodingParams` / `guided_decoding=` (older releases).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Sequence

from bespoke_dataset.errors import MissingExtraError
from bespoke_metric.judging.protocol import GRAMMAR

from .base import CallError, Completion, EngineError, OnDone, Request
from .tool_calls import template_takes_tools, with_tool_calls

REQUEST_ERRORS: tuple[type[Exception], ...] = (ValueError,)
"""What vLLM raises for a request it refuses (input validation, sampling and structured-output
parameters); anything else comes from the engine."""


class VLLMBackend:
    """All-at-once offline generation with vLLM. See the module docstring."""

    name = "vllm"
    one_batch = True
    takes_tools = False
    searches = False
    constraint = GRAMMAR

    def __init__(
        self,
        model: str,
        *,
        tensor_parallel_size: int = 1,
        dtype: str = "auto",
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.9,
        enable_prefix_caching: bool = True,
        seed: int = 0,
        revision: str | None = None,
        trust_remote_code: bool = False,
        llm: Any = None,
    ) -> None:
        """
        Args:
            model: a Hub id or local folder.
            tensor_parallel_size: GPUs to shard the model over.
            max_model_len: context length to reserve (default: the model's).
            llm: an already built `vllm.LLM` to reuse (its settings are then the caller's).
        """
        try:
            import vllm
        except ImportError as err:
            raise MissingExtraError(
                "the vllm engine needs vLLM, which is not installed: pip install 'bespoke-eval[vllm]' (on a GPU machine)"
            ) from err
        self._vllm = vllm
        self.model = model
        self.revision = revision
        self.engine_args: dict[str, Any] = {
            "model": model,
            "tensor_parallel_size": tensor_parallel_size,
            "dtype": dtype,
            "gpu_memory_utilization": gpu_memory_utilization,
            "enable_prefix_caching": enable_prefix_caching,
            "seed": seed,
            "trust_remote_code": trust_remote_code,
        }
        if max_model_len is not None:
            self.engine_args["max_model_len"] = max_model_len
        if revision is not None:
            self.engine_args["revision"] = revision
        self._llm = llm if llm is not None else vllm.LLM(**self.engine_args)
        self._structured = _structured_output_api(vllm)
        self.takes_tools = template_takes_tools(getattr(self._llm.get_tokenizer(), "chat_template", None))

    # -- Backend interface -------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return vllm_identity(self.model, self.revision, self.engine_args["dtype"])

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        if any(request.tools for request in requests) and not self.takes_tools:
            raise ValueError(f"the chat template of {self.model} renders no tools: offer them in the prompt instead")
        # One submission per tool set (`LLM.chat` renders one for all its conversations); neighbours in a
        # submission share their prefix: vLLM reuses the cached blocks sooner.
        groups: dict[str, list[int]] = {}
        for index in sorted(range(len(requests)), key=lambda i: json.dumps(requests[i].messages)):
            groups.setdefault(json.dumps(requests[index].tools), []).append(index)
        for order in groups.values():
            await self._generate(requests, order, on_done)

    async def _generate(self, requests: Sequence[Request], order: list[int], on_done: OnDone) -> None:
        """One `LLM.chat` for `order` (requests offering the same tools). vLLM rejects a whole submission
        for one bad prompt (say, longer than `max_model_len`): then each half is tried alone, so only the
        bad prompts fail. An engine failure raises `EngineError`."""
        conversations = [[dict(m) for m in requests[i].messages] for i in order]
        params = [self.sampling_params(requests[i]) for i in order]
        tools = requests[order[0]].tools
        options: dict[str, Any] = {"use_tqdm": False, **({"tools": list(tools)} if tools else {})}
        try:
            outputs = await asyncio.to_thread(self._llm.chat, conversations, params, **options)
        except REQUEST_ERRORS as err:
            if len(order) > 1:
                middle = len(order) // 2
                await self._generate(requests, order[:middle], on_done)
                await self._generate(requests, order[middle:], on_done)
                return
            on_done(order[0], CallError(f"vLLM generation failed: {_one_line(err)}"))
            return
        except Exception as err:
            raise EngineError(f"the vLLM engine failed, so the run stops: {_one_line(err)}") from err
        if len(outputs) != len(order):
            raise RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(order)} prompts")
        for index, output in zip(order, outputs):
            outcome = _completion(output)
            on_done(index, with_tool_calls(outcome, requests[index]) if isinstance(outcome, Completion) else outcome)

    def close(self) -> None:
        self._llm = None

    # -- request building ----------------------------------------------------------------------------

    def sampling_params(self, request: Request) -> Any:
        """The `SamplingParams` of one request: greedy, its token limit, its schema as structured output."""
        args = sampling_args(request)
        if request.json_schema is not None:
            keyword, params_class = self._structured
            args[keyword] = params_class(json=request.json_schema)
        return self._vllm.SamplingParams(**args)


def vllm_identity(model: str, revision: str | None, dtype: str) -> dict[str, Any]:
    """The identity of a `vllm:` engine, also for one run elsewhere (Ray Data's vLLM processor)."""
    return {
        "engine": VLLMBackend.name,
        "model": model,
        "revision": revision,
        "settings": {"temperature": 0.0, "dtype": dtype, "schema_format": True},
    }


def sampling_args(request: Request) -> dict[str, Any]:
    """A request's sampling settings besides its schema: greedy, its own token limit."""
    return {"temperature": 0.0, "max_tokens": request.max_tokens}


def _structured_output_api(vllm: Any) -> tuple[str, Any]:
    """(SamplingParams keyword, params class) of the installed vLLM's structured-output API."""
    module = vllm.sampling_params
    if hasattr(module, "StructuredOutputsParams"):
        return "structured_outputs", module.StructuredOutputsParams
    if hasattr(module, "GuidedDecodingParams"):
        return "guided_decoding", module.GuidedDecodingParams
    raise ImportError(f"this vLLM ({getattr(vllm, '__version__', '?')}) has no structured-output API")


def _one_line(err: BaseException) -> str:
    """`Type: first line of the message` (CUDA errors add lines of debugging advice)."""
    message = str(err).strip().splitlines()
    return f"{type(err).__name__}: {message[0]}" if message else type(err).__name__


def _completion(output: Any) -> Completion | CallError:
    if not output.outputs:
        return CallError("vLLM returned no completion for this prompt")
    first = output.outputs[0]
    return Completion(
        text=first.text,
        input_tokens=len(output.prompt_token_ids or ()),
        output_tokens=len(first.token_ids or ()),
        truncated=getattr(first, "finish_reason", None) == "length",
    )
