"""Judges from their specs: `make_judge("openai:gpt-5", base_url=..., concurrency=32, cache="judge.sqlite")`.

An LLM engine of the registry (`bespoke_metric.backends.registry`) is judged through the BESPOKE protocol
(`ProtocolOptions`); an engine that is a judge of its own (the `embed:` proxy) is built as it is.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from bespoke_metric.backends.base import Backend
from bespoke_metric.backends.options import REASONING_EFFORTS, OptionError, flag_of, option, option_names
from bespoke_metric.backends.providers.batch_ledger import ledger_path
from bespoke_metric.backends.registry import (
    EngineParts,
    Preloaded,
    Spec,
    as_spec,
    build_backend,
    engine_parts,
    llm_option_classes,
    refuse,
    refuse_executor,
    take,
)
from bespoke_metric.calls.cache import Cache
from bespoke_metric.judging.judge import Judge
from bespoke_metric.judging.protocol import RECALL_MODES

if TYPE_CHECKING:  # a dry run's parts, imported by the dry run alone
    from bespoke_metric.calls.plan import PlanningBackend, ReadOnlyCache


@dataclass(frozen=True)
class ProtocolOptions:
    """How an LLM judge applies the BESPOKE protocol (`bespoke_metric.judging.llm_judge.LLMJudge`)."""

    max_shots: int | None = option("--max-shots", "R-J examples shown to the judge (default 5)")
    recall: str | None = option("--recall", "per-claim: one call per gold claim (the paper's protocol, default); "
                                "batched: one call per query; none: skip recall", choices=RECALL_MODES)
    with_feedback: bool | None = option("--no-feedback", "ablation: show the R-J examples without their feedback")
    personalized: bool | None = option("--no-personalization", "ablation: no rubric, gold need or examples")
    structured: bool | None = option("--structured", "ask for JSON output (guided decoding where the engine has it)")
    recall_reasoning_effort: str | None = option("--recall-reasoning-effort", "how hard an API judge reasons for its "
                                                 "recall checks (default: no effort sent, the model's own, as the official "
                                                 "evaluator sends them; the judgments keep the judge's)",
                                                 choices=REASONING_EFFORTS)
    max_parse_retries: int | None = option(help="repair turns for an unreadable answer (default 2)")
    max_tokens: int | None = option("--judge-max-tokens", "output token cap of every judge call, e.g. for a small "
                                    "local judge (default: per kind of call)", positive=True)
    progress: bool | None = option(help="show a progress bar (default True)")
    repeat: int | None = option(help="which of several runs of the same judgments this is (`meta-eval --repeats`): "
                                "from 1 on, part of the cache key, so each repeat is a fresh answer (default 0)")


def make_judge(spec: str | Spec | Judge, *, cache: str | os.PathLike[str] | Cache | None = None, spending: Any = None,
               **options: Any) -> Judge:
    """A judge from its spec, e.g. `make_judge("openai:gpt-5", base_url=..., concurrency=32, cache="judge.sqlite")`.

    `spec` is the string or the `Spec` parsed from it. `options` are the fields of `ProtocolOptions` (LLM
    engines) and of the engine's options class; None means the default. `cache` keeps its answers, `spending`
    (a `calls.spending.SpendingLimit`) admits its calls. A ready judge object is returned as it is (no options
    allowed then)."""
    if not isinstance(spec, (str, Spec)):
        given = sorted(name for name, value in {**options, "spending": spending}.items() if value is not None)
        if given or cache is not None:
            raise OptionError(f"options {', '.join(given) or 'cache'} given with a ready judge object")
        return checked_judge(spec, "a ready judge")
    parts = judge_parts(spec, cache=cache, spending=spending, **options)
    if parts.llm is not None:
        return llm_judge(parts)
    parsed = parts.parsed
    return checked_judge(parsed.engine.build_judge(str(parsed), parsed.model, parts.engine),
                         f"the {parsed.engine.name} engine's judge")


def checked_judge(judge: Any, what: str) -> Judge:
    """`judge`, a `Judge`; a `TypeError` naming `what` gave it otherwise (a judge written before `Judge`
    was a class to subclass)."""
    if not isinstance(judge, Judge):
        raise TypeError(f"{what} is a {type(judge).__name__}, not a bespoke_metric.judging.judge.Judge: subclass "
                        "Judge (its describe and judge are yours; usage, close and the rest come with it)")
    return judge


def llm_judge(parts: "JudgeParts", *, planning: bool = False) -> Judge:
    """The LLM judge of checked options (`judge_parts`), or, `planning`, the one a dry run makes
    (`calls.plan`): its backend a `PlanningBackend` (no call sent; an `openai:` judge given no key gets a
    placeholder, `calls.plan.keyless`), its cache a `ReadOnlyCache` (a `cache` file that does not exist yet is an
    empty cache, and is not created), no progress bar."""
    from bespoke_metric.judging.llm_judge import LLMJudge

    protocol, cache = parts.protocol, parts.cache
    if planning:
        from bespoke_metric.calls.plan import ReadOnlyCache

        protocol = {**protocol, "progress": False}
        cache = ReadOnlyCache.of_file(cache) if isinstance(cache, (str, os.PathLike)) else ReadOnlyCache(cache)
    return LLMJudge(llm_backend(parts, planning=planning), spec=str(parts.parsed), cache=cache,
                    proxy=parts.parsed.engine.proxy, **protocol)


def llm_backend(parts: "JudgeParts", *, planning: bool = False) -> Backend:
    """The backend of an LLM judge from its checked options, a Batch API's batches kept beside its cache;
    `planning`: wrapped in a `PlanningBackend` that sends nothing."""
    llm, cache = parts.llm, parts.cache
    assert llm is not None  # an LLM engine's judge
    if llm.batch.get("batch") and cache is not None:
        kept = cache if isinstance(cache, (str, os.PathLike)) else cache.path
        # the batches kept beside the answers
        llm = dataclasses.replace(llm, batch={"batch_ledger": str(ledger_path(kept)), **llm.batch})
    if planning:
        from bespoke_metric.calls.plan import PlanningBackend, keyless

        keyed = dataclasses.replace(llm, engine=keyless(parts.parsed, llm.engine))
        return PlanningBackend(build_backend(parts.parsed, keyed, spending=parts.spending, preloaded=parts.preloaded))
    return build_backend(parts.parsed, llm, spending=parts.spending, preloaded=parts.preloaded)


@dataclass(frozen=True)
class PlanningJudge:
    """An LLM judge as a dry run makes it (`plan_judge`): it sends nothing and writes nothing."""

    judge: Judge
    backend: PlanningBackend
    """Its backend, recording every request it would send."""
    cache: ReadOnlyCache
    """Its cache, read and never written, counting the answers it already holds."""


def plan_judge(spec: str | Spec, **options: Any) -> PlanningJudge | None:
    """The judge `make_judge(spec, **options)` makes, for a dry run (`llm_judge(..., planning=True)`), with
    its planning backend and read-only cache at hand; None for a judge of its own, which calls no model (its
    options checked all the same)."""
    parts = judge_parts(spec, **options)
    if parts.llm is None:
        return None
    judge = llm_judge(parts, planning=True)
    from bespoke_metric.calls.plan import PlanningBackend, ReadOnlyCache

    assert isinstance(judge.backend, PlanningBackend) and isinstance(judge.cache, ReadOnlyCache)
    return PlanningJudge(judge, judge.backend, judge.cache)


def make_kept_judge(spec: str | Spec | Judge, rows: Sequence[Mapping[str, Any]], **options: Any) -> Judge:
    """`make_judge(spec, **options)` for many batches of one benchmark (a reward's steps, a metric's computes),
    made once and kept: the embed proxy is calibrated here on every R-J example of `rows` (the benchmark's
    rows), so every batch is scored alike whatever it holds, and it remembers the benchmark's texts it
    encoded; an LLM judge keeps its answers in its `cache`."""
    judge = make_judge(spec, **options)
    judge.calibrate(list(rows))
    return judge


@dataclass(frozen=True)
class JudgeParts:
    """A judge's options split over its option classes and checked, before anything is built."""

    parsed: Spec
    protocol: dict[str, Any]
    """`ProtocolOptions` (LLM engines; with `structured` defaulted to the engine's guided decoding)."""
    engine: dict[str, Any]
    """The engine's own options class."""
    llm: EngineParts | None
    """An LLM engine's options by part (its own, where it runs, the Batch API); None for a judge of its own."""
    cache: str | os.PathLike[str] | Cache | None
    spending: Any = None
    """The spending limit its calls are admitted against (`calls.spending.SpendingLimit`), if any."""
    preloaded: Preloaded = Preloaded()
    """Objects already in memory its backend reuses (a loaded tokenizer, a `vllm.LLM`)."""


def judge_parts(spec: str | Spec, *, cache: str | os.PathLike[str] | Cache | None = None, spending: Any = None,
                tokenizer: Any = None, llm: Any = None, **options: Any) -> JudgeParts:
    """`make_judge`'s checks without building anything: an `OptionError` (named by its flag) for an option
    the judge's engine does not take, or an unknown engine. Nothing is loaded or called. `tokenizer` (hf) and
    `llm` (vllm) are objects already loaded, for the backend to reuse (`Preloaded`)."""
    parsed = as_spec(spec)
    options = dict(options)
    preloaded = Preloaded(tokenizer, llm)
    if parsed.engine.judge is not None:
        own = take(options, parsed.engine.options)[parsed.engine.options]
        refuse_executor(options, parsed)
        runtime = (("cache", cache), ("spending", spending), ("tokenizer", tokenizer), ("llm", llm))
        options.update({name: value for name, value in runtime if value is not None})
        refuse(options, f"the {parsed.engine.name} judge ({parsed})", parsed.engine.options, known=(ProtocolOptions,))
        return JudgeParts(parsed, {}, own, None, None)
    protocol = take(options, ProtocolOptions)[ProtocolOptions]
    parts = engine_parts(options, parsed.engine)
    refuse(options, f"the {parsed.engine.name} judge ({parsed})", ProtocolOptions, *llm_option_classes(parsed.engine),
           known=(ProtocolOptions,))
    preloaded.given(parsed)  # an object its engine does not reuse is refused before anything is built
    if protocol.get("recall_reasoning_effort") is not None and "reasoning_effort" not in option_names(parsed.engine.options):
        raise OptionError(f"{flag_of(ProtocolOptions, 'recall_reasoning_effort')} does not apply to the "
                          f"{parsed.engine.name} judge ({parsed}): its engine takes no reasoning effort")
    protocol.setdefault("structured", parsed.engine.guide(parts.engine))
    parsed.engine.set_judgment_effort(parsed.model, parts.engine)
    return JudgeParts(parsed, protocol, parts.engine, parts, cache, spending, preloaded)


def keeps_answers(spec: str | Spec) -> bool:
    """Whether the judge `spec` calls a model whose answers a cache keeps (an LLM engine); a judge of its
    own (`embed:`) makes no calls and takes no cache."""
    return as_spec(spec).engine.judge is None


def judge_option_names(spec: str | Spec) -> frozenset[str]:
    """The options `make_judge(spec, ...)` takes (`cache` included for an LLM judge): what a command judging
    with several judges gives each of them."""
    parsed = as_spec(spec)
    if parsed.engine.judge is not None:
        return option_names(parsed.engine.options)
    classes = (ProtocolOptions, *llm_option_classes(parsed.engine))
    return frozenset({"cache", "spending", *parsed.engine.preloads}.union(*(option_names(cls) for cls in classes)))
