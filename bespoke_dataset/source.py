"""Where the data comes from: a Hub repo id, a local folder in either layout, or the bundled sample.

`resolve_source` turns a source into a local folder (downloading Hub repos with `huggingface_hub`, which
caches them) and a content fingerprint that results files record as the data revision.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .errors import BespokeDataError, UserError, did_you_mean
from .reading.raw import TABLES, Layout, data_file, detect_layout, table_files, typed_files

DEFAULT_SOURCE = "yonsei-dli/BESPOKE"
"""The public release on the Hugging Face Hub."""
SAMPLE = "sample"
SAMPLE_DIR = Path(__file__).parent / "sample"
_REPO_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
REPO_ID = re.compile(rf"^(?!.*(?:--|\.\.))(?!.*\.git$){_REPO_PART}/{_REPO_PART}$")
"""A Hub repo id, `ORG/NAME`, as the Hub allows it: each part 1 to 96 of `A-Z a-z 0-9 _ - .`, neither starting
nor ending with `-` or `.`, no `--` or `..`, not ending in `.git` (the Hub's own refusal of a name says so;
huggingface_hub's `validate_repo_id` checks the same). `org/_x` is one; `org/-x`, `org/x.` and `o/a--b` are not."""
COMMIT = re.compile(r"^[0-9a-f]{40}$")
"""A Hub revision that is a commit: 40 hexadecimal digits."""
SYNTHETIC_MARKER = "SYNTHETIC.md"
"""The file `bespoke_dataset.synthetic` writes into every synthetic release (and `export` copies into an
export of one)."""
HUB_PATTERNS = [f"{t.folder}/*.parquet" for t in TABLES.values()] + [data_file("*"), "README.md", SYNTHETIC_MARKER]
"""What a Hub source downloads: the raw tables, or an export's config files, and the card."""
CACHE_ENV = "BESPOKE_CACHE"


def default_cache_dir(kind: str | None = None) -> Path:
    """The project's cache folder, the one place that decides it: ``$BESPOKE_CACHE`` if set, else
    ``$XDG_CACHE_HOME/bespoke`` (``~/.cache/bespoke`` when XDG_CACHE_HOME is unset); with `kind`, its
    subfolder for that kind of data (``"datasets"`` for built configs, e.g. ``"embeddings"`` for vectors)."""
    root = os.environ.get(CACHE_ENV)
    if root:
        base = Path(root).expanduser()
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "bespoke"
    return base / kind if kind else base


@dataclass(frozen=True)
class ResolvedSource:
    source: str
    """As the user gave it."""
    path: Path
    layout: Layout
    revision: str | None
    """The Hub commit for Hub sources, None for local folders."""
    fingerprint: str
    """SHA-256 of the release's table files (paths and contents): equal data, equal fingerprint."""

    @property
    def synthetic(self) -> bool:
        """Whether this is a synthetic release (`bespoke_dataset.synthetic` wrote it, with its marker file)."""
        return (self.path / SYNTHETIC_MARKER).is_file()

    def record(self) -> dict[str, Any]:
        """What a results file stores about the data (`{"source", "revision", "fingerprint"}`)."""
        return {"source": self.source, "revision": self.revision, "fingerprint": self.fingerprint}


def is_repo_id(source: str) -> bool:
    """Whether `source` names a Hub repo (`REPO_ID`) and no local path of that name exists."""
    return bool(REPO_ID.match(source)) and not Path(source).exists()


def download(repo_id: str, revision: str | None = None, cache_dir: str | Path | None = None) -> Path:
    """The local snapshot of a Hub dataset repo (tables and card only), downloaded once and cached."""
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo_id=repo_id, repo_type="dataset", revision=revision,
                                  cache_dir=None if cache_dir is None else str(cache_dir),
                                  allow_patterns=HUB_PATTERNS))


def _download_or_explain(repo_id: str, revision: str | None, cache_dir: str | Path | None) -> Path:
    """`download`, except that a repo the Hub does not know, or a Hub that cannot be reached (offline, no
    cached copy), raises a BespokeDataError saying that `repo_id` was also not found as a local folder: a
    mistyped local path such as ``data/bespoke`` looks like a repo id."""
    from huggingface_hub.utils import (  # also where huggingface_hub<0.25 keeps them
        GatedRepoError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
    )

    try:
        return download(repo_id, revision, cache_dir)
    except GatedRepoError:
        raise  # the repo exists; its own message says how to get access
    except (RepositoryNotFoundError, LocalEntryNotFoundError, OfflineModeIsEnabled) as error:
        raise BespokeDataError(repo_id, "no such local folder, and no Hub dataset repo of that name could be "
                                        "reached") from error


def content_fingerprint(path: Path, layout: Layout) -> str:
    """SHA-256 over each table file's (an export's: each config file's) relative path and bytes, in a fixed order."""
    digest = hashlib.sha256(layout.encode())
    files = typed_files(path) if layout == "typed" else [f for table in TABLES for f in table_files(path, layout, table)]
    for file in files:
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def source_kind(source: str) -> Literal["sample", "local", "hub"] | None:
    """How `resolve_source` finds `source`: the bundled sample, a local path that exists, or a Hub repo id;
    None for none of these. Nothing is read or downloaded."""
    if source == SAMPLE:
        return "sample"
    if Path(source).exists():
        return "local"
    return "hub" if is_repo_id(source) else None


def resolve_source(source: str | Path = DEFAULT_SOURCE, revision: str | None = None, *,
                   hub_cache_dir: str | Path | None = None) -> ResolvedSource:
    """Find (or download) a release and fingerprint it.

    `source`: ``"sample"`` (bundled synthetic sample), a local folder (Hub or GitHub layout, or an export:
    detected), or a
    Hub dataset repo id such as ``"yonsei-dli/BESPOKE"``. `revision` (branch, tag or commit) applies to Hub
    repos only.
    """
    text = str(source)
    kind = source_kind(text)
    if kind == "sample":
        path, hub_revision = SAMPLE_DIR, None
    elif kind == "local":
        path, hub_revision = Path(text), None
    elif kind == "hub":
        path = _download_or_explain(text, revision, hub_cache_dir)
        hub_revision = path.name if COMMIT.match(path.name) else revision
    else:
        raise BespokeDataError(text, f"no such folder, and not a Hub repo id like 'yonsei-dli/BESPOKE'{did_you_mean(text, [SAMPLE])}")
    if revision is not None and hub_revision is None:
        raise UserError(f"revision={revision!r} applies to Hub repos only, not to the local source {text!r}")
    path = path.resolve()
    layout = detect_layout(path)
    return ResolvedSource(text, path, layout, hub_revision, content_fingerprint(path, layout))


def fingerprint(source: str | Path = DEFAULT_SOURCE, revision: str | None = None) -> str:
    """The content fingerprint of a source (see `ResolvedSource.fingerprint`)."""
    return resolve_source(source, revision).fingerprint
