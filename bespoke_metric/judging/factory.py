"""Judges from their configs: `make_judge("openai:gpt-5", base_url=..., concurrency=32, cache="judge.sqlite")`.

An LLM engine of the registry (`bespoke_metric.backends.registry`) is judged through the BESPOKE protocol
(`ProtocolOptions`); an engine that is a judge of its own (the `embed:` proxy) is built as it is. `make_judge`
is the thin adapter from keywords; below it every layer takes the `JudgeConfig` (`build_judge`).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from bespoke_metric.backends.base import Backend
from bespoke_metric.backends.options import OptionError, option_names
from bespoke_metric.backends.registry import (
    Preloaded,
    Spec,
    build_backend,
    llm_option_classes,
    refuse,
    refuse_executor,
)
from bespoke_metric.calls.cache import Cache
from bespoke_metric.judging.config import JudgeConfig, ProtocolOptions
from bespoke_metric.judging.judge import Judge
from bespoke_metric.judging.judges import as_judge_spec, is_proxy, own_judge

if TYPE_CHECKING:  # a dry run's parts, imported by the dry run alone
    from bespoke_metric.calls.plan import PlanningBackend, ReadOnlyCache


def make_judge(spec: str | Spec | JudgeConfig | Judge, *, cache: str | os.PathLike[str] | Cache | None = None,
               spending: Any = None, tokenizer: Any = None, llm: Any = None, **options: Any) -> Judge:
    """A judge from its spec, e.g. `make_judge("openai:gpt-5", base_url=..., concurrency=32, cache="judge.sqlite")`.

    `spec` is the string, the `Spec` parsed from it, or a whole `JudgeConfig` (then no options). `options` are
    the fields of `ProtocolOptions` (LLM engines) and of the engine's options class; None means the default.
    `cache` keeps its answers, `spending` (a `calls.spending.SpendingLimit`) admits its calls; `tokenizer` (hf)
    and `llm` (vllm) are objects already loaded, for the backend to reuse. A ready judge object is returned as
    it is (no options allowed then)."""
    if isinstance(spec, Judge) or not isinstance(spec, (str, Spec, JudgeConfig)):
        given = sorted(name for name, value in {**options, "spending": spending}.items() if value is not None)
        if given or cache is not None:
            raise OptionError(f"options {', '.join(given) or 'cache'} given with a ready judge object")
        return checked_judge(spec, "a ready judge")
    return build_judge(judge_config(spec, cache, options), spending=spending, preloaded=Preloaded(tokenizer, llm))


def judge_config(spec: str | Spec | JudgeConfig, cache: str | os.PathLike[str] | Cache | None,
                 options: Mapping[str, Any]) -> JudgeConfig:
    """The `JudgeConfig` of `make_judge`'s arguments. Given as keywords, every option must reach the judge: one
    its engine does not take (a placement option of another engine too) is an `OptionError` naming its flag."""
    if isinstance(spec, JudgeConfig):
        if cache is not None or any(value is not None for value in options.values()):
            raise OptionError("a JudgeConfig holds its options and cache: give them in it")
        return spec
    parsed = as_judge_spec(spec)
    given = {name: value for name, value in options.items() if value is not None}
    if own_judge(parsed) is not None:
        refuse_executor(given, parsed)
    config = JudgeConfig(spec=parsed, options=given, cache=cache)
    kept = config.judge_options()
    classes = (parsed.engine.options,) if own_judge(parsed) is not None else (ProtocolOptions, *llm_option_classes(parsed.engine))
    refuse({name: value for name, value in given.items() if name not in kept}, f"the {parsed.engine.name} judge ({parsed})",
           *classes, known=(ProtocolOptions,))
    return config


def build_judge(config: JudgeConfig, *, spending: Any = None, preloaded: Preloaded = Preloaded()) -> Judge:
    """The judge `config` configures, its calls admitted against `spending`, reusing the objects `preloaded` holds."""
    parsed = config.spec
    preloaded.given(parsed)  # an object its engine does not reuse is refused before anything is built
    if parsed.engine.llm:
        return llm_judge(config, spending=spending, preloaded=preloaded)
    own = own_judge(parsed)
    assert own is not None and own.build is not None  # no LLM engine: a judge of its own
    return checked_judge(own.build(str(parsed), parsed.model, config.engine.options), f"the {parsed.name} judge")


def checked_judge(judge: Any, what: str) -> Judge:
    """`judge`, a `Judge`; a `TypeError` naming `what` gave it otherwise (a judge written before `Judge`
    was a class to subclass)."""
    if not isinstance(judge, Judge):
        raise TypeError(f"{what} is a {type(judge).__name__}, not a bespoke_metric.judging.judge.Judge: subclass "
                        "Judge (its describe and judge are yours; usage, close and the rest come with it)")
    return judge


def llm_judge(config: JudgeConfig, *, spending: Any = None, preloaded: Preloaded = Preloaded(),
              planning: bool = False) -> Judge:
    """The LLM judge of `config`, or, `planning`, the one a dry run makes (`calls.plan`): its backend a
    `PlanningBackend` (no call sent; an `openai:` judge given no key gets a placeholder, `calls.plan.keyless`),
    its cache a `ReadOnlyCache` (a `cache` file that does not exist yet is an empty cache, and is not created),
    no progress bar."""
    from bespoke_metric.judging.llm_judge import LLMJudge

    protocol, cache = config.protocol, config.cache
    if planning:
        from bespoke_metric.calls.plan import ReadOnlyCache

        protocol = dataclasses.replace(protocol, progress=False)
        cache = ReadOnlyCache.of_file(cache) if isinstance(cache, (str, os.PathLike)) else ReadOnlyCache(cache)
    return LLMJudge(llm_backend(config, spending=spending, preloaded=preloaded, planning=planning), protocol,
                    spec=str(config.spec), cache=cache, proxy=is_proxy(config.spec))


def llm_backend(config: JudgeConfig, *, spending: Any = None, preloaded: Preloaded = Preloaded(),
                planning: bool = False) -> Backend:
    """The backend of an LLM judge, a Batch API's batches kept beside its cache; `planning`: wrapped in a
    `PlanningBackend` that sends nothing."""
    engine, cache = config.engine, config.cache
    if cache is not None:
        engine = engine.ledger_beside(cache if isinstance(cache, (str, os.PathLike)) else cache.path)
    if planning:
        from bespoke_metric.calls.plan import PlanningBackend, keyless

        return PlanningBackend(build_backend(keyless(engine), spending=spending, preloaded=preloaded))
    return build_backend(engine, spending=spending, preloaded=preloaded)


@dataclass(frozen=True)
class PlanningJudge:
    """An LLM judge as a dry run makes it (`plan_judge`): it sends nothing and writes nothing."""

    judge: Judge
    backend: PlanningBackend
    """Its backend, recording every request it would send."""
    cache: ReadOnlyCache
    """Its cache, read and never written, counting the answers it already holds."""


def plan_judge(config: JudgeConfig) -> PlanningJudge | None:
    """The judge `build_judge(config)` makes, for a dry run (`llm_judge(..., planning=True)`), with its
    planning backend and read-only cache at hand; None for a judge of its own, which calls no model."""
    if not config.spec.engine.llm:
        return None
    judge = llm_judge(config, planning=True)
    from bespoke_metric.calls.plan import PlanningBackend, ReadOnlyCache

    assert isinstance(judge.backend, PlanningBackend) and isinstance(judge.cache, ReadOnlyCache)
    return PlanningJudge(judge, judge.backend, judge.cache)


def make_kept_judge(judge: Judge, rows: Sequence[Mapping[str, Any]]) -> Judge:
    """`judge` (`make_judge`'s) readied for many batches of one benchmark (a reward's steps, a metric's
    computes), made once and kept: the embed proxy is calibrated here on every R-J example of `rows` (the
    benchmark's rows), so every batch is scored alike whatever it holds, and it remembers the benchmark's
    texts it encoded; an LLM judge keeps its answers in its `cache`."""
    judge.calibrate(list(rows))
    return judge


def keeps_answers(spec: str | Spec) -> bool:
    """Whether the judge `spec` calls a model whose answers a cache keeps (an LLM engine); a judge of its
    own (`embed:`) makes no calls and takes no cache."""
    return own_judge(as_judge_spec(spec)) is None


def judge_option_names(spec: str | Spec) -> frozenset[str]:
    """The options `make_judge(spec, ...)` takes (`cache` included for an LLM judge): what a command judging
    with several judges gives each of them."""
    parsed = as_judge_spec(spec)
    if own_judge(parsed) is not None:
        return option_names(parsed.engine.options)
    classes = (ProtocolOptions, *llm_option_classes(parsed.engine))
    return frozenset({"cache", "spending", *parsed.engine.preloads}.union(*(option_names(cls) for cls in classes)))
