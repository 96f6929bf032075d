"""The engine registry: every `ENGINE:MODEL` spec is parsed here, and every engine is one registration.

    make_backend("hf:Qwen/Qwen3-8B", batch_size=16)
    make_backend("vllm:meta-llama/Llama-3.1-8B-Instruct", tensor_parallel_size=2)

An engine is an `Engine`: its options (a dataclass of `bespoke_metric.backends.options`, as inspect's
`GenerateConfig` or lighteval's model configs), how to build it (a backend for an LLM behind the judging
protocol, or a judge of its own like the `embed:` proxy, named as `"module:function"` so that nothing is
imported before it is built) and what distinguishes it (guided decoding, one big batch). Engines are
imported only when built, so `vllm`, `torch` and `sentence-transformers` stay optional.

Other packages add engines through the entry-point group `bespoke.engines`: each entry point loads to an
`Engine` (see the docs' "Extending" page). `register_engine` adds one from Python.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Callable

from bespoke_metric.backends.base import Backend
from bespoke_metric.backends.options import (
    BatchOptions,
    ClientOptions,
    CostOptions,
    EmbedOptions,
    EXECUTORS,
    ExecutorOptions,
    GeminiOptions,
    HFOptions,
    OpenAIOptions,
    OptionError,
    PerplexityOptions,
    VLLMOptions,
    flag_of,
    option_names,
)

ENTRY_POINT_GROUP = "bespoke.engines"
"""The entry-point group through which other distributions register engines (each loads to an `Engine`)."""


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


def _resolve(target: Callable[..., Any] | str) -> Callable[..., Any]:
    """A factory given as a callable, or as `"module:attribute"` (imported now, when the engine is built)."""
    if callable(target):
        return target
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class Engine:
    """One engine: how to build it and what sets it apart."""

    name: str
    options: type
    """The dataclass of its options."""
    backend: Callable[[str, dict[str, Any]], Backend] | None = None
    """For LLM engines: `(model, options) -> Backend`; judged through the BESPOKE protocol."""
    judge: Callable[[str, str, dict[str, Any]], Any] | str | None = None
    """For judges of their own (no LLM): `(spec, model, options) -> Judge`, or `"module:function"` naming it."""
    guided_decoding: bool = False
    """Constrains decoding to a JSON schema, so structured answers always parse: on by default."""
    own_tokenizer: bool = False
    """The model's tokenizer is at hand (a local model): budgets are counted in it."""
    search_default: str = "none"
    """The `--search` a system model of this engine gets when none is given (`native` for an engine that
    always searches, such as Perplexity's)."""
    batch_api: bool = False
    """Offers the OpenAI Batch API (`BatchOptions`, `--batch`)."""
    local: bool = False
    """Runs its model here (or on this Ray cluster): it costs machine time, not a provider's price per token."""

    @property
    def llm(self) -> bool:
        return self.backend is not None

    def build_judge(self, spec: str, model: str, options: dict[str, Any]) -> Any:
        """The judge of its own that this engine is (`judge` set)."""
        assert self.judge is not None
        return _resolve(self.judge)(spec, model, options)


ENGINES: dict[str, Engine] = {
    "openai": Engine("openai", OpenAIOptions, backend=_openai, batch_api=True),
    "perplexity": Engine("perplexity", PerplexityOptions, backend=_perplexity, search_default="native"),
    "gemini": Engine("gemini", GeminiOptions, backend=_gemini),
    "hf": Engine("hf", HFOptions, backend=_hf, own_tokenizer=True, local=True),
    "vllm": Engine("vllm", VLLMOptions, backend=_vllm, guided_decoding=True, own_tokenizer=True, local=True),
    "embed": Engine("embed", EmbedOptions, judge="bespoke_metric.judging.embed_judge:build_embed_judge"),
}
"""Every engine by spec prefix: the built-in ones, then those of installed plugins (`load_plugins`)."""

_plugins_loaded = False


def register_engine(engine: Engine) -> None:
    """Add (or replace) an engine, e.g. a judge of your own: `register_engine(Engine("mine", MyOptions, judge=...))`."""
    ENGINES[engine.name] = engine


def load_plugins() -> dict[str, Engine]:
    """Register the engines of every installed distribution's `bespoke.engines` entry points (once), and
    return the registry. A plugin that fails to load, or loads to something that is not an `Engine`, is an
    `OptionError` naming the entry point: a broken plugin is never skipped silently."""
    global _plugins_loaded
    if not _plugins_loaded:
        _plugins_loaded = True
        for point in entry_points(group=ENTRY_POINT_GROUP):
            try:
                engine = point.load()
            except Exception as error:  # a plugin's own import error, whatever its type
                raise OptionError(f"the engine plugin {point.name!r} ({point.value}) failed to load: "
                                  f"{type(error).__name__}: {error}") from error
            if not isinstance(engine, Engine):
                raise OptionError(f"the engine plugin {point.name!r} ({point.value}) is not a "
                                  f"bespoke_metric.backends.registry.Engine but {type(engine).__name__}")
            ENGINES.setdefault(engine.name, engine)  # a built-in or a registered engine keeps its name
    return ENGINES


SHARED_OPTIONS: tuple[type, ...] = (ExecutorOptions, BatchOptions, CostOptions, ClientOptions)
"""Option classes beyond each engine's own: where an LLM engine runs, the Batch API, what it may spend."""


def option_classes() -> tuple[type, ...]:
    """Every option class of the registry: each engine's own, then the shared ones."""
    own = tuple(dict.fromkeys(engine.options for engine in load_plugins().values()))
    return (*own, *(cls for cls in SHARED_OPTIONS if cls not in own))


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
    load_plugins()
    known = ", ".join(sorted(ENGINES))
    if not sep or not model:
        raise OptionError(f"an engine is named ENGINE:MODEL with ENGINE one of {known} (e.g. openai:gpt-5), got {spec!r}")
    if prefix not in ENGINES:
        raise OptionError(f"unknown engine {prefix!r} in {spec!r}; known: {known}")
    return Spec(ENGINES[prefix], model)




def take(options: dict[str, Any], *classes: type) -> list[dict[str, Any]]:
    """Split `options` over the option classes (first match wins), dropping Nones; leftovers stay in `options`."""
    taken: list[dict[str, Any]] = []
    for cls in classes:
        names = {item.name for item in dataclasses.fields(cls)}
        taken.append({name: options.pop(name) for name in list(options) if name in names})
    return [{name: value for name, value in part.items() if value is not None} for part in taken]


def refuse(leftover: dict[str, Any], what: str, *classes: type, known: tuple[type, ...] = ()) -> None:
    """`OptionError` for options left over: none of `classes` takes them (named by their flags, looked up
    in `known` and then the registry)."""
    if not leftover:
        return
    flags = {name: _any_flag(name, *known) for name in leftover}
    takes = sorted({flag_of(cls, item.name) for cls in classes for item in dataclasses.fields(cls)})
    raise OptionError(f"{', '.join(flags[name] for name in sorted(leftover))} does not apply to {what}; "
                      f"it takes {', '.join(takes)}")


def _any_flag(name: str, *classes: type) -> str:
    """How a user names option `name`: its flag in whichever option class has one (`classes` first)."""
    for cls in (*classes, *option_classes()):
        if name in {item.name for item in dataclasses.fields(cls)}:
            return flag_of(cls, name)
    return f"{name}="


def refuse_executor(options: dict[str, Any], spec: str) -> None:
    """A judge of its own (`embed:`) has no LLM engine to place: it always runs in this process, so an
    executor option is refused as such, not with a list of options that no command takes."""
    given = sorted(name for name in options if name in option_names(ExecutorOptions) and options[name] is not None)
    if given:
        flags = ", ".join(flag_of(ExecutorOptions, name) for name in given)
        raise OptionError(f"{flags}: the {parse_spec(spec).engine.name} judge ({spec}) runs in this process, with no LLM "
                          "engine to place on Ray (it encodes on the CPU in seconds); leave out the executor flags")


def llm_option_classes(engine: Engine) -> tuple[type, ...]:
    """The option classes of an LLM engine, past its own: where it runs, the Batch API if it has one, cost."""
    return (ExecutorOptions, *((BatchOptions,) if engine.batch_api else ()), CostOptions)


def build_backend(parsed: Spec, engine_options: dict[str, Any], *more: dict[str, Any]) -> Backend:
    """The engine's backend (in this process, or on Ray with `executor="ray"`), through the Batch API with
    `batch=True`, admitted against a spending limit with `spending=`; `more` are the option dicts of
    `llm_option_classes`, in order."""
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
        raise OptionError(f"{', '.join(flags)} only appl{'y' if len(flags) > 1 else 'ies'} with --batch")
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
    classes = (parsed.engine.options, *llm_option_classes(parsed.engine))
    taken = take(options, *classes)
    refuse(options, f"the {parsed.engine.name} engine ({spec})", *classes)
    return build_backend(parsed, *taken)
