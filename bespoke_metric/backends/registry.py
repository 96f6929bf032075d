"""The engine registry: every `ENGINE:MODEL` spec is parsed here, and every engine is one registration.

    make_backend("hf:Qwen/Qwen3-8B", batch_size=16)
    make_backend("vllm:meta-llama/Llama-3.1-8B-Instruct", tensor_parallel_size=2)

An engine is an `Engine`: its options (a dataclass of `bespoke_metric.backends.options`, as inspect's
`GenerateConfig` or lighteval's model configs), how to build its backend (how to call the model) and what
distinguishes it (guided decoding, one big batch). Engines are imported only when built, so `vllm` and
`torch` stay optional. Which judges exist (the protocol over any engine, the `embed:` proxy, a plugin's) is
the judging wing's registry, `bespoke_metric.judging.judges`.

Other distributions add engines through the entry-point group `bespoke.engines`: an entry point named
like the engine loads to its `Engine`, on the first spec that names it (the docs' "Extending bespoke-eval"
page has a worked example). `register_engine` adds one from Python.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import PurePath
from typing import Any, Callable, Mapping

from bespoke_dataset.errors import did_you_mean
from bespoke_metric.backends.base import Backend, Requirement
from bespoke_metric.backends.options import (
    AnthropicOptions,
    BatchOptions,
    ClientOptions,
    ExecutorOptions,
    GeminiOptions,
    HFOptions,
    InspectOptions,
    OpenAIOptions,
    OptionError,
    PerplexityOptions,
    VLLMOptions,
    flag_of,
    given,
    make_options,
    option_names,
)
from bespoke_metric.backends.providers.batch_ledger import ledger_path
from bespoke_metric.backends.schema import GRAMMAR_REQUIREMENT

ENTRY_POINT_GROUP = "bespoke.engines"
"""The entry-point group through which other distributions register engines (each loads to an `Engine`)."""


def _openai(model: str, options: OpenAIOptions) -> Backend:
    from bespoke_metric.backends.providers.openai_backend import OpenAIBackend

    return OpenAIBackend(model, options)


def _perplexity(model: str, options: PerplexityOptions) -> Backend:
    from bespoke_metric.backends.providers.perplexity import PerplexityBackend

    return PerplexityBackend(model, options)


def _gemini(model: str, options: GeminiOptions) -> Backend:
    from bespoke_metric.backends.providers.gemini import GeminiBackend

    return GeminiBackend(model, options)


def _anthropic(model: str, options: AnthropicOptions) -> Backend:
    from bespoke_metric.backends.providers.anthropic import AnthropicBackend

    return AnthropicBackend(model, options)


def _inspect(model: str, options: InspectOptions) -> Backend:
    from bespoke_metric.backends.providers.inspect_model import inspect_backend

    return inspect_backend(model, options)  # the spec's MODEL is the role inspect binds a model to


def _hf(model: str, options: HFOptions, *, tokenizer: Any = None) -> Backend:
    from bespoke_metric.backends.local.hf_backend import HFBackend

    return HFBackend(model, options, tokenizer=tokenizer)


def _vllm(model: str, options: VLLMOptions, *, llm: Any = None) -> Backend:
    from bespoke_metric.backends.local.vllm_backend import VLLMBackend

    return VLLMBackend(model, options, llm=llm)


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
    backend: Callable[..., Backend] | None = None
    """For LLM engines: `(model, options) -> Backend`, `options` an instance of `options` (the class); an engine
    that reuses objects already in memory (`preloads`) takes them as keywords. Judged through the BESPOKE protocol."""
    guided_decoding: bool = False
    """Constrains decoding to a JSON schema, so structured answers always parse: on by default."""
    constraint_option: str | None = None
    """The engine option that turns its guided decoding on (hf's `grammar`, off unless a judge asks): a judge
    turns it on unless told not to, and answers in JSON only with it (`Engine.guide`)."""
    own_tokenizer: bool = False
    """The model's tokenizer is at hand (a local model): budgets are counted in it."""
    preloads: tuple[str, ...] = ()
    """The objects already in memory its backend can reuse (`Preloaded`'s fields: hf's `tokenizer`, vllm's `llm`)."""
    search_default: str = "none"
    """The `--search` a system model of this engine gets when none is given (`native` for an engine that
    always searches, such as Perplexity's)."""
    batch_api: bool = False
    """Offers a Batch API (`BatchOptions`, `--batch`)."""
    batch_backend: str = "bespoke_metric.backends.providers.openai_batch:OpenAIBatchBackend"
    """`"module:Class"` of the backend that sends its calls through that Batch API: `Class(direct, **options)`
    (the OpenAI Batch API's by default)."""
    substitute: Callable[[str], dict[str, Any] | None] | str | None = None
    """`(model) -> {asked, ran_as, reason, date}` for a model name the engine runs as another (a retired
    one, as its provider's documented successor), else None; or `"module:function"` naming it."""
    local: bool = False
    """Runs its model here (or on this Ray cluster): it costs machine time, not a provider's price per token."""
    requires: tuple[Requirement, ...] = ()
    """Modules of optional extras it imports only on its first call (hf's xgrammar)."""

    def check_requirements(self, engine_options: dict[str, Any]) -> None:
        """A `MissingExtraError` for a module the engine would need with `engine_options` (an option not
        given counts as on: a judge's default) that is not installed; nothing is imported."""
        for requirement in self.requires:
            needed = requirement.option is None or engine_options.get(requirement.option) is not False
            if needed and importlib.util.find_spec(requirement.module) is None:
                raise requirement.missing(self.name)

    @property
    def llm(self) -> bool:
        return self.backend is not None


ENGINES: dict[str, Engine] = {
    "openai": Engine("openai", OpenAIOptions, backend=_openai, batch_api=True),
    "perplexity": Engine("perplexity", PerplexityOptions, backend=_perplexity, search_default="native",
                         substitute="bespoke_metric.backends.providers.perplexity:substitution"),
    "gemini": Engine("gemini", GeminiOptions, backend=_gemini),
    "anthropic": Engine("anthropic", AnthropicOptions, backend=_anthropic, batch_api=True,
                        batch_backend="bespoke_metric.backends.providers.anthropic_batch:AnthropicBatchBackend"),
    "hf": Engine("hf", HFOptions, backend=_hf, guided_decoding=True, constraint_option="grammar", own_tokenizer=True,
                 local=True, preloads=("tokenizer",), requires=(GRAMMAR_REQUIREMENT,)),
    "vllm": Engine("vllm", VLLMOptions, backend=_vllm, guided_decoding=True, own_tokenizer=True, local=True,
                   preloads=("llm",)),
    # inside an inspect eval only: the model inspect binds to the role ROLE of `inspect:ROLE`
    "inspect": Engine("inspect", InspectOptions, backend=_inspect),
}
"""Every engine by spec prefix: the built-in ones, those registered from Python, and the plugins loaded so far
(`load_plugin`, on the first spec that names one)."""


def register_engine(engine: Engine) -> None:
    """Add (or replace) an engine: `register_engine(Engine("mine", MyOptions, backend=...))` (a judge of your own
    is registered with `judging.judges.register_judge`)."""
    ENGINES[engine.name] = engine


def plugin_names(group: str = ENTRY_POINT_GROUP) -> list[str]:
    """The names that installed distributions offer through the entry-point `group` (not loaded)."""
    return sorted({point.name for point in entry_points(group=group)})


def load_entry_point(group: str, name: str, kind: type, what: str) -> Any:
    """What the entry point `name` of `group` loads to, a `kind` of that name (None when no installed
    distribution offers it). A plugin that fails to load, or loads to something else, is an `OptionError`
    naming the entry point: never skipped silently. Only the plugin asked for is loaded, so a broken plugin
    troubles no other."""
    for point in entry_points(group=group, name=name):
        try:
            loaded = point.load()
        except Exception as error:  # a plugin's own import error, whatever its type
            raise OptionError(f"the {what} plugin {point.name!r} ({point.value}) failed to load: "
                              f"{type(error).__name__}: {error}") from error
        if not isinstance(loaded, kind) or getattr(loaded, "name", None) != name:
            raise OptionError(f"the {what} plugin {point.name!r} ({point.value}) must load to a "
                              f"{kind.__module__}.{kind.__qualname__} named {name!r}, not {loaded!r}")
        return loaded
    return None


def load_plugin(name: str) -> Engine | None:
    """The engine `name` of an installed distribution's `bespoke.engines` entry point (`load_entry_point`),
    registered on first use; None when no distribution offers it."""
    engine = load_entry_point(ENTRY_POINT_GROUP, name, Engine, "engine")
    if engine is not None:
        register_engine(engine)
    return engine


SHARED_OPTIONS: tuple[type, ...] = (ExecutorOptions, BatchOptions, ClientOptions)
"""Option classes beyond each engine's own: where an LLM engine runs, the Batch API, the API clients'."""


def option_classes() -> tuple[type, ...]:
    """Every option class of the registered engines: each engine's own, then the shared ones."""
    own = tuple(dict.fromkeys(engine.options for engine in ENGINES.values()))
    return (*own, *(cls for cls in SHARED_OPTIONS if cls not in own))


@dataclass(frozen=True)
class Spec:
    """A parsed `ENGINE:MODEL[@REVISION]`."""

    engine: Engine
    model: str
    revision: str | None = None
    """The pinned revision of an open-weight model (`hf:`, `vllm:`): a commit, tag or branch of its Hub repo."""

    def __str__(self) -> str:
        return f"{self.engine.name}:{self.model}" + (f"@{self.revision}" if self.revision else "")

    @property
    def name(self) -> str:
        """The engine's name, the spec's prefix (`openai`)."""
        return self.engine.name


def as_spec(spec: str | Spec) -> Spec:
    """The parsed spec: a `Spec` as it is, a string parsed (`parse_spec`). A public function that takes a spec
    calls this once at its entry and hands the `Spec` on, so no layer below parses or splits it again."""
    return spec if isinstance(spec, Spec) else parse_spec(spec)


def split_spec(spec: str | Spec) -> tuple[str, str]:
    """`ENGINE:MODEL` as (engine name, model), unchecked: for a spec read back (a price table's key, a results
    file's model), where an unknown engine or a bare name (`("", "gpt-5")`) is no mistake."""
    if isinstance(spec, Spec):
        return spec.name, spec.model + (f"@{spec.revision}" if spec.revision else "")
    prefix, sep, model = str(spec).partition(":")
    return (prefix, model) if sep else ("", str(spec))


def model_label(spec: str | Spec) -> str:
    """A model's spec as a reader names it: a local file or folder by its own name, without the folders
    that hold it (`hf:/venv/lib/.../SmolLM2-135M-Instruct.Q4_1.gguf` -> `hf:SmolLM2-135M-Instruct.Q4_1`);
    a Hub id, or a plain name, as it is. Tables and results show it; the spec itself stays recorded."""
    from bespoke_metric.backends.local.model_files import is_gguf

    engine, model = split_spec(spec)
    spec = str(spec)
    colon = ":" if engine else ""
    if not model.startswith((".", "/", "~")):  # as `locate_model` tells a path from a Hub id
        return spec
    path = PurePath(model.rstrip("/\\"))
    name = path.stem if is_gguf(path.name) else path.name
    return f"{engine}{colon}{name or model}"


def engine_of(spec: str | Spec) -> Engine | None:
    """The registered engine a spec names, unchecked (None for a bare name or an engine not registered): for a
    spec read back, whose capabilities (`local`, `search_default`) are asked without refusing it."""
    if isinstance(spec, Spec):
        return spec.engine
    return ENGINES.get(split_spec(spec)[0])


def parse_spec(spec: str) -> Spec:
    """`"openai:gpt-5"` -> `Spec(ENGINES["openai"], "gpt-5")`; an engine that takes a `revision` option (`hf:`,
    `vllm:`) takes it in the spec too, `"vllm:openai/gpt-oss-120b@COMMIT"`, so a pinned judge is named pinned.
    `OptionError` for a malformed or unknown spec."""
    prefix, sep, model = str(spec).partition(":")
    if not sep or not model:
        raise OptionError(f"an engine is named ENGINE:MODEL with ENGINE one of {_known()} (e.g. openai:gpt-5), got {spec!r}")
    if prefix not in ENGINES and load_plugin(prefix) is None:
        known = _known()
        raise OptionError(f"unknown engine {prefix!r} in {spec!r}{did_you_mean(prefix, known.split(', '))}; known: {known}")
    engine = ENGINES[prefix]
    if "@" not in model or "revision" not in option_names(engine.options):
        return Spec(engine, model)
    model, _, revision = model.partition("@")
    if not model or not revision or "@" in revision:
        raise OptionError(f"a pinned model is named {prefix}:MODEL@REVISION (one revision), got {spec!r}")
    return Spec(engine, model, revision)


def _known() -> str:
    """The engine names a user may give, for a message: the registered ones and the installed plugins'
    (asked of the installed distributions only when a spec is wrong, never on the way to a right one)."""
    return ", ".join(sorted(set(ENGINES) | set(plugin_names())))


def pinned(parsed: Spec, engine_options: dict[str, Any]) -> dict[str, Any]:
    """The engine's options with the spec's `@revision` as its `revision` option; `OptionError` when the
    revision is given twice (in the spec and as an option), even the same one."""
    if parsed.revision is None:
        return engine_options
    if engine_options.get("revision") is not None:
        raise OptionError(f"{parsed} names its revision, and revision={engine_options['revision']!r} is given too: "
                          "give the revision once")
    return {**engine_options, "revision": parsed.revision}


def substitution(spec: str | Spec) -> dict[str, Any] | None:
    """What the engine of `spec` runs in place of the model it names, when it does (`Engine.substitute`):
    the record a results file keeps as `system.substitution`; None for a spec run as named, or not a spec."""
    try:
        parsed = as_spec(spec)
    except OptionError:  # a backend given as an object has no spec to look up
        return None
    if parsed.engine.substitute is None:
        return None
    return _resolve(parsed.engine.substitute)(parsed.model)


def take(options: dict[str, Any], *classes: type) -> dict[type, dict[str, Any]]:
    """Split `options` over the option classes (first match wins), dropping Nones: each class's part by the
    class; leftovers stay in `options`."""
    taken: dict[type, dict[str, Any]] = {}
    for cls in classes:
        names = {item.name for item in dataclasses.fields(cls)}
        part = {name: options.pop(name) for name in list(options) if name in names}
        taken[cls] = {name: value for name, value in part.items() if value is not None}
    return taken


@dataclass(frozen=True)
class EngineConfig:
    """An LLM engine as configured, the currency every layer below a command's flags, a config's keys or a
    Python call's keywords receives, down to the backend's constructor: its parsed spec and each part of its
    options an instance of its class, made and checked once (`engine_config`)."""

    spec: Spec
    options: Any
    """An instance of the engine's own options class (`spec.engine.options`), the spec's `@revision` in it."""
    executor: ExecutorOptions = ExecutorOptions()
    """Where it runs."""
    batch: BatchOptions = BatchOptions()
    """Its provider's Batch API (never given for an engine without one)."""

    def given(self) -> dict[str, Any]:
        """Every option given, by name (the engine's own, where it runs, the Batch API's)."""
        return {**given(self.options), **given(self.executor), **given(self.batch)}

    def ledger_beside(self, cache: str | os.PathLike[str]) -> "EngineConfig":
        """This config with its Batch API's batches kept beside the `cache` file of its answers, where it sends
        batches and names no ledger of its own."""
        if not self.batch.batch or self.batch.batch_ledger is not None:
            return self
        return dataclasses.replace(self, batch=dataclasses.replace(self.batch, batch_ledger=str(ledger_path(cache))))


@dataclass(frozen=True)
class Preloaded:
    """Objects already in memory that a local engine reuses instead of loading its own: explicit arguments
    (`make_backend("vllm:...", llm=...)`, `make_judge`, `score`), never fields of an options class, so an
    option stays a value a flag or a config can give."""

    tokenizer: Any = None
    """`hf:` with a preloaded model (a `PreTrainedModel` given as the model): its loaded tokenizer."""
    llm: Any = None
    """`vllm:`: an already built `vllm.LLM` to reuse."""

    def given(self, parsed: Spec) -> dict[str, Any]:
        """The objects given, by name; an `OptionError` for one the engine of `parsed` does not reuse."""
        objects = given(self)
        refused = sorted(set(objects) - set(parsed.engine.preloads))
        if refused:
            takes = ", ".join(f"{name}=" for name in parsed.engine.preloads) or "none"
            raise OptionError(f"{', '.join(f'{name}=' for name in refused)} does not apply to the {parsed.engine.name} "
                              f"engine ({parsed}); the objects it reuses: {takes}")
        return objects


def engine_config(parsed: Spec, options: dict[str, Any]) -> EngineConfig:
    """The config of the LLM engine of `parsed` from `options` by name: its parts are taken out of `options`
    (`take`; leftovers stay there for the caller to refuse) and each made an instance of its class
    (`make_options`: a value out of its choices, or a count below 1, is a `UserError` naming its flag)."""
    taken = take(options, *llm_option_classes(parsed.engine))
    own = make_options(parsed.engine.options, pinned(parsed, taken[parsed.engine.options]))
    return EngineConfig(parsed, own, make_options(ExecutorOptions, taken[ExecutorOptions]),
                        make_options(BatchOptions, taken.get(BatchOptions, {})))


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


def refuse_executor(options: dict[str, Any], spec: Spec) -> None:
    """A judge of its own (`embed:`) has no LLM engine to place: it always runs in this process, so an
    executor option is refused as such, not with a list of options that no command takes."""
    given = sorted(name for name in options if name in option_names(ExecutorOptions) and options[name] is not None)
    if given:
        flags = ", ".join(flag_of(ExecutorOptions, name) for name in given)
        raise OptionError(f"{flags}: the {spec.name} judge ({spec}) runs in this process, with no LLM "
                          "engine to place on Ray (it encodes on the CPU in seconds); leave out the executor flags")


def llm_option_classes(engine: Engine) -> tuple[type, ...]:
    """The option classes of an LLM engine: its own, where it runs, the Batch API if it has one."""
    return (engine.options, ExecutorOptions, *((BatchOptions,) if engine.batch_api else ()))


def build_backend(config: EngineConfig, *, spending: Any = None, preloaded: Preloaded = Preloaded()) -> Backend:
    """The engine's backend (in this process, or on Ray with `executor="ray"`), through the Batch API with
    `batch=True`, admitted against `spending` (a `calls.spending.SpendingLimit`, shared by every model of a
    run) when one is given and the engine has a price (a local model has none), reusing the objects
    `preloaded` holds."""
    if config.spec.engine.local:
        spending = None
    batch = config.batch
    if batch.batch:
        if (config.executor.executor or "local") != "local":
            raise OptionError("--batch sends the calls to the provider's Batch API: it does not run on Ray (--executor ray)")
        direct = _local_backend(config, preloaded)
        return _resolve(config.spec.engine.batch_backend)(direct, batch, spending=spending)
    if given(batch):
        flags = [flag_of(BatchOptions, name) for name in sorted(given(batch))]
        raise OptionError(f"{', '.join(flags)} only appl{'y' if len(flags) > 1 else 'ies'} with --batch")
    backend = _local_backend(config, preloaded)
    if spending is not None:  # the limit wraps what it limits: no import of the calls wing from here
        return spending.limited(backend)
    return backend


def _local_backend(config: EngineConfig, preloaded: Preloaded) -> Backend:
    """The engine in this process, or on Ray with `executor="ray"`."""
    parsed, executor = config.spec, config.executor
    build = parsed.engine.backend
    assert build is not None
    objects = preloaded.given(parsed)
    if executor.executor == "ray":
        from bespoke_metric.backends.ray.backend import RayBackend

        return RayBackend(parsed.engine.name, parsed.model, config.options, executor, build=build, preloaded=objects)
    placed = sorted(name for name in given(executor) if name != "executor")
    if placed:
        flags = ", ".join(flag_of(ExecutorOptions, name) for name in placed)
        raise OptionError(f"{flags} only apply with --executor ray (executor='ray')")
    return build(parsed.model, config.options, **objects)


def make_backend(spec: str | Spec, *, spending: Any = None, tokenizer: Any = None, llm: Any = None, **options: Any) -> Backend:
    """The LLM backend named by `spec` (`openai:`, `perplexity:`, `gemini:`, `hf:`, `vllm:`); `options` are its engine's options and
    the executor's (`executor="ray"`, `replicas`, ...). None means the default, so command-line flags
    pass through as they are. `spending`: a `calls.spending.SpendingLimit` its calls are admitted against;
    `tokenizer` (hf) and `llm` (vllm): objects already loaded, reused (`Preloaded`). A thin adapter: the
    keywords become the engine's `EngineConfig` here (`engine_config`), what `build_backend` takes."""
    return build_backend(backend_config(spec, options), spending=spending, preloaded=Preloaded(tokenizer, llm))


def backend_config(spec: str | Spec, options: Mapping[str, Any]) -> EngineConfig:
    """The `EngineConfig` of the LLM engine `spec` with `options` by name (a flag's, a config key's or a
    keyword's): an `OptionError` naming the flag of one it does not take, or for a judge of its own."""
    parsed = as_spec(spec)
    if not parsed.engine.llm:
        raise OptionError(f"{spec} is a judge, not an LLM engine; use make_judge")
    options = dict(options)
    config = engine_config(parsed, options)
    refuse(options, f"the {parsed.engine.name} engine ({spec})", *llm_option_classes(parsed.engine))
    return config
