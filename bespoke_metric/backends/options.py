"""Engine options: typed dataclasses whose fields carry the command-line flag that sets them.

Every option's default (None) means: the engine's own default. The command line is built from these
classes (`scripts/options.py`), so an option an engine does not take is refused in the user's own words
(`--no-feedback does not apply to the embed judge`), never silently dropped. Importing this module is
cheap: it names no engine library.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Mapping, TypeVar

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.web_search import RECENCY_FILTERS, SEARCH_CONTEXT_SIZES

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""What `--reasoning-effort` takes: the openai SDK's `ReasoningEffort` (openai/types/shared/reasoning_effort.py,
openai 3.57); which of them a model accepts is its family's (`providers.openai_models.Family.efforts`: gpt-5 takes
minimal to high, gpt-6.2 neither none nor minimal)."""
T = TypeVar("T")

THINKING_LEVELS = ("minimal", "low", "medium", "high", "xhigh")
"""What `--thinking-level` takes: google-genai's `types.ThinkingLevel` (3.6), lower-cased."""
JUDGMENT_EFFORT = "high"
"""The reasoning effort of a judge's judgments unless one is given: the official evaluator's (the Responses API
at `reasoning.effort: high`); its per-claim recall checks go with none."""
ANTHROPIC_EFFORTS = ("low", "medium", "high", "xhigh", "max")
"""What an `anthropic:` model's `--reasoning-effort` takes: the anthropic SDK's `OutputConfigParam.effort`
(anthropic/types/output_config_param.py, anthropic 2.15)."""
WEB_SEARCH_TOOLS = ("web_search_20250305", "web_search_20260209", "web_search_20260318")
"""The versions of Anthropic's server web search tool (anthropic/types/web_search_tool_*_param.py, anthropic
2.15): the first on every model, the later two with dynamic filtering."""


class OptionError(UserError):
    """An option the chosen engine does not take, or a malformed engine spec."""


KEYED = "keyed"
"""An option that can change an answer: the engine's identity (and so every cache key) shows it (the default)."""
IN_REQUEST = "request"
"""An option whose effect every request carries (its prompt, token cap or schema): keyed through the request."""
UNKEYED = "unkeyed"
"""An option that changes no answer (how many calls at once, how long to wait, the key itself): in no cache key."""


def option(flag: str | None = None, help: str = "", choices: tuple[str, ...] | None = None, *,
           positive: bool = False, key: str = KEYED) -> Any:
    """A typed option whose default (None) means: the engine's own default. `flag` is how the command
    line spells it (a `--no-...` flag sets a boolean to False); the command line is built from these.
    `positive`: a count of at least 1 (the flag refuses another); `key`: how the option reaches the cache
    key (`KEYED`, `IN_REQUEST`, `UNKEYED`), held against every engine by the tests."""
    return field(default=None, metadata={"flag": flag, "help": help, "choices": choices, "positive": positive, "key": key})


def key_of(item: dataclasses.Field[Any]) -> str:
    """How an option's field reaches the cache key (`option`'s `key`): `KEYED` unless its metadata says otherwise."""
    return str(item.metadata.get("key") or KEYED)


def given(options: Any) -> dict[str, Any]:
    """The options an options instance was given (its fields that are not None), by name."""
    return {item.name: getattr(options, item.name) for item in dataclasses.fields(options)
            if getattr(options, item.name) is not None}


def keyed_values(options: Any) -> dict[str, Any]:
    """The `KEYED` options of an options instance that differ from their field's default, by name: what a
    cache key takes of them beside the engine's identity and the request (a default left out, so that the
    keys written before an option existed stay the same)."""
    return {item.name: getattr(options, item.name) for item in dataclasses.fields(options)
            if key_of(item) == KEYED and getattr(options, item.name) != item.default}


def make_options(cls: type[T], values: Mapping[str, Any]) -> T:
    """An instance of options class `cls` from `values` by name (None: not given), each checked as its flag
    checks it: a value among the field's `choices`, a `positive` count at least 1; a `UserError` naming the
    flag otherwise. Where a flag, a config key or a Python keyword becomes an option, it is made here."""
    for item in dataclasses.fields(cls):
        value = values.get(item.name)
        if value is None:
            continue
        choices = item.metadata.get("choices")
        if choices and value not in choices:
            raise UserError(f"{flag_of(cls, item.name)} must be one of {', '.join(choices)}, got {value!r}")
        if item.metadata.get("positive") and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise UserError(f"{flag_of(cls, item.name)} must be at least 1, got {value!r}")
    return cls(**{name: value for name, value in values.items() if value is not None})


def setting(default: Any, flag: str | None = None, help: str = "", *, choices: tuple[str, ...] | None = None,
            positive: bool = False, dest: str | None = None, metavar: str | None = None) -> Any:
    """A setting with a real default (a system's: `systems.settings.GenerationSettings`), its flag beside it
    as for `option()`; the flag's help says the default, read from here, so each default is written once.
    `positive`: a count of at least 1 (checked when the settings are made, and by the flag); `dest`: its
    name in the parsed arguments when that differs (`--generation-cache` sets `cache`)."""
    return field(default=default, metadata={"flag": flag, "help": help, "choices": choices, "positive": positive,
                                             "dest": dest, "metavar": metavar})


def dest_of(item: dataclasses.Field[Any]) -> str:
    """The name a field's flag sets in the parsed arguments (and a config's key): its own, unless its
    metadata names another."""
    return str(item.metadata.get("dest") or item.name)


def flag_type(hint: Any) -> type:
    """The type a flag's words are read as: the first of bool, int, float and str in the field's type."""
    kinds = typing.get_args(hint) or (hint,)
    return next(kind for kind in (bool, int, float, str) if kind in kinds)


def positive_fields(settings: type) -> tuple[str, ...]:
    """The fields of a settings class marked `positive`."""
    return tuple(item.name for item in dataclasses.fields(settings) if item.metadata.get("positive"))


def option_help(options: type, name: str) -> str:
    """The help of option `name` of an options class, as its own flag shows it."""
    return next(str(item.metadata.get("help") or "") for item in dataclasses.fields(options) if item.name == name)


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
class ClientOptions:
    """What every hosted-API engine takes: where, with which key, how many calls at once, how to retry."""

    base_url: str | None = option("--base-url", "the engine's endpoint (default: the provider's API; for openai: "
                                  "$OPENAI_BASE_URL, else OpenAI)")
    api_key: str | None = option("--api-key", "API key (default: $OPENAI_API_KEY, $PERPLEXITY_API_KEY, "
                                 "$GEMINI_API_KEY or $ANTHROPIC_API_KEY, by engine); never written anywhere", key=UNKEYED)
    concurrency: int | None = option("--concurrency", "calls in flight at most (default: 32 for OpenAI, 8 for Perplexity, "
                                     "16 for Gemini and Anthropic, 128 for other endpoints)", positive=True, key=UNKEYED)
    timeout: float | None = option("--timeout", "seconds per call (default 600)", key=UNKEYED)
    rpm: int | None = option("--rpm", "the account's requests per minute for this model, where you know its tier: calls "
                             "are paced under it from the first (default: the limit the provider's answers state)",
                             positive=True, key=UNKEYED)
    tpm: int | None = option("--tpm", "the account's tokens per minute for this model, a call counted as the provider "
                             "counts it: its prompt and its output cap (default: the limit the provider's answers state)",
                             positive=True, key=UNKEYED)
    max_limit_wait: float | None = option("--rate-limit-wait", "seconds one call keeps waiting on the provider's rate "
                                          "limits, from its first refusal, before it fails saying so (default 3600)",
                                          key=UNKEYED)
    max_retries: int | None = option(key=UNKEYED)
    retry_budget: int | None = option(key=UNKEYED)
    backoff_base: float | None = option(key=UNKEYED)
    backoff_max: float | None = option(key=UNKEYED)
    max_retry_wait: float | None = option(key=UNKEYED)
    limit_share: float | None = option(help="the share of the account's limits this engine's calls may use (default 1; "
                                       "each of N workers on Ray gets 1/N)", key=UNKEYED)
    temperature: float | None = option()
    schema_format: bool | None = option()


def _search_context_size() -> Any:
    return option("--search-context-size", "native search: how much of what it found the model reads "
                  "(openai, perplexity; default: the provider's, medium)", choices=SEARCH_CONTEXT_SIZES)


@dataclass(frozen=True)
class OpenAIOptions(ClientOptions):
    """`openai:MODEL`: any OpenAI-compatible endpoint (`backends.providers.openai_backend.OpenAIBackend`)."""

    api: str | None = option(help="auto, chat or responses")
    reasoning_effort: str | None = option("--reasoning-effort", "openai: how hard a reasoning model thinks (default "
                                          "high, as in the paper; checked against what the model's family takes)",
                                          choices=REASONING_EFFORTS)
    reasoning_max_tokens: int | None = option()
    search_context_size: str | None = _search_context_size()
    search_location: str | None = option("--search-location", "openai native search: the user's approximate location, "
                                         "KEY=VALUE pairs of country, region, city, timezone (e.g. country=GB,city=London)")
    search_domains: str | None = option("--search-domains", "openai native search: search only these domains, "
                                        "comma-separated (Responses API)")
    search_external_web_access: bool | None = option("--no-external-web-access", "openai native search: read cached "
                                                     "pages only, fetch nothing live (the web_search tool's "
                                                     "external_web_access: false; Responses API)")
    shutdown_lookup: bool | None = option(help="look up the model's published shutdown date once (default: on OpenAI's API)",
                                          key=UNKEYED)


@dataclass(frozen=True)
class PerplexityOptions(ClientOptions):
    """`perplexity:MODEL`: Perplexity's Agent API (`backends.providers.perplexity.PerplexityBackend`); MODEL is a
    model slug (`perplexity/sonar`, `openai/gpt-5.1`), `preset/NAME` (fast, low, medium, high, xhigh), or a
    retired Sonar name run as its documented substitute (`sonar`, `sonar-reasoning`)."""

    reasoning_effort: str | None = option(help="minimal, low, medium, high or xhigh (the Agent API's reasoning.effort)")
    reasoning_max_tokens: int | None = option(help="output cap of a preset or reasoning model (default: none)")
    search_domain_filter: str | None = option("--search-domain-filter", "perplexity: domains to search, comma-separated; "
                                              "-DOMAIN leaves one out (at most 20)")
    search_recency_filter: str | None = option("--search-recency-filter", "perplexity: only results from the last "
                                               "hour, day, week, month or year",
                                               choices=RECENCY_FILTERS)
    search_context_size: str | None = _search_context_size()


@dataclass(frozen=True)
class GeminiOptions(ClientOptions):
    """`gemini:MODEL`: Google's Gemini API with Google Search (`backends.providers.gemini.GeminiBackend`;
    pip install 'bespoke-eval[gemini]')."""

    reasoning_max_tokens: int | None = option()
    thinking_level: str | None = option("--thinking-level", "gemini 3.x: how much the model thinks (the SDK's "
                                        "ThinkingConfig.thinking_level; default: the model's own)", choices=THINKING_LEVELS)
    thinking_budget: int | None = option("--thinking-budget", "gemini 2.5: thinking tokens at most (the SDK's "
                                         "ThinkingConfig.thinking_budget: 0 off, -1 automatic; default: the model's own)")


@dataclass(frozen=True)
class AnthropicOptions(ClientOptions):
    """`anthropic:MODEL`: Anthropic's Messages API with its server web search tool
    (`backends.providers.anthropic.AnthropicBackend`; pip install 'bespoke-eval[anthropic]')."""

    reasoning_effort: str | None = option("--reasoning-effort", "anthropic: the Messages API's output_config.effort "
                                          "(default: the model's own; a judge's judgments: high where the model takes it)",
                                          choices=ANTHROPIC_EFFORTS)
    search_domains: str | None = option("--search-domains", "anthropic native search: only these domains, "
                                        "comma-separated (the tool's allowed_domains)")
    search_blocked_domains: str | None = option("--search-blocked-domains", "anthropic native search: never these "
                                                "domains, comma-separated (the tool's blocked_domains; not with "
                                                "--search-domains)")
    search_location: str | None = option("--search-location", "anthropic native search: the user's approximate "
                                         "location, KEY=VALUE pairs of country, region, city, timezone")
    search_max_uses: int | None = option("--search-max-uses", "anthropic native search: searches per answer at most "
                                         "(the tool's max_uses; default: as many as the model makes)")
    search_tool: str | None = option("--search-tool", "anthropic native search: the web search tool's version "
                                     "(default web_search_20250305; the later ones filter dynamically)",
                                     choices=WEB_SEARCH_TOOLS)


@dataclass(frozen=True)
class BatchOptions:
    """The provider's Batch API, for engines that offer it (`backends.providers.openai_batch.OpenAIBatchBackend`)."""

    batch: bool | None = option("--batch", "send the calls of openai: and anthropic: models through the provider's Batch "
                                "API (about half price; answers within 24 h; a rerun collects batches already submitted)", key=UNKEYED)
    batch_max_requests: int | None = option("--batch-max-requests", "requests per batch at most (default: the provider's "
                                            "limit, 50000 for OpenAI, 100000 for Anthropic)", key=UNKEYED)
    batch_max_bytes: int | None = option("--batch-max-bytes", "bytes of a batch at most (default: the provider's limit, "
                                         "200 MiB for OpenAI, 256 MB for Anthropic)", key=UNKEYED)
    batch_poll: float | None = option("--batch-poll", "seconds before the first poll of a batch, growing by half each "
                                      "poll up to 60 (default 5)", key=UNKEYED)
    batch_poll_max: float | None = option(help="the longest wait between polls (default 60)", key=UNKEYED)
    batch_retries: int | None = option(help="rounds of resubmitting what a batch failed, before it goes direct (default 1)", key=UNKEYED)
    batch_ledger: str | None = option(help="SQLite file keeping the submitted batches (default: beside the cache)", key=UNKEYED)


@dataclass(frozen=True)
class HFOptions:
    """`hf:MODEL`: batched local generation with transformers (`backends.local.hf_backend.HFBackend`)."""

    batch_size: int | None = option("--batch-size", "prompts per batch (default: adapted to memory)", key=UNKEYED)
    device: str | None = option(key=UNKEYED)
    dtype: str | None = option()
    max_batch_size: int | None = option(key=UNKEYED)
    revision: str | None = option()
    trust_remote_code: bool | None = option(key=UNKEYED)
    grammar: bool | None = option("--no-grammar", "hf judge: write its answers freely, in the paper's lines, instead of "
                                  "JSON held to the schema by xgrammar's grammar (default for a judge: held)")


@dataclass(frozen=True)
class VLLMOptions:
    """`vllm:MODEL`: offline vLLM, every prompt of a run at once (`backends.local.vllm_backend.VLLMBackend`)."""

    tensor_parallel_size: int | None = option("--tensor-parallel-size", "vllm: GPUs each model replica is sharded "
                                              "over (default 1)", key=UNKEYED)
    max_model_len: int | None = option(key=UNKEYED)
    gpu_memory_utilization: float | None = option(key=UNKEYED)
    dtype: str | None = option()
    enable_prefix_caching: bool | None = option(key=UNKEYED)
    enforce_eager: bool | None = option("--enforce-eager", "vllm: run the model without compiling it first (default: "
                                        "on a CPU, where compiling costs minutes at every start; off on a GPU)")
    seed: int | None = option()
    revision: str | None = option()
    trust_remote_code: bool | None = option(key=UNKEYED)


EXECUTORS: tuple[str, ...] = ("local", "ray")
"""Where an engine runs: in this process, or on a Ray cluster."""


@dataclass(frozen=True)
class ExecutorOptions:
    """Where an LLM engine runs: in this process, or on a Ray cluster (`backends.ray.backend.RayBackend`)."""

    executor: str | None = option("--executor", "local: in this process (default); ray: on a Ray cluster "
                                  "(pip install 'bespoke-eval[ray]')", choices=EXECUTORS, key=UNKEYED)
    ray_address: str | None = option("--ray-address", "Ray cluster to join, e.g. auto or HEAD_IP:6379 (default: "
                                     "start a local instance)", key=UNKEYED)
    replicas: int | None = option("--replicas", "engines running at once on Ray: actors, or vLLM replicas (default 1)", key=UNKEYED)
    gpus_per_replica: float | None = option("--gpus-per-replica", "hf on Ray: GPUs per actor (default 1 if this "
                                            "machine has a GPU, else 0)", key=UNKEYED)
    pipeline_parallel_size: int | None = option("--pipeline-parallel-size", "vllm on Ray: pipeline stages per "
                                                "replica, on as many GPUs or nodes (default 1)", key=UNKEYED)



@dataclass(frozen=True)
class InspectOptions:
    """`inspect:ROLE`: the judging protocol over inspect_ai's model for a role (`--model-role ROLE=PROVIDER/MODEL`);
    the model's options are inspect's (`--max-connections`, `-M`), not ours: none here."""
