"""Several judges, one table: each judge's agreement with the people on the same meta-test responses.

Each judge is meta-evaluated as `meta_evaluate` does it (`repeats` runs, the first the plain run, the others
keyed apart in the cache); the table gives per judge its agreement with the human scores (Pearson and
Spearman per dimension and averaged over the four, with bootstrap intervals), its length bias, its
self-consistency across repeats, and the paired difference of its average Pearson from the reference
judge's over the same items; the paper's GPT-5 figures sit beside them as a fixed, published row.

Definitions (pure functions below, stated in `docs/choosing-a-judge.md`):

- **average Pearson / Spearman**: the mean of the four per-dimension correlations, over the responses the
  judge scored on all four (a guarded response counts, with its lowest scores; an unparsed one does not). A
  correlation that is undefined (a judge or the people giving one dimension the same score throughout) is
  left out of the mean, not counted as 0; `judges.md` shows it as `undefined`.
- **length bias**: the mean over the dimensions of `spearman(judge, words) - spearman(human, words)`, where
  `words` is the response's length in words: how much more the judge's scores rise with length than the
  people's do. Flagged when it exceeds `LENGTH_BIAS_THRESHOLD` and its 95% interval lies above 0.
- **self-consistency**: over every pair of repeats, exact agreement and Pearson of the scores (all four
  dimensions pooled), averaged over the pairs, on the responses scored in every repeat.
- **vs reference**: `average Pearson(judge) - average Pearson(reference)` on the responses both scored,
  both resampled with the same indices (paired bootstrap), with its interval and two-sided p-value.
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.backends.registry import model_label
from bespoke_metric.judging.judges import as_judge_spec
from bespoke_metric.results import Results, stats
from bespoke_metric.results.caveats import PROXY_MARK, STAND_IN_MARK, judge_marks

from .meta_eval import REFERENCE, meta_evaluate, meta_items

LENGTH_BIAS_THRESHOLD = 0.1
"""A judge's length bias is flagged above this (and with its interval above 0): a tenth of a correlation."""

PUBLISHED = {
    "spec": "openai:gpt-5",
    "published": True,
    "source": "BESPOKE paper (arXiv 2509.21106), ICML version: GPT-5 judge vs human scores, full judge",
    # the paper's correlations are over every (response, dimension) pair, pooled (`meta_eval.REFERENCE`), not
    # the mean of four per-dimension ones: they sit beside the judges' pooled figures
    "pearson": {"pooled": {"value": REFERENCE["full"]["pearson"], "ci": None}},
    "spearman": {"pooled": {"value": REFERENCE["full"]["spearman"], "ci": None}},
    "feedback_accuracy": REFERENCE["full"]["feedback_acc"],
}
"""The paper's figures, a fixed row of every table: not measured here, not on these responses."""


@dataclass(frozen=True)
class JudgeRuns:
    """One judge's meta-evaluations of the same responses: `runs[0]` the plain run, then its repeats."""

    spec: str
    runs: list[Results]


def words(text: str) -> int:
    """A response's length in words, as the length bias measures it."""
    return len(re.findall(r"\w+", text))


# -- pure statistics over score matrices (items x dimensions) ----------------------------------------

def score_matrix(results: Results) -> np.ndarray:
    """`(items, dimensions)` judge scores, NaN where the judge gave none."""
    return np.array([[np.nan if item.scores[d] is None else item.scores[d] for d in DIMENSIONS] for item in results.items],
                    dtype=float)


def human_matrix(results: Results) -> np.ndarray:
    """`(items, dimensions)` human scores of a meta-evaluation's items."""
    return np.array([[item.human[d] for d in DIMENSIONS] for item in results.items], dtype=float)  # type: ignore[index]


def _columns(matrix: np.ndarray, keep: np.ndarray) -> list[np.ndarray]:
    return [matrix[keep, column] for column in range(matrix.shape[1])]


def mean_correlation(correlation: stats.Statistic, k: int) -> stats.Statistic:
    """The rowwise statistic of `2k` arrays (k judge columns, then k human ones): the mean of `correlation`
    over the k pairs where it is defined (NaN where none is)."""
    def statistic(*matrices: np.ndarray) -> np.ndarray:
        found = np.array([correlation(matrices[i], matrices[k + i]) for i in range(k)])
        defined = np.isfinite(found)
        counts = defined.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(defined, found, 0.0).sum(axis=0) / np.where(counts > 0, counts, np.nan)

    return statistic


def length_statistic(k: int) -> stats.Statistic:
    """Rowwise length bias of `2k + 1` arrays (k judge columns, k human ones, the lengths)."""
    def statistic(*matrices: np.ndarray) -> np.ndarray:
        length = matrices[2 * k]
        return np.mean([stats.rowwise_spearman(matrices[i], length) - stats.rowwise_spearman(matrices[k + i], length)
                        for i in range(k)], axis=0)

    return statistic


def consistency_statistic(repeats: int, k: int, agreement: stats.Statistic) -> stats.Statistic:
    """Rowwise `agreement` of the scores of every pair of repeats (each `k` columns, dimensions pooled),
    averaged over the pairs."""
    def statistic(*matrices: np.ndarray) -> np.ndarray:
        runs = [np.concatenate(matrices[r * k:(r + 1) * k], axis=1) for r in range(repeats)]
        return np.mean([agreement(runs[a], runs[b]) for a, b in itertools.combinations(range(repeats), 2)], axis=0)

    return statistic


def scored(matrix: np.ndarray) -> np.ndarray:
    """Which items carry a score on every dimension."""
    return ~np.isnan(matrix).any(axis=1)


def correlations(judge: np.ndarray, human: np.ndarray, *, n_resamples: int, seed: int) -> dict[str, Any]:
    """Pearson and Spearman per dimension and averaged (`{"value", "ci"}` each), on the items scored on
    every dimension; one set of resampled indices for all."""
    keep = scored(judge)
    j, h = _columns(judge, keep), _columns(human, keep)
    out: dict[str, Any] = {}
    for name, correlation in (("pearson", stats.rowwise_pearson), ("spearman", stats.rowwise_spearman)):
        block = {"average": stats.estimate(mean_correlation(correlation, len(j)), *j, *h, n_resamples=n_resamples, seed=seed)}
        for column, dimension in enumerate(DIMENSIONS):
            block[dimension] = stats.estimate(correlation, j[column], h[column], n_resamples=n_resamples, seed=seed)
        out[name] = block
    return out


def length_bias(judge: np.ndarray, human: np.ndarray, lengths: np.ndarray, *, n_resamples: int, seed: int,
                threshold: float = LENGTH_BIAS_THRESHOLD) -> dict[str, Any]:
    """The judge's length bias (see the module's docstring) with its interval, `flagged` when above
    `threshold` with the interval above 0."""
    keep = scored(judge)
    j, h = _columns(judge, keep), _columns(human, keep)
    found = stats.estimate(length_statistic(len(j)), *j, *h, lengths[keep], n_resamples=n_resamples, seed=seed)
    value, ci = found["value"], found["ci"]
    flagged = value is not None and ci is not None and value > threshold and ci[0] > 0
    return {**found, "flagged": bool(flagged), "threshold": threshold, "measure": "mean over dimensions of "
            "spearman(judge, words) - spearman(human, words)"}


def self_consistency(runs: Sequence[np.ndarray], *, n_resamples: int, seed: int) -> dict[str, Any]:
    """Agreement between repeats (`runs`: one score matrix each) on the items scored in every one."""
    if len(runs) < 2:
        return {"repeats": len(runs), "exact": None, "pearson": None}
    keep = np.logical_and.reduce([scored(run) for run in runs])
    columns = [column for run in runs for column in _columns(run, keep)]
    k = runs[0].shape[1]
    return {
        "repeats": len(runs),
        "n": int(keep.sum()),
        "exact": stats.estimate(consistency_statistic(len(runs), k, stats.rowwise_exact), *columns, n_resamples=n_resamples, seed=seed),
        "within_one": stats.estimate(consistency_statistic(len(runs), k, stats.rowwise_within_one), *columns,
                                     n_resamples=n_resamples, seed=seed),
        "pearson": stats.estimate(consistency_statistic(len(runs), k, stats.rowwise_pearson), *columns,
                                  n_resamples=n_resamples, seed=seed),
    }


def pearson_difference(judge: np.ndarray, reference: np.ndarray, human: np.ndarray, *, n_resamples: int,
                       seed: int) -> dict[str, Any]:
    """`{"value", "ci", "p_value", "n"}`: average Pearson of `judge` minus that of `reference`, paired over
    the items both scored on every dimension."""
    keep = scored(judge) & scored(reference)
    if not keep.any():
        return {"value": None, "ci": None, "p_value": None, "n": 0}
    j, r, h = _columns(judge, keep), _columns(reference, keep), _columns(human, keep)
    test = stats.paired_statistic_test(mean_correlation(stats.rowwise_pearson, len(j)), [*j, *h], [*r, *h],
                                       n_resamples=n_resamples, seed=seed)
    value = test.difference if np.isfinite(test.difference) else None
    return {"value": value, "ci": list(test.ci) if test.ci else None,
            "p_value": test.p_value if value is not None and np.isfinite(test.p_value) else None, "n": test.n}


# -- the table ---------------------------------------------------------------------------------------

def _usage(runs: Sequence[Results]) -> dict[str, Any]:
    """Calls, tokens, cost and wall time of a judge's runs together."""
    total: dict[str, Any] = {name: sum(run.usage.get(name, 0) for run in runs)
                             for name in ("calls", "cached", "failed", "input_tokens", "output_tokens")}
    costs = [run.usage.get("cost") for run in runs]
    total["cost"] = None if any(cost is None for cost in costs) else round(sum(costs), 6)  # type: ignore[arg-type]
    total["wall_seconds"] = round(sum(run.usage.get("wall_seconds", 0.0) for run in runs), 3)
    return total


def _served(runs: Sequence[Results]) -> dict[str, int]:
    served: dict[str, int] = {}
    for run in runs:
        for name, count in (run.judge.get("served_models") or {}).items():
            served[name] = served.get(name, 0) + count
    return served


def judge_row(judge: JudgeRuns, reference: JudgeRuns, lengths: np.ndarray, *, n_resamples: int, seed: int) -> dict[str, Any]:
    """One judge's row of `judges.json` (see the module's docstring for each figure)."""
    first = judge.runs[0]
    matrix, human = score_matrix(first), human_matrix(first)
    meta = first.meta_eval or {}
    pooled = meta.get("pooled", {})
    stand_in = sum(run.judge.get("stand_in", 0) for run in judge.runs)  # answers a stand-in made, all repeats
    row: dict[str, Any] = {
        "spec": judge.spec,
        "served_models": _served(judge.runs),
        **({"stand_in": stand_in} if stand_in else {}),
        "judge": first.judge,
        "n": int(len(first.items)),
        "scored": int(scored(matrix).sum()),
        **correlations(matrix, human, n_resamples=n_resamples, seed=seed),
        "pooled": {name: {"value": pooled.get(name), "ci": pooled.get(f"{name}_ci")} for name in ("pearson", "spearman")},
        "agreement": {name: {"value": pooled.get(name), "ci": pooled.get(f"{name}_ci")} for name in ("exact", "within_one")},
        "unparsed": int((~scored(matrix)).sum()),
        "guarded": int(sum((first.guarded or {}).values())),
        "length_bias": length_bias(matrix, human, lengths, n_resamples=n_resamples, seed=seed),
        "self_consistency": self_consistency([score_matrix(run) for run in judge.runs], n_resamples=n_resamples, seed=seed),
        "vs_reference": {"reference": reference.spec,
                         "pearson_diff": pearson_difference(matrix, score_matrix(reference.runs[0]), human,
                                                            n_resamples=stats.PAIRED_RESAMPLES, seed=seed)},
        "usage": _usage(judge.runs),
    }
    if "feedback_accuracy" in meta:
        row["feedback_accuracy"] = meta["feedback_accuracy"]["pooled"]
    return row


RANK_DIGITS = 3
"""Judges whose average Pearson is equal at the digits `judges.md` shows are tied."""


def tied_ranks(values: Sequence[float | None]) -> list[int]:
    """Each value's rank, highest first (None last), equal values (at `RANK_DIGITS`) sharing the best rank of
    the tie, as in a competition: 1, 1, 3."""
    keys = [-2.0 if value is None else round(value, RANK_DIGITS) for value in values]
    return [1 + sum(other > key for other in keys) for key in keys]


def judges_table(judges: Sequence[JudgeRuns], lengths: Sequence[int], *, reference: str | None = None,
                 n_resamples: int = stats.DEFAULT_RESAMPLES, seed: int = 0, pending: Sequence[str] = ()) -> dict[str, Any]:
    """`judges.json`: a row per judge (in the order given, each with its `rank` by average Pearson), the
    reference judge's spec (default the first), the published row, and what the data was; `pending`: the
    judges not done yet, for a table written as each judge finishes."""
    by_spec = {judge.spec: judge for judge in judges}
    chosen = by_spec[reference] if reference is not None else judges[0]
    length_array = np.asarray(lengths, dtype=float)
    rows = [judge_row(judge, chosen, length_array, n_resamples=n_resamples, seed=seed) for judge in judges]
    for row, rank in zip(rows, tied_ranks([row["pearson"]["average"]["value"] for row in rows]), strict=True):
        row["rank"] = rank
    first = judges[0].runs[0]
    return {"judges": rows, "reference": chosen.spec, "published": PUBLISHED, "data": first.data,
            "responses": len(first.items), "repeats": max(len(judge.runs) for judge in judges),
            "length_bias_threshold": LENGTH_BIAS_THRESHOLD, "resamples": n_resamples,
            **({"pending": list(pending)} if pending else {})}


def compare_judges(
    specs: Sequence[str],
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    *,
    revision: str | None = None,
    rubrics: str | os.PathLike[str] | None = None,
    limit: int | None = None,
    reference: str | None = None,
    repeats: int = 1,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = 0,
    options_for: Callable[[str], Mapping[str, Any]] = lambda spec: {},
    on_judge: Callable[[dict[str, Any], list[JudgeRuns]], None] | None = None,
    **common: Any,
) -> tuple[dict[str, Any], list[JudgeRuns]]:
    """Meta-evaluate every judge of `specs` on the same meta-test responses (loaded once), `repeats` runs
    each for an LLM judge (a judge of its own, such as `embed:`, is deterministic: one run), and build
    the table. `options_for(spec)` gives each judge its options (one `cache` file may serve them all:
    the keys name the judge); `common` go to every `meta_evaluate`. The reference judge goes first; as each
    judge but the last finishes, `on_judge(table so far, runs so far)` is called with the table of the judges
    done (the others `pending`), so a judge that fails or is stopped loses no other judge's row. Returns
    the table and the runs, in the order of `specs`."""
    if len(set(specs)) != len(specs):
        raise ValueError(f"a judge is given twice: {', '.join(sorted({s for s in specs if list(specs).count(s) > 1}))}")
    if reference is not None and reference not in specs:
        raise ValueError(f"--reference {reference} is not one of the judges ({', '.join(specs)})")
    if repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {repeats}")
    loaded = meta_items(source, revision, rubrics)
    if limit is not None:
        loaded = (loaded[0][:limit], loaded[1][:limit], loaded[2])
    lengths = [words(item.response) for item in loaded[0]]
    chosen = reference if reference is not None else specs[0]
    parsed_specs = {spec: as_judge_spec(spec) for spec in specs}
    for spec, parsed in parsed_specs.items():  # a judge's missing extra is said before the first judge's first call
        parsed.engine.check_requirements(dict(options_for(spec)))
    done: dict[str, JudgeRuns] = {}
    for spec in sorted(specs, key=lambda spec: spec != chosen):  # stable: the reference first, the others as given
        parsed = parsed_specs[spec]
        times = repeats if parsed.engine.llm else 1
        runs = [meta_evaluate(parsed, loaded=loaded, n_resamples=n_resamples, seed=seed,
                              **{**common, **options_for(spec), **({"repeat": r, "feedback_accuracy_check": False} if r else {})})
                for r in range(times)]
        done[spec] = JudgeRuns(spec, runs)
        if on_judge is not None and len(done) < len(specs):
            so_far = [done[given] for given in specs if given in done]
            on_judge(judges_table(so_far, lengths, reference=chosen, n_resamples=n_resamples, seed=seed,
                                  pending=[given for given in specs if given not in done]), so_far)
    judges = [done[spec] for spec in specs]
    return judges_table(judges, lengths, reference=chosen, n_resamples=n_resamples, seed=seed), judges


# -- judges.md ---------------------------------------------------------------------------------------

def _value(block: Mapping[str, Any] | None, digits: int = 3, n: int | None = None) -> str:
    """A figure with its interval; `undefined` where it is (`n` responses, none: n/a), and on too few
    responses (`stats.too_few`) said so in place of the interval."""
    if not block or block.get("value") is None:
        return "undefined" if n else "n/a"
    ci = block.get("ci")
    shown = f"{block['value'] + 0.0:.{digits}f}"  # + 0.0: no "-0.000"
    if ci:
        return shown + f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return shown + (f" ({stats.TOO_FEW})" if n is not None and stats.too_few(n) else "")


def format_judges_md(table: Mapping[str, Any]) -> str:
    """`judges.md`: the table (best average Pearson first), per-dimension figures, then the published row."""
    data = table.get("data", {})
    synthetic = " (synthetic release: the figures test the tool, they say nothing of any model)" if data.get("synthetic") else ""
    lines = [f"# Judges vs the people on {table['responses']} meta-test responses{synthetic}", "",
             f"Reference judge: `{model_label(table['reference'])}`. Intervals are 95% bootstrap intervals over responses; "
             f"length bias is flagged above {table['length_bias_threshold']} with its interval above 0.", "",
             "| rank | judge | served | Pearson (avg) | Spearman (avg) | Pearson (pooled) | Spearman (pooled) | exact | "
             "within 1 | length bias | self-consistency | Δ Pearson vs reference (p) | unparsed | guarded | calls | tokens | "
             "cost | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ranks = [row["rank"] for row in table["judges"]]
    for row in sorted(table["judges"], key=lambda r: r["rank"]):
        rank = f"={row['rank']}" if ranks.count(row["rank"]) > 1 else str(row["rank"])  # a tie, said as one
        bias = row["length_bias"]
        flag = " **flagged**" if bias["flagged"] else ""
        consistency = row["self_consistency"]
        n = row["scored"]
        agree = "n/a (1 run)" if consistency.get("exact") is None else \
            f"exact {_value(consistency['exact'], 2, consistency['n'])} (×{consistency['repeats']})"
        diff = row["vs_reference"]["pearson_diff"]
        shown = "reference" if row["spec"] == table["reference"] else \
            f"{_value(diff)} (p={diff['p_value']:.3g})" if diff.get("p_value") is not None else _value(diff, n=diff["n"])
        served = ", ".join([f"{name} ×{count}" for name, count in row["served_models"].items()]
                           + ([f"{STAND_IN_MARK} ×{row['stand_in']}"] if row.get("stand_in") else [])) or "n/a"
        usage = row["usage"]
        cost = "n/a" if usage["cost"] is None else f"${usage['cost']:.4f}"
        judge = f"`{model_label(row['spec'])}`" + "".join(f" **{mark}**" for mark in judge_marks(row["judge"]))
        lines.append(f"| {rank} | {judge} | {served} | {_value(row['pearson']['average'], n=n)} | "
                     f"{_value(row['spearman']['average'], n=n)} | {_value(row['pooled']['pearson'], n=n)} | "
                     f"{_value(row['pooled']['spearman'], n=n)} | {_value(row['agreement']['exact'], 2, n)} | "
                     f"{_value(row['agreement']['within_one'], 2, n)} | {_value(bias, 2, n)}{flag} | {agree} | {shown} | "
                     f"{row['unparsed']} | {row['guarded']} | {usage['calls']} (+{usage['cached']} cached) | "
                     f"{usage['input_tokens']} in, {usage['output_tokens']} out | {cost} | {usage['wall_seconds']:.1f} |")
    if table.get("pending"):
        lines.append(f"| … | {', '.join(f'`{model_label(spec)}`' for spec in table['pending'])} | not done yet: this table is "
                     "rewritten as each judge finishes | | | | | | | | | | | | | | | |")
    published = table["published"]
    lines.append(f"| published | `{published['spec']}` | | | | {published['pearson']['pooled']['value']:.3f} | "
                 f"{published['spearman']['pooled']['value']:.3f} | | | | | | | | | | | |")
    lines += ["", f"The published row is the paper's figure ({published['source']}), not measured on these responses; "
              "it is a correlation over every (response, dimension) pair, pooled, so it sits beside the pooled columns. "
              f"Judges are ranked by average Pearson; `=N` marks judges tied at the {RANK_DIGITS} digits shown. "
              f"On fewer than {stats.MIN_INTERVAL_N} responses a figure has no interval or p-value ({stats.TOO_FEW}); "
              "a correlation of a dimension scored alike throughout is `undefined`, and left out of the average."]
    if any(judge_marks(row["judge"]) for row in table["judges"]):
        lines.append(f"A row marked {PROXY_MARK} or {STAND_IN_MARK} judge is not a judge to choose: a proxy's figures (the "
                     "`embed:` judge, a rule), or answers a stand-in made (a test server), not the model named.")
    lines += ["",
              "## Per dimension", "", "| judge | " + " | ".join(f"{d} Pearson" for d in DIMENSIONS) + " |",
              "|---|" + "---|" * len(DIMENSIONS)]
    for row in sorted(table["judges"], key=lambda r: r["rank"]):
        lines.append(f"| `{model_label(row['spec'])}` | " + " | ".join(_value(row["pearson"][d], n=row["scored"]) for d in DIMENSIONS) + " |")
    return "\n".join(lines) + "\n"
