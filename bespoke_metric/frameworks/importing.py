"""A run made in another framework read back as our results file: an inspect log (`.eval` or `.json`, read
with inspect_ai's own reader) or lm-eval's `--log_samples` output (the `samples_TASK_*.jsonl` file, and the
`results_*.json` beside it for the model's name), so that `leaderboard`, `compare`, `bridge`, `rescore`
and `submit` take runs made there.

Both frameworks keep, per sample, the item exactly as our results file writes one and the judge's
`describe()` block (`ITEM_KEY`, `JUDGE_KEY`: inspect in the score's metadata, lm-eval in the filtered
response, as JSON text); the answers become the predictions written beside the results, as `bespoke run`
keeps them, so `bespoke rescore` judges them again.

A sample's judge block counts who answered its judge session's calls as they stood when it was scored, and names
that session (`SESSION_KEY`): the results file's judge block counts each session once, by the block of it that
counts the most answers (its last, whatever order concurrent samples were logged in), added up over the sessions
of every file joined.
"""

from __future__ import annotations

import json
import os
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bespoke_dataset.atomic import atomic_write_text
from bespoke_dataset.errors import UserError
from bespoke_metric.backends.base import Usage
from bespoke_metric.judging.guards import GuardHit
from bespoke_metric.judging.session import PreparedResponse, prepare_response
from bespoke_metric.results import ItemResult, Results
from bespoke_metric.results.figure_stats import figure_stats
from bespoke_metric.results.incomplete import Rerun
from bespoke_metric.results.served import (
    SESSION_KEY,
    answered_by,
    count_served,
    judge_identity,
    latest_status,
    mark_served,
)
from bespoke_metric.scoring.pipeline import load_benchmark, model_name, results_summary, write_results
from bespoke_metric.scoring.predictions import prediction_record

ITEM_KEY = "bespoke_item"
"""Where a framework keeps a sample's item, as our results file writes one."""
JUDGE_KEY = "bespoke_judge"
"""Where a framework keeps the judge's `describe()` block beside each item."""
CONTEXT_KEY = "bespoke_context"
"""Where an inspect sample's metadata keeps what its system was given (`context_block`, `context_tokens`,
`session_ids`) and whether a stand-in answered (`stand_in`)."""
INSPECT_SUFFIXES = (".eval", ".json")
LM_EVAL_SAMPLES = "samples_"
"""How lm-eval names a task's samples file: `samples_TASK_DATE.jsonl`."""


class ImportRunError(UserError):
    """A file that cannot be read as a framework's run of BESPOKE: the message names it."""


@dataclass(frozen=True)
class FrameworkSample:
    """One judged answer of a framework's run: the raw answer, our item and the judge block, and who answered
    where the framework says (the model that served it, or a stand-in: `bespoke stand-in` marks its answers)."""

    response: str
    item: ItemResult
    judge: dict[str, Any]
    served_model: str | None = None
    stand_in: bool = False

    def prediction(self, context: str | None) -> dict[str, Any]:
        """The answer as `bespoke generate` records it: cleaned for the judge beside the raw text, who wrote it,
        whether it was cut off, and the guard that caught it (an echo of its context: the context is not kept),
        so `bespoke rescore` judges it as the framework did."""
        guard = self.item.guard  # a guard that fired where only the framework knew the context (echo)
        prepared = PreparedResponse(prepare_response(self.response).response,
                                    GuardHit(guard["guard"], guard.get("reason", "")) if guard is not None else None)
        return prediction_record(self.item.user, self.item.query_id, self.response, prepared, context,
                                 served=None if self.stand_in else ({"served_model": self.served_model} if self.served_model else {}),
                                 truncation_reason=(self.item.truncation_reason or "") if self.item.truncated else None)


@dataclass(frozen=True)
class FrameworkRun:
    """What one file of a framework holds: its samples, the benchmark source they answer, the system
    under test as that framework names it (`model`, `context`, `framework`, ...)."""

    path: str
    samples: list[FrameworkSample]
    source: str | None
    system: dict[str, Any]
    judges: dict[str, dict[str, Any]]
    """Per judge session that judged its samples (by `_session_of`), its judge block after its last call seen
    (`_latest_blocks`)."""


@dataclass(frozen=True)
class ImportedRun:
    """A framework's run as ours: the results, and the predictions they judged (as `bespoke generate` writes
    them: `FrameworkSample.prediction`), to be written beside them."""

    results: Results
    predictions: list[dict[str, Any]]


def read_inspect_log(path: str, epoch: int | None = None) -> FrameworkRun:
    """An inspect log of the `bespoke_metric/bespoke` task (inspect_ai's reader: `.eval` or `.json`), each sample
    judged by the latest BESPOKE score it holds (`inspect score` appends a judge's). A query answered in several
    epochs is one answer of a results file: its epochs agree (a deterministic system and judge), or `epoch` picks
    one (each epoch is a run of the system: import each to its own results file to compare them)."""
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(path)
    except Exception as error:  # inspect's reader raises what its format library raises: say it in one line
        first = (str(error).splitlines() or [""])[0]  # pydantic's errors run over lines: the first says what
        raise ImportRunError(f"{path}: not an inspect log that can be read ({type(error).__name__}: {first})") from None
    if not log.samples:
        raise ImportRunError(f"{path}: the log holds no sample (an eval of none, as --limit 0 makes, or one stopped "
                             f"before its first; status {log.status}): there is no answer to import")
    epochs = max(sample.epoch for sample in log.samples)
    if epoch is not None and not 1 <= epoch <= epochs:
        raise ImportRunError(f"{path}: --epoch {epoch}: the log has epochs 1 to {epochs}")
    by_query: dict[str, list[FrameworkSample]] = {}
    blocks: list[dict[str, Any]] = []
    for sample in log.samples:
        score = next((score for score in reversed(list((sample.scores or {}).values()))
                      if isinstance(score.metadata, Mapping) and ITEM_KEY in score.metadata), None)
        if score is None:
            continue  # a sample that errored before it was scored: not an answer judged
        given = (sample.metadata or {}).get(CONTEXT_KEY) or {}
        answer = _sample(path, f"sample {sample.id} (epoch {sample.epoch})", sample.output.completion, score.metadata,
                         served_model=sample.output.model or None, stand_in=bool(given.get("stand_in")))
        blocks.append(answer.judge)  # every epoch's: the epochs share the judge's session and its counts
        if epoch is None or sample.epoch == epoch:
            by_query.setdefault(str(sample.id), []).append(answer)
    if not by_query:
        raise ImportRunError(f"{path}: no sample of this inspect log has a BESPOKE score (each errored before it was "
                             f"judged; status {log.status})")
    samples = [_one_answer(path, query, answers) for query, answers in by_query.items()]
    args = dict(log.eval.task_args or {})
    # the judge's options may hold its key: the judge block says what the judge was, without them
    kept = {name: value for name, value in args.items() if name != "judge_options"}
    system = {"framework": "inspect", "model": log.eval.model, "context": args.get("context", "none"),
              "task": log.eval.task, "task_version": log.eval.task_version, "eval_id": log.eval.eval_id,
              "task_args": _plain(kept), **({"epochs": epochs} if epochs > 1 else {}),
              **({"epoch": epoch} if epoch is not None else {})}
    return FrameworkRun(path, samples, _optional_str(args.get("source")), system, _sessions(path, blocks))


def _one_answer(path: str, query: str, answers: list[FrameworkSample]) -> FrameworkSample:
    """A query's answer across its epochs: the first, where every epoch gave the same answer and judgment; else
    an `ImportRunError` asking for one epoch (a results file counts each query once, as its intervals need)."""
    first = answers[0]
    for other in answers[1:]:
        if (other.response, other.item.scores, other.item.recall) != (first.response, first.item.scores, first.item.recall):
            raise ImportRunError(f"{path}: query {query} was answered or judged differently in its epochs: a results "
                                 "file holds one answer per query; import one epoch (--epoch N), each to its own results file")
    return first


def read_lm_eval_samples(path: str) -> FrameworkRun:
    """lm-eval's samples file of one `bespoke_*` task (`--log_samples`); the model's name from the
    `results_*.json` lm-eval wrote beside it, where there is one."""
    samples = []
    docs: list[Mapping[str, Any]] = []
    for number, line in enumerate(_lines(path), start=1):
        try:
            record = json.loads(line)
            filtered = json.loads(record["filtered_resps"][0])
            raw = record["resps"][0][0]
            docs.append(record["doc"])
        except (json.JSONDecodeError, KeyError, IndexError, TypeError) as error:
            raise ImportRunError(f"{path}: line {number} is not a sample lm-eval logged "
                                 f"({type(error).__name__}: {error})") from None
        if not isinstance(filtered, Mapping) or ITEM_KEY not in filtered:
            raise ImportRunError(f"{path}: line {number} is not a sample of a bespoke_* task (its filtered response "
                                 "holds no BESPOKE item)")
        samples.append(_sample(path, f"line {number}", raw, filtered))
    if not samples:
        raise ImportRunError(f"{path}: no samples in it")
    doc = docs[0]
    task = Path(path).name.removeprefix(LM_EVAL_SAMPLES).rsplit("_", 1)[0]
    system = {"framework": "lm-eval", "model": _lm_eval_model(Path(path).parent), "context": doc.get("context"),
              "task": task}
    return FrameworkRun(path, samples, _optional_str(doc.get("source")), system,
                        _sessions(path, (sample.judge for sample in samples)))


def read_framework_run(path: str | os.PathLike[str], epoch: int | None = None) -> FrameworkRun:
    """Whichever framework wrote `path`: lm-eval's samples (`.jsonl`), else an inspect log (`epoch`: which of its
    epochs, `read_inspect_log`)."""
    given = os.fspath(path)
    if not os.path.exists(given):
        raise ImportRunError(f"{given}: no such file")
    if os.path.isdir(given):
        raise ImportRunError(f"{given}: a folder; give the inspect log (.eval, .json) or lm-eval's samples_*.jsonl in it")
    if given.endswith(".jsonl"):
        if epoch is not None:
            raise ImportRunError(f"{given}: --epoch is an inspect log's; lm-eval's samples have no epochs")
        return read_lm_eval_samples(given)
    if given.endswith(INSPECT_SUFFIXES):
        if given.endswith(".json") and Path(given).name.startswith("results_"):
            raise ImportRunError(f"{given}: lm-eval's results file holds no answers; give the samples_*.jsonl file "
                                 "written beside it (--log_samples)")
        return read_inspect_log(given, epoch)
    raise ImportRunError(f"{given}: neither an inspect log (.eval, .json) nor lm-eval's samples (.jsonl)")


def import_runs(paths: Sequence[str | os.PathLike[str]], *, source: str | None = None,
                revision: str | None = None, epoch: int | None = None) -> ImportedRun:
    """One results file from the runs in `paths` (one system's answers, judged by one judge: a run split over
    several logs is joined); `source` (at `revision`) is the benchmark data where the run's own is not found
    from here; `epoch`, the epoch of inspect logs run over several. The benchmark is read for the `data` block and
    to check every item answers one of its queries."""
    if not paths:
        raise ImportRunError("no file to import")
    runs = [read_framework_run(path, epoch) for path in paths]
    first = runs[0]
    _same_judge(runs)
    for run in runs[1:]:
        _same(first, run, "system", lambda r: (r.system.get("framework"), r.system.get("model"), r.system.get("context")))
        _same(first, run, "data", lambda r: r.source)
    given_source = source or first.source
    if given_source is None:
        raise ImportRunError(f"{first.path}: it does not say which benchmark data it answers: give --source")
    try:
        benchmark, data = load_benchmark(given_source, revision)
    except UserError as error:
        raise ImportRunError(f"{first.path}: its data {given_source!r} cannot be read from here ({error}); "
                             "give --source") from None
    for run in runs:
        unknown = [sample.item.key for sample in run.samples if sample.item.key not in benchmark]
        if unknown:
            raise ImportRunError(f"{run.path}: {len(unknown)} answer(s) to queries not in {given_source} "
                                 f"(first {unknown[0]}): give the --source the run was made on")
    order = {key: index for index, key in enumerate(benchmark)}
    # in the benchmark's order, as `bespoke score` keeps generate's predictions (inspect logs its samples by id)
    samples = sorted((sample for run in runs for sample in run.samples), key=lambda sample: order[sample.item.key])
    items = [sample.item for sample in samples]
    system = {**first.system, "name": f"{first.system.get('model')} ({first.system.get('context')})",
              "imported_from": [os.fspath(path) for path in paths]}
    summary = results_summary(items, benchmark_queries=len(benchmark), judge_truncated=0)
    # a session that wrote blocks into several files (a run split, a log retried) is counted once
    sessions = _latest_blocks(session for run in runs for session in run.judges.items())
    results = Results(summary=summary, **figure_stats(items), items=items, judge=_judge_block(list(sessions.values())),
                      data=data, usage={"imported": system["framework"]}, system=system, model_name=model_name(system))
    mark_served(results, count_served(sample.served_model or "" for sample in samples if not sample.stand_in), None,
                sum(sample.stand_in for sample in samples))
    return ImportedRun(results, [sample.prediction(system.get("context")) for sample in samples])


def write_imported(run: ImportedRun, output: str | os.PathLike[str], predictions: str | os.PathLike[str]) -> None:
    """Write the predictions, then the results file recording where they are (`system.predictions`), each
    atomically: a failure leaves no results file pointing at predictions that are not there. A run that lost
    judgments is marked so, with the command that judges its answers again (`rejudging`)."""
    atomic_write_text(predictions, "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in run.predictions))
    run.results.system = {**(run.results.system or {}), "predictions": os.fspath(predictions)}
    write_results(run.results, output, rerun=rejudging(run.results, output))


def rejudging(results: Results, output: str | os.PathLike[str]) -> Rerun:
    """What fills the gaps of an imported run written to `output`: `bespoke rescore` of its answers with its judge,
    beside it, from the run's judge cache."""
    out = Path(output).with_name(f"{Path(output).stem}-rejudged")
    command = shlex.join(["bespoke", "rescore", os.fspath(output), "--judge", str(results.judge.get("spec")), "--out",
                          os.fspath(out)])
    return Rerun(command, None, framework=str((results.system or {}).get("framework") or "another framework"))


def _sample(path: str, where: str, response: Any, carried: Mapping[str, Any], **answered: Any) -> FrameworkSample:
    try:
        item = ItemResult.from_json(carried[ITEM_KEY])
        judge = dict(carried[JUDGE_KEY])
    except (KeyError, TypeError, ValueError) as error:
        raise ImportRunError(f"{path}: {where} holds no BESPOKE item and judge ({type(error).__name__}: {error})") from None
    return FrameworkSample(str(response or ""), item, judge, **answered)


def _session_of(path: str, block: Mapping[str, Any]) -> str:
    """The judge session that wrote `block`: the one it names, else (a block written before sessions were named)
    the file's, one session per file."""
    named = block.get(SESSION_KEY)
    return str(named) if named else f"{path} (no {SESSION_KEY} named)"


def _answers(block: Mapping[str, Any]) -> int:
    """How many answers a judge block counts (by a model or a stand-in): it only grows within a session."""
    return sum((block.get("served_models") or {}).values()) + int(block.get("stand_in") or 0)


def _latest_blocks(blocks: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per session, of its `(session, block)` pairs, the block counting the most answers: its latest, since samples
    judged at once write their blocks in no set order."""
    latest: dict[str, dict[str, Any]] = {}
    for session, block in blocks:
        if session not in latest or _answers(block) > _answers(latest[session]):
            latest[session] = dict(block)
    return latest


def _sessions(path: str, blocks: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The latest judge block of each session among the blocks of the file `path`'s samples."""
    return _latest_blocks((_session_of(path, block), block) for block in blocks)


def _judge_block(sessions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The judge block of a results file judged in `sessions` (of one judge: `_same_judge`): the judge, and who
    answered the calls of every session (their counts added up, the latest model status said)."""
    served: Counter[str] = Counter()
    for block in sessions:
        served.update(block.get("served_models") or {})
    usage = Usage(served_models=dict(served), model_status=latest_status(block.get("model_status") for block in sessions) or {},
                  stand_in=sum(int(block.get("stand_in") or 0) for block in sessions))
    return {**judge_identity(sessions[-1]), **answered_by(usage)}


def _same_judge(runs: Sequence[FrameworkRun]) -> None:
    """Refuse runs judged by more than one judge (`judge_identity`, as the leaderboard compares results), naming
    the fields that differ."""
    first = runs[0]
    expected = judge_identity(next(iter(first.judges.values())))
    for run in runs:
        for block in run.judges.values():
            other = judge_identity(block)
            if other != expected:
                fields = ", ".join(f"{name}: {_shown(other, name)} vs {_shown(expected, name)}"
                                   for name in sorted(expected.keys() | other.keys())
                                   if name not in expected or name not in other or expected[name] != other[name])
                than = f"{first.path}'s" if run is not first else "its other samples'"
                raise ImportRunError(f"{run.path}: another judge than {than} ({fields}): "
                                     "import each run to its own results file")


def _shown(block: Mapping[str, Any], name: str) -> str:
    return repr(block[name]) if name in block else "absent"


def _same(first: FrameworkRun, other: FrameworkRun, what: str, key: Any) -> None:
    if key(first) != key(other):
        raise ImportRunError(f"{other.path}: another {what} than {first.path}'s ({key(other)} vs {key(first)}): "
                             "import each run to its own results file")


def _lines(path: str) -> Iterable[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            yield from (line for line in handle if line.strip())
    except OSError as error:
        raise ImportRunError(f"{path}: cannot be read ({error.strerror or type(error).__name__})") from None
    except UnicodeDecodeError:
        raise ImportRunError(f"{path}: not a text file, so not lm-eval's samples") from None


def _lm_eval_model(folder: Path) -> str | None:
    """The model as lm-eval's results file beside the samples names it (`model_name`, else `--model`)."""
    for results in sorted(folder.glob("results_*.json"), reverse=True):
        try:
            content = json.loads(results.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        name = content.get("model_name") or (content.get("config") or {}).get("model")
        if name:
            return str(name)
    return None


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _plain(value: Any) -> Any:
    """A task argument as JSON keeps it (inspect logs hold JSON already; a path becomes its text)."""
    return json.loads(json.dumps(value, default=str))
