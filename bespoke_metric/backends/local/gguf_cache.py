"""A GGUF file is read once: its first load keeps what transformers read as Hugging Face folders in the
project's cache, and every later load reads those.

transformers reads a GGUF file slowly, and every time: it rebuilds the tokenizer from the file's vocabulary
and dequantises the weights (SmolLM2-135M: some 20 s on two cores, where the same model from a folder of
safetensors loads in a second or two). So the first load saves them under
`$BESPOKE_CACHE/gguf/<sha256 of the file>/<readers>/` (`bespoke_dataset.source.default_cache_dir`):
`tokenizer/` (the tokenizer with its chat template and special tokens), and a folder per dtype, `float32/`
or `bfloat16/` (config, generation config and safetensors weights, dequantised in that dtype as a load of
the file in it gives them). Keyed by the file's content, a changed file at the same path is read anew;
`<readers>` names the transformers and gguf versions that read it, so an upgrade reads it anew too.

Each folder is saved into a temporary folder beside it, its manifest (the files and their sizes) last, and
renamed into place: a process killed while saving, or two saving at once, never leave a half folder where a
load reads. A folder without a manifest, or whose files disagree with it, is ignored, and replaced by the
next load's. A killed save leaves a `.<name>.*` temporary folder, which no load reads.

An engine that reads one Hugging Face folder and no GGUF file (vLLM reads GGUF only for some architectures)
is given `serving_folder`: `served-<dtype>/` beside the others, links to the tokenizer's and the weights'
files in one folder, made once the same way.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bespoke_dataset.source import default_cache_dir

from .model_files import ModelFiles, loading_bar_on_terminal

log = logging.getLogger(__name__)

CACHE_KIND = "gguf"
"""The `default_cache_dir` kind of GGUF conversions: ``$BESPOKE_CACHE/gguf`` (``~/.cache/bespoke/gguf``)."""
TOKENIZER = "tokenizer"
MANIFEST = "bespoke-manifest.json"
"""Saved last into a converted folder: the GGUF file's name, and every other file with its size."""


def load_tokenizer(files: ModelFiles, *, trust_remote_code: bool = False) -> Any:
    """`AutoTokenizer.from_pretrained` of the model `files`; of a GGUF file, from its conversion (this load's,
    saved for the next, when the cache has none)."""
    from transformers import AutoTokenizer

    return _load(files, TOKENIZER, "tokenizer", lambda folder, more: AutoTokenizer.from_pretrained(
        folder, trust_remote_code=trust_remote_code, **more))


def load_causal_lm(files: ModelFiles, dtype: str, *, trust_remote_code: bool = False,
                   attn_implementation: str | None = None) -> Any:
    """`AutoModelForCausalLM.from_pretrained` of the model `files` in `dtype` (a torch dtype's name), its
    attention `attn_implementation` where given, its loading bar on a terminal only; of a GGUF file, from its conversion in that dtype (this
    load's, saved for the next, when the cache has none)."""
    import torch
    import transformers

    def read(folder: str | Path, more: dict[str, Any]) -> Any:
        with loading_bar_on_terminal():
            attention = {"attn_implementation": attn_implementation} if attn_implementation else {}
            return transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype),
                                                                     trust_remote_code=trust_remote_code, **attention, **more)

    # transformers 5 may keep a GGUF file's weights in their blocks (where a kernel computes with them), which
    # a folder of plain weights cannot hold; earlier versions always dequantise.
    packed = getattr(transformers, "GgufConfig", None)
    dequantised = {"quantization_config": packed(dequantize=True)} if packed is not None else {}
    return _load(files, dtype, f"{dtype} weights", read, dequantised)


def conversions_folder(gguf: Path) -> Path:
    """Where the conversions of the GGUF file `gguf` are: `$BESPOKE_CACHE/gguf/<sha256>/<readers>`."""
    with gguf.open("rb") as file:
        digest = hashlib.file_digest(file, "sha256").hexdigest()
    readers = "-".join(f"{package}-{importlib.metadata.version(package)}" for package in ("transformers", "gguf"))
    return default_cache_dir(CACHE_KIND) / digest / readers


def _load(files: ModelFiles, part: str, what: str, read: Callable[[str | Path, dict[str, Any]], Any],
          gguf_options: dict[str, Any] | None = None) -> Any:
    """`read(folder, more)` of the model's folder; of a GGUF file, of the folder `part` of its conversions,
    or when that is not complete, of the file itself (`more` naming it), saved there for the next load."""
    if files.gguf_file is None:
        return read(files.folder, {})
    gguf = Path(files.folder, files.gguf_file)
    folder = conversions_folder(gguf) / part
    if _complete(folder):
        return read(folder, {})
    log.info("converting the %s of %s into %s, once: later loads read it there", what, gguf.name, folder)
    with loading_bar_on_terminal():  # the conversion's bar too, the tokenizer's included
        loaded = read(files.folder, {"gguf_file": files.gguf_file, **(gguf_options or {})})
    try:
        _save(loaded, gguf, folder)
    except OSError as error:  # a cache that cannot be written costs the next load its time, not this one its model
        log.warning("cannot keep the %s of %s in %s (%s): the next load reads the GGUF file again", what, gguf.name,
                    folder, error)
    return loaded


def serving_folder(files: ModelFiles, dtype: str = "float32") -> Path:
    """One Hugging Face folder holding the model `files` whole (tokenizer, config and weights in `dtype`),
    for an engine that reads a folder: the model's own folder, or for a GGUF file `served-<dtype>/` in its
    conversions, links to the files of `tokenizer/` and `<dtype>/` (converted first where missing)."""
    if files.gguf_file is None:
        return Path(files.folder)
    gguf = Path(files.folder, files.gguf_file)
    conversions = conversions_folder(gguf)
    folder = conversions / f"served-{dtype}"
    if _complete(folder):
        return folder
    parts = [conversions / TOKENIZER, conversions / dtype]
    if not all(_complete(part) for part in parts):
        load_tokenizer(files)
        load_causal_lm(files, dtype)
    if not all(_complete(part) for part in parts):  # the cache could not be written: the loads said why
        raise OSError(f"cannot convert {gguf.name} into {conversions}")

    def link(partial: Path) -> None:
        for part in parts:  # the weights' config.json wins over the tokenizer's copy of it, if any
            for path in sorted(part.iterdir()):
                if path.is_file() and path.name != MANIFEST:
                    target = partial / path.name
                    target.unlink(missing_ok=True)
                    target.symlink_to(path)

    _write_folder(link, gguf, folder)
    return folder


def _save(loaded: Any, gguf: Path, folder: Path) -> None:
    """`loaded.save_pretrained` into `folder`, whole or not at all."""
    _write_folder(loaded.save_pretrained, gguf, folder)


def _write_folder(write: Callable[[Path], Any], gguf: Path, folder: Path) -> None:
    """`write(partial)` into a temporary folder beside `folder`, its manifest last, renamed into place: whole
    or not at all."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        write(partial)
        manifest = {"gguf": gguf.name, "files": _sizes(partial)}
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        if folder.exists() and not _complete(folder):  # a broken entry (copied in part, files removed)
            shutil.rmtree(folder, ignore_errors=True)
        try:
            partial.rename(folder)
        except OSError:
            if not _complete(folder):  # anything but another process having put its conversion there first
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _complete(folder: Path) -> bool:
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("files") == _sizes(folder)


def _sizes(folder: Path) -> dict[str, int]:
    """Every file under `folder` but the manifest, with its size."""
    return {path.relative_to(folder).as_posix(): path.stat().st_size
            for path in sorted(folder.rglob("*")) if path.is_file() and path.name != MANIFEST}
