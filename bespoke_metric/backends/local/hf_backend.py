"""`hf:MODEL`: local generation with `transformers`, batched.

Prompts are rendered with the model's chat template, sorted by length (longest first: rows of a batch have
similar lengths, so little padding, and an out-of-memory error shows up on the first batch rather than the
last) and generated in left-padded batches with greedy decoding. A batch takes as many rows as its padded
width fits in memory: on a GPU (bfloat16, SDPA attention) the free memory, halved if a batch still runs
out; on a CPU (float32) `CPU_BATCH_BYTES`. Each row ends at its own token limit or end of turn (in a batch
held to grammars, at its end of turn or the batch's end, reported cut to its limit: see `_Rows`).

The blocking `generate` runs in a worker thread (`worker.run_in_worker`) so the event loop (progress bar,
other backends) stays alive; each row's answer is reported as soon as it ends, not when its batch does, so
the progress bar moves as answers finish. Ctrl-C stops the batch at its next step, keeping the answers
that had ended.

A GGUF file (`hf:folder/model.gguf`, `hf:owner/repo/model.gguf`) loads the same way, dequantised by
transformers (`model_files.locate_model_files`); its tokenizer and chat template come from the file. Its first
load keeps what transformers read as Hugging Face folders in the project's cache, which every later load
reads (`gguf_cache`); the engine is still named by the file.
Generation stops at the model's end of turn: the `eos_token_id`s of its generation config (`<|im_end|>`
for a ChatML model such as SmolLM2), else its tokenizer's.

A request's JSON schema is written into its prompt (`messages_with_schema`), and with `grammar=True` (what
a judge gets: `make_judge`, `--no-grammar` turns it off) it also holds the answer: xgrammar compiles the
schema, bounded by `schema.bounded_schema` so that an answer always ends, into a grammar whose logits
processor (`xgrammar.contrib.hf.LogitsProcessor`) masks every next token that would leave it. The layout is
compact (no free whitespace, where a looping model could run on), and the tokens that hold a control
character are suppressed (xgrammar lets a bounded string take them; JSON does not). xgrammar rather than
outlines: vLLM and SGLang hold their structured outputs with it, so an `hf:` and a `vllm:` judge answer under
the same grammar of the same schema; it ships a transformers logits processor taking one grammar per row of
a batch; and it compiles the judgment's schema in some 0.05 s. A batch holds only requests with a schema,
or only requests without. `xgrammar` is an optional extra (`bespoke-eval[grammar]`), imported on the first
request with a schema.

A model whose chat template renders tools takes them (`takes_tools`): a request's `tools` go through
`apply_chat_template(..., tools=...)`, and the calls the model writes are parsed out of its answer
(`tool_calls.parse_tool_calls`) into `Completion.tool_calls`.
"""

from __future__ import annotations

import inspect
import json
import logging
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from bespoke_dataset.errors import require_extra
from bespoke_metric.backends.schema import GRAMMAR, GRAMMAR_REQUIREMENT, bounded_schema

from ..base import CallError, Completion, OnDone, Outcome, Request, messages_with_schema
from ..options import HFOptions
from ..tool_calls import template_messages, template_takes_tools, with_tool_calls
from .gguf_cache import load_causal_lm, load_tokenizer
from .model_files import locate_model_files
from .worker import Report, run_in_worker

log = logging.getLogger(__name__)

CPU_BATCH_BYTES = 2 << 30
"""Memory a batch may plan to use on a CPU (key/value cache and activations, `_bytes_per_token`): short
prompts share a large batch (a step costs about as much for 64 rows as for 8), long ones a smaller one."""
CPU_MIN_BATCH = 8
"""Rows per batch on a CPU however long the prompts: fewer would read the weights once per step for too few rows."""
MEMORY_HEADROOM = 0.7
"""Share of the free GPU memory a batch may plan to use; the rest absorbs estimation error."""


class HFBackend:
    """Batched greedy generation with a `transformers` causal LM. See the module docstring."""

    name = "hf"
    one_batch = False
    takes_tools = False
    searches = False

    def __init__(self, model: Any, options: HFOptions | None = None, *, tokenizer: Any = None) -> None:
        """
        Args:
            model: a Hub id, a local folder, a GGUF file (`folder/model.gguf`, `owner/repo/model.gguf`), or a
                loaded `PreTrainedModel` (then pass `tokenizer` too).
            options: its `HFOptions` (None: every default), each None the default:
                device: default "cuda" when available, else "cpu".
                dtype: default "bfloat16" on GPU, "float32" on CPU.
                batch_size: a fixed batch size; default: adapted to the prompts' length and the free GPU memory
                    (on a CPU: `CPU_BATCH_BYTES`, at least `CPU_MIN_BATCH`).
                max_batch_size: the most prompts per batch when adapting (default 64).
                revision: the Hub revision to load.
                trust_remote_code: run the model repo's own code (default off).
                grammar: hold the answer to a request's JSON schema with xgrammar's grammar of it (see the
                    module docstring); without it (the default) the schema is only written into the prompt.
            tokenizer: a loaded tokenizer; default: loaded from `model`.
        """
        options = options or HFOptions()
        revision, grammar = options.revision, bool(options.grammar)
        # A local folder, or the Hub snapshot, found in seconds and before the heavy imports
        # (ModelNotFoundError when there is none): transformers would retry an unreachable Hub for a minute.
        files = locate_model_files(str(model), revision) if isinstance(model, (str, Path)) else None
        torch = require_extra("torch", "hf", "the hf engine")
        require_extra("transformers", "hf", "the hf engine")

        self.device = options.device or default_device()
        on_gpu = self.device.startswith("cuda")
        self.dtype = options.dtype or default_dtype(self.device)
        self.batch_size = options.batch_size
        self.max_batch_size = options.max_batch_size or 64
        self.revision = revision
        self.grammar = grammar
        self.constraint = GRAMMAR if grammar else None
        self._compiler: Any = None  # xgrammar's, made for the first request with a schema
        self._control_tokens: list[int] = []  # the tokens a held answer never takes (see `_grammar_of`)
        if files is not None:
            self.model = str(model)  # what results name: the GGUF file, never its folder in the cache
            trust = bool(options.trust_remote_code)
            if tokenizer is None:
                tokenizer = load_tokenizer(files, trust_remote_code=trust)
            self._model = load_causal_lm(files, self.dtype, trust_remote_code=trust,
                                         attn_implementation="sdpa" if on_gpu else None)
        else:
            if tokenizer is None:
                raise ValueError("a preloaded model needs its tokenizer: pass tokenizer=")
            self._model = model.to(dtype=getattr(torch, self.dtype))
            self.model = str(getattr(model, "name_or_path", "") or type(model).__name__)
        self._model.to(self.device).eval()
        self._tokenizer = tokenizer
        self.takes_tools = template_takes_tools(getattr(tokenizer, "chat_template", None))
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._eos_ids = _eos_ids(self._model, tokenizer)
        self._batch_cap = self.max_batch_size  # lowered for good when a batch runs out of memory

    # -- Backend interface -------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return hf_identity(self.model, self.revision, self.dtype, self.grammar)

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        prompts = [self._encode(r) for r in requests]
        grammars = [self._grammar_of(r) for r in requests]
        # Longest first: similar lengths share a batch (little padding), and memory trouble surfaces early;
        # the requests held to a grammar apart from the others (a batch is all one or all the other).
        pending = sorted(range(len(requests)), key=lambda i: (grammars[i] is None, -len(prompts[i]), -requests[i].max_tokens))
        while pending:
            first = pending[0]
            size = self._batch_size_for(len(prompts[first]) + requests[first].max_tokens)
            batch = [i for i in pending[:size] if (grammars[i] is None) == (grammars[first] is None)]
            ended: set[int] = set()

            def land(row: int, outcome: Outcome, batch: list[int] = batch, ended: set[int] = ended) -> None:
                index = batch[row]
                ended.add(index)
                on_done(index, with_tool_calls(outcome, requests[index]) if isinstance(outcome, Completion) else outcome)

            def work(report: Report, stop: threading.Event, batch: list[int] = batch) -> None:
                held = None if grammars[batch[0]] is None else [grammars[i] for i in batch]
                self._generate_safely([prompts[i] for i in batch], [requests[i].max_tokens for i in batch], held, report, stop)

            await run_in_worker(work, land)
            # Out of memory: a smaller cap is set; the rows that had ended are kept, the others asked again.
            pending = [i for i in pending if i not in ended]

    def close(self) -> None:
        self._model = None
        self._tokenizer = None

    # -- internals -----------------------------------------------------------------------------------

    def _encode(self, request: Request) -> list[int]:
        messages = template_messages(messages_with_schema(request))
        tokenizer = self._tokenizer
        if request.tools and not self.takes_tools:
            raise ValueError(f"the chat template of {self.model} renders no tools: offer them in the prompt instead")
        if not getattr(tokenizer, "chat_template", None):
            text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "
            return tokenizer(text, add_special_tokens=True)["input_ids"]
        options: dict[str, Any] = {"add_generation_prompt": True, "tokenize": True, "return_dict": False}
        if request.tools:
            options["tools"] = list(request.tools)
        if "sanitize_control_tokens" in inspect.signature(tokenizer.apply_chat_template).parameters:
            # A judged response that spells out "<|eot_id|>" must stay text, not end the turn.
            options["sanitize_control_tokens"] = True
        ids = tokenizer.apply_chat_template(messages, **options)
        return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)

    def _grammar_of(self, request: Request) -> Any:
        """xgrammar's compiled grammar of the request's bounded schema (None: no schema, or no grammar)."""
        if request.json_schema is None or not self.grammar:
            return None
        if self._compiler is None:
            try:
                import xgrammar
            except ImportError as err:
                raise GRAMMAR_REQUIREMENT.missing("hf") from err
            info = xgrammar.TokenizerInfo.from_huggingface(
                self._tokenizer, vocab_size=self._model.config.get_text_config().vocab_size, stop_token_ids=self._eos_ids
            )
            self._compiler = xgrammar.GrammarCompiler(info)  # it keeps what it compiled: one compile per schema
            self._control_tokens = [token for token, piece in enumerate(info.decoded_vocab) if any(byte < 0x20 for byte in piece)]
        schema = bounded_schema(request.json_schema, request.max_tokens)
        # in the schema's own order of properties: reasoning first, so the judge thinks before it scores
        return self._compiler.compile_json_schema(json.dumps(schema), any_whitespace=False)

    def _batch_size_for(self, total_length: int) -> int:
        """Rows for a batch whose longest row (the first: longest first) is `total_length` tokens, prompt and
        answer: as many as its padded width fits in the memory at hand, at most the cap."""
        if self.batch_size is not None:
            return max(1, min(self.batch_size, self._batch_cap))
        config = self._model.config
        per_sequence = max(total_length * _bytes_per_token(config, self.dtype) + _bytes_for_logits(config), 1)
        if self.device.startswith("cuda"):
            import torch

            free, _ = torch.cuda.mem_get_info(torch.device(self.device))
            fits = int(free * MEMORY_HEADROOM // per_sequence)
        else:
            fits = max(CPU_MIN_BATCH, CPU_BATCH_BYTES // per_sequence)
        return max(1, min(fits, self._batch_cap))

    def _generate_safely(self, prompts: list[list[int]], max_tokens: list[int], grammars: list[Any] | None,
                         report: Report, stop: threading.Event) -> None:
        """`_generate`, and out of GPU memory, the batch cap halved (the caller asks the rows not reported again)
        or, on a single prompt, that prompt failed."""
        import torch

        try:
            self._generate(prompts, max_tokens, grammars, report, stop)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            if len(prompts) == 1:
                report(0, CallError(f"out of GPU memory on a single prompt of {len(prompts[0])} tokens"))
                return
            self._batch_cap = (len(prompts) + 1) // 2
            log.warning("out of GPU memory with %d prompts per batch; trying %d", len(prompts), self._batch_cap)

    def _generate(self, prompts: list[list[int]], max_tokens: list[int], grammars: list[Any] | None, report: Report,
                  stop: threading.Event) -> None:
        """One left-padded batch through `generate` (held to `grammars`, one a row, where given), each row
        reported (`report(row, outcome)`) as it ends; `stop` set ends the batch at the next step, the rows that
        had not ended unreported."""
        import torch
        import transformers

        pad = self._tokenizer.pad_token_id
        width = max(len(p) for p in prompts)
        input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=self.device)
        attention_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=self.device)
        config = transformers.GenerationConfig(
            max_new_tokens=max(max_tokens), do_sample=False, pad_token_id=pad, eos_token_id=self._eos_ids or None,
            suppress_tokens=self._control_tokens if grammars is not None else None,
        )
        processors = transformers.LogitsProcessorList()
        if grammars is not None:
            from xgrammar.contrib.hf import LogitsProcessor

            processors.append(LogitsProcessor(list(grammars)))  # one per generate call: it keeps the rows' state
        rows = _Rows(self, prompts, max_tokens, width, report, stop, own_limits=grammars is None)
        with torch.inference_mode():
            sequences = self._model.generate(
                input_ids=input_ids, attention_mask=attention_mask, generation_config=config, logits_processor=processors,
                stopping_criteria=transformers.StoppingCriteriaList([rows]),
            )
        rows.report_ended(sequences[:, width:].tolist(), every=not stop.is_set())

    def _completion(self, row: list[int], prompt: list[int], limit: int) -> Completion:
        """One row's answer: cut at its own token limit (greedy decoding: a longer shared budget yields the
        same prefix) and at its end of turn."""
        row = row[:limit]
        stop = next((k for k, token in enumerate(row) if token in self._eos_ids), len(row))
        text = self._tokenizer.decode(row[:stop], skip_special_tokens=True)
        return Completion(text=text, input_tokens=len(prompt), output_tokens=min(stop + 1, len(row)),
                          truncated=stop == len(row))


REPORT_EVERY_S = 0.25
"""How often a batch being generated is looked at for rows that ended. Looking copies the batch to the host,
which on a GPU waits for the step to finish: often enough for the progress bar, not at every token."""


class _Rows:
    """A stopping criterion for one batch of `generate`: ends each row at its own token limit, ends the whole
    batch when `stop` is set (Ctrl-C), and reports each row, now and then, as soon as it has ended (its end
    of turn or its limit), so the progress bar moves and an interrupted batch keeps what it finished."""

    def __init__(self, backend: HFBackend, prompts: list[list[int]], limits: list[int], width: int, report: Report,
                 stop: threading.Event, *, own_limits: bool = True) -> None:
        """`own_limits`: end a row at its own limit. Not in a batch held to grammars: xgrammar's logits processor
        asserts that each row's next token is one its grammar takes, and a row ended here before its end of
        turn gets padding; such a row runs on to the batch's end, and is reported cut to its limit."""
        import torch

        self.backend = backend
        self.prompts = prompts
        self.limits = limits
        self.width = width
        self.report = report
        self.stop = stop
        self.unreported = set(range(len(prompts)))
        self.own_limits = own_limits
        self.limit_tensor = torch.tensor(limits, device=backend.device)
        self.looked = time.monotonic()

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        if self.stop.is_set():
            return torch.ones(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        if time.monotonic() - self.looked >= REPORT_EVERY_S:
            self.report_ended(input_ids[:, self.width :].tolist(), every=False)
            self.looked = time.monotonic()
        if not self.own_limits:
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        return input_ids.shape[1] - self.width >= self.limit_tensor  # computed on the device: no wait

    def report_ended(self, generated: list[list[int]], *, every: bool) -> None:
        """Report the rows not reported yet that have ended; `every`: all of them (the batch is done)."""
        eos = self.backend._eos_ids
        for row in sorted(self.unreported):
            tokens = generated[row][: self.limits[row]]
            if every or len(tokens) == self.limits[row] or any(token in eos for token in tokens):
                self.unreported.discard(row)
                self.report(row, self.backend._completion(tokens, self.prompts[row], self.limits[row]))


def default_device() -> str:
    """Where a model runs unless told: the GPU when there is one."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def default_dtype(device: str) -> str:
    """The dtype a model runs in unless told: bfloat16 on a GPU, float32 on a CPU."""
    return "bfloat16" if device.startswith("cuda") else "float32"


def hf_identity(model: str, revision: str | None, dtype: str, grammar: bool = False) -> dict[str, Any]:
    """The identity of an `hf:` engine, also for one built elsewhere (a Ray actor): same key, same cache.
    `grammar`: whether a request's schema holds its answer (`schema: grammar`) or is only written into the
    prompt (`schema: in prompt`, as every `hf:` engine was before grammars, so its answers keep their keys)."""
    return {
        "engine": HFBackend.name,
        "model": model,
        "revision": revision,
        "settings": {"do_sample": False, "dtype": dtype, "schema": GRAMMAR if grammar else "in prompt"},
    }


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if eos is None:
        eos = tokenizer.eos_token_id
    if eos is None:
        return []
    return list(eos) if isinstance(eos, (list, tuple)) else [eos]


def _bytes_per_token(config: Any, dtype: str) -> int:
    """Rough GPU memory per token of a sequence: its key/value cache plus prefill activations."""
    text = getattr(config, "text_config", None) or config
    width = 2 if dtype in ("bfloat16", "float16") else 4
    hidden = text.hidden_size
    heads = text.num_attention_heads
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    head_dim = getattr(text, "head_dim", None) or hidden // heads
    kv = 2 * text.num_hidden_layers * kv_heads * head_dim * width
    intermediate = getattr(text, "intermediate_size", 4 * hidden)
    activations = (4 * hidden + 2 * intermediate) * width
    return kv + activations


def _bytes_for_logits(config: Any) -> int:
    text = getattr(config, "text_config", None) or config
    return 2 * text.vocab_size * 4  # float32 logits of the last position and their softmax
