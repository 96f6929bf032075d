"""The engine registry: every `ENGINE:MODEL` spec is parsed here, and every engine's options are typed here.

    make_judge("openai:gpt-5", base_url=..., concurrency=32, cache="judge.sqlite")
    make_backend("hf:Qwen/Qwen3-8B", batch_size=16)
    make_backend("vllm:meta-llama/Llama-3.1-8B-Instruct", tensor_parallel_size=2)

An engine is a row of `ENGINES`: its options (a dataclass, as inspect's `GenerateConfig` or lighteval's
model configs), what kind of engine it is (an LLM behind the judging protocol, or a judge of its own like
the `embed:` proxy) and what distinguishes it (guided decoding, one big batch). Every option carries the
command-line flag that sets it, so an option an engine does not take is refused in the user's own words
(`--no-feedback does not apply to the embed judge`), never silently dropped. Engines are imported only
when built, so `vllm`, `torch` and `sentence-transformers` stay optional.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Callable

from bespoke_dataset.errors import UserError

from bespoke_metric.backends.base import Backend
from bespoke_metric.backends.batch_ledger import ledger_path
from bespoke_metric.backends.web_search import RECENCY_FILTERS, SEARCH_CONTEXT_SIZES, SEARCH_MODES
from bespoke_metric.calls.cache import Cache
from bespoke_metric.judging.judge import Judge
from bespoke_metric.judging.protocol import RECALL_MODES


class OptionError(UserError):
    """An option the chosen engine does not take, or a malformed engine spec."""


def option(flag: str | None = None, help: str = "", choices: tuple[str, ...] | None = None) -> Any:
    """A typed option whose default (None) means: the engine's own default. `flag` is how the command
    line spells it (a `--no-...` flag sets a boolean to False); the command line is built from these."""
    return field(default=None, metadata={"flag": flag, "help": help, "choices": choices})


def option_names(options: type) -> frozenset[str]:
    """The option names of an options class."""
    return frozenset(item.name for item in dataclasses.fields(options))


def flag_of(options: type, name: str) -> str:
    """How a user names option `name` of an options class: its command-line flag, else its keyword."""
    for item in dataclasses.fields(options):
        if item.name == name and item.metadata.get("flag"):
            return str(item.metadata["flag"])
    return f"{name}="


@dataclass(frozen=True)
class ProtocolOptions:
    """How an LLM judge applies the BESPOKE protocol (`bespoke_metric.judging.llm_judge.LLMJudge`)."""

    max_shots: int | None = option("--max-shots", "R-J examples shown to the judge (default 5)")
    recall: str | None = option("--recall", "per-claim: one call per gold claim (the paper's protocol, default); "
                                "batched: one call per query; none: skip recall", choices=RECALL_MODES)
    with_feedback: bool | None = option("--no-feedback", "ablation: show the R-J examples without their feedback")
    personalized: bool | None = option("--no-personalization", "ablation: no rubric, gold need or examples")
    structured: bool | None = option("--structured", "ask for JSON output (guided decoding where the engine has it)")
    max_parse_retries: int | None = option(help="repair turns for an unreadable answer (default 2)")
    max_tokens: int | None = option(help="output token cap of every judge call (default: per kind of call)")
    progress: bool | None = option(help="show a progress bar (default True)")


@dataclass(frozen=True)
class ClientOptions:
    """What every hosted-API engine takes: where, with which key, how many calls at once, how to retry."""

    base_url: str | None = option("--base-url", "the engine's endpoint (default: the provider's API; for openai: "
                                  "$OPENAI_BASE_URL, else OpenAI)")
    api_key: str | None = option("--api-key", "API key (default: $OPENAI_API_KEY, $PERPLEXITY_API_KEY or "
                                 "$GEMINI_API_KEY, by engine); never written anywhere")
    concurrency: int | None = option("--concurrency", "calls in flight at most (default: 32 for OpenAI, 8 for Perplexity, "
                                     "16 for Gemini, 128 for other endpoints)")
    timeout: float | None = option("--timeout", "seconds per call (default 600)")
    max_retries: int | None = option()
    retry_budget: int | None = option()
    backoff_base: float | None = option()
    backoff_max: float | None = option()
    max_retry_wait: float | None = option()
    temperature: float | None = option()
    schema_format: bool | None = option()


def _search_context_size() -> Any:
    return option("--search-context-size", "native search: how much of what it found the model reads "
                  "(openai, perplexity; default: the provider's, medium)", choices=SEARCH_CONTEXT_SIZES)


@dataclass(frozen=True)
class OpenAIOptions(ClientOptions):
    """`openai:MODEL`: any OpenAI-compatible endpoint (`backends.openai_backend.OpenAIBackend`)."""

    api: str | None = option(help="auto, chat or responses")
    reasoning_effort: str | None = option()
    reasoning_max_tokens: int | None = option()
    search_context_size: str | None = _search_context_size()
    search_location: str | None = option("--search-location", "openai native search: the user's approximate location, "
                                         "KEY=VALUE pairs of country, region, city, timezone (e.g. country=GB,city=London)")
    search_domains: str | None = option("--search-domains", "openai native search: search only these domains, "
                                        "comma-separated (Responses API)")


@dataclass(frozen=True)
class PerplexityOptions(ClientOptions):
    """`perplexity:MODEL`: Perplexity's search API (`backends.providers.perplexity.PerplexityBackend`)."""

    search_mode: str | None = option("--search-mode", "perplexity: web (default), academic or sec",
                                     choices=SEARCH_MODES)
    search_domain_filter: str | None = option("--search-domain-filter", "perplexity: domains to search, comma-separated; "
                                              "-DOMAIN leaves one out")
    search_recency_filter: str | None = option("--search-recency-filter", "perplexity: only results from the last "
                                               "hour, day, week, month or year",
                                               choices=RECENCY_FILTERS)
    search_context_size: str | None = _search_context_size()


@dataclass(frozen=True)
class GeminiOptions(ClientOptions):
    """`gemini:MODEL`: Google's Gemini API with Google Search (`backends.providers.gemini.GeminiBackend`;
    pip install 'bespoke-eval[gemini]')."""

    reasoning_max_tokens: int | None = option()


@dataclass(frozen=True)
class BatchOptions:
    """The provider's Batch API, for engines that offer it (`backends.openai_batch.OpenAIBatchBackend`)."""

    batch: bool | None = option("--batch", "send the calls of openai: models through the provider's Batch API "
                                "(about half price; answers within 24 h; a rerun collects batches already submitted)")
    batch_max_requests: int | None = option("--batch-max-requests", "requests per batch at most (default 50000, OpenAI's limit)")
    batch_max_bytes: int | None = option("--batch-max-bytes", "bytes of a batch's input file at most (default 200 MiB, OpenAI's limit)")
    batch_poll: float | None = option("--batch-poll", "seconds before the first poll of a batch, growing by half each "
                                      "poll up to 60 (default 5)")
    batch_poll_max: float | None = option(help="the longest wait between polls (default 60)")
    batch_retries: int | None = option(help="rounds of resubmitting what a batch failed, before it goes direct (default 1)")
    batch_ledger: str | None = option(help="SQLite file keeping the submitted batches (default: beside the cache)")


@dataclass(frozen=True)
class CostOptions:
    """What a run may spend (`bespoke_metric.calls.spending`), for any LLM engine."""

    spending: Any = option(help="a SpendingLimit shared by every model of the run (--max-cost)")


@dataclass(frozen=True)
class HFOptions:
    """`hf:MODEL`: batched local generation with transformers (`backends.hf_backend.HFBackend`)."""

    batch_size: int | None = option("--batch-size", "prompts per batch (default: adapted to memory)")
    tokenizer: Any = option(help="a loaded tokenizer, for a preloaded model")
    device: str | None = option()
    dtype: str | None = option()
    max_batch_size: int | None = option()
    revision: str | None = option()
    trust_remote_code: bool | None = option()


@dataclass(frozen=True)
class VLLMOptions:
    """`vllm:MODEL`: offline vLLM, every prompt of a run at once (`backends.vllm_backend.VLLMBackend`)."""

    tensor_parallel_size: int | None = option("--tensor-parallel-size", "vllm: GPUs each model replica is sharded "
                                              "over (default 1)")
    max_model_len: int | None = option()
    gpu_memory_utilization: float | None = option()
    dtype: str | None = option()
    enable_prefix_caching: bool | None = option()
    seed: int | None = option()
    revision: str | None = option()
    trust_remote_code: bool | None = option()
    llm: Any = option(help="an already built vllm.LLM to reuse")


EXECUTORS: tuple[str, ...] = ("local", "ray")
"""Where an engine runs: in this process, or on a Ray cluster."""


@dataclass(frozen=True)
class ExecutorOptions:
    """Where an LLM engine runs: in this process, or on a Ray cluster (`backends.ray.backend.RayBackend`)."""

    executor: str | None = option("--executor", "local: in this process (default); ray: on a Ray cluster "
                                  "(pip install 'bespoke-eval[ray]')", choices=EXECUTORS)
    ray_address: str | None = option("--ray-address", "Ray cluster to join, e.g. auto or HEAD_IP:6379 (default: "
                                     "start a local instance)")
    replicas: int | None = option("--replicas", "engines running at once on Ray: actors, or vLLM replicas (default 1)")
    gpus_per_replica: float | None = option("--gpus-per-replica", "hf on Ray: GPUs per actor (default 1 if this "
                                            "machine has a GPU, else 0)")
    pipeline_parallel_size: int | None = option("--pipeline-parallel-size", "vllm on Ray: pipeline stages per "
                                                "replica, on as many GPUs or nodes (default 1)")



@dataclass(frozen=True)
class EmbedOptions:
    """`embed:MODEL`: the sentence-embedding proxy judge (`bespoke_metric.judging.embed_judge.EmbedJudge`)."""

    max_shots: int | None = option("--max-shots", "R-J examples compared with (default 5)")
    batch_size: int | None = option("--batch-size", "texts per encoding batch (default 64)")
    k: int | None = option(help="nearest examples that vote (default 3)")
    temperature: float | None = option(help="softmax temperature of the votes")
    threshold: float | None = option(help="cosine similarity at which a claim counts as conveyed")
    device: str | None = option()


def _openai(model: str, options: dict[str, Any]) -> Backend:
    from bespoke_metric.backends.openai_backend import OpenAIBackend

    return OpenAIBackend(model, **options)


def _perplexity(model: str, options: dict[str, Any]) -> Backend:
    from bespoke_metric.backends.providers.perplexity import PerplexityBackend

    return PerplexityBackend(model, **options)


def _gemini(model: str, options: dict[str, Any]) -> Backend:
    from bespoke_metric.backends.providers.gemini import GeminiBackend

    return GeminiBackend(model, **options)


def _hf(model: str, options: dict[str, Any]) -> Backend:
    from bespoke_metric.backends.hf_backend import HFBackend

    return HFBackend(model, **options)


def _vllm(model: str, options: dict[str, Any]) -> Backend:
    from bespoke_metric.backends.vllm_backend import VLLMBackend

    return VLLMBackend(model, **options)


def _embed(spec: str, model: str, options: dict[str, Any]) -> Judge:
    from bespoke_metric.judging.embed_judge import DEFAULT_ENCODER, EmbedJudge

    return EmbedJudge(model or DEFAULT_ENCODER, spec=spec, **options)


@dataclass(frozen=True)
class Engine:
    """One engine: how to build it and what sets it apart."""

    name: str
    options: type
    """The dataclass of its options."""
    backend: Callable[[str, dict[str, Any]], Backend] | None = None
    """For LLM engines: `(model, options) -> Backend`; judged through the BESPOKE protocol."""
    judge: Callable[[str, str, dict[str, Any]], Judge] | None = None
    """For judges of their own (no LLM): `(spec, model, options) -> Judge`."""
    guided_decoding: bool = False
    """Constrains decoding to a JSON schema, so structured answers always parse: on by default."""
    own_tokenizer: bool = False
    """The model's tokenizer is at hand (a local model): budgets are counted in it."""
    search_default: str = "none"
    """The `--search` a system model of this engine gets when none is given (`native` for an engine that
    always searches, such as Perplexity's)."""
    batch_api: bool = False
    """Offers the OpenAI Batch API (`BatchOptions`, `--batch`)."""

    @property
    def llm(self) -> bool:
        return self.backend is not None


ENGINES: dict[str, Engine] = {
    "openai": Engine("openai", OpenAIOptions, backend=_openai, batch_api=True),
    "perplexity": Engine("perplexity", PerplexityOptions, backend=_perplexity, search_default="native"),
    "gemini": Engine("gemini", GeminiOptions, backend=_gemini),
    "hf": Engine("hf", HFOptions, backend=_hf, own_tokenizer=True),
    "vllm": Engine("vllm", VLLMOptions, backend=_vllm, guided_decoding=True, own_tokenizer=True),
    "embed": Engine("embed", EmbedOptions, judge=_embed),
}
"""Every engine by spec prefix."""


def register_engine(engine: Engine) -> None:
    """Add (or replace) an engine, e.g. a judge of your own: `register_engine(Engine("mine", MyOptions, judge=...))`."""
    ENGINES[engine.name] = engine


@dataclass(frozen=True)
class Spec:
    """A parsed `ENGINE:MODEL`."""

    engine: Engine
    model: str

    def __str__(self) -> str:
        return f"{self.engine.name}:{self.model}"


def parse_spec(spec: str) -> Spec:
    """`"openai:gpt-5"` -> `Spec(ENGINES["openai"], "gpt-5")`; `OptionError` for a malformed or unknown spec."""
    prefix, sep, model = str(spec).partition(":")
    known = ", ".join(sorted(ENGINES))
    if not sep or not model:
        raise OptionError(f"an engine is named ENGINE:MODEL with ENGINE one of {known} (e.g. openai:gpt-5), got {spec!r}")
    if prefix not in ENGINES:
        raise OptionError(f"unknown engine {prefix!r} in {spec!r}; known: {known}")
    return Spec(ENGINES[prefix], model)


def _take(options: dict[str, Any], *classes: type) -> list[dict[str, Any]]:
    """Split `options` over the option classes (first match wins), dropping Nones; leftovers stay in `options`."""
    taken: list[dict[str, Any]] = []
    for cls in classes:
        names = {item.name for item in dataclasses.fields(cls)}
        taken.append({name: options.pop(name) for name in list(options) if name in names})
    return [{name: value for name, value in part.items() if value is not None} for part in taken]


def _refuse(leftover: dict[str, Any], what: str, *classes: type) -> None:
    if not leftover:
        return
    flags = {name: _any_flag(name) for name in leftover}
    takes = sorted({flag_of(cls, item.name) for cls in classes for item in dataclasses.fields(cls)})
    raise OptionError(f"{', '.join(flags[name] for name in sorted(leftover))} does not apply to {what}; "
                      f"it takes {', '.join(takes)}")


def _any_flag(name: str) -> str:
    for cls in (ProtocolOptions, ExecutorOptions, OpenAIOptions, PerplexityOptions, GeminiOptions, BatchOptions,
                CostOptions, HFOptions, VLLMOptions, EmbedOptions):
        if name in {item.name for item in dataclasses.fields(cls)}:
            return flag_of(cls, name)
    return f"{name}="


def _refuse_executor(options: dict[str, Any], spec: str) -> None:
    """A judge of its own (`embed:`) has no LLM engine to place: it always runs in this process, so an
    executor option is refused as such, not with a list of options that no command takes."""
    given = sorted(name for name in options if name in option_names(ExecutorOptions) and options[name] is not None)
    if given:
        flags = ", ".join(flag_of(ExecutorOptions, name) for name in given)
        raise OptionError(f"{flags}: the {parse_spec(spec).engine.name} judge ({spec}) runs in this process, with no LLM "
                          "engine to place on Ray (it encodes on the CPU in seconds); leave out the executor flags")


def _llm_option_classes(engine: Engine) -> tuple[type, ...]:
    """The option classes of an LLM engine, past its own: where it runs, the Batch API if it has one, cost."""
    return (ExecutorOptions, *((BatchOptions,) if engine.batch_api else ()), CostOptions)


def _backend(parsed: Spec, engine_options: dict[str, Any], *more: dict[str, Any]) -> Backend:
    """The engine's backend (in this process, or on Ray with `executor="ray"`), through the Batch API with
    `batch=True`, admitted against a spending limit with `spending=`; `more` are the option dicts of
    `_llm_option_classes`, in order."""
    executor_options, *batch, cost = [dict(part) for part in more]
    batch_options = batch[0] if batch else {}
    spending = cost.get("spending")
    if batch_options.pop("batch", False):
        if executor_options.get("executor", "local") != "local":
            raise OptionError("--batch sends the calls to the provider's Batch API: it does not run on Ray (--executor ray)")
        from bespoke_metric.backends.openai_batch import OpenAIBatchBackend

        direct = _local_backend(parsed, engine_options, executor_options)
        return OpenAIBatchBackend(direct, spending=spending, **batch_options)  # type: ignore[arg-type]
    if batch_options:
        flags = [flag_of(BatchOptions, name) for name in sorted(batch_options)]
        raise OptionError(f"{', '.join(flags)} only appl{'y' if len(flags) > 1 else 'ies'} with --batch (batch=True)")
    backend = _local_backend(parsed, engine_options, executor_options)
    if spending is not None:
        from bespoke_metric.calls.spending import SpendLimited

        return SpendLimited(backend, spending)
    return backend


def _local_backend(parsed: Spec, engine_options: dict[str, Any], executor_options: dict[str, Any]) -> Backend:
    """The engine in this process, or on Ray with `executor="ray"`."""
    executor = executor_options.pop("executor", "local")
    if executor not in EXECUTORS:
        raise OptionError(f"--executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if executor == "ray":
        from bespoke_metric.backends.ray.backend import RayBackend

        assert parsed.engine.backend is not None
        return RayBackend(parsed.engine.name, parsed.model, build=parsed.engine.backend, **executor_options, **engine_options)
    if executor_options:
        flags = ", ".join(flag_of(ExecutorOptions, name) for name in sorted(executor_options))
        raise OptionError(f"{flags} only apply with --executor ray (executor='ray')")
    assert parsed.engine.backend is not None
    return parsed.engine.backend(parsed.model, engine_options)


def make_backend(spec: str, **options: Any) -> Backend:
    """The LLM backend named by `spec` (`openai:`, `perplexity:`, `gemini:`, `hf:`, `vllm:`); `options` are its engine's options and
    the executor's (`executor="ray"`, `replicas`, ...). None means the default, so command-line flags
    pass through as they are."""
    parsed = parse_spec(spec)
    if not parsed.engine.llm:
        raise OptionError(f"{spec} is a judge, not an LLM engine; use make_judge")
    options = dict(options)
    classes = (parsed.engine.options, *_llm_option_classes(parsed.engine))
    taken = _take(options, *classes)
    _refuse(options, f"the {parsed.engine.name} engine ({spec})", *classes)
    return _backend(parsed, *taken)


def make_judge(spec: str | Judge, *, cache: str | os.PathLike[str] | Cache | None = None, **options: Any) -> Judge:
    """A judge from its spec, e.g. `make_judge("openai:gpt-5", base_url=..., concurrency=32, cache="judge.sqlite")`.

    `options` are the fields of `ProtocolOptions` (LLM engines) and of the engine's options class; None
    means the default. A ready judge object is returned as it is (no options allowed then)."""
    if not isinstance(spec, str):
        given = sorted(name for name, value in options.items() if value is not None)
        if given or cache is not None:
            raise OptionError(f"options {', '.join(given) or 'cache'} given with a ready judge object")
        return spec
    parsed = parse_spec(spec)
    options = dict(options)
    if parsed.engine.judge is not None:
        [own] = _take(options, parsed.engine.options)
        _refuse_executor(options, spec)
        if cache is not None:
            options["cache"] = cache
        _refuse(options, f"the {parsed.engine.name} judge ({spec})", parsed.engine.options)
        return parsed.engine.judge(spec, parsed.model, own)
    from bespoke_metric.judging.llm_judge import LLMJudge

    classes = (ProtocolOptions, parsed.engine.options, *_llm_option_classes(parsed.engine))
    protocol, engine_options, *more = _take(options, *classes)
    _refuse(options, f"the {parsed.engine.name} judge ({spec})", *classes)
    protocol.setdefault("structured", parsed.engine.guided_decoding)
    if cache is not None and not isinstance(cache, Cache):
        cache = Cache(cache)
    if parsed.engine.batch_api and more[1].get("batch") and cache is not None:
        more[1].setdefault("batch_ledger", str(ledger_path(cache.path)))  # the batches kept beside the answers
    backend = _backend(parsed, engine_options, *more)
    return LLMJudge(backend, spec=spec, cache=cache, **protocol)
