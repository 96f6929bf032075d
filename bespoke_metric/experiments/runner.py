"""Running a sweep: every cell generated, then every cell's predictions judged in one run, in one process.

The data is loaded once; each model is opened once, used for all its cells and closed after the last;
retrievers are shared; one generation cache and one judge cache serve every cell, so a killed sweep,
run again, asks nothing that was answered and skips the cells it finished. A cell that fails is recorded
with its reason and the others go on.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from bespoke_dataset.atomic import atomic_write_text
from bespoke_dataset.errors import UserError
from bespoke_metric.analysis.leaderboard import Entry
from bespoke_metric.backends.base import Backend
from bespoke_metric.backends.config.shared_options import check_cost_options, check_executor_options
from bespoke_metric.backends.registry import Spec, as_spec, backend_config, build_backend
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.pricing import PriceTable
from bespoke_metric.calls.spending import SpendingLimit
from bespoke_metric.judging.config import JudgeConfig
from bespoke_metric.judging.factory import keeps_answers
from bespoke_metric.results import Results
from bespoke_metric.results.caveats import nothing_scored
from bespoke_metric.results.incomplete import INCOMPLETE, Rerun, lost_line
from bespoke_metric.scoring.pipeline import write_results
from bespoke_metric.systems import GenerationReport, GenerationSettings, Retriever, SystemData, generate, load_system_data
from bespoke_metric.systems.config import MODEL_ENGINE_KEYS, SystemConfig, engine_values, flag_for
from bespoke_metric.systems.context import RETRIEVAL_CONTEXTS
from bespoke_metric.systems.runfiles import canonical_sha256
from bespoke_metric.systems.runs import score_generated
from bespoke_metric.systems.tokens import counted_prompt_tokens

from .config import SweepConfig, SweepConfigError
from .grid import CONTEXT, MODEL, Axis, Cell, cells
from .outputs import DONE, FAILED, PENDING, SweepFolder, is_finished, load_entries, previous_cells, write_sweep
from .table import TableRow, build_table, sweep_title, to_csv, to_markdown

log = logging.getLogger(__name__)

Say = Callable[[str], None]


@dataclass(frozen=True)
class CellPlan:
    """One cell as it will run: its system model and generation settings (as `bespoke run` makes them
    from its flags), and a fingerprint of every setting of the cell and its judge (no key in it), so
    that a cell finished under other settings is not taken for finished."""

    cell: Cell
    model: str
    settings: GenerationSettings
    fingerprint: str
    model_name: str | None = None
    """The name given to its model (`--model-name`), recorded in its run file and results."""
    spec: Spec | None = field(default=None, repr=False, compare=False)
    """Its model's spec, parsed once for the sweep (`plan_sweep`); None: `model` is parsed where it is built."""


@dataclass(frozen=True)
class SweepPlan:
    """A whole sweep: the grid, the judge (its config, what `score_many` takes), the data, the folder."""

    axes: tuple[Axis, ...]
    cells: tuple[CellPlan, ...]
    judge: JudgeConfig = field(repr=False)
    """Made and checked once (`plan_sweep`), handed down as it is; may hold a key: never written anywhere."""
    out: Path
    source: str
    revision: str | None = None
    prices: PriceTable | None = None
    """What the calls cost (`--prices` over the built-in table), for each cell's usage block."""
    spending: SpendingLimit | None = field(default=None, repr=False)
    """The sweep's one spending limit (`--max-cost`), shared by every model of every cell."""

    @property
    def folder(self) -> SweepFolder:
        return SweepFolder(self.out)

    def with_cache_defaults(self) -> "SweepPlan":
        """Every cell's generation calls in one cache, the judge's in another (a judge that calls a model),
        in the folder unless given."""
        judge = self.judge
        if keeps_answers(judge.spec) and judge.cache is None:
            judge = dataclasses.replace(judge, cache=str(self.folder.judge_cache))
        cells = tuple(dataclasses.replace(plan, settings=dataclasses.replace(plan.settings, cache=plan.settings.cache or str(self.folder.generation_cache)))
                      for plan in self.cells)
        return dataclasses.replace(self, cells=cells, judge=judge)


@dataclass
class CellOutcome:
    status: str = PENDING
    reason: str | None = None
    generation: dict[str, Any] = field(default_factory=dict)
    """The cell's generation counts this run: generated, already there, failed, system and profiler calls."""


@dataclass
class SweepOutcome:
    cells: dict[str, CellOutcome]
    rows: list[TableRow]
    sweep: dict[str, Any]
    """The content of `sweep.json`."""
    entries: dict[str, Entry] = field(default_factory=dict)
    """The results of every cell that has some, by cell name."""

    @property
    def failed(self) -> list[str]:
        """Cells that could not do their work (or did not run)."""
        return [name for name, outcome in self.cells.items() if outcome.status not in (DONE, INCOMPLETE)]


def run_sweep(plan: SweepPlan, *, progress: bool = False, say: Say = lambda line: None,
              rerun: Rerun | None = None) -> SweepOutcome:
    """Run every cell of `plan` not finished before, write each cell's files, `sweep.json` and the tables;
    `rerun`, the command that fills the gaps of a cell that lost judgments, goes into its results file and
    `sweep.json`."""
    plan = plan.with_cache_defaults()
    folder = plan.folder
    previous = previous_cells(folder.root)
    outcomes = {cp.cell.name: CellOutcome() for cp in plan.cells}
    for cp in plan.cells:
        if is_finished(folder, cp.cell.name, cp.fingerprint, previous):
            outcomes[cp.cell.name] = CellOutcome(DONE, generation=dict(previous[cp.cell.name].get("generation") or {}))
    todo = [cp for cp in plan.cells if outcomes[cp.cell.name].status != DONE]
    say(f"{len(plan.cells)} cells, {len(plan.cells) - len(todo)} finished before; running {len(todo)}")
    _record(plan, outcomes, {}, [], rerun)
    if todo:
        data = load_system_data(plan.source, plan.revision, contexts=[cp.settings.context for cp in todo])
        reports = _generate_all(todo, folder, data, outcomes, progress, say, lambda: _record(plan, outcomes, {}, [], rerun),
                                plan.spending)
        _score_all([cp for cp in todo if cp.cell.name in reports], reports, plan, outcomes, say, rerun)
    entries = load_entries(folder, [cp.cell for cp in plan.cells])
    rows = build_table([cp.cell for cp in plan.cells], entries, {name: o.status for name, o in outcomes.items()})
    sweep = _record(plan, outcomes, entries, rows, rerun)
    atomic_write_text(folder.table_md, to_markdown(rows, plan.axes, title=sweep_title(sweep)))
    atomic_write_text(folder.table_csv, to_csv(rows, plan.axes))
    return SweepOutcome(outcomes, rows, sweep, entries)


# ------------------------------------------------------------------------------------------ generation

class Models:
    """What the sweep's cells share: each model (spec and options) made on first use (`make`) and closed
    after the last cell that needs it, as system model or as profiler; each retriever; each cache file,
    opened once (`open_cache`)."""

    def __init__(self, plans: Sequence[CellPlan], *, progress: bool, spending: SpendingLimit | None = None,
                 make: Callable[[str | Spec, Mapping[str, Any]], Backend] | None = None,
                 open_cache: Callable[[str], Cache] = Cache):
        self._make = make or (lambda spec, options: build_backend(backend_config(spec, options), spending=spending))
        self._open_cache = open_cache
        self._progress = progress
        self._open: dict[str, Backend] = {}
        self._retrievers: dict[str, Retriever] = {}
        self._caches: dict[str, Cache] = {}
        self._last = {key: index for index, cp in enumerate(plans) for key in self._keys(cp)}

    @staticmethod
    def _key(spec: str | Spec, options: Mapping[str, Any]) -> str:
        return json.dumps([str(spec), dict(options)], sort_keys=True, default=str)

    def _keys(self, cp: CellPlan) -> list[str]:
        keys = [self._key(cp.model, cp.settings.model_options)]
        if isinstance(cp.settings.profiler, str) and cp.settings.profiler != cp.model:
            keys.append(self._key(cp.settings.profiler, cp.settings.profiler_options))
        return keys

    def backend(self, spec: str | Spec, options: Mapping[str, Any]) -> Backend:
        key = self._key(spec, options)
        if key not in self._open:
            self._open[key] = self._make(spec, options)
        return self._open[key]

    def cache(self, path: str) -> Cache:
        if path not in self._caches:
            self._caches[path] = self._open_cache(path)
        return self._caches[path]

    def settings_for(self, cp: CellPlan) -> GenerationSettings:
        """The cell's settings with the shared profiler, retriever and cache in place of their names."""
        settings = dataclasses.replace(cp.settings, cache=self.cache(str(cp.settings.cache)))
        if isinstance(settings.profiler, str) and settings.profiler != cp.model:
            settings = dataclasses.replace(settings, profiler=self.backend(settings.profiler, settings.profiler_options))
        if isinstance(settings.retriever, str) and settings.context in RETRIEVAL_CONTEXTS:
            key = json.dumps([settings.retriever, str(settings.embedding_model), str(settings.embedding_cache_dir)])
            if key not in self._retrievers:
                self._retrievers[key] = settings.open_retriever(progress=self._progress)
            settings = dataclasses.replace(settings, retriever=self._retrievers[key])
        return settings

    def release(self, index: int) -> None:
        """Close the models no cell after `index` needs (their memory goes to the next model, or the judge)."""
        for key, last in self._last.items():
            if last == index and key in self._open:
                self._open.pop(key).close()

    def close(self) -> None:
        for backend in self._open.values():
            backend.close()
        for cache in self._caches.values():
            cache.close()
        self._open.clear()
        self._caches.clear()


def _generate_all(plans: Sequence[CellPlan], folder: SweepFolder, data: SystemData, outcomes: dict[str, CellOutcome],
                  progress: bool, say: Say, checkpoint: Callable[[], Any], spending: SpendingLimit | None) -> dict[str, GenerationReport]:
    """Generate every cell's predictions (`checkpoint` after each); the report of each cell that produced
    predictions, holding them."""
    reports: dict[str, GenerationReport] = {}
    models = Models(plans, progress=progress, spending=spending)
    try:
        for index, cp in enumerate(plans):
            name = cp.cell.name
            outcome = outcomes[name]
            predictions = folder.predictions(name)
            try:
                report = generate(models.backend(cp.spec or cp.model, cp.settings.model_options), predictions, models.settings_for(cp),
                                  data=data, progress=progress, model_name=cp.model_name)
            except (UserError, OSError) as error:  # a user's mistake, or a file: its message says it all
                outcome.status, outcome.reason = FAILED, str(error)
            except Exception as error:  # a bug in one cell: the others still run, and its traceback is logged
                log.exception("cell %s failed", name)
                outcome.status, outcome.reason = FAILED, f"{type(error).__name__}: {error}"
            else:
                outcome.generation = generation_counts(report)
                reports[name] = report
                if report.failed:
                    outcome.status = FAILED
                    outcome.reason = (f"{len(report.failed)} quer(ies) have no prediction (first: {report.failed[0]['reason']}); "
                                      "rerun to retry them")
            finally:
                models.release(index)
            say(_generation_line(name, outcome))
            checkpoint()
    finally:
        models.close()
    return reports


def generation_counts(report: GenerationReport) -> dict[str, Any]:
    """What a cell's generation did, as `sweep.json` records it."""
    return {"generated": report.generated, "already_there": report.already_done, "failed": len(report.failed),
            "system_calls": report.usage.calls, "system_cached": report.usage.cached,
            "profiler_calls": report.profiler_usage.calls, "profiler_cached": report.profiler_usage.cached,
            "wall_seconds": round(report.wall_seconds, 3)}


def _generation_line(name: str, outcome: CellOutcome) -> str:
    counts = outcome.generation
    if not counts:
        return f"cell {name}: failed: {outcome.reason}"
    return (f"cell {name}: {counts['generated']} generated, {counts['already_there']} already there, {counts['failed']} failed; "
            f"system calls {counts['system_calls']} ({counts['system_cached']} cached), "
            f"profiler calls {counts['profiler_calls']} ({counts['profiler_cached']} cached), {counts['wall_seconds']:.1f}s")


# ------------------------------------------------------------------------------------------- scoring

def _score_all(plans: Sequence[CellPlan], reports: Mapping[str, GenerationReport], plan: SweepPlan,
               outcomes: dict[str, CellOutcome], say: Say, rerun: Rerun | None) -> None:
    """Judge every generated cell in one judge run and write each cell's results file (marked `incomplete`,
    with `rerun`, where it lost judgments)."""
    if not plans:
        return
    limits = {cp.settings.limit for cp in plans}
    # each predictions file holds only its cell's first `limit` queries; one limit is passed on as `run` does
    limit = limits.pop() if len(limits) == 1 else None
    say(f"judging {len(plans)} cell(s) with {plan.judge.spec}")
    try:
        all_results = score_generated([reports[cp.cell.name] for cp in plans], plan.judge, source=plan.source,
                                      revision=plan.revision, limit=limit, prices=plan.prices, spending=plan.spending)
    except UserError as error:  # bad predictions, data or judge options; a bug is raised with its traceback
        for cp in plans:
            outcomes[cp.cell.name].status, outcomes[cp.cell.name].reason = FAILED, f"scoring failed: {error}"
        say(f"scoring failed: {error}")
        return
    for cp, results in zip(plans, all_results, strict=True):
        outcome = outcomes[cp.cell.name]
        write_results(results, plan.folder.results(cp.cell.name), rerun=rerun)
        unscored = nothing_scored(results)
        if unscored:
            outcome.status, outcome.reason = FAILED, unscored
        elif outcome.status != FAILED and results.incomplete is not None:
            outcome.status, outcome.reason = INCOMPLETE, lost_line(results.items)
        elif outcome.status != FAILED:
            outcome.status = DONE


# ------------------------------------------------------------------------------------------ sweep.json

def _record(plan: SweepPlan, outcomes: Mapping[str, CellOutcome], entries: Mapping[str, Entry],
            rows: Sequence[TableRow], rerun: Rerun | None) -> dict[str, Any]:
    """Write `sweep.json` as things stand (before the table exists, without figures) and return it: `incomplete`
    names the cells that lost judgments and the command that fills their gaps."""
    by_name = {row.cell.name: row for row in rows}
    first = next(iter(entries.values()), None)
    statuses = {outcome.status for outcome in outcomes.values()}
    lost = [name for name, outcome in outcomes.items() if outcome.status == INCOMPLETE]
    sweep = {
        "status": "running" if not rows else DONE if statuses == {DONE} else INCOMPLETE if statuses <= {DONE, INCOMPLETE} else FAILED,
        **({INCOMPLETE: {"cells": lost, "rerun": rerun.command if rerun else None, "cache": rerun.cache if rerun else None}}
           if lost else {}),
        "grid": {"axes": [{"name": axis.name, "flag": axis.flag, "values": list(axis.values)} for axis in plan.axes],
                 "cells": len(plan.cells)},
        "judge": dict(first.judge) if first is not None else {"spec": str(plan.judge.spec)},
        "data": dict(first.results.data) if first is not None else {"source": plan.source, "revision": plan.revision},
        "cells": [_cell_record(plan, cp, outcomes[cp.cell.name], entries.get(cp.cell.name), by_name.get(cp.cell.name))
                  for cp in plan.cells],
    }
    write_sweep(plan.folder, sweep)
    return sweep


def _cell_record(plan: SweepPlan, cp: CellPlan, outcome: CellOutcome, entry: Entry | None, row: TableRow | None) -> dict[str, Any]:
    record: dict[str, Any] = {"name": cp.cell.name, "values": cp.cell.values, "status": outcome.status}
    if outcome.reason:
        record["reason"] = outcome.reason
    record.update({"fingerprint": cp.fingerprint, "files": plan.folder.cell_files(cp.cell.name), "generation": outcome.generation})
    if row is not None and entry is not None:
        results: Results = entry.results
        record.update({
            "figures": dict(row.values),
            "stderr": results.stderr,
            "ci95": {name: list(ci) if ci else None for name, ci in row.cis.items()},
            "versus_none": row.versus_none,
            "noise_drop_percent": row.noise_drop,
            "items": row.items,
            "failures": row.failures,
            "usage": results.usage,
        })
    return record


# ------------------------------------------------------------------------------------------- from a config

def plan_sweep(config: SweepConfig) -> SweepPlan:
    """The grid and every cell's settings, checked before anything runs: a mistake is a `SweepConfigError`
    naming the cell (when there are several). The model and context axes always; any other setting given
    several values is an axis too."""
    one = {key: value[0] if isinstance(value, (list, tuple)) else value for key, value in config.settings.items()}
    try:
        axes = (Axis(MODEL, "--models", tuple(config.models)), Axis(CONTEXT, "--contexts", tuple(config.contexts)),
                *(Axis(key, flag_for(key), tuple(value)) for key, value in config.settings.items()
                  if isinstance(value, (list, tuple)) and len(value) > 1))
        grid = cells(axes)
    except UserError as error:
        raise SweepConfigError(str(error)) from None
    judge = dataclasses.replace(config.judge, options={**config.shared, **config.judge.options})
    prices = PriceTable.load(config.prices)
    spending = SpendingLimit(config.max_cost, prices, count_prompt=counted_prompt_tokens) if config.max_cost is not None else None
    names = dict(zip(map(str, config.models), config.model_names, strict=True)) if config.model_names else {}  # none: the specs
    plans = []
    taken: set[str] = set()
    parsed: dict[str, Spec] = {}  # each model's spec parsed once, whatever the cells that share it
    for cell in grid:
        values = {**one, **cell.values}
        try:
            if str(values[MODEL]) not in parsed:
                parsed[str(values[MODEL])] = as_spec(values[MODEL])
            specs = [parsed[str(values[MODEL])], as_spec(values["profiler"]) if values.get("profiler") else None, judge.spec]
            check_executor_options(values, specs)
            check_cost_options(values, specs)
            # each model takes the engine options its engine has (--model-base-url the openai: ones, --batch-size hf:)
            system = SystemConfig.from_values({**values, MODEL: specs[0]}, every_engine_option=False)
        except UserError as error:
            where = f"cell {cell.name}: " if len(grid) > 1 else ""
            raise SweepConfigError(f"{where}{error}") from None
        taken.update(system.settings.model_options)
        plans.append(CellPlan(cell, system.model, system.settings, _fingerprint(system, judge, config),
                              names.get(str(cell.values[MODEL])), system.engine.spec))
    unused = [key for key, name in MODEL_ENGINE_KEYS.items() if one.get(key) is not None and name not in taken]
    unused += [name for name in engine_values(one) if name not in MODEL_ENGINE_KEYS.values() and name not in taken]
    if unused:
        models = ", ".join(dict.fromkeys(cp.model for cp in plans))
        raise SweepConfigError(f"{', '.join(flag_for(key) for key in unused)} applies to none of the sweep's models ({models})")
    return SweepPlan(tuple(axes), tuple(plans), judge, Path(config.out),
                     config.source, config.revision, prices=prices, spending=spending)


def _fingerprint(system: SystemConfig, judge: JudgeConfig, config: SweepConfig) -> str:
    """Every setting of a cell (as its `SystemConfig` holds them: a setting given at its default is the setting
    left out) and of its judge; keys left out (never written, not even hashed; a new key gives the same
    answers)."""
    return canonical_sha256({"cell": cell_settings(system), "judge": str(judge.spec), "judge_options": _settings_only(judge.options),
                             "judge_cache": judge.cache, "guards": judge.guards, "source": config.source,
                             "revision": config.revision})


def cell_settings(system: SystemConfig) -> dict[str, Any]:
    """A cell's model and every field of its `GenerationSettings`, defaults filled in; of the engines' and the
    search engine's options (None until given: their engines decide the default), those given."""
    settings = system.settings
    options = ("model_options", "profiler_options", "search_options")
    fields = {item.name: getattr(settings, item.name) for item in dataclasses.fields(settings) if item.name not in options}
    return {"model": system.model, **fields, "search_options": _settings_only(settings.search_options.given()),
            "model_options": _settings_only(settings.model_options), "profiler_options": _settings_only(settings.profiler_options)}


def _settings_only(options: Mapping[str, Any]) -> dict[str, Any]:
    """`options` without the keys (never hashed)."""
    return {name: value for name, value in options.items() if "api_key" not in name}


def sweep(config: SweepConfig, *, progress: bool = False, say: Say = lambda line: None) -> SweepOutcome:
    """Run the sweep `config` describes (`bespoke sweep`'s one library call): every cell not finished before,
    each cell's files, `sweep.json` and the tables in `config.out`."""
    return run_sweep(plan_sweep(config), progress=progress, say=say)
