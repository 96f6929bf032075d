"""Every measured figure the README and the docs quote is its results file's, at the quoted rounding.

A quoted figure stands right after a marker naming its results file (`benchmarks/results/<script>.json`)
and the figure's dotted path in it; a goal's verdict stands after a `goal:` marker:

    <!-- figure: judge_throughput.speedup.median -->12.7× faster (goal 20×: <!-- goal: judge_throughput.speedup.median -->missed)

The quoted number's decimals are its rounding (`12.7` quotes 12.66..12.75); thousands separators are
allowed (`1,235`). A path is looked up in the file's `figures` first, then in the file itself (so
`machine.cores` or `machine.load_at_start.0` name the conditions). Measured figures without a marker
(a ratio like `17.2×`, a rate in calls/prompts/tokens per second, a wall or CPU time, an nDCG) are
refused: they would drift unseen. Every script in `benchmarks/` writes its results file through
`benchmarks/record.py`, and every results file comes from one.
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
RESULTS = BENCHMARKS / "results"
HELPERS = {"record.py"}
"""Modules of `benchmarks/` that are not benchmarks."""

MARKER = re.compile(r"<!--\s*(?P<kind>figure|goal):\s*(?P<script>\w+)\.(?P<path>[\w.]+)\s*-->")
NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?")
VERDICT = re.compile(r"met|missed")
MEASURED = re.compile(
    r"(?<![\w.,@-])(?P<number>\d[\d,]*(?:\.\d+)?)(?=×|\s?x faster|\s(?:calls|prompts|requests|tokens|texts)/s|"
    r"\s?CPU-seconds|\s?s wall)"
    r"|nDCG@10\D{0,30}?(?P<ndcg>\d\.\d+)")
"""Numbers that can only be measurements: a ratio (`17.2×`), a rate per second, a wall or CPU time, an nDCG."""
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)


@dataclass(frozen=True)
class Quote:
    file: str
    line: int
    kind: str
    script: str
    path: str
    text: str
    """What follows the marker: the number (figure) or the verdict (goal), as written."""


def documents() -> dict[str, str]:
    """README.md and every Markdown page under docs/, by path from the repository root."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in files if p.is_file()}


def _blank_code(text: str) -> str:
    """The text with code blocks and inline code blanked out (same length, so positions and lines hold)."""
    return CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def quotes(name: str, text: str) -> tuple[list[Quote], list[str]]:
    """The figures and verdicts quoted behind markers, and a problem for each marker not followed by one."""
    found, problems = [], []
    for marker in MARKER.finditer(text):
        line = text.count("\n", 0, marker.start()) + 1
        pattern = NUMBER if marker["kind"] == "figure" else VERDICT
        value = pattern.match(text, marker.end())
        if value is None:
            problems.append(f"{name}:{line}: {marker.group(0)} is not followed by a "
                            f"{'number' if marker['kind'] == 'figure' else 'met/missed'}")
            continue
        found.append(Quote(name, line, marker["kind"], marker["script"], marker["path"], value.group(0)))
    return found, problems


def lookup(record: dict[str, Any], path: str) -> Any:
    for root in (record["figures"], record):
        value: Any = root
        for part in path.split("."):
            if isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            elif isinstance(value, dict) and part in value:
                value = value[part]
            else:
                break
        else:
            return value
    raise KeyError(path)


def check(quoted: list[Quote], results: dict[str, dict[str, Any]]) -> list[str]:
    """A line per quote that does not match its results file."""
    problems = []
    for quote in quoted:
        where = f"{quote.file}:{quote.line}: {quote.kind} {quote.script}.{quote.path}"
        record = results.get(quote.script)
        if record is None:
            problems.append(f"{where}: no results file benchmarks/results/{quote.script}.json")
            continue
        if quote.kind == "goal":
            goal = record["goals"].get(quote.path)
            if goal is None:
                problems.append(f"{where}: the results file has no goal for {quote.path}")
            elif quote.text != ("met" if goal["met"] else "missed"):
                problems.append(f"{where}: says {quote.text!r}, the file says {'met' if goal['met'] else 'missed'}")
            continue
        try:
            value = lookup(record, quote.path)
        except KeyError:
            problems.append(f"{where}: the results file has no such figure")
            continue
        written = quote.text.replace(",", "")
        decimals = len(written.partition(".")[2])
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(f"{where}: the figure is {value!r}, not a number")
        elif f"{value:.{decimals}f}" != written:
            problems.append(f"{where}: quoted {quote.text}, the file has {value} ({value:.{decimals}f} at that rounding)")
    return problems


def unmarked(name: str, text: str) -> list[str]:
    """A line per measured-looking number that no marker vouches for."""
    plain = _blank_code(text)
    vouched = {m.end() for m in MARKER.finditer(plain)}
    problems = []
    for match in MEASURED.finditer(plain):
        group = "number" if match["number"] is not None else "ndcg"
        start = match.start(group)
        if start not in vouched:
            line = plain.count("\n", 0, start) + 1
            problems.append(f"{name}:{line}: {match.group(group)} looks measured but has no <!-- figure: ... --> marker")
    return problems


def load_results() -> dict[str, dict[str, Any]]:
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(RESULTS.glob("*.json"))}


@pytest.mark.parametrize("name", sorted(documents()))
def test_every_quoted_figure_is_its_results_files(name):
    text = documents()[name]
    found, bad = quotes(name, _blank_code(text))
    assert bad + check(found, load_results()) + unmarked(name, text) == []


def test_docs_performance_quotes_its_figures():
    """The performance page exists and quotes figures from more than half of the results files."""
    text = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    found, _ = quotes("docs/performance.md", _blank_code(text))
    assert len(found) >= 40
    assert len({quote.script for quote in found}) > len(load_results()) / 2


def test_a_drifted_figure_or_verdict_is_caught():
    record = {"figures": {"speedup": {"median": 12.66}, "calls": 1235}, "goals": {"speedup.median": {"met": False}},
              "machine": {"cores": 2, "load_at_start": [3.1, 2.0, 1.0]}}
    good = ("<!-- figure: bench.speedup.median -->12.7× (goal missed: <!-- goal: bench.speedup.median -->missed), "
            "<!-- figure: bench.calls -->1,235 calls on <!-- figure: bench.machine.cores -->2 cores at load "
            "<!-- figure: bench.machine.load_at_start.0 -->3.1")
    found, bad = quotes("page.md", good)
    assert bad == [] and len(found) == 5
    assert check(found, {"bench": record}) == []
    assert unmarked("page.md", good) == []
    drifted = good.replace("-->12.7×", "-->17.2×").replace("-->missed", "-->met").replace("-->1,235", "-->1,234")
    problems = check(quotes("page.md", drifted)[0], {"bench": record})
    assert [p.split(": ", 2)[1] for p in problems] == ["figure bench.speedup.median", "goal bench.speedup.median",
                                                        "figure bench.calls"]
    assert "quoted 17.2, the file has 12.66 (12.7 at that rounding)" in problems[0]
    assert check(quotes("page.md", "<!-- figure: bench.nothing -->1")[0], {"bench": record}) == [
        "page.md:1: figure bench.nothing: the results file has no such figure"]
    assert check(quotes("page.md", "<!-- figure: other.calls -->1")[0], {"bench": record}) == [
        "page.md:1: figure other.calls: no results file benchmarks/results/other.json"]


def test_unmarked_measurements_are_refused_and_code_is_not_read():
    text = ("17.2× faster, 513 calls/s, 13.8 CPU-seconds, 40 s wall, nDCG@10 0.91 (dense); a scale of 5 × 100, "
            "8 × 80 GB GPUs, `python bench.py --ratio 2×`\n```\n1,235 calls/s\n```\n<!-- figure: b.x -->1.5× marked")
    found = [p.split(": ", 1)[1].split(" looks")[0] for p in unmarked("page.md", text)]
    assert found == ["17.2", "513", "13.8", "40", "0.91"]


def test_every_benchmark_writes_its_results_file_and_every_file_has_its_benchmark():
    scripts = {p.stem for p in BENCHMARKS.glob("*.py") if p.name not in HELPERS}
    for stem in scripts:
        source = (BENCHMARKS / f"{stem}.py").read_text(encoding="utf-8")
        assert "write_results(__file__" in source, f"benchmarks/{stem}.py writes no results file"
        assert f"benchmarks/results/{stem}.json" in source, f"benchmarks/{stem}.py does not say where its results go"
    results = load_results()
    assert set(results) <= scripts, "a results file without its script"
    for stem, record in results.items():
        assert record["script"] == f"benchmarks/{stem}.py"
        assert {"command", "date", "bespoke_eval_version", "machine", "figures", "goals", "script_seconds"} <= set(record)
        assert record["machine"]["cores"] >= 1 and len(record["machine"]["load_at_start"]) == 3


def _record_module():
    spec = importlib.util.spec_from_file_location("bespoke_benchmark_record", BENCHMARKS / "record.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_record_writes_figures_goals_and_conditions(tmp_path):
    record = _record_module()
    timing = record.over_runs([3.0, 1.0, 2.0])
    assert timing == {"median": 2.0, "min": 1.0, "max": 3.0, "runs": 3}
    path = record.write_results("benchmarks/bench.py", {"speedup": timing, "calls": 300},
                                goals={"speedup.median": (">=", 20.0), "calls": ("<=", 300)}, out=tmp_path / "bench.json")
    written = json.loads(path.read_text())
    assert written["figures"] == {"speedup": timing, "calls": 300}
    assert written["goals"] == {"speedup.median": {"comparison": ">=", "goal": 20.0, "met": False},
                                "calls": {"comparison": "<=", "goal": 300, "met": True}}
    assert written["script"] == "benchmarks/bench.py"
    assert set(written["machine"]) == {"cores", "load_at_start", "load_at_end", "platform", "python"}
    assert not list(tmp_path.glob("*.tmp"))
    with pytest.raises(KeyError, match="no figure 'speedup.mean'"):
        record.write_results("benchmarks/bench.py", {"speedup": timing}, goals={"speedup.mean": (">=", 1)},
                             out=tmp_path / "other.json")
