"""Ranking systems from results files, honestly.

- Results are grouped by everything that makes scores comparable: the judge block (spec, protocol
  version, engine settings, ablation flags), the model that served the judge when it was not the one
  asked for, and the data (fingerprint, else source and revision). Systems are ranked only within a
  group, never across.
- Each row shows the model that served the system (`system.served_models`); a system served by another
  model than the one asked for is labelled with it, so it is never ranked as the model it replaced. Answers
  cut off at the output limit are counted per row.
- Proxy-judge results (`embed:`) are refused unless explicitly allowed; so are incomplete results (a run that
  lost judgments: `results.incomplete`), whose rows are then marked.
- Every number carries a bootstrap 95% interval over queries; `compare` tests two systems per metric on
  the queries they share (paired bootstrap or permutation).
- `push_to_hub` publishes a results file in the layout leaderboards read: `results/{system}/{date}.json`.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from huggingface_hub import HfApi

from bespoke_dataset.errors import UserError
from bespoke_dataset.vocabulary import DIMENSION_LABELS
from bespoke_metric.results import Results, stats
from bespoke_metric.results.caveats import STAND_IN_MARK, SYNTHETIC_MARK, is_synthetic, judge_marks, nothing_scored
from bespoke_metric.results.figure_stats import figure_matrix, mean_of_figures
from bespoke_metric.results.file_kinds import not_results, read_json
from bespoke_metric.results.incomplete import ALLOW_INCOMPLETE, INCOMPLETE_MARK
from bespoke_metric.results.labels import system_label
from bespoke_metric.results.metrics import METRIC_NAMES
from bespoke_metric.results.served import asked_model, judge_identity, mismatched

COLUMNS: tuple[str, ...] = METRIC_NAMES + ("average",)
"""The five benchmark numbers and their mean, the columns of every leaderboard."""

LABELS: dict[str, str] = {**DIMENSION_LABELS, "recall": "Recall", "average": "Average"}
"""Column headings."""

_REQUIRED = ("summary", "items", "judge", "data")


class LeaderboardError(UserError):
    """A results file that cannot be ranked (malformed, proxy judge, incomparable pair)."""


@dataclass(frozen=True)
class Entry:
    """One results file entered in the leaderboard: where it came from, the system it scores, its results."""

    path: str
    system: str
    results: Results

    @property
    def judge(self) -> Mapping[str, Any]:
        return self.results.judge

    @property
    def proxy(self) -> bool:
        return self.results.proxy

    @property
    def stand_in(self) -> bool:
        """Whether a stand-in (a rule, a test server) made some of the judge's or the system's answers."""
        return bool(self.judge.get("stand_in") or (self.results.system or {}).get("stand_in"))

    @property
    def queries(self) -> list[str]:
        """The queries scored, as sorted `user/query_id` keys."""
        return sorted(item.key for item in self.results.items)

    @property
    def judge_key(self) -> str:
        """Canonical JSON of what must be equal for two results to be compared: the judge (`judge_identity`; and
        the other models that served it in place of the one asked for, and whether a stand-in answered it) and the data."""
        data = self.results.data
        data_id = {"fingerprint": data["fingerprint"]} if data.get("fingerprint") else {"source": data.get("source"), "revision": data.get("revision")}
        return json.dumps({"judge": judge_identity(self.judge), "served_instead": judge_served_instead(self.judge),
                           "stand_in": bool(self.judge.get("stand_in")), "data": data_id},
                          sort_keys=True, default=str)

    @property
    def group_key(self) -> str:
        """What must be equal for two results to be ranked together: judge, data, and the set of queries
        scored (a `--limit` run is not ranked against a full one; `compare` pairs shared queries instead)."""
        return self.judge_key + hashlib.sha256("\n".join(self.queries).encode()).hexdigest()


def judge_served_instead(judge: Mapping[str, Any]) -> list[str]:
    """The models that served a judge's calls in place of the one asked for (sorted), none when all were it."""
    return sorted(mismatched(asked_model(judge), judge.get("served_models") or {}))


def system_name(results: Mapping[str, Any], path: str) -> str:
    """The system's display name: from its `system` block (`system_label`), else the file name."""
    return system_label(results.get("system") or {}) or os.path.splitext(os.path.basename(path))[0]


def parse_results(results: Mapping[str, Any], path: str) -> Entry:
    """Check the shape of a results file's content; errors name the file and the missing part."""
    missing = [key for key in _REQUIRED if key not in results]
    if missing:
        raise LeaderboardError(f"{path}: not a BESPOKE results file (missing {', '.join(missing)})")
    if "spec" not in results["judge"]:
        raise LeaderboardError(f"{path}: the judge block has no 'spec'")
    if "meta_eval" in results:
        raise LeaderboardError(f"{path}: a meta-evaluation of a judge, not a system's results")
    for index, item in enumerate(results["items"]):
        if not {"user", "query_id", "scores"} <= set(item):
            raise LeaderboardError(f"{path}: item {index} lacks user, query_id or scores")
    try:
        typed = Results.from_json(results)
        figure_matrix(typed.items)
    except (KeyError, TypeError, ValueError) as error:
        raise LeaderboardError(f"{path}: {error}") from None
    unscored = nothing_scored(typed)
    if unscored:
        raise LeaderboardError(f"{path}: {unscored}; there is nothing to rank (rescore it once the judge works)")
    return Entry(path, system_name(results, path), typed)


def load_results(paths: Sequence[str | os.PathLike[str]]) -> list[Entry]:
    """Read results files; a file that is not JSON or not a results file is an error naming it."""
    return [parse_results(read_json(os.fspath(path), LeaderboardError), os.fspath(path)) for path in paths]


@dataclass(frozen=True)
class Gathered:
    """The results files among the files given (each once), and a note for each file left out."""

    entries: list[Entry]
    notes: list[str]


def gather_results(paths: Sequence[str | os.PathLike[str]]) -> Gathered:
    """The results files among `paths` (files, such as a glob's `results/*.json`, or folders: every `*.json`
    under a folder, its runs' companion folders included), each ranked once: a file given twice, or a copy of one given already, counts once. A file that is evidently
    not a results file (`not_results`) is left out with a note; one that is meant to be a results file but
    is malformed, or scored nothing, is still an error naming it."""
    entries: list[Entry] = []
    notes: list[str] = []
    seen: dict[str, str] = {}  # real path, then content digest -> the path it was first given as
    for path in _json_files(paths):
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen[real] = path
        content = read_json(path, LeaderboardError)
        reason = not_results(content, path)
        if reason is not None:
            notes.append(f"note: skipped {path}: {reason}")
            continue
        digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
        if digest in seen:
            notes.append(f"note: {path} is a copy of {seen[digest]}: ranked once")
            continue
        seen[digest] = path
        entries.append(parse_results(content, path))
    return Gathered(entries, notes)


def _json_files(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """`paths` with each folder replaced by the `*.json` files under it, in order."""
    files: list[str] = []
    for path in map(os.fspath, paths):
        folder = Path(path)
        files.extend(sorted(os.fspath(file) for file in folder.rglob("*.json") if file.is_file()) if folder.is_dir() else [path])
    return files


PROXY_REFUSAL = "proxy-judge results are not leaderboard material"
"""How every refusal of proxy results begins (`bespoke leaderboard`, `submit`, `space leaderboard`, the Space)."""


def proxy_refusal(results: Sequence[Entry], *, stand_ins: bool = False) -> str | None:
    """The one rule of what a leaderboard ranks only when told to (`--allow-proxy`): results of a proxy judge
    (`embed:`, a rule) and, where results are published (`stand_ins`: a submission, a Space), results a
    stand-in answered; None when there are none, else the refusal naming each file."""
    refused = [r for r in results if r.proxy or (stand_ins and r.stand_in)]
    if not refused:
        return None
    named = ", ".join(f"{r.path} ({r.judge['spec']}{'' if r.proxy else f', answered by a {STAND_IN_MARK}'})" for r in refused)
    return f"{PROXY_REFUSAL}: {named}. They are for quick checks and training loops; give --allow-proxy to show them anyway."


def refuse_proxy(results: Sequence[Entry], allow_proxy: bool, *, stand_ins: bool = False) -> None:
    refusal = None if allow_proxy else proxy_refusal(results, stand_ins=stand_ins)
    if refusal is not None:
        raise LeaderboardError(refusal)


INCOMPLETE_REFUSAL = "incomplete results are not leaderboard material"
"""How every refusal of incomplete results begins (`bespoke leaderboard`, `submit`, `space leaderboard`, the Space)."""


def incomplete_refusal(results: Sequence[Entry]) -> str | None:
    """The one rule of what a leaderboard, a submission and a Space take only when told to (`--allow-incomplete`):
    results of a run that lost judgments or answers (`results.incomplete`); None when there are none, else the
    refusal naming each file and what it lost. Not the command that fills the gaps: a Space shows its refusals
    to everyone, and the command names the run's files and endpoint."""
    refused = [(entry, entry.results.incomplete) for entry in results if entry.results.incomplete is not None]
    if not refused:
        return None
    named = ", ".join(f"{entry.path} (lost {lost.lost})" for entry, lost in refused)
    return (f"{INCOMPLETE_REFUSAL}: {named}; the command that wrote each, run again, fills the gaps (its file's "
            f"incomplete.rerun); or give {ALLOW_INCOMPLETE} to show them marked {INCOMPLETE_MARK}.")


def refuse_incomplete(results: Sequence[Entry], allow_incomplete: bool) -> None:
    refusal = None if allow_incomplete else incomplete_refusal(results)
    if refusal is not None:
        raise LeaderboardError(refusal)


def _value(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


@dataclass
class Row:
    """One system in a leaderboard group."""

    entry: Entry
    values: dict[str, float | None]
    cis: dict[str, tuple[float, float] | None]
    rank: int = 0

    @property
    def system(self) -> str:
        """The system's name; marked `INCOMPLETE` with what its run lost (judgments, answers: shown only when
        allowed), with the model that served it when that is not the one asked for, and with the answers
        written without their profile or rewrite (degenerate: its context label does not hold for them)."""
        instead = self.served_instead
        lost = self.entry.results.incomplete
        marks = [f"{INCOMPLETE_MARK}: lost {lost.lost}"] if lost is not None else []
        marks += [f"served by {', '.join(sorted(instead))}"] * bool(instead)
        degenerate = (self.entry.results.system or {}).get("degenerate") or {}
        marks += [f"{count} of {self.items} without their {part}" for part, count in sorted(degenerate.items())]
        return self.entry.system + "".join(f" [{mark}]" for mark in marks)

    @property
    def items(self) -> int:
        return len(self.entry.results.items)

    @property
    def failures(self) -> int:
        return int(sum(self.entry.results.summary.get("failures", {}).values()))

    @property
    def guarded(self) -> int:
        """Responses a guard caught (lowest scores, no judge call)."""
        return sum(1 for item in self.entry.results.items if item.guard is not None)

    @property
    def queries(self) -> int:
        return len(set(self.entry.queries))

    @property
    def truncated(self) -> int:
        """Responses cut off at the output limit (scored as given)."""
        return sum(1 for item in self.entry.results.items if item.truncated)

    @property
    def served_models(self) -> dict[str, int]:
        """`{model: predictions}` as the provider named the model that wrote them (empty where not said)."""
        return dict((self.entry.results.system or {}).get("served_models") or {})

    @property
    def served_instead(self) -> dict[str, int]:
        """The served models that are not the system's model asked for."""
        return mismatched(asked_model(self.entry.results.system), self.served_models)

    @property
    def served(self) -> str:
        """The models that served the system, most answers first (`gpt-5-2025-08-07`), `STAND-IN` for
        answers a stand-in wrote, or `not said`."""
        stand_in = int((self.entry.results.system or {}).get("stand_in") or 0)
        ranked = sorted({**self.served_models, **({STAND_IN_MARK: stand_in} if stand_in else {})}.items(),
                        key=lambda pair: (-pair[1], pair[0]))
        return ", ".join(name if len(ranked) == 1 else f"{name} ({count})" for name, count in ranked) or "not said"

    @property
    def benchmark_queries(self) -> int | None:
        """The benchmark's number of queries, as the results file records it (None in older files)."""
        return self.entry.results.summary.get("benchmark_queries")

    @property
    def coverage(self) -> str:
        """`5 of 150`: the queries scored, of the benchmark's (the count alone where the file does not say)."""
        total = self.benchmark_queries
        return str(self.queries) if total is None else f"{self.queries} of {total}"

    def counts(self) -> dict[str, str]:
        """The count columns every rendering of a row shows (`COUNTS`)."""
        return {"Items": str(self.items), "Queries": self.coverage, "Guarded": str(self.guarded),
                "Failures": str(self.failures), "Cut off": str(self.truncated), "Served by": self.served}


COUNTS: tuple[str, ...] = ("Items", "Queries", "Guarded", "Failures", "Cut off", "Served by")
"""The count columns of a leaderboard row: items scored, queries covered of the benchmark's, responses a
guard caught, failed judgments, responses cut off at the output limit, and the model(s) that served the system."""


def system_row(entry: Entry, *, n_resamples: int = stats.DEFAULT_RESAMPLES, seed: int = 0) -> Row:
    """The five numbers and the average, each with a percentile bootstrap 95% CI over queries."""
    matrix = figure_matrix(entry.results.items)
    columns = [matrix[:, j] for j in range(matrix.shape[1])]
    values: dict[str, float | None] = {}
    cis: dict[str, tuple[float, float] | None] = {}
    for metric, column in zip(METRIC_NAMES, columns, strict=True):
        values[metric] = _value(stats.rowwise_nanmean(column[None, :])[0]) if len(column) else None
        cis[metric] = stats.bootstrap_ci(stats.rowwise_nanmean, column, n_resamples=n_resamples, seed=seed)
    five = [values[m] for m in METRIC_NAMES]
    values["average"] = None if any(v is None for v in five) else float(np.mean(five))
    cis["average"] = stats.bootstrap_ci(mean_of_figures, *columns, n_resamples=n_resamples, seed=seed) if values["average"] is not None else None
    return Row(entry, values, cis)


@dataclass
class Group:
    """Systems scored by the same judge on the same data: the only ones ranked together."""

    judge: Mapping[str, Any]
    data: Mapping[str, Any]
    queries: int
    rows: list[Row] = field(default_factory=list)

    @property
    def title(self) -> str:
        protocol = self.judge.get("protocol_version", "?")
        revision = self.data.get("revision") or "local"
        fingerprint = (self.data.get("fingerprint") or "")[:12]
        proxy = "".join(f" · {mark}" for mark in judge_marks(self.judge))
        instead = judge_served_instead(self.judge)
        served = f" · judge SERVED BY {', '.join(instead)}" if instead else ""
        synthetic = f" · {SYNTHETIC_MARK}" if is_synthetic(self.data) else ""
        covered = self.rows[0].coverage if self.rows else str(self.queries)  # rows of a group share their queries
        return (f"judge {self.judge['spec']} (protocol {protocol}){proxy}{served} · data {self.data.get('source')}@{revision} "
                f"{fingerprint}{synthetic} · {covered} queries")

    @property
    def settings(self) -> str:
        """The judge's settings besides spec and protocol, as `k=v` pairs."""
        # base_url: where the judge was reached (a private host, a local port) is no setting of the judge's,
        # and a leaderboard or Space is read by others
        skip = {"spec", "protocol_version", "proxy", "served_models", "stand_in", "base_url"}
        return ", ".join(f"{k}={v}" for k, v in sorted(self.judge.items()) if k not in skip)


def build_leaderboard(
    results: Sequence[Entry], *, allow_proxy: bool = False, allow_incomplete: bool = False,
    n_resamples: int = stats.DEFAULT_RESAMPLES, seed: int = 0
) -> list[Group]:
    """Group comparable results and rank each group by average (systems without one go last); proxy and
    incomplete results only when allowed."""
    refuse_proxy(results, allow_proxy)
    refuse_incomplete(results, allow_incomplete)
    groups: dict[str, Group] = {}
    for result in results:
        group = groups.setdefault(result.group_key, Group(result.judge, result.results.data, len(result.queries)))
        group.rows.append(system_row(result, n_resamples=n_resamples, seed=seed))
    for group in groups.values():
        group.rows.sort(key=lambda row: (row.values["average"] is None, -(row.values["average"] or 0.0), row.system))
        for rank, row in enumerate(group.rows, start=1):
            row.rank = rank
    return list(groups.values())


# ----------------------------------------------------------------------------------------------- compare

def per_query(entry: Entry) -> dict[str, np.ndarray]:
    """`{"user/query_id": the item's six numbers}`: five metrics (0-100, NaN if failed) and their mean."""
    matrix = figure_matrix(entry.results.items)
    averages = matrix.mean(axis=1)  # NaN unless all five were scored
    return {item.key: np.append(row, avg)
            for item, row, avg in zip(entry.results.items, matrix, averages, strict=True)}


def compare(
    a: Entry, b: Entry, *, method: str = "permutation", n_resamples: int = stats.PAIRED_RESAMPLES, seed: int = 0
) -> dict[str, Any]:
    """Is system `a` better than `b`? A paired test per metric on the queries both scored.

    `difference` is mean(a) - mean(b) on the 0-100 scale over the shared queries where both have that
    metric; `average` uses queries where both have all five. Results by different judges or on
    different data are refused: their difference would measure the judges, not the systems.
    """
    if method not in stats.PAIRED_TESTS:
        raise ValueError(f"method must be one of {', '.join(stats.PAIRED_TESTS)}, got {method!r}")
    if a.judge_key != b.judge_key:
        raise LeaderboardError(f"{a.path} and {b.path} were not scored by the same judge on the same data; they cannot be compared")
    qa, qb = per_query(a), per_query(b)
    shared = sorted(set(qa) & set(qb))
    if not shared:
        raise LeaderboardError(f"{a.path} and {b.path} share no query")
    va = np.array([qa[key] for key in shared])
    vb = np.array([qb[key] for key in shared])
    test = stats.PAIRED_TESTS[method]
    metrics: dict[str, Any] = {}
    for j, metric in enumerate(COLUMNS):
        both = ~np.isnan(va[:, j]) & ~np.isnan(vb[:, j])
        if not both.any():
            metrics[metric] = {"n": 0, "a": None, "b": None, "difference": None, "ci": None, "p_value": None, "differing": 0}
            continue
        result = test(va[both, j], vb[both, j], n_resamples=n_resamples, seed=seed)
        metrics[metric] = {"a": float(va[both, j].mean()), "b": float(vb[both, j].mean()), **result.to_dict(),
                           "differing": int(np.count_nonzero(va[both, j] != vb[both, j]))}
    return {
        "a": {"system": a.system, "path": a.path},
        "b": {"system": b.system, "path": b.path},
        "method": method,
        "shared_queries": len(shared),
        "only_a": len(set(qa) - set(qb)),
        "only_b": len(set(qb) - set(qa)),
        "metrics": metrics,
    }


def format_comparison(comparison: Mapping[str, Any], alpha: float = 0.05) -> str:
    """A plain-text table of a `compare` result; `*` marks p < alpha."""
    a, b = comparison["a"]["system"], comparison["b"]["system"]
    lines = [f"A = {a}", f"B = {b}",
             f"{comparison['shared_queries']} shared queries ({comparison['only_a']} only in A, {comparison['only_b']} only in B); "
             f"paired {comparison['method']} test",
             f"{'metric':<20}{'n':>5}{'A':>9}{'B':>9}{'A-B':>9}  {'95% CI':<18}{'p':>8}"]
    for metric, m in comparison["metrics"].items():
        if m["difference"] is None:
            lines.append(f"{metric:<20}{0:>5}{'n/a':>9}")
            continue
        ci = f"[{m['ci'][0]:+.2f}, {m['ci'][1]:+.2f}]" if m["ci"] else ""
        mark = " *" if m["p_value"] < alpha else ""
        lines.append(f"{metric:<20}{m['n']:>5}{m['a']:>9.2f}{m['b']:>9.2f}{m['difference']:>+9.2f}  {ci:<18}{m['p_value']:>8.4f}{mark}")
    lines.append(f"* p < {alpha}; " + _SOURCES[comparison["method"]])
    lines += [note for metric, m in comparison["metrics"].items()
              if (note := disagreement(metric, m, comparison["method"], alpha)) is not None]
    return "\n".join(lines)


def disagreement(metric: str, m: Mapping[str, Any], method: str, alpha: float) -> str | None:
    """A `note:` line when a metric's 95% interval and its p-value say different things (the interval
    excludes 0 and p >= alpha, or the reverse), saying why, and which to read; None when they agree."""
    if m["difference"] is None or not m["ci"]:
        return None
    excludes_zero = m["ci"][0] > 0 or m["ci"][1] < 0
    if excludes_zero == (m["p_value"] < alpha):
        return None
    said = (f"the 95% interval excludes 0 but p = {m['p_value']:.3g}" if excludes_zero
            else f"p = {m['p_value']:.3g} < {alpha} but the 95% interval includes 0")
    k, n = m["differing"], m["n"]
    floor = 2.0 ** (1 - k) if k else 1.0  # a sign-flip test over k differences: at best 2 of its 2**k sign patterns
    cannot = (f", and a sign-flip test over {k} differences gives p of {floor:.3g} at best (2 of their {2 ** k} sign patterns)"
              if method == "permutation" and floor >= alpha else "")
    return (f"note: {metric}: {said}, the two tests parting near the threshold; {k} of the {n} shared queries "
            f"differ{cannot}: take the difference as not shown at p < {alpha} (more queries would settle it)")


_SOURCES = {
    "permutation": "p from the paired permutation test (signs flipped), the 95% CI from the paired bootstrap "
                   "(queries resampled): two tests, which near the threshold may disagree",
    "bootstrap": "p and the 95% CI both from the paired bootstrap (queries resampled)",
}
"""Which test each column of `format_comparison` comes from, by method."""


# ----------------------------------------------------------------------------------------------- the Hub

def hub_path(results: Entry) -> str:
    """`results/{system}/{date}.json`, the system name made path-safe (`org/model` -> `org__model`)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", results.system.replace("/", "__")).strip("_") or "system"
    created = results.results.created
    date = created[:10] if re.match(r"\d{4}-\d{2}-\d{2}", created) else _dt.date.today().isoformat()
    return f"results/{safe}/{date}.json"


def push_to_hub(
    results_path: str | os.PathLike[str],
    repo: str,
    *,
    token: str | None = None,
    allow_proxy: bool = False,
    allow_incomplete: bool = False,
    private: bool = False,
) -> str:
    """Upload a results file to the Hub dataset repo `repo` (created if needed) at `hub_path`.

    Proxy-judge results are refused unless `allow_proxy`, incomplete ones unless `allow_incomplete`. Returns
    the path inside the repo."""
    [results] = load_results([results_path])
    refuse_proxy([results], allow_proxy)
    refuse_incomplete([results], allow_incomplete)
    api = HfApi(token=token)
    api.create_repo(repo, repo_type="dataset", exist_ok=True, private=private)
    path_in_repo = hub_path(results)
    api.upload_file(
        path_or_fileobj=os.fspath(results_path),
        path_in_repo=path_in_repo,
        repo_id=repo,
        repo_type="dataset",
        commit_message=f"Add BESPOKE results of {results.system} ({results.judge['spec']})",
    )
    return path_in_repo
