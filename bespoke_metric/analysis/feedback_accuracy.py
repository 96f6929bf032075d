"""Feedback accuracy: does the judge's written feedback say what the human's says?

The paper reports, beside Pearson and Spearman, a third meta-evaluation figure, Feedback Acc. (0.881 for
the full GPT-5 judge, 0.801 without feedback in the examples, 0.360 without personalization). Here it is
measured on the meta-test responses: for every response and dimension that the judge scored, a grader
model reads the user's own feedback and the judge's feedback on that dimension and answers whether they
agree (the same verdict for the same main reasons, neither contradicting the other). Feedback accuracy
is the share of agreeing (response, dimension) pairs, per dimension and pooled, with a bootstrap
interval. The grader is the judge's own model unless another is named (`feedback_grader`, a judge spec
such as `openai:gpt-4.1`, on the same endpoint options); one grader call covers a response's four
dimensions. Items a guard caught, and dimensions without a judge score or human feedback, are left out
and counted; a grader answer that cannot be read after the repairs is a failure, left out and counted.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from bespoke_dataset.vocabulary import DIMENSION_LABELS, DIMENSIONS
from bespoke_metric.backends.base import Backend, Request, Usage
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.scheduler import run_requests
from bespoke_metric.judging import prompts
from bespoke_metric.judging.parsing import ParseError
from bespoke_metric.judging.prompts import FEEDBACK_ACCURACY_VERSION
from bespoke_metric.judging.protocol import repair_request
from bespoke_metric.results import ItemResult, stats

_VERDICT = re.compile(r"^\s*[-*]?\s*([A-Za-z ]+?)\s*:\s*(agree|disagree)\b", re.IGNORECASE)


def grading_request(query: str, pairs: Mapping[str, tuple[str, str]], max_tokens: int = 1024) -> Request:
    """One grader call for one response: `pairs` maps dimension -> (user's feedback, evaluator's feedback)."""
    blocks = [prompts.FEEDBACK_PAIR.format(label=DIMENSION_LABELS[d], human=" ".join(human.split()),
                                           judge=" ".join(judge.split())) for d, (human, judge) in pairs.items()]
    lines = "\n".join(prompts.FEEDBACK_VERDICT_LINE.format(label=DIMENSION_LABELS[d]) for d in pairs)
    user = prompts.FEEDBACK_GRADER_USER.format(query=query.strip(), section=prompts.FEEDBACK_SECTION,
                                               pairs="\n\n".join(blocks), verdict_lines=lines)
    return Request(messages=({"role": "system", "content": prompts.FEEDBACK_GRADER_SYSTEM},
                             {"role": "user", "content": user}), max_tokens=max_tokens)


def parse_verdicts(text: str, dimensions: Sequence[str]) -> dict[str, bool]:
    """The verdicts after the last `Verdicts:` line: one `Label: agree|disagree` per dimension asked."""
    marker = text.lower().rfind("verdicts:")
    if marker < 0:
        raise ParseError("no 'Verdicts:' line")
    by_label = {DIMENSION_LABELS[d].lower(): d for d in dimensions}
    found: dict[str, bool] = {}
    for line in text[marker + len("verdicts:"):].splitlines():
        match = _VERDICT.match(line)
        if match is None or match.group(1).lower() not in by_label:
            continue
        dimension = by_label[match.group(1).lower()]
        if dimension in found:
            raise ParseError(f"two verdicts for {DIMENSION_LABELS[dimension]}")
        found[dimension] = match.group(2).lower() == "agree"
    missing = [DIMENSION_LABELS[d] for d in dimensions if d not in found]
    if missing:
        raise ParseError(f"no verdict for {', '.join(missing)}")
    return found


async def feedback_accuracy(
    judged: Sequence[ItemResult],
    human: Sequence[Mapping[str, Any]],
    queries: Sequence[str],
    grader: Backend,
    *,
    cache: Cache | None = None,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Feedback accuracy of judged items against the human rows (meta-test rows), graded by `grader`.

    Returns `dimensions` and `pooled` (`{"n", "accuracy", "accuracy_ci"}`), `failures` (grader answers
    that could not be read, per dimension), `skipped` (pairs without a judge score, without human
    feedback, or caught by a guard), `grader` (the grader's identity) and `usage` (its calls)."""
    usage = Usage()
    requests: list[Request] = []
    asked: list[tuple[int, list[str]]] = []
    skipped = 0
    for index, (item, row, query) in enumerate(zip(judged, human, queries, strict=True)):
        pairs = {d: (row[d]["feedback"], item.feedback[d]) for d in DIMENSIONS
                 if item.guard is None and item.scores[d] is not None and item.feedback[d] and row[d]["feedback"]}
        skipped += len(DIMENSIONS) - len(pairs)
        if pairs:
            requests.append(grading_request(query, pairs))
            asked.append((index, list(pairs)))
    outcomes = await run_requests(
        grader, requests, cache=cache, key_extra={"feedback_accuracy": FEEDBACK_ACCURACY_VERSION},
        parse=lambda i, text: parse_verdicts(text, asked[i][1]), repair=repair_request, progress=True, usage=usage,
    )
    verdicts: dict[str, list[float]] = {d: [] for d in DIMENSIONS}
    failures = {d: 0 for d in DIMENSIONS}
    for (_, dimensions), outcome in zip(asked, outcomes, strict=True):
        for dimension in dimensions:
            if outcome.error is not None:
                failures[dimension] += 1
            else:
                verdicts[dimension].append(1.0 if outcome.value[dimension] else 0.0)
    pooled = [v for d in DIMENSIONS for v in verdicts[d]]
    return {
        "dimensions": {d: _accuracy(verdicts[d], n_resamples, seed) for d in DIMENSIONS},
        "pooled": _accuracy(pooled, n_resamples, seed),
        "failures": failures,
        "skipped": skipped,
        "grader": grader.identity(),
        "usage": usage.counts(),
        "version": FEEDBACK_ACCURACY_VERSION,
    }


def _accuracy(values: Sequence[float], n_resamples: int, seed: int) -> dict[str, Any]:
    if not values:
        return {"n": 0, "accuracy": None, "accuracy_ci": None}
    ci = stats.bootstrap_ci(stats.rowwise_mean, values, n_resamples=n_resamples, seed=seed)
    return {"n": len(values), "accuracy": sum(values) / len(values), "accuracy_ci": list(ci) if ci else None}
