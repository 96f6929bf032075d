"""`bespoke score` with an API judge starts light: it never imports the heavy optional stacks, and what it needs
only later (prices, once the calls are made) or only elsewhere (a dry run's token counter, YAML, a drawn bar) is
not imported before its first call."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bespoke_dataset.rows import load_rows
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import serve

HEAVY = ("torch", "transformers", "sentence_transformers", "matplotlib", "pandas", "datasets",
         "openai")  # the SDK only names an error response: calls that succeed never import it

NOT_BEFORE_THE_FIRST_CALL = (
    "genai_prices",  # prices: looked up where the cost is computed, after the calls
    "wordfreq",  # the guards read its word lists without importing it (its imports are slow)
    "yaml",  # read where a config file is
    "tqdm",  # a bar is drawn only on a terminal
    "bespoke_metric.systems.generation",  # `systems.tokens` is the dry run's, and none of generation is needed
)

# Runs the real command line in a fresh interpreter, then reports its exit code, every module it loaded, and
# those it had loaded when it first connected to the server (an audit hook on socket.connect).
CHILD = """
import json, sys
first_call = []

def hook(event, args):
    if event == "socket.connect" and not first_call:
        first_call.extend(sys.modules)

sys.addaudithook(hook)
from bespoke_cli.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules), "first_call": sorted(first_call)}))
"""


def _score(server, source, work: Path, env: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The child's report and the results file of one `bespoke score` run of `work`'s predictions."""
    output = work / "results.json"
    child = subprocess.run(
        [sys.executable, "-c", CHILD, "score", "--predictions", str(work / "preds.jsonl"), "--source", str(source),
         "--judge", "openai:test-model", "--base-url", server.base_url, "--api-key", "local", "--output", str(output)],
        capture_output=True, text=True, cwd=work, env=env, timeout=120)
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout.strip().splitlines()[-1]), json.loads(output.read_text())


@pytest.fixture(scope="module")
def score_run(synthetic_hub, tmp_path_factory):
    """A `bespoke score --judge openai:...` run against the test server, in a subprocess, from an empty cache
    folder: its report, the calls the server received, its results; and the report of the same run again."""
    work = tmp_path_factory.mktemp("startup")
    rows = load_rows("benchmark", synthetic_hub)[:3]
    (work / "preds.jsonl").write_text("".join(
        json.dumps({"user": r["user"], "query_id": r["query_id"], "response": r["shots"][0]["response"]}) + "\n"
        for r in rows))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "BESPOKE_CACHE": str(work / "cache")}
    with serve(responder=judge_answer) as server:
        report, results = _score(server, synthetic_hub, work, env)
        calls = len(server.calls)
        again, results_again = _score(server, synthetic_hub, work, env)
    assert results_again["usage"]["models"] == results["usage"]["models"]
    return report, calls, results, again


@pytest.mark.slow
def test_the_run_scores_through_the_server(score_run):
    report, calls, results, _ = score_run
    assert report["code"] == 0
    assert calls == results["usage"]["calls"]
    assert calls >= 3 * 2  # a personalization call and at least one claim call per prediction
    assert results["summary"]["items"] == 3
    assert sum(results["summary"]["failures"].values()) == 0


@pytest.mark.slow
@pytest.mark.parametrize("module", HEAVY)
def test_no_heavy_module_is_imported(score_run, module):
    assert loaded(score_run[0]["modules"], module) == []


def loaded(modules: list[str], module: str) -> list[str]:
    return [name for name in modules if name == module or name.startswith(module + ".")]


@pytest.mark.slow
@pytest.mark.parametrize("module", HEAVY + NOT_BEFORE_THE_FIRST_CALL)
def test_nothing_needed_only_later_or_elsewhere_is_imported_before_the_first_call(score_run, module):
    report = score_run[0]
    assert report["first_call"], "the command made no connection"
    assert loaded(report["first_call"], module) == []


@pytest.mark.slow
def test_prices_are_loaded_for_the_cost_and_the_guards_word_lists_without_wordfreq(score_run):
    """After the calls the cost is computed from the maintained prices (where genai-prices is installed: Python
    3.11 on), and the same run again reads their answer from the cache, without loading them; the guards ran
    (they read wordfreq's lists with msgpack) without importing wordfreq."""
    report, _, results, again = score_run
    assert ("genai_prices" in report["modules"]) == (importlib.util.find_spec("genai_prices") is not None)
    assert again["code"] == 0 and loaded(again["modules"], "genai_prices") == []
    assert "msgpack" in report["first_call"] and loaded(report["modules"], "wordfreq") == []
    assert results["usage"]["models"]["openai:test-model"]["price_note"].startswith("no price known")


# What `bespoke score` has done by its first call, in-process and without one: the command's modules, the API
# judge built, a response through the guards, the price table made (its prices not looked up yet).
BEFORE_A_CALL = """
import json, sys
import bespoke_cli.cli, bespoke_cli.judging.score
from bespoke_cli.cost import price_table
from bespoke_metric.judging.factory import make_judge
from bespoke_metric.judging.guards import check_response

make_judge("openai:test-model", base_url="http://127.0.0.1:9/v1", api_key="local")
assert check_response("Feed the starter twice a day with rye flour and keep it warm.", "How do I keep my starter alive?") is None
price_table(bespoke_cli.cli.build_parser("score").parse_args(["score", "--predictions", "p.jsonl", "--judge", "openai:x"]))
print(json.dumps(sorted(sys.modules)))
"""


def test_the_score_command_up_to_its_first_call_imports_nothing_it_needs_only_later():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    child = subprocess.run([sys.executable, "-c", BEFORE_A_CALL], capture_output=True, text=True, env=env, timeout=120)
    assert child.returncode == 0, child.stderr
    modules = json.loads(child.stdout.strip().splitlines()[-1])
    assert "bespoke_metric.backends.providers.openai_backend" in modules and "msgpack" in modules  # the judge, the word lists
    assert {module: loaded(modules, module) for module in HEAVY + NOT_BEFORE_THE_FIRST_CALL
            if loaded(modules, module)} == {}
