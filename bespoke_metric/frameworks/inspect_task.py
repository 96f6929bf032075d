"""BESPOKE as inspect_ai tasks: the benchmark `bespoke_metric/bespoke` and its maintenance task
`bespoke_metric/bespoke_meta_eval`, which scores the judge, not the model.

    pip install "bespoke-eval[inspect,offline]"
    inspect eval bespoke_metric/bespoke --model openai/gpt-5 -T context=selected-profile -T judge=openai:gpt-5
    inspect eval bespoke_metric/bespoke --model openai/gpt-5 -T judge=inspect:grader --model-role grader=anthropic/claude-sonnet-5-5
    inspect eval bespoke_metric/bespoke_meta_eval --model none -T judge=openai:gpt-5

inspect names a task after the top-level package of the module that defines it and finds that package's tasks
through its `inspect_ai` entry point (setup.cfg), hence `bespoke_metric/...` (`inspect_arguments.registered`). The
model under test is sent each query's messages exactly as `bespoke generate` sends them (`Prompter`); a profile
context's profile is written by the model under test, or by the model of the `profiler` role, once per query (or
per user, `profile`) and shared by that query's epochs, as one run of `bespoke generate` writes it once. Each answer
is judged as `bespoke score` judges it (`inspect_judge.bespoke_judge`), so the figures are `bespoke generate` +
`bespoke score`'s. Every argument is checked, and the judge opened, when the task is made: a mistake is one message
and status 1, never an error in every sample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import HeadlineMetric
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, GenerateConfig, get_model
from inspect_ai.scorer import ScoreReducer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import registry_info

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_dataset.keys import query_key
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.analysis.meta_eval import meta_items
from bespoke_metric.backends.providers.inspect_model import answered_by_stand_in, inspect_generate
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.results.figure_stats import HEADLINE
from bespoke_metric.scoring.pipeline import load_benchmark
from bespoke_metric.systems import GenerationSettings
from bespoke_metric.systems.messages import CONTEXT_OPTIONS, Prompter

from .importing import CONTEXT_KEY
from .inspect_arguments import ArgumentError, parameters_of, refuse_unknown, registered, said_for
from .inspect_judge import INSPECT_ENGINE, JUDGE_NEEDED, SOURCE_KEY, bespoke_figures, bespoke_judge, judge_config, judge_marks
from .inspect_meta_eval import HEADLINE as META_HEADLINE
from .inspect_meta_eval import HUMAN_KEY, bespoke_meta_judge, bespoke_meta_response, meta_options, sample_id

TASK_NAME = registered("bespoke")
META_EVAL_NAME = registered("bespoke_meta_eval")
VERSION = "1-A"
"""The benchmark task's version, `N-X` as inspect_evals versions its tasks: N its comparability (a change that
changes its figures raises it), X its interface (a change of its arguments moves it on). eval.yaml says the same."""
META_EVAL_VERSION = "1-A"
"""The maintenance task's version, as `VERSION`."""
PROFILER_ROLE = "profiler"
"""The model role that writes the profile contexts' profiles (`--model-role profiler=...`); without it, the
model under test writes them, as `bespoke generate` without `--profiler`."""
REDUCERS = ("mean", "median", "mode", "max")
"""The epoch reducers a task takes: each keeps a sample's values on their scale (the figures' 0-100, the judge's
1-5); pass_at_k, at_least_k and pass_k turn them into 0 or 1 and collect into lists, so they are refused."""


class BespokeTask(Task):
    """A task whose epochs are reduced only by `REDUCERS`: inspect sets `epochs_reducer` from `--epochs-reducer`
    before the eval starts, so another one is refused then, in one message."""

    @property  # type: ignore[override]
    def epochs_reducer(self) -> list[ScoreReducer] | None:
        return self._reducers

    @epochs_reducer.setter
    def epochs_reducer(self, reducers: list[ScoreReducer] | None) -> None:
        for reducer in reducers or []:
            name = registry_info(reducer).name.split("/")[-1]
            if name not in REDUCERS:
                raise ArgumentError(self.name, f"the epochs reducer {name} does not keep the figures' scale (0-100 for a "
                                    f"figure, 1-5 for a judgment): reduce epochs with {', '.join(REDUCERS)}")
        self._reducers = reducers


@task(name=TASK_NAME)
def bespoke(
    source: str = DEFAULT_SOURCE,
    context: str = "none",
    judge: str | None = None,
    judge_cache: str | None = None,
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
    **unknown: Any,
) -> Task:
    """The BESPOKE benchmark: every query of `source` (a Hub repo id, a local copy, or `sample`) answered under
    the user context `context` (any of `bespoke generate`'s), judged by `judge` (any judge spec of ours, or
    `inspect:ROLE`: no default, the figures are only as good as the judge; `judge_cache` keeps an LLM judge's
    answers; `judge_options` are the judge's other options, as `bespoke score` takes them). The other arguments are
    `bespoke generate`'s context options, named as its flags are; a None is generate's default."""
    parameters = parameters_of(bespoke)
    refuse_unknown(TASK_NAME, unknown, parameters)
    if judge is None:
        raise ArgumentError(TASK_NAME, JUDGE_NEEDED.replace("judge=", "-T judge="))
    given = {"retriever": retriever, "top_k": top_k, "budget": budget, "profile_max_tokens": profile_max_tokens,
             "profile_chunk_tokens": profile_chunk_tokens, "max_profile_chunks": max_profile_chunks,
             "max_new_tokens": max_new_tokens, "embedding_model": embedding_model, "tokenizer": tokenizer}
    options = {name: value for name, value in given.items() if value is not None}
    with said_for(TASK_NAME, parameters):
        benchmark, data = load_benchmark(source, revision)
        config = judge_config(judge, judge_cache, judge_options)
        _check_role(config.spec.engine.name, config.spec.model)
        system = bespoke_system(source=str(source), context=context, revision=revision, context_options=options)
    # made with the task: a judge that cannot be opened fails here, in one message, not in every sample
    scorer = bespoke_judge(judge=judge, source=str(source), revision=revision, judge_cache=judge_cache,
                           judge_options=judge_options)
    samples = [Sample(input=str(row["query"]), target=str(row["gold_information_need"]), id=key,
                      metadata={"user": str(row["user"]), "query_id": str(row["query_id"]), SOURCE_KEY: str(source),
                                **({"revision": revision} if revision else {})})
               for key, row in benchmark.items()]
    settings = {name: _plain(getattr(GenerationSettings(context=context, **options), name)) for name in CONTEXT_OPTIONS}
    return BespokeTask(
        dataset=MemoryDataset(samples, name="bespoke"),
        solver=system,
        scorer=scorer,
        config=GenerateConfig(max_tokens=settings["max_new_tokens"]),
        version=VERSION,
        headline_metric=HeadlineMetric(metric=HEADLINE),
        tags=judge_marks(config, data),
        metadata={"bespoke": {"source": str(source), "revision": revision, "data": data, "context": context, **settings,
                              "judge": judge, "judge_cache": judge_cache, "judge_options": sorted(judge_options or {}),
                              "profiles": "written once per query (or user) and shared by its epochs"}},
    )


def _check_role(engine: str, role: str) -> None:
    """An `inspect:ROLE` judge needs its role bound (`--model-role ROLE=...`), or the model under test would grade
    itself: checked where the arguments are, as its backend is made (`get_model(role=..., required=True)`)."""
    if engine == INSPECT_ENGINE:
        make_backend(f"{INSPECT_ENGINE}:{role}").close()


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


@solver(name=registered("bespoke_system"))
def bespoke_system(source: str = DEFAULT_SOURCE, context: str = "none", revision: str | None = None,
                   context_options: Mapping[str, Any] | None = None) -> Solver:
    """The model under test, sent its query's messages as `bespoke generate` sends them under `context` (its
    `context_options` named as generate's flags are); a profile context's profile written by the model of the
    `profiler` role, else by the model under test."""
    prompter = Prompter.load(source, context, revision=revision, **(context_options or {}))
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    rows = {query_key(row["user"], row["query_id"]): row for row in prompter.rows}
    profilers: dict[str, Any] = {}  # the profiler's model by name: one writer for every sample it writes for

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        row = rows[str(state.sample_id)]
        profiler = None
        if prompter.needs_profiler:
            model = get_model(role=PROFILER_ROLE, default=get_model())  # unbound: the model under test, as documented
            profiler = profilers.setdefault(str(model), inspect_generate(model))
        asked = await prompter.messages(row, profiler=profiler)
        state.messages = [kinds[message["role"]](content=message["content"]) for message in asked.messages]
        state = await generate(state)
        state.metadata[CONTEXT_KEY] = {"context_block": asked.context_block, "context_tokens": asked.context_tokens,
                                       "session_ids": list(asked.session_ids),
                                       **({"degenerate": asked.degenerate} if asked.degenerate else {}),
                                       **({"stand_in": True} if answered_by_stand_in() else {})}
        return state

    return solve


@task(name=META_EVAL_NAME)
def bespoke_meta_eval(source: str = DEFAULT_SOURCE, judge: str | None = None, judge_cache: str | None = None,
                      judge_options: Mapping[str, Any] | None = None, revision: str | None = None, **unknown: Any) -> Task:
    """A maintenance task: the judge, not a model. The release's human-judged responses (`meta_test` of `source`)
    scored by `judge` (any judge spec of ours, or `inspect:ROLE`), and its agreement with the people as `bespoke
    meta-eval` reports it (Pearson, Spearman, exact and within-one agreement, per dimension and pooled) with
    Krippendorff's alpha. No model answers: run it with `--model none` (or any model, which is never asked)."""
    parameters = parameters_of(bespoke_meta_eval)
    refuse_unknown(META_EVAL_NAME, unknown, parameters)
    if judge is None:
        raise ArgumentError(META_EVAL_NAME, JUDGE_NEEDED.replace("judge=", "-T judge="))
    with said_for(META_EVAL_NAME, parameters):
        items, rows, data = meta_items(source, revision)
        config = judge_config(judge, judge_cache, {**meta_options(judge), **(judge_options or {})})
        _check_role(config.spec.engine.name, config.spec.model)
    scorer = bespoke_meta_judge(judge=judge, source=str(source), revision=revision, judge_cache=judge_cache,
                                judge_options=judge_options)
    samples = [Sample(input=str(item.row["query"]), target=_human_text(row), id=sample_id(row["user"], row["query_id"], row["index"]),
                      metadata={"response": item.response, HUMAN_KEY: {dimension: row[dimension]["score"] for dimension in DIMENSIONS},
                                SOURCE_KEY: str(source), **({"revision": revision} if revision else {})})
               for item, row in zip(items, rows, strict=True)]
    return BespokeTask(
        dataset=MemoryDataset(samples, name="bespoke_meta_test"),
        solver=bespoke_meta_response(),
        scorer=scorer,
        version=META_EVAL_VERSION,
        headline_metric=HeadlineMetric(metric=META_HEADLINE),
        tags=judge_marks(config, data),
        metadata={"bespoke": {"source": str(source), "revision": revision, "data": data, "judge": judge,
                              "judge_cache": judge_cache, "judge_options": sorted(judge_options or {})}},
    )


def _human_text(row: Mapping[str, Any]) -> str:
    """The people's scores of a meta-test response, as the sample's target."""
    return ", ".join(f"{dimension} {row[dimension]['score']}" for dimension in DIMENSIONS)


__all__: Sequence[str] = ["bespoke", "bespoke_figures", "bespoke_judge", "bespoke_meta_eval", "bespoke_system"]
