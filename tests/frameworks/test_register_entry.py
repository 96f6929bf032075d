"""BESPOKE ready for the inspect_evals register: `eval.yaml` validates as a register entry
(`inspect_evals.metadata.ExternalEvalMetadata`, inspect-evals 0.28.0) once its source is filled in, with the
benchmark task and its maintenance task, versioned as their `Task(version=...)`; the register's linter
(`inspect-evals-lint` 0.12.0) passes on the task file with three rules off, each checked here against setup.cfg,
where this package keeps what those rules look for in pyproject.toml. The linter and inspect-evals are installed
from the package registry into environments of their own, as a register maintainer runs them."""

from __future__ import annotations

import ast
import configparser
import json
import re
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
import yaml
from environments import environment_beside, pip_into

from bespoke_metric.frameworks import inspect_task

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / "bespoke_metric" / "frameworks" / "eval.yaml"
TASK_FILE = "bespoke_metric/frameworks/inspect_task.py"
NEVER_OFF = {"private_api_imports", "model_role_resolution", "unscored_reason", "score_constants"}
"""The rules on private inspect_ai imports, model roles, and grader failures turned into scores: never turned off."""
SETUP = configparser.ConfigParser()
SETUP.read(ROOT / "setup.cfg")


def entry() -> dict:
    return yaml.safe_load(ENTRY.read_text(encoding="utf-8"))


def lint_ignored() -> set[str]:
    """The rules pyproject.toml's [tool.inspect-evals-lint] turns off (read as text: tomllib is Python 3.11's)."""
    table = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("[tool.inspect-evals-lint]", 1)[1].split("\n[", 1)[0]
    listed = table.split("\nignore = [", 1)[1].split("\n]", 1)[0]
    return set(re.findall(r'^\s*"([a-z_]+)",', listed, re.MULTILINE))


def test_the_entry_lists_the_benchmark_and_its_maintenance_task_at_their_versions() -> None:
    tasks = {task["name"]: task for task in entry()["tasks"]}
    assert {name: task["kind"] for name, task in tasks.items()} == {"bespoke": "benchmark", "bespoke_meta_eval": "maintenance"}
    defined = {node.name for node in ast.walk(ast.parse((ROOT / TASK_FILE).read_text(encoding="utf-8")))
               if isinstance(node, ast.FunctionDef) and any("task" in ast.unparse(d) for d in node.decorator_list)}
    assert all(task["task_path"] == TASK_FILE for task in tasks.values()) and set(tasks) <= defined
    assert entry()["metadata"]["extras"]["task_versions"] == {"bespoke": inspect_task.VERSION,
                                                               "bespoke_meta_eval": inspect_task.META_EVAL_VERSION}
    assert all(re.fullmatch(r"\d+-[A-Z]", version) for version in (inspect_task.VERSION, inspect_task.META_EVAL_VERSION))
    # what is filled in at submission is left empty: no made-up repository, commit or maintainer
    assert entry()["source"] == {"repository_url": "", "repository_commit": ""} and entry()["contributors"] == []
    assert "evaluation_report" not in entry()


@pytest.fixture(scope="module")
def register_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An environment holding inspect-evals 0.28.0 (its metadata module: pydantic and pyyaml, the suite's)."""
    python = environment_beside(tmp_path_factory.mktemp("inspect-evals") / "env")
    installed = pip_into(python, "install", "--no-deps", "-q", "inspect-evals==0.28.0")
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python


VALIDATE = """
import json, sys
from inspect_evals.metadata import ExternalEvalMetadata
try:
    entry = ExternalEvalMetadata.model_validate(json.loads(sys.stdin.read()))
except Exception as error:
    print(json.dumps({"error": str(error).splitlines()[0]}))
else:
    print(json.dumps({"benchmark": [t.name for t in entry.benchmark_tasks], "maintenance": [t.name for t in entry.maintenance_tasks]}))
"""


def validated(python: Path, content: dict) -> dict:
    done = subprocess.run([str(python), "-c", VALIDATE], input=json.dumps(content), capture_output=True, text=True,
                          timeout=300, check=True)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_the_entry_validates_as_a_register_entry_once_its_source_is_filled_in(register_python: Path) -> None:
    assert "error" in validated(register_python, entry())  # as committed: the source is to be filled in
    filled = {**entry(), "source": {"repository_url": "https://github.com/example-maintainer/bespoke-eval",
                                    "repository_commit": "0123456789abcdef0123456789abcdef01234567"}}
    assert validated(register_python, filled) == {"benchmark": ["bespoke"], "maintenance": ["bespoke_meta_eval"]}


@pytest.mark.slow
def test_the_register_s_linter_passes_with_three_rules_off_none_of_the_guarding_ones(tmp_path: Path) -> None:
    python = environment_beside(tmp_path / "lint")
    installed = pip_into(python, "install", "-q", "inspect-evals-lint==0.12.0")
    assert installed.returncode == 0, installed.stderr[-3000:]
    done = subprocess.run([str(python), "-m", "inspect_evals_lint", "--preset", "single-eval", "--task", TASK_FILE,
                           "--output-format", "json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    report = json.loads(done.stdout)
    failed = [finding for finding in _findings(report) if finding.get("severity") == "error" or finding.get("status") == "fail"]
    assert done.returncode == 0 and not failed, json.dumps(failed)[:3000]
    off = lint_ignored()
    assert len(off) <= 3 and not off & NEVER_OFF


def _findings(report: object) -> list[dict]:
    if isinstance(report, dict):
        found = [report] if "message" in report and ("severity" in report or "status" in report) else []
        return found + [item for value in report.values() for item in _findings(value)]
    if isinstance(report, list):
        return [item for value in report for item in _findings(value)]
    return []


# -- the three rules turned off, checked against setup.cfg ------------------------------------------------------


def test_registry_the_inspect_entry_point_names_the_task_module() -> None:
    assert "registry" in lint_ignored()
    points = dict(line.split(" = ") for line in SETUP["options.entry_points"]["inspect_ai"].strip().splitlines())
    assert points == {"bespoke_metric": "bespoke_metric.frameworks.inspect_task"}


def test_readme_dependency_groups_every_extra_a_command_installs_is_setup_cfg_s() -> None:
    assert "readme_dependency_groups" in lint_ignored()
    extras = set(SETUP["options.extras_require"])
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    asked = {(page.name, extra.strip()) for page in pages
             for group in re.findall(r"pip install [^\n]*?(?:bespoke-eval|\.)\[([\w,\s-]+)\]", page.read_text(encoding="utf-8"))
             for extra in group.split(",")}
    assert asked and {pair for pair in asked if pair[1] not in extras} == set()


def test_external_dependencies_every_import_of_the_frameworks_is_declared() -> None:
    assert "external_dependencies" in lint_ignored()
    declared = {re.split(r"[<>=!~\[;\s]", line.strip())[0].lower().replace("_", "-")
                for section in (SETUP["options"]["install_requires"], *SETUP["options.extras_require"].values())
                for line in section.splitlines() if line.strip() and not line.strip().startswith("#")}
    distributions = packages_distributions()
    ours = {"bespoke_dataset", "bespoke_metric", "bespoke_cli"}
    imported = set()
    for path in (ROOT / "bespoke_metric" / "frameworks").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            imported |= {name.split(".")[0] for name in names}
    third_party = imported - ours - set(sys.stdlib_module_names)
    undeclared = {name for name in third_party
                  if not {dist.lower().replace("_", "-") for dist in distributions.get(name, [name])} & declared}
    # click: inspect-ai's own command line, which the inspect extra installs with it
    assert third_party and undeclared <= {"click"}, undeclared
