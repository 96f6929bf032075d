"""Which model really answered: every call's served model is counted, a provider that routes a model to another
is one `warning:` line, a mark in the results and a leaderboard row of its own, `--strict` writes nothing, and
a retired model (404 `model_not_found`) is one `error:` line, exit 1, nothing half-written.

Over real HTTP against the test server on 127.0.0.1, answering in OpenAI's shapes: a chat completion or
Responses body names the model that served it in `model` (openai-python `ChatCompletion.model`,
`Response.model`); an error is `{"error": {"message", "type", "param", "code"}}` (openai-python
`openai.types.shared.ErrorObject`; a 404 is the SDK's `NotFoundError`), as OpenAI answers for a retired model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from output_lines import own_lines

from bespoke_cli.cli import main
from bespoke_metric.analysis.leaderboard import build_leaderboard, load_results
from bespoke_metric.analysis.report import to_markdown
from bespoke_metric.results.served import asked_model, is_same_model, mismatch_warning
from bespoke_metric.testing.server import Fault, serve
from bespoke_metric.testing.system_responder import answer_any


@pytest.mark.parametrize("asked, served", [
    ("gpt-5", "gpt-5"), ("gpt-5", "gpt-5-2025-08-07"), ("gpt-4o", "gpt-4o-2024-08-06"), ("gpt-4", "gpt-4-0613"),
    ("models/gemini-2.5-pro", "gemini-2.5-pro-001"), ("gemini-2.5-pro", "models/gemini-2.5-pro-preview-06-05"),
    ("openai/gpt-5", "gpt-5-2025-08-07"), ("perplexity/sonar", "sonar"), ("GPT-5", "gpt-5"), ("gpt-5", ""),
])
def test_the_model_asked_for_or_a_dated_snapshot_of_it_is_the_same_model(asked: str, served: str) -> None:
    assert is_same_model(asked, served)


@pytest.mark.parametrize("asked, served", [
    ("gemini-2.5-pro", "gemini-3.8-flash"), ("gpt-5", "gpt-5-mini"), ("gpt-5", "gpt-5.1"), ("gpt-4o", "gpt-4o-mini-2024-07-18"),
    ("gemini-2.5-flash", "gemini-2.5-flash-lite"), ("gpt-4o-2024-08-06", "gpt-4o-2024-11-20"), ("o3", "o3-pro"),
])
def test_another_model_is_not_the_model_asked_for(asked: str, served: str) -> None:
    assert not is_same_model(asked, served)


def test_the_warning_names_both_models_and_the_count() -> None:
    line = mismatch_warning("judge", "gemini-2.5-pro", {"gemini-3.8-flash": 12, "gemini-2.5-pro-001": 3})
    assert line is not None and line.startswith("warning: ")
    assert "gemini-2.5-pro" in line and "gemini-3.8-flash (12 of 15 calls)" in line and "001" not in line
    assert mismatch_warning("judge", "gpt-5", {"gpt-5-2025-08-07": 15}) is None


def test_the_model_asked_for_is_read_from_a_judge_or_system_block() -> None:
    assert asked_model({"spec": "openai:gpt-5", "engine": "openai", "model": "gpt-5"}) == "gpt-5"
    assert asked_model({"model": {"spec": "openai:gpt-4o-mini", "backend": {"model": "gpt-4o-mini"}}}) == "gpt-4o-mini"
    assert asked_model({"model": "openai:gpt-4o"}) == "gpt-4o"  # score --model-name SPEC
    assert asked_model({"model": "my system (v2)"}) is None  # a name, not a model: nothing to compare
    assert asked_model(None) is None
    # Perplexity: a retired Sonar name runs as its substitute's slug; a preset's model is the provider's pick
    assert asked_model({"engine": "perplexity", "model": "sonar-reasoning", "settings": {"agent_model": "openai/gpt-5.1"}}) == "openai/gpt-5.1"
    assert asked_model({"model": {"spec": "perplexity:preset/fast", "backend": {"model": "preset/fast", "settings": {"preset": "fast"}}}}) is None


# -- end to end ----------------------------------------------------------------------------------------------


class Provider:
    """Two OpenAI-compatible servers on 127.0.0.1: the system model's (`openai:gpt-4o-mini`) and the judge's
    (`openai:gpt-5`, at `OPENAI_BASE_URL`); `answer_fields = {"model": ...}` makes one answer as another model."""

    def __init__(self, system, judge) -> None:
        self.system, self.judge = system, judge

    def run(self, *more: str) -> list[str]:
        return ["run", "--model", "openai:gpt-4o-mini", "--model-base-url", self.system.base_url, "--source", "sample",
                "--judge", "openai:gpt-5", "--limit", "4", *more]

    def generate(self, *more: str, model: str = "openai:gpt-4o-mini") -> list[str]:
        return ["generate", "--model", model, "--base-url", self.system.base_url, "--source", "sample", "--limit", "4", *more]

    @staticmethod
    def score(*more: str) -> list[str]:
        return ["score", "--predictions", "p.jsonl", "--judge", "openai:gpt-5", "--source", "sample", *more]


@pytest.fixture
def provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-served-test-key")
    with serve(answer_any) as system, serve(answer_any) as judge:
        monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
        yield Provider(system, judge)


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def warnings_in(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("warning:")]


def test_dated_snapshots_pass_without_a_warning_and_are_counted(provider, tmp_path: Path, capsys) -> None:
    provider.judge.answer_fields = {"model": "gpt-5-2025-08-07"}
    provider.system.answer_fields = {"model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_44709d6fcb", "service_tier": "default"}
    assert main(provider.run("--output", "run.json")) == 0
    results = read(tmp_path / "run.json")
    assert warnings_in(capsys.readouterr().err) == []
    assert results["served_mismatch"] is False
    judge_calls = results["usage"]["calls"] + results["usage"]["cached"]
    assert results["judge"]["served_models"] == {"gpt-5-2025-08-07": judge_calls}
    assert results["system"]["served_models"] == {"gpt-4o-mini-2024-07-18": 4}
    predictions = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert [(p["served_model"], p["system_fingerprint"], p["service_tier"]) for p in predictions] == [
        ("gpt-4o-mini-2024-07-18", "fp_44709d6fcb", "default")] * 4


def test_a_judge_routed_to_another_model_is_warned_marked_and_grouped_apart(provider, tmp_path: Path, capsys) -> None:
    assert main(provider.run("--output", "real.json")) == 0
    capsys.readouterr()
    provider.judge.answer_fields = {"model": "gemini-3.8-flash"}
    assert main(provider.run("--output", "routed.json", "--cache", str(tmp_path / "routed.sqlite"))) == 0
    err = capsys.readouterr().err
    [warning] = warnings_in(err)
    routed = read(tmp_path / "routed.json")
    calls = routed["usage"]["calls"]
    assert "gpt-5" in warning and f"gemini-3.8-flash ({calls} of {calls} calls)" in warning and "judge" in warning
    assert routed["served_mismatch"] is True and read(tmp_path / "real.json")["served_mismatch"] is False
    assert routed["judge"]["served_models"] == {"gemini-3.8-flash": calls}

    groups = build_leaderboard(load_results([tmp_path / "real.json", tmp_path / "routed.json"]), n_resamples=50)
    assert len(groups) == 2  # never ranked beside the real judge's results
    titles = [group.title for group in groups]
    assert sum("SERVED BY gemini-3.8-flash" in title for title in titles) == 1

    # a warm cache replays the routed answers: still counted, still warned
    assert main(provider.run("--output", "again.json", "--cache", str(tmp_path / "routed.sqlite"))) == 0
    assert len(warnings_in(capsys.readouterr().err)) == 1
    again = read(tmp_path / "again.json")
    assert again["usage"]["calls"] == 0 and again["judge"]["served_models"] == {"gemini-3.8-flash": again["usage"]["cached"]}


def test_a_system_routed_to_another_model_is_its_own_marked_row(provider, tmp_path: Path, capsys) -> None:
    assert main(provider.run("--output", "real.json")) == 0
    provider.system.answer_fields = {"model": "gemini-3.8-flash"}
    assert main(provider.run("--output", "routed.json")) == 0
    [warning] = warnings_in(capsys.readouterr().err)
    assert "system asked for gpt-4o-mini" in warning and "gemini-3.8-flash (4 of 4 calls)" in warning
    routed = read(tmp_path / "routed.json")
    assert routed["served_mismatch"] is True and routed["system"]["served_models"] == {"gemini-3.8-flash": 4}

    [group] = build_leaderboard(load_results([tmp_path / "real.json", tmp_path / "routed.json"]), n_resamples=50)
    systems = sorted(row.system for row in group.rows)
    assert systems == ["openai:gpt-4o-mini (none)", "openai:gpt-4o-mini (none) [served by gemini-3.8-flash]"]
    table = to_markdown([group])
    assert "| Served by |" in table and "| gemini-3.8-flash |" in table and "| gpt-4o-mini |" in table


def test_strict_refuses_a_routed_model_before_anything_is_written(provider, tmp_path: Path, capsys) -> None:
    provider.system.answer_fields = {"model": "gemini-3.8-flash"}
    assert main(provider.run("--output", "routed.json", "--strict")) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "gemini-3.8-flash" in errors[0] and "gpt-4o-mini" in errors[0]
    assert not (tmp_path / "routed.json").exists()
    assert not (tmp_path / "routed" / "predictions.jsonl").exists() and not (tmp_path / "routed" / "predictions.run.json").exists()

    assert main(provider.generate("--output", "p.jsonl", "--strict")) == 1
    assert "gemini-3.8-flash" in capsys.readouterr().err and not (tmp_path / "p.jsonl").exists()

    # a judge routed elsewhere: score --strict writes no results file
    provider.system.answer_fields = {}
    provider.judge.answer_fields = {"model": "gemini-3.8-flash"}
    assert main(provider.generate("--output", "p.jsonl")) == 0
    capsys.readouterr()
    assert main(provider.score("--output", "s.json", "--strict")) == 1
    err = capsys.readouterr().err
    assert len(warnings_in(err)) == 1 and "served_mismatch" in err and not (tmp_path / "s.json").exists()


RETIRED = {"error": {"message": "The model `gpt-5` has been deprecated, learn more here: https://platform.openai.com/docs/deprecations",
                     "type": "invalid_request_error", "param": None, "code": "model_not_found"}}
"""OpenAI's answer for a retired model: HTTP 404, the error shape of openai-python's `ErrorObject`."""


def retired(model: str):
    """404 `model_not_found` for every call asking for `model`."""
    return lambda record: Fault(status=404, body=RETIRED) if (record.body or {}).get("model") == model else None


@pytest.mark.parametrize("command", ["score", "run", "generate"])
def test_a_retired_model_is_one_error_line_and_nothing_half_written(provider, tmp_path: Path, capsys, command: str) -> None:
    retired_at = provider.judge
    if command == "score":
        assert main(provider.generate("--output", "p.jsonl")) == 0
        capsys.readouterr()
        argv, written = provider.score("--output", "out.json"), ["out.json"]
    elif command == "run":
        argv, written = provider.run("--output", "out.json"), ["out.json"]
    else:
        retired_at = provider.system
        argv, written = provider.generate("--output", "out.jsonl", model="openai:gpt-5"), ["out.jsonl", "out.run.json"]
    retired_at.rule = retired("gpt-5")
    assert main(argv) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    assert "'openai:gpt-5' is not served" in errors[0] and "has been deprecated" in errors[0]
    assert "sk-served-test-key" not in err  # (main returned: no traceback of ours)
    assert [name for name in written if (tmp_path / name).exists()] == []
    # the command stops at the first 404: calls still in flight then may be dropped (499) or not yet ended (None)
    answered = [call.status for call in retired_at.calls if call.status not in (None, 499)]
    assert answered and set(answered) == {404}


UNKNOWN = {"error": {"message": "The model `gtp-5` does not exist or you do not have access to it.",
                     "type": "invalid_request_error", "param": None, "code": "model_not_found"}}
"""OpenAI's answer for a model name it does not know (HTTP 404, openai-python's `ErrorObject`)."""


def test_a_mistyped_model_is_named_with_the_endpoints_closest_model(provider, tmp_path: Path, capsys) -> None:
    """`openai:gtp-5` at a provider that answers 404 `model_not_found`: the error line offers the closest model
    its `GET /v1/models` lists (OpenAI's `{"object": "list", "data": [Model]}`), not a retirement."""
    assert main(provider.generate("--output", "p.jsonl")) == 0
    capsys.readouterr()
    provider.judge.model_ids = ("gpt-5", "gpt-5-mini", "gpt-4o")
    provider.judge.rule = lambda record: Fault(status=404, body=UNKNOWN) if (record.body or {}).get("model") == "gtp-5" else None
    argv = ["score", "--predictions", "p.jsonl", "--judge", "openai:gtp-5", "--source", "sample", "--output", "out.json"]
    assert main(argv) == 1
    [error] = [line for line in own_lines(capsys.readouterr().err) if line.startswith("error:")]
    assert "'openai:gtp-5' is not served" in error and "did you mean openai:gpt-5?" in error and "retired" not in error
    assert not (tmp_path / "out.json").exists()
    # a server that answers any model name (a test server, the stand-in) still answers it
    provider.judge.rule = None
    assert main(argv) == 0


def test_a_404_that_names_no_model_is_not_a_retired_model(provider, tmp_path: Path, capsys) -> None:
    """A wrong path or proxy answers 404 too: each call fails with its reason, the run is not stopped as if
    the model were retired."""
    provider.system.rule = lambda record: Fault(status=404, body={"error": {"message": "no route here", "type": "not_found"}})
    assert main(provider.generate("--output", "p.jsonl")) == 1
    out = capsys.readouterr()
    assert "not served" not in out.err and "failed" in out.out and "no route here" in out.out
