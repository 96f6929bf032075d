"""The system under test: answer every BESPOKE query with any model, under a user-context configuration.

    generate("hf:Qwen/Qwen3-8B", "preds.jsonl", GenerationSettings(context="selected-profile"))

For each query it assembles what the system is given (`context.build_contexts`: nothing, raw history,
retrieved sessions, a profile written by the profiler model, or the gold need) and asks the system model
through the scheduler, searching as the settings say (`search`: an engine under a policy, the model's
own search, or none). Each prediction keeps the answer as it came (`response_raw`), the answer the judge
scores (`response`: without reasoning, citation markers and URLs) and what was searched (`search`).
Everything a run produces sits beside the predictions (`runfiles`), and a killed run resumes where it
stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bespoke_dataset
from bespoke_dataset import DEFAULT_SOURCE, resolve_source
from bespoke_dataset.atomic import atomic_write_text
from bespoke_metric.backends.base import Backend, Usage, backend_description
from bespoke_metric.backends.registry import ENGINES, EngineConfig, Spec, as_spec, backend_config, build_backend, engine_of, substitution
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.pricing import ModelUse, backend_use
from bespoke_metric.calls.progress import ProgressBar
from bespoke_metric.calls.spending import SpendingLimit
from bespoke_metric.judging.session import prepare_response
from bespoke_metric.results.served import StrictError, asked_model, mismatch_warning
from bespoke_metric.scoring.predictions import prediction_record

from .context import CONTEXTS, HISTORY_CONTEXTS, PROFILE_CONTEXTS, RETRIEVAL_CONTEXTS, UserContext, build_contexts, row_key
from .profiler import LLMProfiler, expand_queries
from .prompts import GENERATION_PROMPT_VERSION
from .retrieval import Retriever
from .runfiles import (
    GenerationError,
    ProfileStore,
    append_predictions,
    canonical_sha256,
    check_resume,
    degenerate_counts,
    read_done,
    record_outcomes,
    sidecar,
)
from .search.base import NATIVE, NONE, SearchEngine
from .search.cache import SearchCache
from .search.policies import Answered, SearchPlan, answer_all
from .search_plan import describe_search, make_plan, open_engine
from .settings import GenerationSettings
from .tokens import TokenCounter, token_counter

DEFAULT_WRITE_EVERY = 64
TRUNCATION_REASON = "length"
"""A cut-off answer's `truncation_reason` where the engine gives none (a local model that reached
`--max-new-tokens`): the word OpenAI-compatible servers use."""

Rows = Sequence[Mapping[str, Any]]


@dataclass
class GenerationReport:
    output: Path
    system: dict[str, Any]
    """The `system` block of a results file."""
    generated: int = 0
    already_done: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    """`{"user", "query_id", "reason"}` for each query left without a prediction."""
    usage: Usage = field(default_factory=Usage)
    """System-model calls."""
    profiler_usage: Usage = field(default_factory=Usage)
    """Profile and expansion calls."""
    uses: list[ModelUse] = field(default_factory=list)
    """The calls of each model backend (the system model, a profiler of its own), for a results file's
    `usage.models`."""
    truncated: int = 0
    """Predictions of this run whose answer the output limit cut off (`truncated: true` in them)."""
    wall_seconds: float = 0.0
    degenerate: dict[str, int] = field(default_factory=dict)
    """Predictions of this run whose profile or rewrite was degenerate (by part: `profile`, `rewrite`), each
    marked in its `degenerate` field; the system answered without it."""
    fallbacks: int = 0
    """Rewrites that fell back to searching the question (`search.fallback` in the prediction)."""
    unsearched: int = 0
    """Agent answers written with no search at all."""
    tools_offered: bool = False
    """The agent was offered the `search` tool (else the plain-text protocol)."""
    predictions: list[dict[str, Any]] = field(default_factory=list)
    """Every prediction record of `output` once the run ends, in the file's order (an earlier run's, then
    this run's): what `bespoke_metric.systems.runs` judges, without reading the file again."""

    @property
    def served_warning(self) -> str | None:
        """The `warning:` line when the system model's calls were served by another model than asked for."""
        asked = asked_model(self.system)
        return mismatch_warning("system", asked, self.usage.served_models) if asked else None


def generate(
    model: str | Spec | EngineConfig | Backend,
    output: str | os.PathLike[str],
    settings: GenerationSettings | None = None,
    *,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    revision: str | None = None,
    queries: Rows | None = None,
    histories: Rows | None = None,
    data: SystemData | None = None,
    progress: bool = True,
    strict: bool = False,
    model_name: str | None = None,
    spending: SpendingLimit | None = None,
) -> GenerationReport:
    """Generate predictions for every query into the JSONL file `output`, resuming what is there.

    Args:
        model: the system under test, a spec (`hf:MODEL`, `vllm:MODEL`, `openai:MODEL`), its `EngineConfig`
            (`SystemConfig.engine`: then `settings.model_options` are not read) or a backend.
        settings: context configuration, profiler, retriever, search, budgets and limits (`GenerationSettings`).
        source, revision: the data (`queries` and `histories` configs); or pass `queries` (rows with
            user, query_id, query, gold_information_need) and `histories` directly, or `data` loaded
            once for several runs (`load_system_data`, as a sweep does): the run records the same.
        strict: raise `StrictError` before writing a prediction whose answer was cut off or whose calls
            were served by another model than asked for (`bespoke_metric.results.served`).
        model_name: the system's name in tables and results (`model_name` in the run file), in place of its
            model's spec; a resume may change it, as it changes no answer.
        spending: the command's spending limit (`--max-cost`), shared by every model of the run: the system
            model and the profiler made here are admitted against it (a backend given is the caller's).

    Raises `GenerationError` when `output` holds predictions made under other settings or from other
    data, and `ModelNotFoundError` (before anything is loaded or written) when the tokenizer or the
    retriever's embedding model is not available; `ModelUnavailableError` when the provider no longer
    serves a model. The predictions file and its run file are written with the first predictions, so a
    new run that stops before any (a retired model, `strict`) leaves nothing behind. Every profile and expansion is stored without the
    model's reasoning block, and every answer both as it came (`response_raw`) and as the judge scores it
    (`response`: without reasoning, citation markers and URLs); one whose reasoning never closed counts
    as failed. Queries that could
    not be answered are listed in the report's `failed`; a rerun retries them.
    """
    started = time.perf_counter()
    settings = settings or GenerationSettings()
    output = Path(output)
    parts = _find_parts(model, settings, progress)
    rows, histories, data = _load_data(settings, source, revision, queries, histories, data)
    with contextlib.ExitStack() as stack:
        _open_models(parts, model, settings, _cache_path(settings, output), stack, spending)
        system = {
            "model": _describe_backend(str(parts.spec), parts.system_backend),
            "context": settings.context,
            "profiler": _describe_backend(str(parts.profiler_spec), parts.profiler_backend) if parts.profiler_backend is not None else None,
            "retriever": parts.retriever.describe() if parts.retriever is not None else None,
            "search": describe_search(parts.search, parts.search_engine, settings),
            "settings": {**settings.record(), "token_counter": parts.counter.name, "generation_prompt_version": GENERATION_PROMPT_VERSION},
            "data": data,
        }
        substituted = substitution(parts.spec)
        if substituted is not None:
            system["substitution"] = substituted
        manifest = sidecar(output, ".run.json")
        check_resume(output, manifest, system)
        done = read_done(output)
        named = {**system, "model_name": model_name} if model_name else system
        writer = _Writer(output, manifest, named, strict)
        report = GenerationReport(output, named, already_done=sum(row_key(row) in done for row in rows),
                                  predictions=list(done.values()))
        pending = [row for row in rows if row_key(row) not in done]
        if pending:
            # a given cache object is used as it is (a dry run's reads without writing)
            cache = stack.enter_context(Cache(_cache_path(settings, output))) if _names_a_file(settings.cache) else settings.cache
            # Covers models, settings and data: profiles of another configuration or other data are not reused.
            store = ProfileStore(sidecar(output, ".profiles.jsonl"), canonical_sha256(system)[:16])
            searches = None
            if parts.search_engine is not None:  # by default in the generation cache's file: one file replays a run
                searches = stack.enter_context(SearchCache(settings.search_cache or _cache_path(settings, output)))
            plan = make_plan(settings, parts.search, parts.search_engine, searches)
            _generate_pending(pending, histories, parts, plan, settings, cache, store, report, writer, progress)
        writer.write(report, [])  # the files exist even when no query could be asked
        record_outcomes(manifest, named, report.predictions)
        report.uses = _uses(parts, report)
    report.wall_seconds = time.perf_counter() - started
    return report


@dataclass
class _Parts:
    """What a run works with: found first (in seconds, naming what is missing), its models opened last."""

    spec: Spec | str
    """The system model's spec: parsed once (`_spec`); a backend of no registered engine by its names."""
    counter: TokenCounter
    profiler: str | Spec | Backend | None
    """The profiler model as given when it is not the system model; None when it is, or when none is needed."""
    profiler_spec: Spec | str | None
    """None when the context configuration needs no profiler."""
    profile_counter: TokenCounter
    retriever: Retriever | None
    search: str
    """`none`, `native`, or the spec of `search_engine`."""
    search_engine: SearchEngine | None
    system_backend: Backend = field(init=False)
    profiler_backend: Backend | None = field(init=False, default=None)


def _find_parts(model: str | Spec | EngineConfig | Backend, settings: GenerationSettings, progress: bool) -> _Parts:
    """The run's counters, retriever and search engine. What can be missing (a tokenizer, an embedding
    model, a search folder, a search API's key) is a one-sentence error here, before the data or any
    model is loaded."""
    spec = _spec(model)
    uses_profiler = settings.context in PROFILE_CONTEXTS or settings.expand != "none"
    same = settings.profiler is None or settings.profiler is model or (
        isinstance(settings.profiler, (str, Spec)) and str(settings.profiler) == str(spec))
    profiler = settings.profiler if uses_profiler and not same else None
    profiler_spec = (spec if profiler is None else _spec(profiler)) if uses_profiler else None
    counter = token_counter(spec, tokenizer=settings.tokenizer)
    profile_counter = token_counter(profiler_spec) if profiler is not None else counter
    retriever = settings.open_retriever(progress) if settings.context in RETRIEVAL_CONTEXTS else None
    search, engine = open_engine(settings, _search_default(spec))
    return _Parts(spec, counter, profiler, profiler_spec, profile_counter, retriever, search, engine)


def _search_default(spec: Spec | str) -> str:
    """The search of a model whose run names none: its engine's own (`native` for an engine that always
    searches)."""
    engine = engine_of(spec)
    return engine.search_default if engine is not None else NONE


def _names_a_file(cache: Any) -> bool:
    return cache is None or isinstance(cache, (str, os.PathLike))


def _cache_path(settings: GenerationSettings, output: Path) -> Path:
    """Where the run's answers are cached: the file `settings.cache` names (or the cache object's), else
    beside the predictions."""
    if not _names_a_file(settings.cache):
        return Path(getattr(settings.cache, "path", sidecar(output, ".cache.sqlite")))
    return Path(settings.cache or sidecar(output, ".cache.sqlite"))


def _open_models(parts: _Parts, model: str | Spec | EngineConfig | Backend, settings: GenerationSettings, cache: Path,
                 stack: contextlib.ExitStack, spending: SpendingLimit | None) -> None:
    if parts.search_engine is not None:
        stack.callback(parts.search_engine.close)
    parts.system_backend = _open_backend(parts.spec if isinstance(model, str) else model, settings.model_options, cache, stack, spending)
    if parts.search == NATIVE and not parts.system_backend.searches:
        raise GenerationError(f"--search native: {parts.spec} cannot search by itself (its {parts.system_backend.name} "
                              "engine has no web search); give it a search engine instead (--search searxng:URL, tavily, ...)")
    if parts.profiler_spec is not None:
        parts.profiler_backend = parts.system_backend if parts.profiler is None else _open_backend(
            parts.profiler if not isinstance(parts.profiler, str) else parts.profiler_spec, settings.profiler_options, cache, stack, spending)


def _generate_pending(
    pending: Rows, histories: Rows, parts: _Parts, plan: SearchPlan, settings: GenerationSettings, cache: Cache,
    store: ProfileStore, report: GenerationReport, writer: "_Writer", progress: bool,
) -> None:
    """Expand, select, profile and answer the queries not yet predicted; failures go to `report.failed`."""
    failures: dict[str, str] = {}
    retrieval_queries = None
    if settings.expand != "none":
        assert parts.profiler_backend is not None
        retrieval_queries, failures = expand_queries(
            pending, settings.expand, parts.profiler_backend, store, cache=cache,
            max_tokens=settings.expansion_max_tokens, usage=report.profiler_usage, progress=progress,
        )
        pending = [row for row in pending if row_key(row) not in failures]
    llm_profiler = None
    if settings.context in PROFILE_CONTEXTS:
        assert parts.profiler_backend is not None
        llm_profiler = LLMProfiler(parts.profiler_backend, store, cache=cache, max_tokens=settings.profile_max_tokens, usage=report.profiler_usage, progress=progress)
    contexts = build_contexts(
        pending, settings.context, histories, parts.counter, settings=settings, retriever=parts.retriever,
        profiler=llm_profiler, profile_counter=parts.profile_counter, retrieval_queries=retrieval_queries,
    )
    degenerate: dict[str, dict[str, Any]] = {}
    if llm_profiler is not None:
        for row, context in zip(pending, contexts, strict=True):
            task_key = str(row["user"]) if settings.context == "profile" else context.key
            if task_key in llm_profiler.failed:
                failures[context.key] = llm_profiler.failed[task_key]
            if task_key in llm_profiler.degenerate:
                degenerate[context.key] = {"profile": llm_profiler.degenerate[task_key]}
    report.failed = [{"user": key.partition("/")[0], "query_id": key.partition("/")[2], "reason": reason} for key, reason in failures.items()]
    jobs = [(row, context) for row, context in zip(pending, contexts, strict=True) if context.key not in failures]
    _answer(jobs, parts.system_backend, plan, parts.counter, settings, cache, report, writer, progress, degenerate)


def _uses(parts: _Parts, report: GenerationReport) -> list[ModelUse]:
    system, profiler = parts.system_backend, parts.profiler_backend
    if profiler is None or profiler is system:  # one backend: its batch count covers both parts
        roles = ["system", *(["profiler"] if profiler is system else [])]
        return [backend_use(system, str(parts.spec), roles, [report.usage, report.profiler_usage])]
    assert parts.profiler_spec is not None
    return [backend_use(system, str(parts.spec), ["system"], [report.usage]),
            backend_use(profiler, str(parts.profiler_spec), ["profiler"], [report.profiler_usage])]


def _spec(model: str | Spec | EngineConfig | Backend) -> Spec | str:
    """The spec of `model`, parsed once here (a string) or already (a `Spec`, an `EngineConfig`); a backend given
    as an object is named by its engine and model, not parsed from a string (one of no registered engine by
    its names)."""
    if isinstance(model, EngineConfig):
        return model.spec
    if isinstance(model, (str, Spec)):
        return as_spec(model)
    engine = ENGINES.get(model.name)
    return Spec(engine, str(model.model)) if engine is not None else f"{model.name}:{model.model}"


def _open_backend(model: Spec | EngineConfig | Backend, options: Mapping[str, Any], cache: Path,
                  stack: contextlib.ExitStack, spending: SpendingLimit | None) -> Backend:
    """A backend made here (from its `EngineConfig`, or a spec with its options by name), admitted against
    `spending`, is closed when `stack` unwinds; a given one is the caller's to close. A `batch=True` model
    keeps its batches beside the run's cache."""
    if not isinstance(model, (Spec, EngineConfig)):
        return model
    config = (model if isinstance(model, EngineConfig) else backend_config(model, options)).ledger_beside(cache)
    backend = build_backend(config, spending=spending)
    stack.callback(backend.close)
    return backend


def _describe_backend(spec: str, backend: Backend) -> dict[str, Any]:
    return {"spec": spec, "backend": backend_description(backend)}


@dataclass(frozen=True)
class SystemData:
    """What systems answer from, loaded once for several runs: the query rows, the history sessions
    (empty when not loaded) and the source's record (`source`, `revision`, content `fingerprint`)."""

    queries: list[Mapping[str, Any]]
    histories: list[Mapping[str, Any]]
    record: dict[str, Any]


def load_system_data(source: str | os.PathLike[str] = DEFAULT_SOURCE, revision: str | None = None, *,
                     contexts: Sequence[str] = CONTEXTS) -> SystemData:
    """The `queries` config of a source and, if any of `contexts` reads history, its `histories`
    config, resolved and fingerprinted once."""
    resolved = resolve_source(source, revision)
    return SystemData(list(bespoke_dataset.load("queries", source=resolved)),
                      list(bespoke_dataset.load("histories", source=resolved)) if any(context in HISTORY_CONTEXTS for context in contexts) else [],
                      resolved.record())


def _load_data(
    settings: GenerationSettings, source: str | os.PathLike[str], revision: str | None, queries: Rows | None,
    histories: Rows | None, loaded: SystemData | None = None,
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]], dict[str, Any]]:
    """(query rows, history sessions, the `data` block), from `loaded`, else loaded from `source` where
    not given.

    The `data` block records what the predictions are made from: the source's record (`source`,
    `revision`, content `fingerprint`) when anything is loaded from it, and the SHA-256 of the rows given
    directly (`queries_sha256`, `histories_sha256`). History given but not used is not recorded."""
    needs_history = settings.context in HISTORY_CONTEXTS
    if loaded is not None:
        return list(loaded.queries[: settings.limit]), list(loaded.histories) if needs_history else [], dict(loaded.record)
    data: dict[str, Any] = {}
    if queries is None or (histories is None and needs_history):
        resolved = resolve_source(source, revision)  # resolved and fingerprinted once, for every load
        data.update(resolved.record())
    if queries is None:
        queries = list(bespoke_dataset.load("queries", source=resolved))
    else:
        queries = list(queries)
        data["queries_sha256"] = canonical_sha256([dict(row) for row in queries])
    if not needs_history:
        histories = []
    elif histories is None:
        histories = list(bespoke_dataset.load("histories", source=resolved))
    else:
        histories = list(histories)
        data["histories_sha256"] = canonical_sha256([dict(row) for row in histories])
    return list(queries[: settings.limit]), list(histories), data


def _group_size(settings: GenerationSettings, backend: Backend, plan: SearchPlan, jobs: int) -> int:
    if settings.write_every is not None:
        return settings.write_every
    # An engine that schedules best seeing every prompt at once (vLLM) gets them, and so does a policy of
    # dependent rounds (each round is one batch, whatever its size); others write as they go.
    rounds = plan.searcher is not None and plan.policy != "query"
    return max(1, jobs) if backend.one_batch or rounds else DEFAULT_WRITE_EVERY


def _answer(
    jobs: Sequence[tuple[Mapping[str, Any], UserContext]],
    backend: Backend,
    plan: SearchPlan,
    counter: TokenCounter,
    settings: GenerationSettings,
    cache: Cache,
    report: GenerationReport,
    writer: "_Writer",
    progress: bool,
    degenerate: Mapping[str, Mapping[str, Any]],
) -> None:
    """Ask the system model, searching as `plan` says, a group of queries at a time, appending each
    group's predictions. `degenerate`: the profile marks by query key, for the predictions."""
    size = _group_size(settings, backend, plan, len(jobs))
    report.tools_offered = bool(getattr(backend, "takes_tools", False))
    with ProgressBar(len(jobs), desc=f"generating ({settings.context})", disable=not progress) as bar:
        for start in range(0, len(jobs), size):
            group = jobs[start : start + size]
            answered = answer_all([(str(row["query"]), context.text) for row, context in group], plan, backend, counter=counter,
                                  cache=cache, usage=report.usage, max_tokens=settings.max_new_tokens, progress=bar)
            records = []
            for (_, context), outcome in zip(group, answered, strict=True):
                record = _prediction(context, outcome, plan, backend.model, degenerate.get(context.key, {}))
                if isinstance(record, str):
                    report.failed.append({"user": context.user, "query_id": context.query_id, "reason": record})
                else:
                    records.append(record)
                    _count(record, plan, report)
            writer.write(report, records)
            report.predictions.extend(records)
            report.generated += len(records)
            report.truncated += sum(1 for record in records if record.get("truncated"))


@dataclass
class _Writer:
    """Appends a run's predictions, writing its run file with the first ones; under `strict`, refuses
    (`StrictError`) a group holding an answer cut off, or written while the system model's calls were
    served by another model, before any of it is written."""

    output: Path
    manifest: Path
    system: dict[str, Any]
    strict: bool
    begun: bool = False

    def write(self, report: GenerationReport, records: Sequence[Mapping[str, Any]]) -> None:
        if self.strict:
            cut = sum(1 for record in records if record.get("truncated"))
            if cut:
                raise StrictError(f"{cut} of {len(records)} answers were cut off at the output limit (--strict; raise "
                                  f"--max-new-tokens); {len(records)} predictions not written to {self.output}")
            if report.served_warning:
                raise StrictError(f"{report.served_warning.removeprefix('warning: ')}; predictions not written to "
                                  f"{self.output}")
        if not self.begun:
            atomic_write_text(self.manifest, json.dumps(self.system, indent=2, ensure_ascii=False) + "\n")
            self.begun = True
        append_predictions(self.output, records)


def _count(record: Mapping[str, Any], plan: SearchPlan, report: GenerationReport) -> None:
    """What the run's summary says of one prediction: degenerate parts, fallbacks, answers without search."""
    for part, count in degenerate_counts([record]).items():
        report.degenerate[part] = report.degenerate.get(part, 0) + count
    search = record.get("search") or {}
    report.fallbacks += bool(search.get("fallback"))
    report.unsearched += plan.searcher is not None and plan.policy == "agent" and not search.get("calls")


def _prediction(context: UserContext, outcome: Answered, plan: SearchPlan, model: str,
                profile_mark: Mapping[str, Any]) -> dict[str, Any] | str:
    """The prediction record of one answered query, or why it has none: with the model that served its
    answer (the provider's word for it, else `model`, the one asked for: a local model is the one loaded),
    its `system_fingerprint`, `service_tier` and `model_status` where given (`stand_in` instead of the model
    where a stand-in wrote it), and, where the output limit cut it off, `truncated` and why; `guard` where the
    answer echoes the context it was given (`check_context_echo`). `profile_mark`: `{"profile": hit}` when its
    profile was degenerate."""
    if outcome.error is not None or not outcome.raw:
        return outcome.error or "the model returned an empty answer"
    # A stand-in's answer (a dry run's placeholder, made like the placeholder profile in its context) says
    # nothing of whether the system would echo its context: no echo is recorded, so a dry run counts its judge calls.
    stand_in = outcome.completion is not None and outcome.completion.stand_in
    prepared = prepare_response(outcome.raw, context.text, stand_in)
    if not prepared.response:
        return "the answer is empty once its reasoning, citations and URLs are left out"
    given: dict[str, Any] = {"context_tokens": context.tokens, "session_ids": list(context.session_ids)}
    if plan.engine != NONE:
        given["search"] = outcome.search
    completion = outcome.completion
    served: dict[str, Any] | None = None  # served by no model: a stand-in wrote it
    if not stand_in:
        served = {"served_model": (completion.served_model if completion is not None else "") or model}
        for name in ("system_fingerprint", "service_tier", "model_status"):  # where the provider gives them
            if completion is not None and getattr(completion, name):
                served[name] = getattr(completion, name)
    truncation = (completion.truncation_reason or TRUNCATION_REASON) if completion is not None and completion.truncated else None
    marks = {**profile_mark, **({"rewrite": outcome.degenerate} if outcome.degenerate else {})}
    return prediction_record(context.user, context.query_id, outcome.raw, prepared, context.kind, given=given,
                             served=served, truncation_reason=truncation, degenerate=marks)
