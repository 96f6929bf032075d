"""What a model writes for a build (a rubric per query, the claims of a gold response), without the model.

`bespoke_dataset` makes no model call: `build_release` hands the tasks to an `Author` it is given (the
command line passes one from `bespoke_metric.judging.authoring`, which asks a model through the engines
and the cache) and gets back one `Authored` per task, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..keys import query_key


@dataclass(frozen=True)
class RubricTask:
    """Write the rubric of one query from the query, its gold need and its judged example responses."""

    user: str
    query_id: str
    query: str
    gold_information_need: str
    shots: tuple[dict[str, Any], ...]
    """``{"response", dim: {"score", "feedback"}, ...}`` each, as in the `benchmark` config."""


@dataclass(frozen=True)
class ClaimTask:
    """Extract the atomic claims of one query's gold response."""

    user: str
    query_id: str
    query: str
    response: str


@dataclass(frozen=True)
class Authored:
    """A task's outcome: its `value` (a rubric's text, a list of claims), or the `error` that stopped it."""

    value: Any = None
    error: str | None = None


Task = TypeVar("Task", RubricTask, ClaimTask)
Author = Callable[[Sequence[Task]], Sequence[Authored]]
"""`author(tasks) -> outcomes`, one per task, in order."""


class IncompleteBuild(RuntimeError):
    """Some model calls of a build failed: nothing was written (the answered calls are cached, so a rerun
    makes only the failed ones)."""


def run_author(author: Author, tasks: Sequence[Task], what: str) -> dict[tuple[str, str], Any]:
    """Each task's value by `(user, query_id)`; IncompleteBuild naming how many `what` failed, and the first."""
    outcomes = list(author(tasks))
    if len(outcomes) != len(tasks):
        raise RuntimeError(f"the {what} author returned {len(outcomes)} outcomes for {len(tasks)} tasks")
    failed = [(task, outcome) for task, outcome in zip(tasks, outcomes, strict=True) if outcome.error is not None]
    if failed:
        task, outcome = failed[0]
        raise IncompleteBuild(f"{len(failed)} of {len(tasks)} {what} could not be written (first: "
                              f"{query_key(task.user, task.query_id)}: {outcome.error}); nothing was written. "
                              "The answers received are cached: run the same command again to retry the rest")
    return {(task.user, task.query_id): outcome.value for task, outcome in zip(tasks, outcomes, strict=True)}


def rubric_tasks(rows: Sequence[dict[str, Any]]) -> list[RubricTask]:
    """A rubric task per `benchmark` row (an existing release's queries, with their example responses)."""
    return [RubricTask(row["user"], row["query_id"], row["query"], row["gold_information_need"], tuple(row["shots"]))
            for row in rows]
