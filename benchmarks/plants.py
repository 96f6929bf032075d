"""The eleven bugs issue 48 planted from outside, each applied alone to a scratch copy of the last commit
(`scratch.py`), and the test files a developer would run for its area run there: caught (a test failed) or missed.
First the same files run on the copy without any plant (the control): a plant counts as caught only where they pass.
Not run in CI (minutes per plant on 2 cores). Writes `benchmarks/results/plants.json`.

    python benchmarks/plants.py                    # the control, then every plant
    python benchmarks/plants.py --only guard_referral --no-control
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from record import RESULTS, write_results  # first: it notes the load the run starts under
from scratch import ROOT, check_imports, environment, export_tree, pytest_command


@dataclass(frozen=True)
class Plant:
    """One bug: the one text of `path` that `before` names, replaced by `after`; the tests of its area."""

    name: str
    what: str
    path: str
    before: str
    after: str
    tests: tuple[str, ...]

    def apply(self, tree: Path) -> None:
        source = tree / self.path
        text = source.read_text(encoding="utf-8")
        if text.count(self.before) != 1:
            raise ValueError(f"{self.name}: {self.path} holds {text.count(self.before)} copies of the planted text, not 1")
        source.write_text(text.replace(self.before, self.after), encoding="utf-8")


CATALOGUE = ("tests/backends/test_catalogue_rows.py", "tests/backends/test_anthropic.py")
GUARDS = ("tests/judging/test_guard_wordings.py", "tests/judging/test_guards.py")
STATS = ("tests/results/test_bootstrap_spread.py", "tests/results/test_stats_exact.py", "tests/results/test_stats.py",
         "tests/results/test_figure_stats.py")
FRAMEWORKS = ("tests/frameworks/test_frameworks_held.py", "tests/frameworks/test_import_runs.py",
              "tests/frameworks/test_framework_parity.py", "tests/frameworks/test_inspect_task.py")

PLANTS = (
    Plant("catalogue_opus_4_5", "Claude Opus 4.5 marked as having no structured outputs (it then gets a forced tool)",
          "bespoke_metric/backends/providers/anthropic_models.py",
          'ClaudeFamily("Claude Opus 4.5", r"claude-opus-4-5(?:-|$)", structured_outputs=True,',
          'ClaudeFamily("Claude Opus 4.5", r"claude-opus-4-5(?:-|$)", structured_outputs=False,', CATALOGUE),
    Plant("guard_referral", "the refusal guard counting a referral clause as answer words",
          "bespoke_metric/judging/guards.py", "for pattern in (REFUSAL, REFERRAL, APOLOGY))", "for pattern in (REFUSAL, APOLOGY))",
          GUARDS),
    Plant("guard_apostrophe", "the refusal guard missing the typographic apostrophe (\"I’m sorry, but I can’t help with that.\")",
          "bespoke_metric/judging/guards.py", "unable to|(?:can(?:not|'t|’t)|", "unable to|(?:can(?:not|'t)|", GUARDS),
    Plant("stderr_ddof", "the bootstrap standard error with ddof 0 instead of 1",
          "bespoke_metric/results/stats.py", "np.std(finite, ddof=1)", "np.std(finite, ddof=0)", STATS),
    Plant("inspect_failed_as_zero", "the inspect metric averaging a sample whose score failed as a whole as 0",
          "bespoke_metric/frameworks/inspect_judge.py",
          'return float("nan")  # a sample whose score failed as a whole', 'return 0.0  # a sample whose score failed as a whole',
          FRAMEWORKS),
    Plant("inspect_truncation", "an inspect answer cut at the output cap no longer marked truncated",
          "bespoke_metric/frameworks/inspect_judge.py", 'state.output.stop_reason == "max_tokens"',
          'state.output.stop_reason == "length"', FRAMEWORKS),
    Plant("import_first_judge_block", "bespoke import taking the judge block of the first sample instead of the whole run",
          "bespoke_metric/frameworks/importing.py", "judge=_judge_block(list(sessions.values()))",
          "judge=dict(runs[0].samples[0].judge)", FRAMEWORKS),
    Plant("import_guards_identity", "bespoke import forgetting the guards version in the judge's identity",
          "bespoke_metric/results/served.py", "if key not in (*ANSWERED_KEYS, SESSION_KEY)}",
          'if key not in (*ANSWERED_KEYS, SESSION_KEY, "guards")}', FRAMEWORKS),
    Plant("import_benchmark_size", "bespoke import setting the benchmark's size to the number of items imported",
          "bespoke_metric/frameworks/importing.py", "benchmark_queries=len(benchmark)", "benchmark_queries=len(items)", FRAMEWORKS),
    Plant("lm_eval_row_by_position", "the lm-eval filter judging each answer against the row at its position",
          "bespoke_metric/frameworks/lm_eval_harness.py", 'JudgeItem(benchmark[doc["key"]],',
          "JudgeItem(list(benchmark.values())[len(items)],", FRAMEWORKS),
    Plant("lm_eval_judge_options_dropped", "the lm-eval filter dropping the judge_ options of --metadata",
          "bespoke_metric/frameworks/lm_eval_harness.py", "config = _JUDGES.get((source, spec)) or JudgeConfig",
          "config = JudgeConfig", FRAMEWORKS),
)


FAILED = re.compile(r"\b\d+ failed\b")
"""What pytest's last line says when a test failed."""


def run_tests(tree: Path, tests: tuple[str, ...], stop_first: bool) -> dict:
    """The tests of `tests` in `tree`: exit code, wall time, what failed."""
    start = time.perf_counter()
    # a plant's run stops at its first failure: in this process, the files in order (a worker of xdist would first
    # finish the real inspect and lm-eval runs it had begun)
    done = subprocess.run(pytest_command(*(["-x", "-n0"] if stop_first else []), *tests), cwd=tree, env=environment(tree),
                          capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    return {"exit_code": done.returncode, "wall_s": round(time.perf_counter() - start, 1),
            "summary": lines[-1] if lines else done.stderr[-300:],
            "failed": [line.split(" - ")[0].removeprefix("FAILED ") for line in lines if line.startswith(("FAILED ", "ERROR "))],
            # a run that could not run its tests (pytest's own error): what it said
            **({"output": (done.stdout + done.stderr)[-2000:]} if done.returncode not in (0, 1) else {})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=[plant.name for plant in PLANTS], help="these plants alone")
    parser.add_argument("--no-control", action="store_true", help="skip the run without any plant")
    args = parser.parse_args()
    plants = [plant for plant in PLANTS if not args.only or plant.name in args.only]
    work = Path(tempfile.mkdtemp(prefix="bespoke-plants-"))
    # the plants not run this time, and the control where it is not run again, keep their last outcome (each with its
    # commit)
    earlier = RESULTS / "plants.json"
    kept = json.loads(earlier.read_text(encoding="utf-8"))["figures"] if earlier.is_file() else {}
    figures: dict = {"plants": {name: plant for name, plant in kept.get("plants", {}).items() if name in {p.name for p in PLANTS}},
                     **({"control": kept["control"]} if args.no_control and "control" in kept else {})}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    try:
        if not args.no_control:
            tree = export_tree(work / "control")
            check_imports(tree)
            files = tuple(dict.fromkeys(test for plant in plants for test in plant.tests))
            control = run_tests(tree, files, stop_first=False)
            print(f"control: {control['summary']} ({control['wall_s']} s)")
            if control["exit_code"] != 0:
                raise SystemExit(f"the tests fail without any plant: {control['failed']}\n{control.get('output', '')}")
            figures["control"] = {"commit": commit, **control}
        for plant in plants:
            tree = export_tree(work / plant.name)
            plant.apply(tree)
            check_imports(tree)
            outcome = run_tests(tree, plant.tests, stop_first=True)
            caught = bool(FAILED.search(outcome["summary"]))  # a test failed (not only an error of the run)
            figures["plants"][plant.name] = {"what": plant.what, "commit": commit, "caught": caught, "tests": list(plant.tests),
                                             **outcome}
            print(f"{plant.name}: {'caught' if caught else 'MISSED'} ({outcome['summary']}, {outcome['wall_s']} s)")
            shutil.rmtree(tree)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures["caught"] = sum(plant["caught"] for plant in figures["plants"].values())
    figures["planted"] = len(figures["plants"])
    write_results(__file__, figures, notes={"caught": "plants whose area's tests failed with the plant applied alone",
                                            "control": "the same test files on the copy without any plant"})
    return 0 if figures["caught"] == figures["planted"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
