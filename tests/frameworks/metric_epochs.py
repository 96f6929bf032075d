"""Metrics run as an eval runs them: per-epoch scores, inspect's own epoch reducer, then the metrics (what
inspect_evals' `pytest_inspect_evals.metrics` does, which needs Python 3.11 and a pytest plugin of its own).

A metric receives the score the reducer leaves, not the one the scorer returned: a test that hands it scores made
by hand skips that step. `run_metrics` runs a real `eval` on mockllm (tiktoken seeded offline) whose scorer
replays a table of per-epoch scores."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from inspect_ai import Epochs, Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Metric, Score, Scorer, Target, Value, scorer
from inspect_ai.solver import TaskState

from bespoke_metric.systems.tokens import seed_tiktoken_cache

TIKTOKEN = "TIKTOKEN_CACHE_DIR"


def run_metrics(metrics: Sequence[Metric], epochs: Sequence[Sequence[Value]], *, reducer: str = "mean",
                metadata: Sequence[Mapping[str, Any]] | None = None) -> dict[str, float]:
    """Each sample scored its per-epoch values in turn (`epochs[sample][epoch]`), reduced by `reducer`, then
    `metrics` over them: the metrics' values, as the log holds them. `metadata`: each sample's."""
    count = len(epochs[0])
    table = {str(index): list(values) for index, values in enumerate(epochs)}

    @scorer(metrics=list(metrics), name="epoch_replay")
    def replay() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            return Score(value=table[str(state.sample_id)][state.epoch - 1])

        return score

    samples = [Sample(input="x", id=str(index), metadata=dict((metadata or [{}] * len(epochs))[index]))
               for index in range(len(epochs))]
    with tempfile.TemporaryDirectory() as folder:
        before = os.environ.get(TIKTOKEN)
        # mockllm counts tokens with tiktoken's o200k_base, which it would download
        os.environ[TIKTOKEN] = str(seed_tiktoken_cache(Path(folder) / "tiktoken").parent)
        try:
            [log] = inspect_eval(Task(dataset=MemoryDataset(samples), scorer=replay(), epochs=Epochs(count, reducer)),
                                 model="mockllm/model", log_dir=folder, display="none")
        finally:
            if before is None:
                del os.environ[TIKTOKEN]
            else:
                os.environ[TIKTOKEN] = before
    assert log.status == "success" and log.results is not None, log.error
    return {name: metric.value for score in log.results.scores for name, metric in score.metrics.items()}


def assert_agreeing_epochs_change_nothing(metrics: Sequence[Metric], scores: Sequence[Value], *, epochs: int = 3,
                                          reducers: Sequence[str] = ("mean", "median", "mode", "max"),
                                          metadata: Sequence[Mapping[str, Any]] | None = None) -> None:
    """`epochs` equal epochs of each score give, under each of `reducers`, the metrics of one epoch."""
    alone = run_metrics(metrics, [[score] for score in scores], metadata=metadata)
    for reducer in reducers:
        repeated = run_metrics(metrics, [[score] * epochs for score in scores], reducer=reducer, metadata=metadata)
        assert repeated == alone, reducer
