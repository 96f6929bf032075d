"""`SweepConfig`: a sweep as configured (the system settings of its cells, any of them given several
values, plus the judge and the data), made the same way from Python, a YAML file or the command line.

    models: [openai:gpt-4o, hf:Qwen/Qwen3-8B]
    contexts: [none, selected-profile, oracle]
    top-k: [3, 5]          # or top_k
    judge: openai:gpt-5
    no-guards: true
    out: sweeps/main

The keys are the flags of `bespoke sweep` without the dashes (`systems.config`, `judging.config`); a
setting given a list of several values is an axis of the grid.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_metric.backends.config.values import SHARED_KEYS, ConfigError, read_values, refuse_unknown
from bespoke_metric.backends.options import BatchOptions, dest_of, flag_type
from bespoke_metric.judging.config import JudgeConfig, ProtocolOptions, judge_keys
from bespoke_metric.systems.config import system_keys
from bespoke_metric.systems.settings import GenerationSettings


class SweepConfigError(ConfigError):
    """A sweep that cannot run as given: a bad config file, key or value, or settings that do not fit together."""


OWN_KEYS = frozenset({"out", "source", "revision", "prices", "max_cost", "strict"})
"""The sweep's own settings, beside its cells' and its judge's."""


def flag_keys() -> frozenset[str]:
    """The keys of flags without a value (`no_guards`, `search_replay`): true gives the flag, false leaves it out."""
    classes = (GenerationSettings, ProtocolOptions, BatchOptions)
    return frozenset({"no_guards", "strict", *(dest_of(item) for cls in classes for item in dataclasses.fields(cls)
                                                if item.metadata.get("flag") and flag_type(typing.get_type_hints(cls)[item.name]) is bool)})


NAMES_KEY = "model_name"
"""The key of the names given to the sweep's models (`--model-name`), one per model, in their order."""


def sweep_keys() -> frozenset[str]:
    return system_keys() | judge_keys() | OWN_KEYS | {NAMES_KEY}


@dataclass(frozen=True, kw_only=True)
class SweepConfig:
    """A grid of systems judged in one run: `models` x `contexts` x every setting of `settings` given a list
    of several values (`{"top_k": [3, 5]}`); one judge, one data source, one folder (`out`)."""

    out: str | os.PathLike[str]
    models: Sequence[str]
    judge: JudgeConfig
    contexts: Sequence[str] = ("none",)
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Every other setting of the cells, by its key (`systems.config`): one value, or a list of values. Those
    of where the engines run and the Batch API (`executor`, `batch`, ...) take one value and reach the judge too."""
    source: str = DEFAULT_SOURCE
    revision: str | None = None
    prices: str | os.PathLike[str] | None = None
    """A JSON file of prices over the built-in table (`calls.pricing.PriceTable.load`)."""
    max_cost: float | None = None
    """The sweep's one spending limit, in dollars, shared by every model of every cell."""
    strict: bool = False
    """A judgment that failed fails the sweep."""
    model_names: Sequence[str] = ()
    """The names of `models` in tables and results (`--model-name`), one per model; none: their specs."""

    def __post_init__(self) -> None:
        if self.model_names and len(self.model_names) != len(self.models):
            raise SweepConfigError(f"--model-name gives {len(self.model_names)} name(s) for {len(self.models)} model(s): "
                                   "give one per --models value, in the same order")
        unknown = [key for key in self.settings if key not in system_keys() or key in ("model", "context")]
        if unknown:
            raise SweepConfigError(f"settings: {unknown[0]!r} is not a setting of a cell (models and contexts have their own fields)")
        several = [key for key in SHARED_KEYS if isinstance(self.settings.get(key), (list, tuple))]
        if several:
            raise SweepConfigError(f"settings: {several[0]} is one for the whole sweep (its engines and its judge), not an axis")

    @property
    def shared(self) -> dict[str, Any]:
        """Where the engines run and the Batch API, given once for every engine of the sweep (its judge's too)."""
        return {key: value for key, value in self.settings.items() if key in SHARED_KEYS and value is not None}

    @classmethod
    def from_values(cls, values: Mapping[str, Any], *, where: str = "") -> "SweepConfig":
        """From settings by key (`sweep_keys`: a setting of the cells, the judge's, the sweep's own); `where`
        goes before a mistake's message."""
        refuse_unknown(values, sweep_keys(), where, "the keys are the flags of bespoke sweep, without the dashes")
        for key, flag in (("model", "--models"), ("judge", "--judge"), ("out", "--out")):
            if not values.get(key):
                raise SweepConfigError(f"{flag} is required (on the command line or in --config)")
        for key, value in values.items():
            if key in flag_keys() and not isinstance(value, bool):
                raise SweepConfigError(f"{where}{key} is a flag without a value: write {key}: true or {key}: false")
            if isinstance(value, (list, tuple)) and (not value or key in SHARED_KEYS or key not in system_keys()) and key != NAMES_KEY:
                raise SweepConfigError(f"{where}{key} takes one value, got {value!r}")
            if isinstance(value, dict):
                raise SweepConfigError(f"{where}{key} takes a value or a list of values, got {value!r}")
        judge = JudgeConfig.from_values({key: value for key, value in values.items() if key in judge_keys()}, where=where)
        settings = {key: value for key, value in values.items() if key in system_keys() and key not in ("model", "context")}
        own = {key: values[key] for key in OWN_KEYS if values.get(key) is not None}
        return cls(models=_listed(values["model"]), contexts=_listed(values.get("context", "none")), judge=judge,
                   settings=settings, model_names=_listed(values.get(NAMES_KEY, ())), **own)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> "SweepConfig":
        """From a YAML file (see the module); a mistake names the file."""
        return cls.from_values(read_values(path), where=f"{path}: ")

    @classmethod
    def from_cli(cls, args: Any, config: str | os.PathLike[str] | None = None) -> "SweepConfig":
        """From the parsed arguments of `bespoke sweep` over the YAML file `config` (flags given override it)."""
        given = {key: value for key, value in vars(args).items() if key in sweep_keys() and value is not None}
        from_file = read_values(config) if config else {}
        return cls.from_values({**from_file, **given}, where=f"{config}: " if config else "")


def _listed(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)
