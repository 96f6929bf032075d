"""Moving a leaderboard to a new judge: how the ranking moved when the same predictions were judged again.

`bespoke rescore` judges the predictions behind each results file with a new judge; `bridge` pairs each
system's two results files (same predictions, old judge and new) and reports:

- Kendall's tau-b between the two rankings (by average), with a bootstrap interval over queries: the
  queries are resampled once for every system and both judges, so the interval is of the ranking, not of
  one system's figure;
- each system's shift per metric (new - old, paired over the queries both judged) with its interval;
- every pair of systems whose order flips, and whether that order was significant under either judge
  (a paired test on the average, as `compare` runs it).

Everything here is pure: entries in (`analysis.leaderboard.Entry`), a JSON-ready dict out.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from bespoke_metric.analysis.leaderboard import COLUMNS, LABELS, Entry, LeaderboardError, compare, per_query
from bespoke_metric.results import stats
from bespoke_metric.results.caveats import marks
from bespoke_metric.scoring.rescore import find_predictions


@dataclass(frozen=True)
class Pair:
    """One system's two results files: judged by the old judge and by the new one."""

    name: str
    old: Entry
    new: Entry


def pairing_key(entry: Entry) -> str:
    """What makes two results files the same system's: the predictions they judged (`system.predictions`,
    which `bespoke rescore` keeps, found as rescore finds it), else the system's name."""
    system = entry.results.system or {}
    predictions = system.get("predictions")
    if not predictions:
        return f"system:{entry.system}"
    found = find_predictions(entry.path, {"system": system})
    return f"predictions:{os.path.normpath(os.path.abspath(found if found is not None else str(predictions)))}"


def pair_results(old: Sequence[Entry], new: Sequence[Entry]) -> list[Pair]:
    """Pair each old results file with the new one of the same system; a system on one side only, or twice
    on a side, is a `LeaderboardError` naming the files. Each side must be one judge on one data."""
    sides: list[dict[str, Entry]] = []
    for label, entries in (("old", old), ("new", new)):
        if not entries:
            raise LeaderboardError(f"no {label} results files given")
        judges = {entry.judge_key for entry in entries}
        if len(judges) > 1:
            specs = sorted({str(entry.judge["spec"]) for entry in entries})
            raise LeaderboardError(f"the {label} results were not all scored by one judge on one data "
                                   f"({', '.join(specs)}): a bridge moves one leaderboard to one new judge")
        keyed: dict[str, Entry] = {}
        for entry in entries:
            key = pairing_key(entry)
            if key in keyed:
                raise LeaderboardError(f"{keyed[key].path} and {entry.path} are the same system ({entry.system}) "
                                       f"among the {label} results")
            keyed[key] = entry
        sides.append(keyed)
    old_keyed, new_keyed = sides
    alone = [entry.path for key, entry in {**old_keyed, **new_keyed}.items() if (key in old_keyed) != (key in new_keyed)]
    if alone:
        raise LeaderboardError(f"no partner for {', '.join(sorted(alone))}: each system needs its results under both "
                               "judges, from the same predictions (bespoke rescore RESULTS --judge NEW --out DIR)")
    if len(old_keyed) < 2:
        raise LeaderboardError("a bridge needs at least two systems: a ranking of one cannot move")
    return sorted((Pair(old_keyed[key].system, old_keyed[key], new_keyed[key]) for key in old_keyed),
                  key=lambda pair: pair.name)


def rowwise_kendall(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between the columns' orders, row by row: `(B, S)` and `(B, S)` -> `(B,)`; NaN where a
    row is all ties."""
    upper = np.triu_indices(x.shape[1], k=1)
    dx = np.sign(x[:, :, None] - x[:, None, :])[:, upper[0], upper[1]]
    dy = np.sign(y[:, :, None] - y[:, None, :])[:, upper[0], upper[1]]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (dx * dy).sum(axis=1) / np.sqrt((dx**2).sum(axis=1) * (dy**2).sum(axis=1))


def _averages(pairs: Sequence[Pair], side: str, queries: Sequence[str]) -> np.ndarray:
    """`(queries, systems)` of each query's average figure under one judge (NaN where not all five scored)."""
    tables = [per_query(getattr(pair, side)) for pair in pairs]
    return np.array([[table[key][-1] for table in tables] for key in queries])


def kendall_tau(pairs: Sequence[Pair], *, n_resamples: int = stats.DEFAULT_RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """Tau-b between the old and the new ranking by average over the queries every system has under both
    judges, with a bootstrap interval resampling those queries."""
    shared = sorted(set.intersection(*(set(per_query(pair.old)) & set(per_query(pair.new)) for pair in pairs)))
    if not shared:
        raise LeaderboardError("the systems share no query under both judges")
    old, new = _averages(pairs, "old", shared), _averages(pairs, "new", shared)
    value = rowwise_kendall(np.nanmean(old, axis=0)[None, :], np.nanmean(new, axis=0)[None, :])[0]
    index = stats.resample_indices(len(shared), n_resamples, seed)
    with warnings.catch_warnings():  # a resample without any average of a system is NaN, as it should be
        warnings.simplefilter("ignore", RuntimeWarning)
        tau = rowwise_kendall(np.nanmean(old[index], axis=1), np.nanmean(new[index], axis=1))
    ci = stats.percentile_ci(tau)
    return {"value": None if np.isnan(value) else float(value), "ci": list(ci) if ci else None, "queries": len(shared)}


def _figures(entry: Entry) -> dict[str, float | None]:
    """The five numbers and the average, as the results file's summary has them."""
    summary = entry.results.summary
    return {metric: (None if summary.get(metric) is None else float(summary[metric])) for metric in COLUMNS}


def shifts(pair: Pair, *, n_resamples: int = stats.PAIRED_RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """Per metric, new - old over the queries both judges scored, with a paired bootstrap interval."""
    old, new = per_query(pair.old), per_query(pair.new)
    shared = sorted(set(old) & set(new))
    out: dict[str, Any] = {}
    for j, metric in enumerate(COLUMNS):
        a = np.array([new[key][j] for key in shared])
        b = np.array([old[key][j] for key in shared])
        both = ~np.isnan(a) & ~np.isnan(b)
        if not both.any():
            out[metric] = {"value": None, "ci": None, "n": 0}
            continue
        test = stats.paired_bootstrap(a[both], b[both], n_resamples=n_resamples, seed=seed)
        out[metric] = {"value": test.difference, "ci": list(test.ci) if test.ci else None, "n": test.n}
    return out


def _ranks(pairs: Sequence[Pair], side: str) -> dict[str, int]:
    """Each system's rank by average under one judge (1 is best; systems without an average last)."""
    figures = {pair.name: _figures(getattr(pair, side))["average"] for pair in pairs}
    order = sorted(figures, key=lambda name: (figures[name] is None, -(figures[name] or 0.0), name))
    return {name: rank for rank, name in enumerate(order, start=1)}


def flips(pairs: Sequence[Pair], *, alpha: float = 0.05, n_resamples: int = stats.PAIRED_RESAMPLES,
          seed: int = 0) -> list[dict[str, Any]]:
    """Every pair of systems whose order by average differs between the judges, with the paired test of
    their difference under each judge (`compare`'s permutation test on the average)."""
    out: list[dict[str, Any]] = []
    for i, first in enumerate(pairs):
        for second in pairs[i + 1:]:
            tests = {side: compare(getattr(first, side), getattr(second, side), n_resamples=n_resamples,
                                   seed=seed)["metrics"]["average"] for side in ("old", "new")}
            if any(test["difference"] is None for test in tests.values()):
                continue
            if np.sign(tests["old"]["difference"]) == np.sign(tests["new"]["difference"]):
                continue
            ahead_before = first.name if tests["old"]["difference"] > 0 else second.name
            behind_before = second.name if ahead_before == first.name else first.name
            sign = 1.0 if ahead_before == first.name else -1.0  # differences as ahead-before minus behind-before
            out.append({
                "ahead_before": ahead_before,
                "ahead_after": behind_before,
                **{side: {"difference": sign * test["difference"],
                          "ci": None if test["ci"] is None else sorted(sign * bound for bound in test["ci"]),
                          "p_value": test["p_value"], "significant": test["p_value"] < alpha}
                   for side, test in tests.items()},
                "significant_under": [side for side, test in tests.items() if test["p_value"] < alpha],
            })
    return out


def judged_by(entry: Entry) -> dict[str, Any]:
    """One side's judge and data as `bridge.json` records them, with the `caveats.marks` its figures carry
    (`PROXY judge`, `SYNTHETIC data`), so a bridge read alone says what a leaderboard would."""
    data = entry.results.data
    return {"spec": str(entry.judge["spec"]), "protocol_version": entry.judge.get("protocol_version"),
            "data": f"{data.get('source')}@{data.get('revision') or 'local'}", "marks": marks(entry.judge, data)}


def bridge(old: Sequence[Entry], new: Sequence[Entry], *, alpha: float = 0.05,
           n_resamples: int = stats.DEFAULT_RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """The bridge between two judges' leaderboards of the same systems (the `bridge.json` content)."""
    pairs = pair_results(old, new)
    old_ranks, new_ranks = _ranks(pairs, "old"), _ranks(pairs, "new")
    return {
        "old_judge": str(pairs[0].old.judge["spec"]),
        "new_judge": str(pairs[0].new.judge["spec"]),
        "judged_by": {"old": judged_by(pairs[0].old), "new": judged_by(pairs[0].new)},
        "kendall_tau": kendall_tau(pairs, n_resamples=n_resamples, seed=seed),
        "systems": [{
            "name": pair.name,
            "old": {"path": pair.old.path, "rank": old_ranks[pair.name], **_figures(pair.old)},
            "new": {"path": pair.new.path, "rank": new_ranks[pair.name], **_figures(pair.new)},
            "shift": shifts(pair, seed=seed),
        } for pair in sorted(pairs, key=lambda pair: old_ranks[pair.name])],
        "flips": flips(pairs, alpha=alpha, seed=seed),
        "alpha": alpha,
    }


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def _interval(ci: Sequence[float] | None) -> str:
    return "" if not ci else f"[{ci[0]:+.2f}, {ci[1]:+.2f}]"


def judges_line(content: Mapping[str, Any], strong: Callable[[str], str], escape: Callable[[str], str] = str) -> str:
    """Each side's judge and data, and its marks: the marks through `strong` (bold in Markdown, in HTML),
    the rest through `escape`."""
    sides = []
    for side in ("old", "new"):
        judge = content["judged_by"][side]
        words = f"{side} judge {judge['spec']} (protocol {judge['protocol_version'] or '?'}) on data {judge['data']}"
        sides.append(" · ".join([escape(words), *map(strong, judge["marks"])]))
    return "; ".join(sides)


def format_bridge(content: Mapping[str, Any]) -> str:
    """`bridge.md`: the judges and their marks, the rank correlation, each system's ranks and shifts, and
    the flips, in Markdown."""
    tau = content["kendall_tau"]
    tau_ci = "" if not tau["ci"] else f" (95% CI {tau['ci'][0]:.2f} to {tau['ci'][1]:.2f})"
    lines = [f"# Bridge: {content['old_judge']} -> {content['new_judge']}", "",
             judges_line(content, lambda mark: f"**{mark}**"), "",
             f"Kendall's tau between the rankings by average: **{_number(tau['value'])}**{tau_ci}, "
             f"over {tau['queries']} queries every system has under both judges.", "",
             "| system | rank before | rank after | " + " | ".join(f"{LABELS[m]} shift" for m in COLUMNS) + " |",
             "|---|---|---|" + "---|" * len(COLUMNS)]
    for system in content["systems"]:
        cells = [f"{_number(system['shift'][m]['value'], signed=True)} {_interval(system['shift'][m]['ci'])}".strip()
                 for m in COLUMNS]
        lines.append(f"| {system['name']} | {system['old']['rank']} | {system['new']['rank']} | " + " | ".join(cells) + " |")
    lines += ["", "Shifts are new minus old judge, 0-100, with paired bootstrap 95% intervals over the queries both judged."]
    if not content["flips"]:
        lines += ["", "No pair of systems changes order."]
    else:
        lines += ["", "## Pairs whose order flips", "",
                  "| ahead before | ahead after | difference before (p) | difference after (p) | significant under |",
                  "|---|---|---|---|---|"]
        for flip in content["flips"]:
            before, after = flip["old"], flip["new"]
            lines.append(f"| {flip['ahead_before']} | {flip['ahead_after']} | "
                         f"{before['difference']:+.2f} ({before['p_value']:.3f}) | {after['difference']:+.2f} "
                         f"({after['p_value']:.3f}) | {', '.join(flip['significant_under']) or 'neither'} |")
        lines += ["", f"Differences are the first system's average minus the second's; significant at p < {content['alpha']}."]
    return "\n".join(lines) + "\n"
