"""One place that turns a judge spec (`ENGINE:MODEL`) into a judge.

LLM engines (`openai`, `hf`, `vllm`) become an `LLMJudge` over the matching backend; other judges (the
`embed` proxy) register a factory here. Options that a judge does not take are an error, not silently
dropped, so a typo in `--concurency` cannot change a run.
"""

from __future__ import annotations

import inspect
import os
from typing import Any, Callable

from .backends import make_backend
from .cache import Cache
from .embed_judge import make_embed_judge
from .judge import Judge
from .llm_judge import LLMJudge

JudgeFactory = Callable[..., Judge]

LLM_ENGINES: tuple[str, ...] = ("openai", "hf", "vllm")
_JUDGE_OPTIONS = set(inspect.signature(LLMJudge.__init__).parameters) - {"self", "backend", "spec", "cache"}


def _llm_judge(spec: str, *, cache: str | os.PathLike[str] | Cache | None = None, **options: Any) -> LLMJudge:
    judge_options = {name: value for name, value in options.items() if name in _JUDGE_OPTIONS}
    # vLLM constrains decoding to the JSON schema, so its answers always parse: use it unless told not to.
    judge_options.setdefault("structured", spec.partition(":")[0] == "vllm")
    backend_options = {name: value for name, value in options.items() if name not in _JUDGE_OPTIONS}
    backend = make_backend(spec, **backend_options)
    if cache is not None and not isinstance(cache, Cache):
        cache = Cache(cache)
    return LLMJudge(backend, spec=spec, cache=cache, **judge_options)


JUDGES: dict[str, JudgeFactory] = {**{engine: _llm_judge for engine in LLM_ENGINES}, "embed": make_embed_judge}
"""Judge spec prefix -> factory `(spec, **options) -> Judge`."""


def register_judge(prefix: str, factory: JudgeFactory) -> None:
    JUDGES[prefix] = factory


def make_judge(spec: str | Judge, **options: Any) -> Judge:
    """`make_judge("openai:gpt-5", base_url=..., concurrency=32, cache="judge.sqlite")`.

    A ready judge object is returned as it is (options must then be empty)."""
    if not isinstance(spec, str):
        if options:
            raise TypeError(f"options {sorted(options)} given with a ready judge object")
        return spec
    prefix, sep, model = spec.partition(":")
    if not sep or not model:
        raise ValueError(f"a judge is named ENGINE:MODEL (e.g. openai:gpt-5), got {spec!r}")
    if prefix not in JUDGES:
        raise ValueError(f"unknown judge engine {prefix!r} in {spec!r}; known: {', '.join(sorted(JUDGES))}")
    return JUDGES[prefix](spec, **options)
