"""BESPOKE's Hub Spaces, written from package data (`space_files/`), so that an installed wheel writes
them from any directory:

- the metric Space: the `evaluate` module script `DIR/<name>.py` (named after its folder, as `evaluate`
  finds it) holding the documented examples, the Space card with the metric card's sections, `app.py`
  (a demo: pick a query, paste a response, pick a judge) and `requirements.txt` pinning this package;
- the leaderboard Space: `app.py` ranking the results files it ships in `results/` (or reads from a Hub
  dataset repo), its card and `requirements.txt`.

Writing keeps whatever else the folder holds (`.git`, other files); files of ours that were not written
here are replaced only when forced. Pushing creates the Space (Gradio SDK) and uploads the folder.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Mapping

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_dataset.atomic import FolderOwner, atomic_entries
from bespoke_dataset.errors import UserError
from bespoke_dataset.registration import CITATION
from bespoke_dataset.source import is_repo_id
from bespoke_dataset.version import __version__
from bespoke_metric.analysis.leaderboard import LeaderboardError, build_leaderboard, gather_results

from .eval_results import REPO_ID

SPACE_FILES = Path(__file__).parent / "space_files"
GRADIO_SDK_VERSION = "6.31.0"
"""The Gradio release the Space apps are tested with (the Space card's `sdk_version`)."""
MARKER = "written by `bespoke space`: rewrite it with the command, not by hand"
"""The card's comment that marks a folder this module wrote (and may therefore rewrite)."""
RESULTS_DIR = "results"
"""Where a leaderboard Space keeps the results files it ranks."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


class SpaceError(UserError):
    """A Space that cannot be written as asked; the message names the flag or file at fault."""


def render(template: str, values: Mapping[str, str]) -> str:
    """A template of `space_files/` with its `{{name}}` placeholders filled."""
    text = (SPACE_FILES / template).read_text(encoding="utf-8")
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", value)
    return text


def _common(dataset: str = DEFAULT_SOURCE) -> dict[str, str]:
    if __version__ == "0.0.0":
        raise SpaceError("bespoke-eval is not installed (run from a source tree): a Space cannot pin its version; pip install it first")
    return {"version": __version__, "sdk_version": GRADIO_SDK_VERSION, "marker": MARKER, "dataset": dataset,
            "source": DEFAULT_SOURCE, "citation": CITATION}


def space_name(out: str | os.PathLike[str], repo: str | None) -> str:
    """The module's name: the folder's, which must be the Space's name when pushing (`evaluate.load`
    fetches `<name>.py` from the Space `ORG/<name>`)."""
    name = Path(out).resolve().name
    if not _NAME.match(name):
        raise SpaceError(f"--out {out}: the folder's name {name!r} names the module; use letters, digits, '_' and '-'")
    if repo is not None:
        if not REPO_ID.match(repo):
            raise SpaceError(f"--push-to-hub must be a Space id ORG/NAME, got {repo!r}")
        if repo.split("/")[1] != name:
            raise SpaceError(f"--out folder {name!r} must be named as the Space {repo!r}: evaluate loads {repo} by "
                             f"fetching {repo.split('/')[1]}.py from it")
    return name


def metric_space_files(name: str, repo: str | None = None) -> dict[str, str]:
    """`{file: text}` of the metric Space whose module is `name` (the folder's name)."""
    values = {**_common(), "name": name, "repo": repo or f"<org>/{name}"}
    return {
        f"{name}.py": render("metric/script.py.tmpl", values),
        "README.md": render("metric/README.md.tmpl", values),
        "app.py": render("metric/app.py.tmpl", values),
        "requirements.txt": render("metric/requirements.txt.tmpl", values),
    }


def leaderboard_results(source: str | os.PathLike[str], *, allow_proxy: bool = False) -> tuple[dict[str, Path] | str, list[str]]:
    """The results a leaderboard Space ranks, and a note for each file of the folder left out: `{path under
    results/: file}` for a local folder (its results files, each checked as the board will read it; run
    files, a sweep's summary and copies are left out, `leaderboard.gather_results`), or the id of a Hub
    dataset repo of them (no notes)."""
    folder = Path(source)
    if not folder.is_dir():
        if is_repo_id(os.fspath(source)):
            return os.fspath(source), []
        raise SpaceError(f"--results {source}: neither a folder nor a Hub dataset repo id ORG/NAME")
    try:
        gathered = gather_results(sorted(path for path in folder.rglob("*.json") if path.is_file()))
        if not gathered.entries:
            raise SpaceError(f"--results {source}: no results file (*.json written by `bespoke score` or `bespoke run`) in it")
        build_leaderboard(gathered.entries, allow_proxy=allow_proxy, n_resamples=10)
    except LeaderboardError as error:
        raise SpaceError(f"--results {source}: {error}") from None
    files = [Path(entry.path) for entry in gathered.entries]
    return {path.relative_to(folder).as_posix(): path for path in files}, gathered.notes


def leaderboard_space_files(results: dict[str, Path] | str, *, allow_proxy: bool = False) -> dict[str, str]:
    """`{file: text}` of the leaderboard Space: shipped results under `results/`, or a Hub repo's id."""
    local = isinstance(results, dict)
    values = {
        **_common(),
        "results": f'Path(__file__).with_name("{RESULTS_DIR}")' if local else json.dumps(results),
        "allow_proxy": str(bool(allow_proxy)),
        "results_origin": (f"the {len(results)} results files in `{RESULTS_DIR}/`" if local else
                           f"the Hub dataset repo [`{results}`](https://huggingface.co/datasets/{results})"),
    }
    files = {name: render(f"leaderboard/{name}.tmpl", values) for name in ("app.py", "README.md", "requirements.txt")}
    if local:
        files.update({f"{RESULTS_DIR}/{path}": source.read_text(encoding="utf-8") for path, source in results.items()})
    return files


def _holds_space(folder: Path) -> bool:
    card = folder / "README.md"
    return card.is_file() and MARKER in card.read_text(encoding="utf-8", errors="replace")


SPACE = FolderOwner("a Space written by `bespoke space` (its README.md carries the marker)", _holds_space)
"""A folder this module wrote: it may write into it again."""


def write_space(files: Mapping[str, str], out: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write `files` into `out`, each top-level entry replaced atomically, everything else kept (`.git`).
    A non-empty folder this module did not write is refused unless `force` (the one rule of every
    command that writes a folder: `bespoke_dataset.atomic.check_folder`)."""
    target = Path(out)
    with atomic_entries(target, SPACE, force=force) as tmp:
        for name, text in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return target


def push_space(out: str | os.PathLike[str], repo: str, *, token: str | None = None, private: bool = False) -> str:
    """Create the Space `repo` (Gradio SDK) if needed and upload the folder; returns the commit URL."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo, repo_type="space", space_sdk="gradio", exist_ok=True, private=private)
    commit = api.upload_folder(folder_path=os.fspath(out), repo_id=repo, repo_type="space",
                               commit_message=f"BESPOKE Space (bespoke-eval {__version__})")
    return str(commit.commit_url if hasattr(commit, "commit_url") else commit)
