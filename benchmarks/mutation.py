"""Mutation testing of the protocol, the figures and the frameworks wing with mutmut 3 (`pip install "mutmut>=3.8"`),
each group in a scratch copy of the last commit (`scratch.py`; nothing in the checkout is mutated), its mutants run
against the test files of its area. Not run in CI (minutes per group on 2 cores). Writes
`benchmarks/results/mutation.json`: per group and in all, how many mutants were killed, survived or found no test,
the kill rate, and every survivor with its diff and the reason it is harmless (`HARMLESS`, or `null`: a gap to fill).

    python benchmarks/mutation.py                          # every group
    python benchmarks/mutation.py --groups figures --keep  # one group (the others keep their last figures); its
                                                           # scratch copy kept (mutmut show NAME there)

Why mutmut: it is kept up (3.8.1, 2026-10), and it runs each mutant against only the tests that reach the mutated
function, in a process forked from one that has imported everything already (`forkserver`: torch is not fork-safe
from a process that ran tests), so a group of several hundred mutants takes minutes here; cosmic-ray starts a fresh
test run per mutant, hours for the same modules on 2 cores.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from record import RESULTS, write_results  # first: it notes the load the run starts under
from scratch import ROOT, SHIM, export_tree


@dataclass(frozen=True)
class Group:
    """Modules mutated together, and the test files of their area (the quick ones: `-m "not slow"` unless `slow`),
    less `heavy` ones (whole commands and releases, seconds each, run for every mutant of a function they reach) and
    `unfit` ones (they read the modules' source as text, which mutmut rewrites: they fail whatever the mutant), and
    code run in the process every mutant's is forked from (`warm`: caches filled once, not once per mutant)."""

    modules: tuple[str, ...]
    tests: tuple[str, ...]
    slow: bool = False
    heavy: tuple[str, ...] = ()
    unfit: tuple[str, ...] = ()
    warm: str = ""


GROUPS = {
    "protocol": Group(("bespoke_metric/judging/parsing.py", "bespoke_metric/judging/protocol.py", "bespoke_metric/judging/guards.py"),
                      ("tests/judging/test_parsing.py", "tests/judging/test_protocol.py", "tests/judging/test_guards.py",
                       "tests/judging/test_guard_wordings.py", "tests/judging/test_guard_thresholds.py",
                       "tests/judging/test_protocol_held.py"),
                      heavy=("word_lists_read_without_wordfreq", "full_synthetic_release", "score_guards_before_the_judge",
                             "guarded_when_scored_and_in_the_reward", "meta_eval_guards_on_and_off", "cli_no_guards",
                             "evaluate_metric_guards"),
                      # the word lists and the language detector, loaded on a guard's first use
                      warm="from bespoke_metric.judging import guards\n"
                           "guards.check_response('Gib dem Sauerteig zweimal am Tag frisches Mehl und Wasser.', 'Wie pflege ich Sauerteig?')\n"),
    "figures": Group(("bespoke_metric/results/figure_stats.py", "bespoke_metric/results/stats.py"),
                     ("tests/results/test_stats.py", "tests/results/test_figure_stats.py", "tests/results/test_bootstrap_spread.py",
                      "tests/results/test_stats_exact.py")),
    # inspect_judge.py holds what inspect_task.py did of the judging (the scorer, the metric) since issue 47
    "frameworks": Group(("bespoke_metric/frameworks/importing.py", "bespoke_metric/frameworks/inspect_task.py",
                         "bespoke_metric/frameworks/inspect_judge.py", "bespoke_metric/frameworks/lm_eval_harness.py"),
                        ("tests/frameworks",),
                        # it reads the imports of every module of the wing, mutmut's own among them once mutated
                        unfit=("external_dependencies_every_import_of_the_frameworks_is_declared",)),
}
"""The frameworks' quick tests alone: their real runs (inspect's and lm-eval's, tens of seconds each) would be run
again for every mutant of a function they reach."""

UNCHECKED = "not checked"
"""mutmut's outcome of a mutant it has not run (a run stopped at its budget)."""
DETECTED = {"killed", "timeout", "caught by type check"}
"""mutmut's outcomes that mean a test noticed the mutant (a mutant that makes the tests hang is noticed)."""

_TOLERANCE = ("`>=` made `>` against `abs(observed) - 1e-12`: the two differ only for a replicate exactly 1e-12 nearer "
              "than the estimate, which the tolerance is there to count either way")
_DTYPE = ("`dtype=float` dropped: numpy infers a number type from the ints and floats these functions are given, and "
          "every value computed from it is the same")
_STATS = "bespoke_metric.results.stats."
_GUARDS = "bespoke_metric.judging.guards."
_PARSING = "bespoke_metric.judging.parsing."
_PROTOCOL = "bespoke_metric.judging.protocol."
_INSPECT_JUDGE = "bespoke_metric.frameworks.inspect_judge."
_IMPORTING = "bespoke_metric.frameworks.importing."
_LM_EVAL = "bespoke_metric.frameworks.lm_eval_harness."
HARMLESS: dict[str, str] = {
    **dict.fromkeys([f"{_STATS}x_paired_bootstrap__mutmut_29", f"{_STATS}x_paired_permutation__mutmut_40",
                     f"{_STATS}x_paired_permutation__mutmut_63", f"{_STATS}x_paired_statistic_test__mutmut_70"], _TOLERANCE),
    **dict.fromkeys([f"{_STATS}x__pairs__mutmut_{n}" for n in (3, 5, 8, 10)]
                    + [f"{_STATS}x_{name}__mutmut_{n}" for name in ("bootstrap_replicates", "estimate", "paired_statistic_test")
                       for n in (4, 6)], _DTYPE),
    **dict.fromkeys([f"{_STATS}x_rowwise_nanmean__mutmut_{n}" for n in (7, 8, 9, 10)],
                    "numpy's `errstate` for a division whose denominator is a count above 0 or NaN: neither raises a "
                    "warning (a NaN operand is not an invalid operation), so the state is never read"),
    **dict.fromkeys([f"{_STATS}x_rowwise_pearson__mutmut_{n}" for n in (27, 29)],
                    "`divide` left out of `errstate`: a zero spread has a zero covariance, so the only division by zero "
                    "is 0/0, an `invalid` one"),
    f"{_STATS}x_rowwise_pearson__mutmut_45": "`denom > 0` made `>= 0`: where it is 0 the quotient is 0/0, NaN already",
    f"{_STATS}x_rowwise_nanmean__mutmut_31": "`counts > 0` made `>= 0`: a row with no value divides 0 by 0, NaN already",
    **dict.fromkeys([f"{_STATS}x_paired_bootstrap__mutmut_58", f"{_STATS}x_paired_statistic_test__mutmut_99"],
                    "`min(p, 1.0)` made `min(p, 2.0)`: p is (extreme + 1) / (replicates + 1), never above 1"),
    f"{_STATS}x_resample_indices__mutmut_5": ("`integers(0, n)` made `integers(n)`: numpy reads one bound as the high one "
                                               "of [0, n), and draws the same numbers"),
    **dict.fromkeys([f"{_STATS}x_paired_statistic_test__mutmut_33", f"{_STATS}x_paired_statistic_test__mutmut_62"],
                    "`float(\"nan\")` made `float(\"NAN\")`: the same NaN"),
    **dict.fromkeys([f"bespoke_metric.results.figure_stats.x_matrix_stderr__mutmut_{n}" for n in (26, 34)],
                    "the average's guard (every figure judged somewhere, some item given) only spares a bootstrap whose "
                    "replicates would all be NaN, and `bootstrap_se` gives None for those too"),
    f"{_STATS}x__constant__mutmut_4": ("`a == a[0]` made `a == a[1]`: every value equals the first exactly when every "
                                        "value equals the second, and both callers ask it only of two values or more"),
    # the protocol
    **dict.fromkeys([f"{_GUARDS}x__copied_share__mutmut_{n}" for n in (6, 7, 13, 14)],
                    "windows run past the end of the context or of the response: they are shorter than ECHO_SPAN (down to "
                    "empty), and every window they are compared with is ECHO_SPAN long, so none of them matches"),
    **dict.fromkeys([f"{_GUARDS}x__copied_share__mutmut_{n}" for n in (23, 26)],
                    "the share of no words (0.0), made a division by zero or 1.0: no caller gives it no words "
                    "(`check_context_echo` returns first, and `check_response`'s empty guard fires first)"),
    f"{_GUARDS}x__echo__mutmut_1": ("the default context (`check_response`'s guards give none) made \"XXXX\": one word, "
                                    "which holds no run of ECHO_SPAN words, so nothing is copied from it"),
    f"{_GUARDS}x__echo__mutmut_18": ("`if context` made always true: an empty context holds no run of ECHO_SPAN words, "
                                     "so the copied share is 0.0 as before"),
    f"{_GUARDS}x__known_share__mutmut_17": ("the share given when no letter is in a run of two, 1.0, made 2.0: both "
                                            "callers compare it with a threshold of at most 0.9, the same verdict"),
    **dict.fromkeys([f"{_GUARDS}x__language__mutmut_{n}" for n in (34, 36, 37)],
                    "the default of the query's language in the response's ranking: py3langid ranks every language it "
                    "knows, the query's among them (`classify` gives one of them), so the default is never read"),
    f"{_GUARDS}x__repetition__mutmut_5": ("the smallest compression ratio starts at 2.0 for 1.0: where no line is long "
                                          "enough to compress it stays there, above the 0.12 threshold either way"),
    **dict.fromkeys([f"{_GUARDS}x__repetition__mutmut_{n}" for n in (29, 33)],
                    "`zip(strict=False)` written `strict=None` or left to its default: the same zip"),
    f"{_GUARDS}x__repetition__mutmut_43": "`\"utf-8\"` written `\"UTF-8\"`: the same codec",
    f"{_GUARDS}x_check_context_echo__mutmut_7": "`_echo` reads the response's words, not its text argument",
    f"{_GUARDS}x_check_context_echo__mutmut_15": ("the query given to the context's echo check made \"XXXX\" for \"\": "
                                                  "it differs only for a response whose words are 80% `xxxx`"),
    **dict.fromkeys([f"{_GUARDS}x_check_repetition__mutmut_{n}" for n in (4, 5, 10)],
                    "`_repetition` reads the text alone, not its words or query arguments (its signature is every guard's)"),
    f"{_PARSING}x__json_expected__mutmut_2": ("`lstrip` made `rstrip`: its one caller gives it the answer region, which "
                                              "`answer_region` returns stripped"),
    f"{_PARSING}x__norm_key__mutmut_12": ("`strip(\"_\")` made `strip(\"XX_XX\")`, which strips X too: the key is "
                                          "lower-cased first, so it holds no X"),
    **dict.fromkeys([f"{_PARSING}x_find_json__mutmut_{n}" for n in (26, 27)],
                    "`<=` made `<` in the test of one candidate inside another: two candidates never share a start (one "
                    "per fence, which starts at its backticks, one per brace that starts a line) nor an end (a nested "
                    "value closes before the one around it, a fence after its closing backticks)"),
    **dict.fromkeys([f"{_PARSING}x_find_json__mutmut_{n}" for n in (32, 34)],
                    "`max` without its key compares the (start, value) pairs by their starts first, and no two "
                    "candidates share a start, so the values are never compared"),
    f"{_PROTOCOL}x_personalization_request__mutmut_11": ("the examples picked where `personalized=False` too: the "
                                                         "request leaves them out then (the system turn reads "
                                                         "`personalized` first, the personal context stays empty), "
                                                         "the same request"),
    # the frameworks wing
    **dict.fromkeys([f"{_INSPECT_JUDGE}x__number__mutmut_{n}" for n in (4, 12)], "`float(\"nan\")` made `float(\"NAN\")`: the same NaN"),
    **dict.fromkeys([f"{_IMPORTING}x__lines__mutmut_6", f"{_IMPORTING}x__lm_eval_model__mutmut_13"],
                    "`\"utf-8\"` written `\"UTF-8\"`: the same codec"),
    **dict.fromkeys([f"{_IMPORTING}x__lines__mutmut_{n}" for n in (2, 4)] + [f"{_IMPORTING}x__lm_eval_model__mutmut_11"],
                    "the locale's encoding read in place of UTF-8: the same under the UTF-8 locale the mutants' tests run "
                    "in; test_import_lm_eval.py::test_answers_in_any_script_are_read_and_written_as_given_whatever_the_"
                    "locale runs `bespoke import` under an ASCII locale in a subprocess (the installed package, not the "
                    "mutant) and fails on each (checked by hand)"),
    f"{_IMPORTING}x__lines__mutmut_9": ("the error's class named only where an OSError has no strerror: those `open` and "
                                        "reading raise always carry one (their errno's text)"),
    f"{_IMPORTING}x_write_imported__mutmut_9": "`ensure_ascii=False` written `ensure_ascii=None`: both false, the same JSON",
    **dict.fromkeys([f"{_IMPORTING}x__plain__mutmut_{n}" for n in (3, 5)],
                    "`default=str` dropped: the task arguments it is given come from an inspect log, JSON already"),
    f"{_IMPORTING}x_read_inspect_log__mutmut_6": ("the text shown for a reader's error whose message is empty: inspect's "
                                                  "reader raises none (its zip, JSON and pydantic errors all say what)"),
    f"{_IMPORTING}x__latest_blocks__mutmut_5": ("`>` made `>=` between two blocks of one session counting the same answers: "
                                                "a session's counts only grow and each block is its state after a call, so "
                                                "two blocks with the same count are the same block"),
    f"{_IMPORTING}x__answers__mutmut_12": ("1 counted for a block with no stand-in answers: a session's answers are all a "
                                           "stand-in's or all a model's (one backend), so every block of a model's "
                                           "session gains the same 1 and their order stays"),
    **dict.fromkeys([f"{_LM_EVAL}x_judge_answers__mutmut_{n}" for n in (56, 58, 59)],
                    "the filter's JSON written with `ensure_ascii` true: lm-eval's `process_results` and `bespoke import` "
                    "read it back with `json.loads`, the same values escaped or not"),
    **dict.fromkeys([f"{_LM_EVAL}x_average__mutmut_{n}" for n in (7, 9)], _DTYPE),
    f"{_INSPECT_JUDGE}xǁScorerJudgeǁ_open__mutmut_6": ("which judges are made on inspect's event loop and which in a "
                                                       "thread, swapped: `asyncio.to_thread` copies the context (inspect's "
                                                       "roles with it), and an embed proxy made on the loop only holds it "
                                                       "up while it encodes; the same session either way"),
    **dict.fromkeys([f"{_INSPECT_JUDGE}xǁScorerJudgeǁ_open__mutmut_{n}" for n in (7, 8, 9, 10)],
                    "an `inspect:ROLE` judge is opened only inside an eval, where inspect binds the roles: the real eval of "
                    "test_inspect_first_day.py::test_a_stand_in_system_and_judge_are_marked_in_inspect_s_table_and_after_"
                    "import fails on each (checked by hand), a slow test the mutants' quick ones leave out"),
    **dict.fromkeys([f"{_INSPECT_JUDGE}xǁScorerJudgeǁ_opening__mutmut_{n}" for n in (3, 9, 10)],
                    "the flag written before a scorer's own argument named in a message (`-S judge_cache=...`): no message "
                    "of a judge being opened names one (they name the judge's options, `cache=...`, or none)"),
    f"{_LM_EVAL}x_average__mutmut_11": "`reshape(-1, ...)` made `reshape(-2, ...)`: numpy infers any negative size alike",
}
"""Surviving mutants (mutmut's names) that no test can or should kill, each with the reason."""


def configure(tree: Path, group: Group) -> None:
    """mutmut's settings for `group`, in the scratch copy's pyproject.toml (`[tool.mutmut]`)."""
    left_out = (*group.heavy, *group.unfit)
    selection = [*group.tests, *(["-k", " and ".join(f"not {name}" for name in left_out)] if left_out else [])]
    added = ["-n0", "-p", "no:cacheprovider", *([] if group.slow else ["-m", "not slow"])]
    settings = {
        "source_paths": ["bespoke_metric"],
        "only_mutate": list(group.modules),
        "also_copy": ["bespoke_dataset", "scripts", "tests", "setup.cfg", "loaders", "docs", "README.md"],
        "pytest_add_cli_args": added,
        "pytest_add_cli_args_test_selection": selection,
        "process_isolation": "forkserver",
        "use_git_change_detection": False,
    }
    if group.warm:
        # mutmut's own warm-up (collecting the tests) and then `warm`, in the process the mutants are forked from
        mutants = tree / "mutants"
        collect = json.dumps(["--collect-only", "-qqq", f"--rootdir={mutants}", *(str(mutants / test) if test.startswith("tests/")
                                                                                   else test for test in selection), *added])
        mutants.mkdir()
        (mutants / "_warm_up.py").write_text(f"import pytest\npytest.main({collect})\n{group.warm}", encoding="utf-8")
        (tree / "warm-up.txt").write_text("_warm_up\n", encoding="utf-8")
        settings.update({"forkserver_warmup": "import", "preload_modules_file": "warm-up.txt"})
    lines = ["", "[tool.mutmut]", *(f"{name} = {json.dumps(value)}" for name, value in settings.items())]
    with (tree / "pyproject.toml").open("a", encoding="utf-8") as config:
        config.write("\n".join(lines) + "\n")
    # bespoke_cli is setup.cfg's name for scripts/: linked beside the mutants, ahead of any editable install
    (tree / "mutants" / SHIM).mkdir(parents=True, exist_ok=True)
    (tree / "mutants" / SHIM / "bespoke_cli").symlink_to(tree / "mutants" / "scripts", target_is_directory=True)


def outcomes(tree: Path, group: Group) -> dict[str, str]:
    """Each mutant's outcome by name, from the `.meta` files mutmut writes beside each mutated module."""
    from mutmut.stats import status_by_exit_code

    found: dict[str, str] = {}
    for module in group.modules:
        meta = json.loads((tree / "mutants" / f"{module}.meta").read_text(encoding="utf-8"))
        found.update({name: status_by_exit_code[code] for name, code in meta["exit_code_by_key"].items()})
    return found


def mutant_diff(tree: Path, group: Group, mutant: str) -> str:
    """The lines `mutant` changes in its function, its signature included (a default mutated), read from the module
    mutmut wrote (each mutant is a copy of the function beside the original, `..._mutmut_orig`): what `mutmut show`
    prints, without a process per mutant."""
    module = next(module for module in group.modules if mutant.startswith(module.removesuffix(".py").replace("/", ".") + "."))
    source = (tree / "mutants" / module).read_text(encoding="utf-8")
    name = mutant.rsplit(".", 1)[1]

    def body(function: str) -> list[str]:
        found = re.search(rf"^([ \t]*)(?:async )?def {re.escape(function)}\(.*?(?=^\1(?:def |class |[^\s#)])|\Z)", source,
                          re.S | re.M)
        # the copies' names differ, so the signature is compared under one name
        return found.group(0).replace(f"def {function}(", "def (", 1).splitlines() if found else []

    changed = difflib.unified_diff(body(name.rsplit("__mutmut_", 1)[0] + "__mutmut_orig"), body(name), lineterm="", n=0)
    return "\n".join(line for line in changed if line.startswith(("+", "-")) and not line.startswith(("+++", "---")))


def run_mutmut(tree: Path, environment: dict[str, str], budget_s: float | None) -> bool:
    """`mutmut run` in `tree`; False when the budget ran out first (mutmut and its workers stopped, the mutants it
    had not reached left unchecked)."""
    process = subprocess.Popen([sys.executable, "-m", "mutmut", "run", "--max-children", "2"], cwd=tree, env=environment,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, errors = process.communicate(timeout=budget_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)  # its own session: mutmut, its fork server and their workers
        process.communicate()
        return False
    if process.returncode != 0:
        raise SystemExit(f"mutmut run failed in {tree} ({process.returncode}):\n{errors[-3000:]}")
    return True


def run_group(name: str, group: Group, tree: Path, budget_s: float | None) -> dict:
    configure(tree, group)
    environment = {**os.environ, "PYTHONPATH": str(tree / "mutants" / SHIM), "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    finished = run_mutmut(tree, environment, budget_s)
    wall = round(time.perf_counter() - start, 1)
    found = {mutant: outcome for mutant, outcome in outcomes(tree, group).items() if outcome != UNCHECKED}
    unchecked = len(outcomes(tree, group)) - len(found)
    counts = Counter(found.values())
    survivors = [{"mutant": mutant, "outcome": found[mutant], "diff": mutant_diff(tree, group, mutant), "harmless": HARMLESS.get(mutant)}
                 for mutant in sorted(mutant for mutant, outcome in found.items() if outcome not in DETECTED)]
    detected = sum(counts[outcome] for outcome in DETECTED)
    print(f"{name}: {detected} of {len(found)} mutants checked detected ({wall} s, {unchecked} left unchecked); "
          f"{len(survivors)} survived, {sum(s['harmless'] is None for s in survivors)} without a reason")
    return {"modules": list(group.modules), "tests": list(group.tests), "mutants": len(found), "detected": detected,
            "unchecked": unchecked, "finished": finished, "outcomes": dict(counts),
            "kill_rate": round(detected / len(found), 4) if found else None, "wall_s": wall, "survivors": survivors}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", nargs="+", choices=list(GROUPS), default=list(GROUPS))
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies (their mutants/ folders)")
    parser.add_argument("--budget-s", type=float, help="stop each group's mutmut after this many seconds: the figures "
                        "are then those of the mutants it checked, the others counted as unchecked")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bespoke-mutation-"))
    # the groups not run this time keep their last figures (each says the commit it ran on)
    earlier = RESULTS / "mutation.json"
    kept = json.loads(earlier.read_text(encoding="utf-8"))["figures"]["groups"] if earlier.is_file() else {}
    figures: dict = {"tool": "mutmut", "groups": {name: group for name, group in kept.items() if name in GROUPS}}
    # their survivors' reasons are HARMLESS's as it is now: a reason written after a run explains its survivor
    for group in figures["groups"].values():
        for survivor in group["survivors"]:
            survivor["harmless"] = HARMLESS.get(survivor["mutant"])
    try:
        for name in args.groups:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True, capture_output=True,
                                    text=True).stdout.strip()
            figures["groups"][name] = {"commit": commit, **run_group(name, GROUPS[name], export_tree(work / name), args.budget_s)}
    finally:
        if args.keep:
            print(f"scratch copies kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    groups = figures["groups"].values()
    figures["mutants"] = sum(group["mutants"] for group in groups)
    figures["detected"] = sum(group["detected"] for group in groups)
    figures["kill_rate"] = round(figures["detected"] / figures["mutants"], 4) if figures["mutants"] else None
    figures["unchecked"] = sum(group.get("unchecked", 0) for group in groups)
    figures["unexplained_survivors"] = sum(s["harmless"] is None for group in groups for s in group["survivors"])
    write_results(__file__, figures, goals={"kill_rate": (">=", 0.9)},
                  notes={"kill_rate": "mutants a test failed on (or that made the tests hang) over the mutants checked",
                         "unchecked": "mutants a run stopped at its budget did not reach (--budget-s)",
                         "unexplained_survivors": "survivors without a reason in HARMLESS: gaps in the tests"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
