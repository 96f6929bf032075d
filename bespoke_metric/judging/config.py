"""`JudgeConfig`: a judge as configured (its spec, the protocol's options, its engine's client and cost
options), made the same way from Python, a sweep's YAML file or the command line; checked as `make_judge` checks
it, without building anything.

    JudgeConfig(spec="openai:gpt-5", options={"base_url": "http://127.0.0.1:8000/v1", "recall": "batched"})

Its spec is parsed when it is made (a string given is parsed there, once): every layer it reaches gets the
`Spec`, and asks it what the engine is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from bespoke_metric.backends.config.shared_options import cost_options, executor_options
from bespoke_metric.backends.config.values import SHARED_KEYS, ConfigError, refuse_unknown
from bespoke_metric.backends.options import ClientOptions, OptionError, option_names
from bespoke_metric.backends.registry import Spec, as_spec

from .factory import JudgeParts, ProtocolOptions, judge_parts

JUDGE_ENGINE_KEYS: tuple[str, ...] = ("grammar",)
"""The local engines' options a judge takes besides the API clients': `HFOptions.grammar` (`--no-grammar`)."""
JUDGE_EFFORT_KEY = "judge_reasoning_effort"
"""The key of how hard an API judge reasons (`--judge-reasoning-effort`; `--reasoning-effort` where the command has
no system model): its engine's `reasoning_effort` option, under a name of its own beside a system model's."""
JUDGE_EFFORT_FLAG = "--judge-reasoning-effort"
"""The flag of `JUDGE_EFFORT_KEY` on every command that judges."""


def judge_keys() -> frozenset[str]:
    """Every key a judge config takes: `judge` (the spec), `cache`, `no_guards`, the protocol's and the API
    clients' options, `JUDGE_ENGINE_KEYS`, `JUDGE_EFFORT_KEY`, and where the engines run and the Batch API (shared with the
    system models)."""
    return frozenset({"judge", "cache", "no_guards", *option_names(ProtocolOptions), *option_names(ClientOptions),
                      *JUDGE_ENGINE_KEYS, JUDGE_EFFORT_KEY, *SHARED_KEYS})


@dataclass(frozen=True, kw_only=True)
class JudgeConfig:
    """A judge: its spec and options (by name: `ProtocolOptions`, the engine's options class, where it
    runs and the Batch API; a None is the default), the cache of its calls, whether the guards are on."""

    spec: Spec
    """The judge's spec; a string given is parsed when the config is made (`OptionError` if it is no spec)."""
    options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """May hold a key: never written anywhere."""
    cache: str | os.PathLike[str] | None = None
    guards: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "spec", as_spec(self.spec))

    def judge_options(self, spending: Any = None) -> dict[str, Any]:
        """The options `scoring.pipeline.score` and `score_many` take for this judge: its own, the placement
        and Batch API options that apply to its engine, the command's spending limit (`spending`), the cache; an
        `OptionError` naming `JUDGE_EFFORT_FLAG` where its engine takes no effort (renamed here, it would be
        refused under the system model's flag)."""
        if self.options.get(JUDGE_EFFORT_KEY) is not None and "reasoning_effort" not in option_names(self.spec.engine.options):
            raise OptionError(f"{JUDGE_EFFORT_FLAG} does not apply to the {self.spec.engine.name} judge ({self.spec}): "
                              "its engine takes no reasoning effort")
        own = {"reasoning_effort" if name == JUDGE_EFFORT_KEY else name: value for name, value in self.options.items()
               if name not in SHARED_KEYS and value is not None}
        options = {**own, **executor_options(self.options, self.spec), **cost_options(self.options, self.spec, spending)}
        if self.cache is not None:
            options["cache"] = self.cache
        if not self.guards:
            options["guards"] = False
        return options

    def check(self, spending: Any = None) -> JudgeParts:
        """An `OptionError` naming the flag of an option the judge's engine does not take; nothing is built."""
        options = self.judge_options(spending)
        options.pop("guards", None)
        return judge_parts(self.spec, **options)

    @classmethod
    def from_values(cls, values: Mapping[str, Any], *, where: str = "") -> "JudgeConfig":
        """From settings by key (`judge_keys`); `where` goes before a mistake's message."""
        refuse_unknown(values, judge_keys(), where, "a judge config's keys are those of "
                       "bespoke_metric.judging.config.judge_keys()")
        if not values.get("judge"):
            raise ConfigError(f"{where}judge is required")
        options = {name: value for name, value in values.items()
                   if name not in ("judge", "cache", "no_guards") and value is not None}
        return cls(spec=as_spec(values["judge"]), options=options, cache=values.get("cache"), guards=not values.get("no_guards"))

    @classmethod
    def from_cli(cls, args: Any, spec: str | None = None) -> "JudgeConfig":
        """From the parsed arguments of a command that judges (the flags given among the judge's keys); `spec`
        is one of several judges given (`meta-eval --judge A --judge B`), else `--judge`."""
        values = {key: value for key, value in vars(args).items() if key in judge_keys() and value is not None}
        if spec is not None:
            values["judge"] = spec
        return cls.from_values(values)
