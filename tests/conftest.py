
# --- backends helper: an OpenAI-compatible server and a tiny causal LM -------------------------------
import os as _os

import pytest as _pytest

# Ray must advertise 127.0.0.1 here (traffic may only go to the loopback); set before any Ray starts.
# A test-and-CI setting: users' clusters advertise their real addresses.
_os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"


# --- markers: the quick loop is `python -m pytest -m "not slow"` (docs/contributing.md) ---------------
SLOW = frozenset({
})
"""The tests (`file::name`, parameters left out) that make the bulk of the suite's time, each over ~5 s,
most of them running `bespoke` or a server in subprocesses. Measured with `python -m pytest FILE
--durations=0`, file by file, on the shared 2-core machine under load (2026-12-01), compared by their
relative durations."""
BROWSER_CALLS = frozenset({"chromium", "dump_dom", "screenshot"})
"""The names of `bespoke_metric.testing.browser` that start Chromium."""


def _names_in(code) -> set[str]:
    """The global and attribute names a function's code (its nested functions included) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _names_in(const)
    return names


def _drives_chromium(item) -> bool:
    functions = [item.function, *(defs[-1].func for defs in item._fixtureinfo.name2fixturedefs.values())]
    return any(BROWSER_CALLS & _names_in(function.__code__) for function in functions if hasattr(function, "__code__"))


def pytest_collection_modifyitems(config, items):
    """`ray`: a test on the session's Ray cluster or in a test_ray*.py file; `browser`: a test that drives
    Chromium (itself or through a fixture); `slow`: those, and the tests named in SLOW."""
    for item in items:
        ray = "ray_cluster" in item.fixturenames or item.path.name.startswith("test_ray")
        browser = _drives_chromium(item)
        if ray:
            item.add_marker(_pytest.mark.ray)
        if browser:
            item.add_marker(_pytest.mark.browser)
        if ray or browser or item.nodeid.split("[", 1)[0].removeprefix("tests/") in SLOW:
            item.add_marker(_pytest.mark.slow)


@_pytest.fixture
def openai_server():
    """A fresh OpenAI-compatible test server on 127.0.0.1 (answers "ok"; reconfigure its attributes:
    `responder`, `latency`, `faults`, `rule`); inspect `.calls`, `.requests`, `.max_in_flight`."""
    from bespoke_metric.testing.server import serve

    with serve() as server:
        yield server


@_pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny random Llama with a BPE tokenizer and chat template, built once per test session."""
    from bespoke_metric.testing.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model") / "model")


@_pytest.fixture(scope="session")
def ray_cluster():
    """The session's one Ray instance: a simulated two-node cluster (a head and a worker node, one CPU
    each, on this machine), with this process connected as the driver. Ray starts slowly on 2 cores, so
    every Ray test shares it; a subprocess joins it with `--ray-address cluster.address`."""
    import ray
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "object_store_memory": 200 * 1024**2}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    cluster.add_node(**node)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="WARNING")
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


# --- data helper: synthetic releases (each folder holds synthetic_truth.json with the planted facts) ---
@_pytest.fixture(scope="session")
def synthetic_hub(tmp_path_factory):
    """A small synthetic release in the Hub layout: 4 users x 5 queries, 60 sessions, 5 shots + 2 meta-test
    responses per query. Returns its folder (a Path)."""
    from bespoke_dataset.synthetic import write_release

    return write_release(tmp_path_factory.mktemp("synthetic") / "hub", users=4, sessions=60, seed=1)


@_pytest.fixture(scope="session")
def synthetic_github(tmp_path_factory):
    """The same content as `synthetic_hub` (same seed) in the official GitHub per-user file layout."""
    from bespoke_dataset.synthetic import write_release

    return write_release(tmp_path_factory.mktemp("synthetic") / "github", users=4, sessions=60, seed=1,
                         layout="github")


@_pytest.fixture(scope="session")
def synthetic_full(tmp_path_factory):
    """A full-size synthetic release in the Hub layout: 30 users, 2,870 sessions, 150 queries."""
    from bespoke_dataset.synthetic import write_release

    return write_release(tmp_path_factory.mktemp("synthetic") / "full")


# --- meta-eval/leaderboard helper: synthetic results files -------------------------------------------
@_pytest.fixture
def make_results():
    """`make_results(values, system=..., judge=..., users=...)` -> a results dict in the contract's format.

    `values` is `(n_items, 5)`: four 1-5 scores and a recall fraction per item; None (or NaN) marks a
    failed judgment, recorded as an error. Items are users `user1..` with query ids `1..`, five per user."""
    import math

    import numpy as np

    from bespoke_metric.results.aggregation import summarize
    from bespoke_dataset.vocabulary import DIMENSIONS
    from bespoke_metric.results.metrics import METRIC_NAMES as METRICS
    from bespoke_metric.results import ItemResult

    def build(values, *, system="system", judge=None, data=None, proxy=False):
        judge_block = dict(judge or {"spec": "openai:gpt-5", "backend": "openai", "model": "gpt-5", "protocol_version": "1"})
        judge_block["proxy"] = proxy
        items = []
        for index, row in enumerate(np.asarray(values, dtype=object)):
            missing = [m for m, v in zip(METRICS, row) if v is None or (isinstance(v, float) and math.isnan(v))]
            item = ItemResult(f"user{index // 5 + 1}", str(index % 5 + 1))
            for dimension, value in zip(DIMENSIONS, row):
                item.scores[dimension] = None if dimension in missing else int(value)
            item.recall = None if "recall" in missing else float(row[-1])
            item.errors = [{"metric": m, "reason": "planted failure"} for m in missing]
            items.append(item)
        return {
            "summary": summarize(items),
            "items": [item.to_json() for item in items],
            "judge": judge_block,
            "data": dict(data or {"source": "synthetic", "revision": None, "fingerprint": "f" * 16}),
            "system": {"name": system},
            "usage": {"calls": 0, "cached": 0, "failed": 0, "input_tokens": 0, "output_tokens": 0, "wall_seconds": 0.0},
            "created": "2026-01-02T03:04:05+00:00",
            "bespoke_eval_version": "test",
        }

    return build
