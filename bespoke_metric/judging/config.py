"""`JudgeConfig`: a judge as configured (its spec, the protocol's options, its engine's options, where it runs and
its Batch API, each an instance of its class), made the same way from Python, a sweep's YAML file or the command
line, and checked when it is made, before any data is read or anything built.

    JudgeConfig(spec="openai:gpt-5", options={"base_url": "http://127.0.0.1:8000/v1", "recall": "batched"})

Its spec is parsed when it is made (a string given is parsed there, once), and its options by name are split
there into `ProtocolOptions` and the engine's `EngineConfig`: every layer it reaches gets those instances, down
to the backend's constructor. An option the judge's engine does not take, a value out of its choices or a count
below 1 is an `OptionError` naming its flag, from the constructor.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

from bespoke_metric.backends.config.shared_options import batch_values, executor_options
from bespoke_metric.backends.config.values import SHARED_KEYS, ConfigError, refuse_unknown
from bespoke_metric.backends.options import (
    IN_REQUEST,
    REASONING_EFFORTS,
    UNKEYED,
    ClientOptions,
    OptionError,
    flag_of,
    make_options,
    option,
    option_names,
    setting,
)
from bespoke_metric.backends.registry import (
    EngineConfig,
    Spec,
    engine_config,
    llm_option_classes,
    refuse,
    take,
)
from bespoke_metric.judging.judges import as_judge_spec, judged, own_judge, structured_default
from bespoke_metric.judging.protocol import RECALL_MODES

if TYPE_CHECKING:
    from bespoke_metric.calls.cache import Cache


@dataclass(frozen=True)
class ProtocolOptions:
    """How an LLM judge applies the BESPOKE protocol (`bespoke_metric.judging.llm_judge.LLMJudge`). What reaches
    the cache key (`options.option`'s `key`): the options every request carries, through the request; `repeat`
    and the protocol version through the judge's own part of the key (`llm_judge.LLMJudge.key_extra`)."""

    max_shots: int | None = option("--max-shots", "R-J examples shown to the judge (default 5)", key=IN_REQUEST)
    recall: str | None = option("--recall", "per-claim: one call per gold claim (the paper's protocol, default); "
                                "batched: one call per query; none: skip recall", choices=RECALL_MODES, key=IN_REQUEST)
    with_feedback: bool | None = option("--no-feedback", "ablation: show the R-J examples without their feedback",
                                        key=IN_REQUEST)
    personalized: bool | None = option("--no-personalization", "ablation: no rubric, gold need or examples",
                                       key=IN_REQUEST)
    structured: bool | None = option("--structured", "ask for JSON output (guided decoding where the engine has it)",
                                     key=IN_REQUEST)
    recall_reasoning_effort: str | None = option("--recall-reasoning-effort", "how hard an API judge reasons for its "
                                                 "recall checks (default: no effort sent, the model's own, as the official "
                                                 "evaluator sends them; the judgments keep the judge's)",
                                                 choices=REASONING_EFFORTS, key=IN_REQUEST)
    max_parse_retries: int | None = option(help="repair turns for an unreadable answer (default 2)", key=UNKEYED)
    max_tokens: int | None = option("--judge-max-tokens", "output token cap of every judge call, e.g. for a small "
                                    "local judge (default: per kind of call)", positive=True, key=IN_REQUEST)
    progress: bool | None = option(help="show a progress bar (default True)", key=UNKEYED)
    repeat: int = setting(0, help="which of several runs of the same judgments this is (`meta-eval --repeats`): "
                          "from 1 on, part of the cache key, so each repeat is a fresh answer")


JUDGE_ENGINE_KEYS: tuple[str, ...] = ("grammar",)
"""The local engines' options a judge takes besides the API clients': `HFOptions.grammar` (`--no-grammar`)."""
JUDGE_EFFORT_KEY = "judge_reasoning_effort"
"""The key of how hard an API judge reasons (`--judge-reasoning-effort`; `--reasoning-effort` where the command has
no system model): its engine's `reasoning_effort` option, under a name of its own beside a system model's."""
JUDGE_EFFORT_FLAG = "--judge-reasoning-effort"
"""The flag of `JUDGE_EFFORT_KEY` on every command that judges."""


def judge_keys() -> frozenset[str]:
    """Every key a judge config takes: `judge` (the spec), `cache`, `no_guards`, the protocol's and the API
    clients' options, `JUDGE_ENGINE_KEYS`, `JUDGE_EFFORT_KEY`, and where the engines run and the Batch API (shared
    with the system models)."""
    return frozenset({"judge", "cache", "no_guards", *option_names(ProtocolOptions), *option_names(ClientOptions),
                      *JUDGE_ENGINE_KEYS, JUDGE_EFFORT_KEY, *SHARED_KEYS})


@dataclass(frozen=True, kw_only=True)
class JudgeConfig:
    """A judge: its spec and options (by name: `ProtocolOptions`, the engine's options class, where it runs and
    the Batch API; a None is the default), the cache of its calls, whether the guards are on. Made, it holds
    those options as instances (`protocol`, `engine`), checked."""

    spec: Spec
    """The judge's spec; a string given is parsed when the config is made (`OptionError` if it is no spec)."""
    options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """The options as given, by name. May hold a key: never written anywhere."""
    cache: str | os.PathLike[str] | Cache | None = None
    guards: bool = True
    protocol: ProtocolOptions = field(init=False, repr=False)
    """How an LLM judge applies the protocol (with `structured` defaulted to its engine's guided decoding);
    the defaults for a judge of its own, which takes none."""
    engine: EngineConfig = field(init=False, repr=False)
    """Its engine's options (for a judge of its own, such as `embed:`, its options alone)."""

    def __post_init__(self) -> None:
        parsed = as_judge_spec(self.spec)
        object.__setattr__(self, "spec", parsed)
        if self.options.get(JUDGE_EFFORT_KEY) is not None and "reasoning_effort" not in option_names(parsed.engine.options):
            # renamed below, it would be refused under the system model's flag
            raise OptionError(f"{JUDGE_EFFORT_FLAG} does not apply to the {parsed.engine.name} judge ({parsed}): "
                              "its engine takes no reasoning effort")
        options = {"reasoning_effort" if name == JUDGE_EFFORT_KEY else name: value for name, value in self.options.items()
                   if value is not None}
        if own_judge(parsed) is not None:  # a judge of its own: no protocol, no cache, no LLM engine to place
            own = take(options, parsed.engine.options)[parsed.engine.options]
            refused = {name: value for name, value in options.items() if name not in SHARED_KEYS}
            refuse({**refused, **({"cache": self.cache} if self.cache is not None else {})},
                   f"the {parsed.engine.name} judge ({parsed})", parsed.engine.options, known=(ProtocolOptions,))
            object.__setattr__(self, "protocol", ProtocolOptions())
            object.__setattr__(self, "engine", EngineConfig(parsed, make_options(parsed.engine.options, own)))
            return
        # the placement and Batch API options of a command reach the engines they apply to (`shared_options`)
        options = {**{name: value for name, value in options.items() if name not in SHARED_KEYS},
                   **executor_options(options, parsed), **(batch_values(options) if parsed.engine.batch_api else {})}
        protocol = take(options, ProtocolOptions)[ProtocolOptions]
        engine = engine_config(parsed, options)
        refuse(options, f"the {parsed.engine.name} judge ({parsed})", ProtocolOptions, *llm_option_classes(parsed.engine),
               known=(ProtocolOptions,))
        if protocol.get("recall_reasoning_effort") is not None and "reasoning_effort" not in option_names(parsed.engine.options):
            raise OptionError(f"{flag_of(ProtocolOptions, 'recall_reasoning_effort')} does not apply to the "
                              f"{parsed.engine.name} judge ({parsed}): its engine takes no reasoning effort")
        own, structured = structured_default(parsed.engine, engine.options)
        protocol.setdefault("structured", structured)
        own = judged(parsed, own)  # the effort of its judgments, unless one is given
        object.__setattr__(self, "protocol", make_options(ProtocolOptions, protocol))
        object.__setattr__(self, "engine", dataclasses.replace(engine, options=own))

    def judge_options(self, spending: Any = None) -> dict[str, Any]:
        """The options by name that `scoring.pipeline.score` and `make_judge` take for this judge: its own, the
        placement and Batch API options that apply to its engine, the command's spending limit (`spending`), the
        cache. For a caller that passes keywords on; the config itself goes wherever a judge is taken."""
        options = dict(self.engine.given())
        if self.spec.engine.llm:  # the protocol's options given (its defaults are the judge's to fill)
            names = option_names(ProtocolOptions)
            options.update({name: value for name, value in self.options.items() if name in names and value is not None})
        if spending is not None and self.spec.engine.llm:  # an engine without a price takes none (`build_backend`)
            options["spending"] = spending
        if self.cache is not None:
            options["cache"] = self.cache
        if not self.guards:
            options["guards"] = False
        return options

    def check(self) -> "JudgeConfig":
        """This config, checked: it was when it was made (an `OptionError` naming the flag of an option the
        judge's engine does not take); kept so that a caller may say where it checks."""
        return self

    @classmethod
    def from_values(cls, values: Mapping[str, Any], *, where: str = "") -> "JudgeConfig":
        """From settings by key (`judge_keys`, and the options of the judge's own engine: `embed:`'s `k`,
        openai's `api`); `where` goes before a mistake's message."""
        if not values.get("judge"):
            raise ConfigError(f"{where}judge is required")
        spec = as_judge_spec(values["judge"])
        refuse_unknown(values, judge_keys() | option_names(spec.engine.options), where, "a judge config's keys are "
                       "those of bespoke_metric.judging.config.judge_keys()")
        options = {name: value for name, value in values.items()
                   if name not in ("judge", "cache", "no_guards") and value is not None}
        return cls(spec=spec, options=options, cache=values.get("cache"), guards=not values.get("no_guards"))

    @classmethod
    def from_cli(cls, args: Any, spec: str | None = None, keep: Callable[[str], bool] | None = None) -> "JudgeConfig":
        """From the parsed arguments of a command that judges (the flags given among the judge's keys); `spec`
        is one of several judges given (`meta-eval --judge A --judge B`), else `--judge`; `keep`, where given,
        says which of the given options are this judge's (each of several judges takes the flags that apply to it)."""
        values = {key: value for key, value in vars(args).items()
                  if key in judge_keys() and value is not None and (keep is None or key in ("judge", "no_guards") or keep(key))}
        if spec is not None:
            values["judge"] = spec
        return cls.from_values(values)
