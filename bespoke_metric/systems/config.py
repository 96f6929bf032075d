"""`SystemConfig`: a system under test as configured (its model, its `GenerationSettings`, its model's
engine options), made the same way from Python, a YAML file or the command line.

Every setting has one name, its key: a field of `GenerationSettings` by the name its flag sets
(`top_k`, `max_new_tokens`, `generation_cache` for `cache`), a search engine option with `search_` before
it (`search_k`), and the system model's engine options (`model_base_url`, `model_api_key`, `batch_size`,
the engines' own search options). The command line's flags are generated from the same fields
(`bespoke_cli.options.add_option_arguments`), so each default is written once, in the class.

    SystemConfig.from_values({"model": "openai:gpt-4o", "context": "profile", "top_k": 5})
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.config.shared_options import cost_options, executor_options
from bespoke_metric.backends.config.values import SHARED_KEYS, ConfigError, read_values, refuse_unknown
from bespoke_metric.backends.options import GeminiOptions, OpenAIOptions, dest_of, flag_of, option_names
from bespoke_metric.backends.registry import ENGINES, EngineConfig, Spec, as_spec, backend_config

from .search.base import SearchOptions
from .settings import GenerationSettings

SEARCH_PREFIX = "search_"
"""Before the `SearchOptions` names among a system's keys (`search_base_url` is not the judge's `base_url`)."""

MODEL_ENGINE_KEYS: dict[str, str] = {"model_base_url": "base_url", "model_api_key": "api_key", "model_rpm": "rpm",
                                     "model_tpm": "tpm", "batch_size": "batch_size"}
"""The system model's engine options, by key -> by option name (besides the engines' own search options)."""

MODEL_THINKING_OPTIONS: tuple[tuple[type, tuple[str, ...]], ...] = (
    (OpenAIOptions, ("reasoning_effort",)), (GeminiOptions, ("thinking_level", "thinking_budget")))
"""How much the system model thinks, as its engine names it (`--reasoning-effort`, `--thinking-level`, ...)."""


def native_search_options() -> list[tuple[type, tuple[str, ...]]]:
    """The options of the engines' own search (`--search-context-size`, `--search-domains`, ...): the
    `search_` fields of the LLM engines' option classes, each once (two engines share one spelling)."""
    seen: set[str] = set()
    found = []
    for engine in ENGINES.values():
        if engine.llm:
            names = tuple(item.name for item in dataclasses.fields(engine.options)
                          if item.name.startswith(SEARCH_PREFIX) and item.metadata.get("flag") and item.name not in seen)
            seen.update(names)
            if names:
                found.append((engine.options, names))
    return found


def setting_keys() -> dict[str, str]:
    """Each `GenerationSettings` key -> its field (they differ where a flag's name does: `generation_cache`)."""
    return {dest_of(item): item.name for item in dataclasses.fields(GenerationSettings) if item.metadata.get("flag")}


def system_keys() -> frozenset[str]:
    """Every key a system config takes."""
    native = {name for _, names in (*native_search_options(), *MODEL_THINKING_OPTIONS) for name in names}
    search = {SEARCH_PREFIX + name for name in option_names(SearchOptions)}
    return frozenset({"model", "search_docs", *setting_keys(), *search, *MODEL_ENGINE_KEYS, *native, *SHARED_KEYS})


def flag_for(key: str) -> str:
    """How the command line spells a system's key: `top_k` -> `--top-k`, `model_base_url` -> `--model-base-url`."""
    for item in dataclasses.fields(GenerationSettings):
        if dest_of(item) == key and item.metadata.get("flag"):
            return str(item.metadata["flag"])
    if key.startswith(SEARCH_PREFIX) and key[len(SEARCH_PREFIX):] in option_names(SearchOptions):
        return flag_of(SearchOptions, key[len(SEARCH_PREFIX):])
    return "--" + key.replace("_", "-")


def engine_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The system model's engine options given, by option name: its endpoint, key, batch size, how much it
    thinks and its own search options."""
    given = {name: values.get(key) for key, name in MODEL_ENGINE_KEYS.items()}
    given.update({name: values.get(name) for _, names in (*native_search_options(), *MODEL_THINKING_OPTIONS)
                  for name in names})
    return {name: value for name, value in given.items() if value is not None}


def model_options(spec: Spec, values: Mapping[str, Any], *, every: bool = False) -> dict[str, Any]:
    """The engine options for the model `spec` (a system model or a profiler): the engine options given that
    its engine takes (`every`: all given, so that `make_backend` refuses one its engine does not take, for the
    one system model of a command: `--batch-size` with a `vllm:` model is an error, not ignored), the
    placement and Batch API options that apply to it."""
    takes = option_names(spec.engine.options)
    engine = {name: value for name, value in engine_values(values).items() if every or name in takes}
    return {**engine, **executor_options(values, spec), **cost_options(values, spec)}


def search_spec(values: Mapping[str, Any]) -> str | None:
    """`search`, or `search_docs` DIR as `docs:DIR` (giving both is a mistake)."""
    docs, search = values.get("search_docs"), values.get("search")
    if docs is None:
        return search
    if search is not None:
        raise ConfigError(f"--search-docs is --search docs:{docs}; give one of --search and --search-docs")
    return f"docs:{docs}"


@dataclass(frozen=True, kw_only=True)
class SystemConfig:
    """A system under test: its model spec and how it answers (`GenerationSettings`, with the model's engine
    options in `settings.model_options`). Checked when made: a wrong value is a `ValueError` naming the field,
    an engine option its model's engine does not take an `OptionError` naming the flag."""

    model: str | Spec
    """The model's spec as it is spelled (a `Spec` given is kept as its spelling, and not parsed again)."""
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    engine: EngineConfig = field(init=False, repr=False, compare=False)
    """The model's engine as configured (its spec parsed once, its options instances of their classes): what
    `generate` takes, down to the backend's constructor."""

    def __post_init__(self) -> None:
        spec = as_spec(self.model)
        object.__setattr__(self, "model", str(spec))
        object.__setattr__(self, "engine", backend_config(spec, self.settings.model_options))

    @classmethod
    def from_values(cls, values: Mapping[str, Any], *, every_engine_option: bool = True,
                    where: str = "") -> "SystemConfig":
        """From settings by key (see the module); `every_engine_option`: see `model_options` (False for one of
        several models, as in a sweep, each taking the engine options its engine has). `where` goes before a
        mistake's message. The command's spending limit is no setting: `generate` takes it."""
        refuse_unknown(values, system_keys(), where, "a system config's keys are those of "
                       "bespoke_metric.systems.config.system_keys()")
        if not values.get("model"):
            raise ConfigError(f"{where}model is required")
        profiler = values.get("profiler")
        fields = {name: values[key] for key, name in setting_keys().items() if values.get(key) is not None}
        search = {name: values[SEARCH_PREFIX + name] for name in option_names(SearchOptions)
                  if values.get(SEARCH_PREFIX + name) is not None}
        try:
            model = as_spec(values["model"])  # parsed here, once: the engine's options are asked of it
            settings = GenerationSettings(**{
                **fields, "search": search_spec(values), "search_options": SearchOptions(**search),
                "model_options": model_options(model, values, every=every_engine_option),
                "profiler_options": model_options(as_spec(profiler), values) if isinstance(profiler, (str, Spec)) else {}})
            return cls(model=model, settings=settings)
        except UserError as error:  # a search spec's, a choice's: named as it is, and by the file if there is one
            if where:
                raise ConfigError(f"{where}{error}") from None
            raise
        except ValueError as error:  # a field's value: the settings name the field
            raise ConfigError(f"{where}{error}") from None

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str], **kwargs: Any) -> "SystemConfig":
        """From a YAML file of the same keys (`model: openai:gpt-4o`, `top-k: 5`); a mistake names the file."""
        return cls.from_values(read_values(path), where=f"{path}: ", **kwargs)

    @classmethod
    def from_cli(cls, args: Any, **kwargs: Any) -> "SystemConfig":
        """From the parsed arguments of `generate` or `run` (the flags given among the system's keys)."""
        values = {key: value for key, value in vars(args).items() if key in system_keys() and value is not None}
        return cls.from_values(values, **kwargs)
