"""What a sweep would do, told before it does anything: per cell, the queries already predicted, the model
and judge calls it still needs, and how many of those the caches already answer. Nothing is called.

Each unfinished cell runs through the real generation and judging code, in a scratch copy of its files,
with stand-in engines (`ProbeBackend`) that carry the real engines' cache identities but never call: a
call the cache answers is counted as cached, any other is counted as a call to make. A system-model call
the cache does not hold is answered with a placeholder, so that what depends on it (a profile's merge,
the answer written from a profile, the judge calls of that answer) is counted too; those dependents are
counted as calls (their prompts are not known yet). As in the sweep itself, a system-model call an
earlier cell makes is cached for a later one (cells are generated one after another), and a judge call
two cells share is made once (all are judged in one run). No local model is loaded: their identities
are named from their options, as they name themselves.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import CallError, Completion, OnDone, Request
from bespoke_metric.backends.registry import EngineConfig, Spec, backend_config, build_backend
from bespoke_metric.backends.schema import GRAMMAR
from bespoke_metric.calls.cache import Cache, key_for
from bespoke_metric.calls.plan import Planned, ReadOnlyCache
from bespoke_metric.judging.llm_judge import LLMJudge
from bespoke_metric.scoring.pipeline import score_many
from bespoke_metric.systems import SystemData, generate, load_system_data
from bespoke_metric.systems.runfiles import sidecar
from bespoke_metric.systems.search_plan import dry_run_search

from .outputs import is_finished, previous_cells
from .runner import CellPlan, Models, SweepPlan

PLACEHOLDER = ("This text stands in for an answer the system model has not written yet, so that the calls which "
               "depend on it can be counted before any of them is made.")


@dataclass(frozen=True)
class CellEstimate:
    """What one cell still needs."""

    name: str
    finished: bool
    """Finished by an earlier sweep with the same settings: nothing of it runs."""
    queries: int = 0
    predicted: int = 0
    """Queries already in its predictions file."""
    model_calls: int = 0
    """System-model and profiler calls to make (the caches do not hold them)."""
    model_cached: int = 0
    judge_calls: int = 0
    judge_cached: int = 0
    planned: tuple[Planned, ...] = ()
    """The calls themselves, per model, for their input tokens and cost (`calls.plan.estimate`): the
    system model's and a profiler's (their prompts exact where built from the data, a bound where built on
    a profile not written yet), the judge's (a bound: the responses are not written yet)."""
    problem: str | None = None
    """Why the cell would fail before or while it runs (settings that differ from its earlier run, a
    model that is not there), instead of counts."""


class ProbeBackend:
    """An engine that answers nothing for real: it has the identity (so the cache keys) and the constraint (so
    a judge asks what it would ask of that engine) of the engine it stands for (`Named`), and answers each call
    it gets with `answer` marked with the request's digest, or fails it when `answer` is None."""

    one_batch = True
    takes_tools = False
    searches = False

    def __init__(self, spec: Spec, named: "Named", answer: str | None) -> None:
        self.spec = spec
        self.name, self.model = spec.name, spec.model
        self._identity = named.identity
        self.constraint = named.constraint
        self._answer = answer
        self.requests: list[Request] = []
        """Every call it was given (the caches' misses), in order."""

    def identity(self) -> dict[str, Any]:
        return self._identity

    async def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        self.requests.extend(requests)
        for index, request in enumerate(requests):
            if self._answer is None:
                on_done(index, CallError("dry run"))
            else:  # one placeholder per request, as answers differ: what depends on two of them differs too
                on_done(index, Completion(f"{self._answer} ({key_for(self._identity, request)[:12]})", stand_in=True))

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class Named:
    """What an engine says of itself that a stand-in must say the same: its cache identity, and how it holds an
    answer to a schema (`Backend.constraint`: a judge that asked for JSON asks an engine that holds none,
    `schema.LINES`, for the paper's lines)."""

    identity: dict[str, Any]
    constraint: str | None


def engine_identity(config: EngineConfig | str | Spec, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The cache identity of the engine `config` configures (or of the spec with `options` by name; `named_engine`),
    without loading a model."""
    return named_engine(config, options).identity


def named_engine(config: EngineConfig | str | Spec, options: Mapping[str, Any] | None = None) -> Named:
    """The identity and constraint of the engine `config` configures (or of the spec with `options` by name),
    without loading a model: a local `hf:` or `vllm:` engine is named from its options as it names itself (an
    `hf:` model's folder is found first,
    as loading it would: `ModelNotFoundError` when there is none; of a Hub model only its config is
    fetched); other engines (API clients, Ray plans, which load nothing until called) are built and asked."""
    if not isinstance(config, EngineConfig):
        config = backend_config(config, options or {})
    parsed, own = config.spec, config.options
    local = (config.executor.executor or "local") == "local"
    if local and parsed.engine.name == "hf":
        from bespoke_metric.backends.local.hf_backend import default_device, default_dtype, hf_identity
        from bespoke_metric.backends.local.model_files import locate_model_files

        locate_model_files(parsed.model, own.revision, allow_patterns=["config.json"])
        dtype = own.dtype or default_dtype(own.device or default_device())
        grammar = bool(own.grammar)
        return Named(hf_identity(parsed.model, own.revision, dtype, grammar), GRAMMAR if grammar else None)
    if local and parsed.engine.name == "vllm":
        from bespoke_metric.backends.local.vllm_backend import VLLMBackend, default_enforce_eager, engine_args, vllm_identity

        args = engine_args(parsed.model, own)
        eager = default_enforce_eager() if own.enforce_eager is None else own.enforce_eager
        return Named(vllm_identity(parsed.model, own.revision, args["dtype"], eager, args["seed"]), VLLMBackend.constraint)
    backend = build_backend(config)
    try:
        return Named(backend.identity(), backend.constraint)
    finally:
        backend.close()


def probe(spec: str | Spec, options: Mapping[str, Any]) -> ProbeBackend:
    """The stand-in of a system or profiler model of `options` by name (`make_backend`'s): a placeholder for each
    call the cache does not answer."""
    config = backend_config(spec, options)
    return ProbeBackend(config.spec, named_engine(config), PLACEHOLDER)


def dry_run(plan: SweepPlan) -> list[CellEstimate]:
    """One estimate per cell of `plan`; nothing is called and nothing in the sweep's folder changes."""
    plan = plan.with_cache_defaults()
    folder = plan.folder
    previous = previous_cells(folder.root)
    todo = [cp for cp in plan.cells if not is_finished(folder, cp.cell.name, cp.fingerprint, previous)]
    estimates = {cp.cell.name: CellEstimate(cp.cell.name, True) for cp in plan.cells if cp not in todo}
    if todo:
        data = load_system_data(plan.source, plan.revision, contexts=[cp.settings.context for cp in todo])
        judge_cache = ReadOnlyCache.of_file(str(plan.judge.cache or plan.folder.judge_cache))
        judge = _probe_judge(plan, judge_cache)
        models = Models(todo, progress=False, make=probe, open_cache=ReadOnlyCache.of_file)
        try:
            with tempfile.TemporaryDirectory(prefix="bespoke-dry-run-") as scratch:
                for cp in todo:
                    estimates[cp.cell.name] = _estimate(cp, plan, models, judge, judge_cache, data, Path(scratch))
        finally:
            models.close()
            judge_cache.close()
    return [estimates[cp.cell.name] for cp in plan.cells]


def _estimate(cp: CellPlan, plan: SweepPlan, models: Models, judge: LLMJudge | None, judge_cache: ReadOnlyCache,
              data: SystemData, scratch: Path) -> CellEstimate:
    name = cp.cell.name
    predictions = scratch / f"{name}.predictions.jsonl"
    for suffix in (".jsonl", ".run.json", ".profiles.jsonl"):  # the cell's files as they are, to resume from
        source = sidecar(plan.folder.predictions(name), suffix)
        if source.is_file():
            shutil.copyfile(source, sidecar(predictions, suffix))
    try:
        settings = dry_run_search(models.settings_for(cp), str(cp.settings.cache), scratch)
        system = models.backend(cp.spec or cp.model, cp.settings.model_options)
        probes = [backend for backend in dict.fromkeys((system, settings.profiler)) if isinstance(backend, ProbeBackend)]
        asked = {id(probe): len(probe.requests) for probe in probes}
        report = generate(system, predictions, settings, data=data, progress=False)
        planned = [Planned(probe.spec, "system" if probe is system else "profiler", probe.requests[asked[id(probe)]:], 0,
                           response_bound=report.profiler_usage.calls > 0) for probe in probes]
        judge_calls = judge_cached = 0
        if judge is not None and (report.generated or report.already_done):
            missed, cached, judged = set(judge_cache.missed), judge.usage.cached, len(judge.backend.requests)
            score_many([predictions], judge, source=plan.source, revision=plan.revision, limit=cp.settings.limit,
                       guards=plan.judge.guards)
            # every cell is judged in one run, where a call two cells share is made once: counted for the first
            judge_calls, judge_cached = len(judge_cache.missed - missed), judge.usage.cached - cached
            planned.append(Planned(plan.judge.spec, "judge", judge.backend.requests[judged:], judge_cached, response_bound=True))
    except (UserError, OSError) as error:  # a user's mistake, or a file: a bug is raised with its traceback
        return CellEstimate(name, False, problem=str(error))
    return CellEstimate(name, False, queries=report.already_done + report.generated + len(report.failed),
                        predicted=report.already_done,
                        model_calls=report.usage.calls + report.profiler_usage.calls,
                        model_cached=report.usage.cached + report.profiler_usage.cached,
                        judge_calls=judge_calls, judge_cached=judge_cached, planned=tuple(planned))


def _probe_judge(plan: SweepPlan, cache: Cache) -> LLMJudge | None:
    """The sweep's judge with a stand-in engine that fails every call the cache does not answer, its options
    the sweep's `JudgeConfig`'s (its defaults, the effort of its judgments) and its engine named as the real one
    names itself; None for a judge of its own (`embed:`), which makes no calls."""
    config = plan.judge
    parsed = config.spec
    if not parsed.engine.llm:
        return None
    backend = ProbeBackend(parsed, named_engine(config.engine), None)
    return LLMJudge(backend, dataclasses.replace(config.protocol, progress=False), spec=str(parsed), cache=cache)
