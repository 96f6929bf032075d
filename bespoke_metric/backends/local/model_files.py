"""Where a model's files are: a local folder, the Hub cache, or the Hub itself, decided in seconds.

Loaders (`transformers`, `sentence-transformers`) retry an unreachable Hub for a minute before they
fail with a long traceback. Every model this package loads by name goes through `locate_model` first:
a local folder or a cached snapshot is used as it is; otherwise one short request asks the Hub, and a
model that is neither here nor reachable (offline, or a misspelt name) is a `ModelNotFoundError` with
one sentence saying which.

A GGUF file (llama.cpp's single-file format) is named by its path, `folder/model.Q4_1.gguf` or, on the
Hub, `owner/repo/model.Q4_1.gguf`: `locate_model_files` finds its folder and names the file, which
`transformers` reads (`from_pretrained(folder, gguf_file=...)`, dequantised to a torch model) with the
`gguf` and `accelerate` packages (`pip install 'bespoke-eval[gguf]'`), once: `gguf_cache` keeps what it
read as Hugging Face folders for every later load.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bespoke_dataset.errors import UserError, did_you_mean

HUB_TIMEOUT_S = 10.0
"""How long the one request asking the Hub about a model may take."""
GGUF_SUFFIX = ".gguf"
GGUF_PACKAGES = ("gguf", "accelerate")
"""What `transformers` needs to read a GGUF file."""


class ModelNotFoundError(UserError):
    """A model that cannot be had: not a local folder, not in the Hub cache, and not downloadable."""


def locate_model(
    name: str | os.PathLike[str], revision: str | None = None, *, allow_patterns: Sequence[str] | None = None
) -> str:
    """A local folder holding the model `name` (a folder, or a Hub id found in or downloaded to the cache).
    `allow_patterns` limits a download to the files that match (e.g. a tokenizer's, not the weights).

    Raises `ModelNotFoundError` naming the model and the reason: the Hub cannot be reached and the cache
    does not hold it, or the Hub has no such model."""
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import (
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    path = Path(os.fspath(name)).expanduser()
    if path.is_dir():
        return str(path)
    text = os.fspath(name)
    if text.startswith((".", "/", "~")) or text.count("/") > 1:
        raise ModelNotFoundError(f"model folder {text} does not exist")
    # A Hub id is ORG/NAME (bar a few old ones, `gpt2`): a bare name is as likely a folder, misspelt
    # when one of a close name is there.
    folder = "/" not in text
    close = _close_folder(path) if folder else None
    if close is not None:
        raise ModelNotFoundError(f"no such folder {text} (did you mean {close}?)")
    try:
        return snapshot_download(text, revision=revision, local_files_only=True)
    except (LocalEntryNotFoundError, ValueError, OSError):
        pass  # not cached: ask the Hub below
    neither = f"no such folder {text}, and no model {text} in the local Hub cache" if folder else None
    cached = did_you_mean(text, cached_model_ids(), cutoff=0.8)  # a misspelt Hub id of a model that is here
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise ModelNotFoundError(f"{neither} (HF_HUB_OFFLINE is set){cached}" if neither else
                                 f"model {text} is not in the local Hub cache and HF_HUB_OFFLINE is set{cached}")
    try:
        HfApi().model_info(text, revision=revision, timeout=HUB_TIMEOUT_S)
    except (RepositoryNotFoundError, RevisionNotFoundError):
        at = f" at revision {revision}" if revision else ""
        raise ModelNotFoundError(f"no such folder {text}, nor a model named {text}{at} on the Hub{cached}" if folder else
                                 f"no model named {text}{at} on the Hub (nor in the local cache){cached}") from None
    except Exception as error:  # DNS, refused connection, timeout, proxy: the Hub is out of reach
        reason = str(error).splitlines()[0][:120] if str(error) else type(error).__name__
        raise ModelNotFoundError(f"{neither}; the Hub cannot be reached ({reason}){cached}" if neither else
                                 f"model {text} is not in the local Hub cache and the Hub cannot be reached ({reason}){cached}"
                                 ) from None
    return snapshot_download(text, revision=revision, allow_patterns=list(allow_patterns) if allow_patterns else None)


def cached_model_ids() -> list[str]:
    """The Hub ids of the models in the local Hub cache (its `models--ORG--NAME` folders)."""
    from huggingface_hub import constants

    try:
        names = os.listdir(constants.HF_HUB_CACHE)
    except OSError:
        return []
    return [name.removeprefix("models--").replace("--", "/") for name in names if name.startswith("models--")]


def _close_folder(path: Path) -> str | None:
    """A folder beside `path` whose name is close to its name (`tiny-model` for `tiny-modle`), if any."""
    parent = path.parent
    try:
        names = [entry.name for entry in parent.iterdir() if entry.is_dir()]
    except OSError:
        return None
    match = difflib.get_close_matches(path.name, names, n=1, cutoff=0.8)
    return str(parent / match[0]) if match else None


@contextmanager
def loading_bar_on_terminal() -> Iterator[None]:
    """While a model loads: `transformers`' loading bars ("Loading weights", and the GGUF conversion's
    "Converting and de-quantizing GGUF tensors") only where stderr is a terminal, as every bar of this
    package (`calls.progress`), and only when transformers' bars are on (`bespoke` turns them off without
    `-v`: `calls.progress.quiet_library_bars`); it would draw them into a pipe or a log file as well."""
    import transformers
    import transformers.modeling_gguf_pytorch_utils as gguf_reading

    bars = transformers.utils.logging
    hidden = bars.is_progress_bar_enabled() and not sys.stderr.isatty()
    if hidden:
        bars.disable_progress_bar()
    # the GGUF reader draws its bar with a bare tqdm: routed through transformers' switch while a model loads
    bare, gguf_reading.tqdm = gguf_reading.tqdm, bars.tqdm
    try:
        yield
    finally:
        gguf_reading.tqdm = bare
        if hidden:
            bars.enable_progress_bar()


@dataclass(frozen=True)
class ModelFiles:
    """Where a model's files are: a folder, and the GGUF file in it when the model is one."""

    folder: str
    gguf_file: str | None = None
    """The file's name in `folder`; `gguf_cache` says which folders `from_pretrained` reads."""


def is_gguf(name: str | os.PathLike[str]) -> bool:
    """Whether a model name is a GGUF file (`folder/model.gguf`, `owner/repo/model.gguf`)."""
    return os.fspath(name).lower().endswith(GGUF_SUFFIX)


def locate_model_files(
    name: str | os.PathLike[str], revision: str | None = None, *, allow_patterns: Sequence[str] | None = None
) -> ModelFiles:
    """The files of the model `name`: a folder or Hub id as `locate_model` finds it, or a GGUF file (a local
    path, or `owner/repo/FILE.gguf` on the Hub: only that file is downloaded).

    Raises `ModelNotFoundError` for a GGUF file that is not there, or when the packages that read it are
    not installed."""
    if not is_gguf(name):
        return ModelFiles(locate_model(name, revision, allow_patterns=allow_patterns))
    missing = [package for package in GGUF_PACKAGES if importlib.util.find_spec(package) is None]
    if missing:
        raise ModelNotFoundError(f"reading the GGUF file {os.fspath(name)} needs {' and '.join(missing)}: "
                                 "pip install 'bespoke-eval[gguf]'")
    path = Path(os.fspath(name)).expanduser()
    if path.is_file():
        return ModelFiles(str(path.parent), path.name)
    repo, _, file = os.fspath(name).rpartition("/")
    on_hub = repo.count("/") == 1 and not repo.startswith((".", "/", "~")) and not Path(repo).exists()
    if not on_hub:
        raise ModelNotFoundError(f"no such GGUF file: {os.fspath(name)}")
    folder = locate_model(repo, revision, allow_patterns=[file])
    if not (Path(folder) / file).is_file():
        raise ModelNotFoundError(f"the Hub model {repo} has no file {file}")
    return ModelFiles(folder, file)
