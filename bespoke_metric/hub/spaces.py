"""BESPOKE's Hub Spaces, written from package data (`space_files/`), so that an installed wheel writes
them from any directory:

- the metric Space: the `evaluate` module script `DIR/<name>.py` (named after its folder, as `evaluate`
  finds it) holding the documented examples, the Space card with the metric card's sections, `app.py`
  (a demo: pick a query, paste a response, pick a judge) and `requirements.txt`;
- the leaderboard Space: `app.py` ranking the results files it ships in `results/` (or reads from a Hub
  dataset repo), its card and `requirements.txt`.

Where a Space gets this package (`SpacePackage`, `--package-from`): by default (`auto`) its own wheel, built
from the source tree and written beside `app.py`, so a Space builds with no release on the package registry;
from an installed package (no source tree), the release of the version installed, from the registry.
The Space's build installs `requirements.txt` before it copies the folder (its Dockerfile mounts that file
alone), so a wheel in the folder cannot be named there: `requirements.txt` lists the package's
dependencies and `app.py` installs the wheel at start. Or a VCS requirement (`git+https://...@TAG`), or
the registry's release of this version.

Writing keeps whatever else the folder holds (`.git`, other files); files of ours that were not written
here are replaced only when forced. Pushing creates the Space (Gradio SDK) and uploads the folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_dataset.atomic import FolderOwner, atomic_entries
from bespoke_dataset.errors import UserError
from bespoke_dataset.registration import CITATION
from bespoke_dataset.source import REPO_ID, is_repo_id
from bespoke_dataset.version import __version__
from bespoke_metric.analysis.leaderboard import LeaderboardError, build_leaderboard, gather_results, proxy_refusal

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


PACKAGE_NAME = "bespoke-eval"
WHEEL = f"bespoke_eval-{__version__}-py3-none-any.whl"
"""The file name of this version's wheel (pure Python, any platform)."""
PACKAGE_SOURCES = ("auto", "wheel", "registry")
"""What `--package-from` takes besides a VCS URL; `auto`, the default, is `wheel` from a source tree, else
`registry`."""
VCS_PREFIXES = ("git+", "hg+", "svn+", "bzr+")
"""How a VCS URL that pip installs from begins (`git+https://host/org/bespoke-eval@v0.4.1`)."""


@dataclass(frozen=True)
class SpacePackage:
    """Where a Space, and a user loading its module, get bespoke-eval: `wheel` (this version's wheel, written
    beside `app.py`: `wheel_file`), `registry` (the release on the package registry), or a VCS URL."""

    source: str
    wheel_file: Path | None = None
    """The built wheel (`wheel` only), copied into the Space."""
    why: str = ""
    """Why `auto` chose this source (said by `describe`)."""

    def describe(self) -> str:
        """The line `bespoke space` says of where the Space gets bespoke-eval."""
        if self.source == "wheel":
            said = f"the wheel of bespoke-eval {__version__}, built from the source tree {SOURCE_TREE}, beside app.py"
        elif self.source == "registry":
            said = f"{PACKAGE_NAME}=={__version__} (the version installed here) from the package registry"
        else:
            said = f"{PACKAGE_NAME} from {self.source}"
        return f"the Space installs {said}" + (f" ({self.why})" if self.why else "")

    def pip_target(self, repo: str) -> str:
        """What `pip install` takes for the package alone: the wheel's address in the Space `repo`, the VCS URL,
        or the registry's `bespoke-eval==VERSION`."""
        if self.source == "wheel":
            return f"https://huggingface.co/spaces/{repo}/resolve/main/{WHEEL}"
        if self.source == "registry":
            return f"{PACKAGE_NAME}=={__version__}"
        return self.source

    def requirement(self, extras: str, repo: str) -> str:
        """The package with `extras` as a requirement (`pip install "..."`, a requirements file)."""
        named = f"{PACKAGE_NAME}[{extras}]"
        return f"{named}=={__version__}" if self.source == "registry" else f"{named} @ {self.pip_target(repo)}"

    def requirements_txt(self, extras: str) -> str:
        """The Space's `requirements.txt`: the package itself from the registry or the VCS URL; with the wheel,
        the dependencies that the wheel declares for `extras` (the wheel is installed by `app.py`)."""
        if self.source != "wheel":
            return self.requirement(extras, "") + "\n"
        assert self.wheel_file is not None
        note = (f"# {PACKAGE_NAME}'s dependencies: the package itself is {WHEEL} beside app.py, which app.py installs\n"
                "# at start (the Space's build installs this file before it copies the folder, so no file of it can be named here)\n")
        return note + "".join(f"{line}\n" for line in wheel_dependencies(self.wheel_file, extras.split(",")))

    def app_install(self) -> str:
        """The lines of `app.py` that install the wheel beside it when the package is not there yet."""
        return render("install_wheel.py.tmpl", {"wheel": WHEEL}) if self.source == "wheel" else ""

    def files(self) -> dict[str, bytes]:
        return {WHEEL: self.wheel_file.read_bytes()} if self.wheel_file is not None else {}


def space_package(source: str, build_dir: str | os.PathLike[str] | None = None) -> SpacePackage:
    """The `SpacePackage` that `--package-from source` names; `wheel` builds this version's wheel into
    `build_dir` (`build_wheel`); `auto` is `wheel` where the package runs from a source tree, else `registry`
    (an installed package). A SpaceError for anything else."""
    if source == "auto":
        if not has_source_tree():
            return SpacePackage("registry", why="an installed package: no source tree to build a wheel from")
        source = "wheel"
    if source == "wheel":
        if build_dir is None:
            raise ValueError("a wheel needs a folder to be built in")
        return SpacePackage(source, build_wheel(Path(build_dir)))
    if source == "registry" or source.startswith(VCS_PREFIXES):
        return SpacePackage(source)
    raise SpaceError(f"--package-from must be {', '.join(PACKAGE_SOURCES[:-1])} or {PACKAGE_SOURCES[-1]}, or a VCS URL such as "
                     f"git+https://host/org/bespoke-eval@v{__version__}; got {source!r}")


SOURCE_TREE = Path(__file__).resolve().parents[2]
"""The source tree this package runs from, when it runs from one (an editable install)."""
_TREE_PARTS = ("setup.cfg", "pyproject.toml", "README.md", "bespoke_dataset", "bespoke_metric", "scripts")


def has_source_tree() -> bool:
    """Whether the package runs from a source tree (an editable install), which a wheel can be built from."""
    return (SOURCE_TREE / "setup.cfg").is_file()


def build_wheel(into: Path) -> Path:
    """Build this version's wheel from the source tree into `into` (a copy of the tree's packaging parts is
    built, so nothing is written in the tree and no stale build output slips in); a SpaceError when there is
    no source tree or the build fails."""
    if not has_source_tree():
        raise SpaceError("--package-from wheel builds bespoke-eval's wheel from its source tree, and this installation "
                         "has none: give --package-from registry (what the default does here), or a VCS URL "
                         "(git+https://...@TAG)")
    with tempfile.TemporaryDirectory(prefix="bespoke-wheel-") as tree:
        for part in _TREE_PARTS:
            source = SOURCE_TREE / part
            if source.is_dir():
                shutil.copytree(source, Path(tree, part), ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(source, Path(tree, part))
        # no build isolation: the build needs no network (setuptools, the test extra's, builds it)
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                               "--wheel-dir", str(into), tree], capture_output=True, text=True)
    wheel = into / WHEEL
    if done.returncode != 0 or not wheel.is_file():
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise SpaceError(f"building the wheel of bespoke-eval {__version__} failed (it needs setuptools>=70.1):\n{tail}")
    return wheel


def wheel_dependencies(wheel: Path, extras: list[str]) -> list[str]:
    """The requirements a wheel declares (its METADATA's Requires-Dist) for `extras`, each as a requirements
    file line: those of no extra as written (markers kept), those of `extras` without their extra marker."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as archive:
        [metadata] = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        lines = archive.read(metadata).decode("utf-8").splitlines()
    found: list[str] = []
    for line in lines:
        if not line.startswith("Requires-Dist:"):
            continue
        requirement = Requirement(line.removeprefix("Requires-Dist:").strip())
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            kept = str(requirement)
        elif any(requirement.marker.evaluate({"extra": extra}) for extra in extras):
            requirement.marker = None
            kept = str(requirement)
        else:
            continue
        if kept not in found:
            found.append(kept)
    return found


def render(template: str, values: Mapping[str, str]) -> str:
    """A template of `space_files/` with its `{{name}}` placeholders filled."""
    text = (SPACE_FILES / template).read_text(encoding="utf-8")
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", value)
    return text


def _common(package: SpacePackage, extras: str, repo: str, dataset: str = DEFAULT_SOURCE) -> dict[str, str]:
    if __version__ == "0.0.0":
        raise SpaceError("bespoke-eval is not installed (run from a source tree): a Space cannot name its version; pip install it first")
    return {"version": __version__, "sdk_version": GRADIO_SDK_VERSION, "marker": MARKER, "dataset": dataset,
            "source": DEFAULT_SOURCE, "citation": CITATION, "requirements": package.requirements_txt(extras),
            "app_install": package.app_install()}


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


def metric_space_files(name: str, repo: str | None = None, *, package: SpacePackage) -> dict[str, str | bytes]:
    """`{file: content}` of the metric Space whose module is `name` (the folder's name), getting bespoke-eval
    from `package` (its wheel among the files, when it is one)."""
    repo = repo or f"<org>/{name}"
    values = {**_common(package, "evaluate,offline", repo), "name": name, "repo": repo,
              "install": package.requirement("evaluate", repo), "pip_target": package.pip_target(repo)}
    return {
        f"{name}.py": render("metric/script.py.tmpl", values),
        "README.md": render("metric/README.md.tmpl", values),
        "app.py": render("metric/app.py.tmpl", values),
        "requirements.txt": values["requirements"],
        **package.files(),
    }


EVALUATE_MISSING = "the BESPOKE metric needs evaluate, which is not installed: pip install 'bespoke-eval[evaluate]'"
"""Said where `evaluate` is needed and missing: importing the metric (`evaluate_metric`), `bespoke space metric`."""


def evaluate_note() -> str | None:
    """A `note:` for a metric Space written where `evaluate` is missing (the Quickstart's extras do not hold it):
    `evaluate.load` of the folder needs it."""
    import importlib.util

    return None if importlib.util.find_spec("evaluate") else f"note: {EVALUATE_MISSING}, before evaluate.load of the folder"


def leaderboard_results(source: str | os.PathLike[str], *, allow_proxy: bool = False,
                        allow_incomplete: bool = False) -> tuple[dict[str, Path] | str, list[str]]:
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
        gathered = gather_results([folder])
        if not gathered.entries:
            raise SpaceError(f"--results {source}: no results file (*.json written by `bespoke score` or `bespoke run`) in it")
        refusal = None if allow_proxy else proxy_refusal(gathered.entries, stand_ins=True)
        if refusal is not None:  # it names each file
            raise SpaceError(refusal)
        build_leaderboard(gathered.entries, allow_proxy=allow_proxy, allow_incomplete=allow_incomplete, n_resamples=10)
    except LeaderboardError as error:
        raise SpaceError(f"--results {source}: {error}") from None
    files = [Path(entry.path) for entry in gathered.entries]
    return {path.relative_to(folder).as_posix(): path for path in files}, gathered.notes


def leaderboard_space_files(results: dict[str, Path] | str, *, package: SpacePackage, allow_proxy: bool = False,
                            allow_incomplete: bool = False) -> dict[str, str | bytes]:
    """`{file: content}` of the leaderboard Space: shipped results under `results/`, or a Hub repo's id;
    bespoke-eval from `package`."""
    local = isinstance(results, dict)
    values = {
        **_common(package, "spaces", ""),
        "results": f'os.path.join(os.path.dirname(os.path.abspath(__file__)), "{RESULTS_DIR}")' if local else json.dumps(results),
        "allow_proxy": str(bool(allow_proxy)),
        "allow_incomplete": str(bool(allow_incomplete)),
        "results_origin": (f"the {len(results)} results files in `{RESULTS_DIR}/`" if local else
                           f"the Hub dataset repo [`{results}`](https://huggingface.co/datasets/{results})"),
    }
    files: dict[str, str | bytes] = {name: render(f"leaderboard/{name}.tmpl", values) for name in ("app.py", "README.md")}
    files["requirements.txt"] = values["requirements"]
    files.update(package.files())
    if local:
        files.update({f"{RESULTS_DIR}/{path}": source.read_text(encoding="utf-8") for path, source in results.items()})
    return files


def _holds_space(folder: Path) -> bool:
    card = folder / "README.md"
    return card.is_file() and MARKER in card.read_text(encoding="utf-8", errors="replace")


SPACE = FolderOwner("a Space written by `bespoke space` (its README.md carries the marker)", _holds_space)
"""A folder this module wrote: it may write into it again."""


def write_space(files: Mapping[str, str | bytes], out: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write `files` into `out`, each top-level entry replaced atomically, everything else kept (`.git`).
    A non-empty folder this module did not write is refused unless `force` (the one rule of every
    command that writes a folder: `bespoke_dataset.atomic.check_folder`)."""
    target = Path(out)
    with atomic_entries(target, SPACE, force=force) as tmp:
        for name, content in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
    return target


def push_space(out: str | os.PathLike[str], repo: str, *, token: str | None = None, private: bool = False) -> str:
    """Create the Space `repo` (Gradio SDK) if needed and upload the folder; returns the commit URL."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo, repo_type="space", space_sdk="gradio", exist_ok=True, private=private)
    commit = api.upload_folder(folder_path=os.fspath(out), repo_id=repo, repo_type="space",
                               commit_message=f"BESPOKE Space (bespoke-eval {__version__})")
    return str(commit.commit_url if hasattr(commit, "commit_url") else commit)
