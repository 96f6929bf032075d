"""A dry run of generation (`bespoke run --dry-run`): the calls the system model and its profiler would
make, found by running `generate` itself with nothing sent and nothing written.

The run happens in a temporary folder holding a copy of the run's files (predictions, manifest,
profiles), so queries already answered are skipped as in the real run; the cache is read, never written.
Each model is wrapped in a `PlanningBackend` that answers every call with a stand-in as long as its
output cap: a profile or an answer not written yet counts, in the prompts built from it, as much as it
could. The predictions come back (real where they exist, stand-ins elsewhere), for a dry run of judging
them.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_metric.backends.base import Backend
from bespoke_metric.backends.registry import EngineConfig, Spec, as_spec, backend_config, build_backend
from bespoke_metric.calls.plan import Planned, PlanningBackend, ReadOnlyCache, keyless

from .generation import generate
from .runfiles import read_done, sidecar
from .search_plan import dry_run_search
from .settings import GenerationSettings

RUN_FILES = (".run.json", ".profiles.jsonl")
"""The files beside the predictions that a resumed run reads (see `runfiles`)."""


@dataclass
class GenerationPlan:
    planned: list[Planned]
    """The system model's calls (its profiler's too when it is the same model), then a profiler's own."""
    predictions: list[dict[str, Any]]
    """Every query's prediction: the real one where it exists, else a stand-in as long as its cap."""
    stand_ins: int
    """How many of `predictions` are stand-ins (one per answer call the system model would make)."""


def planning_backend(model: str | Spec | EngineConfig, options: Mapping[str, Any]) -> Backend:
    """The backend of `model` (its config, or a spec with `options` by name) as a dry run builds it
    (`calls.plan.keyless`)."""
    return build_backend(keyless(model if isinstance(model, EngineConfig) else backend_config(model, options)))


def plan_generation(
    model: str | Spec | EngineConfig,
    output: str | os.PathLike[str],
    settings: GenerationSettings,
    *,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    revision: str | None = None,
) -> GenerationPlan:
    """The calls `generate(model, output, settings, ...)` would make, without making one or writing
    anything (see the module docstring)."""
    output = Path(output)
    cache_file = Path(settings.cache) if isinstance(settings.cache, (str, os.PathLike)) else sidecar(output, ".cache.sqlite")
    cache = ReadOnlyCache.of_file(cache_file)
    spec = model.spec if isinstance(model, EngineConfig) else as_spec(model)  # parsed once
    system = PlanningBackend(planning_backend(model if isinstance(model, EngineConfig) else spec, settings.model_options), fill=True)
    profiler, profiler_spec = None, None
    if isinstance(settings.profiler, (str, Spec)) and str(settings.profiler) != str(spec):
        profiler_spec = as_spec(settings.profiler)  # parsed once (a `Spec` where the flag entered)
        profiler = PlanningBackend(planning_backend(profiler_spec, settings.profiler_options), fill=True)
    try:
        with tempfile.TemporaryDirectory(prefix="bespoke-dry-run-") as work:
            copy = Path(work) / output.name
            for path, target in [(output, copy), *((sidecar(output, s), sidecar(copy, s)) for s in RUN_FILES)]:
                if path.is_file():
                    shutil.copyfile(path, target)
            planned_settings = dataclasses.replace(dry_run_search(settings, cache_file, Path(work)), cache=cache,
                                                   profiler=profiler or settings.profiler)
            report = generate(system, copy, planned_settings, source=source, revision=revision, progress=False)
            predictions = list(read_done(copy).values())
    finally:
        for backend in (system, profiler):
            if backend is not None:
                backend.close()
        cache.close()
    shared = "profiler" if profiler is None and report.profiler_usage.calls + report.profiler_usage.cached else None
    # answers built on a profile or an expansion not written yet hold its stand-in: their input is a bound
    stand_in_profiles = report.profiler_usage.calls > 0
    planned = [Planned(spec, ", ".join(["system", *([shared] if shared else [])]), system.requests,
                       report.usage.cached + (report.profiler_usage.cached if shared else 0), batch=system.batch,
                       response_bound=stand_in_profiles)]
    if profiler is not None:
        assert profiler_spec is not None
        planned.append(Planned(profiler_spec, "profiler", profiler.requests, report.profiler_usage.cached,
                               batch=profiler.batch))
    return GenerationPlan(planned, predictions, report.usage.calls)  # every answer call got a stand-in
