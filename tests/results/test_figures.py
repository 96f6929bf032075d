"""Every measured figure the README and the docs quote is its results file's, at the quoted rounding.

A quoted figure stands right after a marker naming its results file and the figure's dotted path in it
(`<!-- figure: judge_throughput.speedup.median -->12.7`), a goal's verdict after `<!-- goal: ... -->met`;
a number that can only be a measurement must carry one (`benchmarks/quote.py` says how). Every script in
`benchmarks/` writes its results file through `benchmarks/record.py`, and every results file comes from one.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
# inspect_calls.py: the inspect task rate_limits.py runs; scratch.py: the scratch copies plants.py and mutation.py change
HELPERS = {"record.py", "quote.py", "inspect_calls.py", "scratch.py"}
"""Modules of `benchmarks/` that are not benchmarks."""


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"bespoke_benchmarks_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


quote = _module("quote")


def documents() -> dict[str, str]:
    """README.md and every Markdown page under docs/, by path from the repository root."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in files if p.is_file()}


@pytest.mark.parametrize("name", sorted(documents()))
def test_every_quoted_figure_is_its_results_files(name):
    assert quote.problems_in(name, documents()[name], quote.load_results()) == []


def test_the_performance_page_quotes_most_results_files():
    found, _ = quote.quotes("docs/performance.md", (ROOT / "docs" / "performance.md").read_text(encoding="utf-8"))
    assert len(found) >= 40
    assert len({q.script for q in found}) > len(quote.load_results()) / 2


RECORD = {"figures": {"speedup": {"median": 12.66}, "calls": 1235}, "goals": {"speedup.median": {"met": False}},
          "machine": {"cores": 2, "load_at_start": [3.1, 2.0, 1.0]}}
PAGE = ("<!-- figure: bench.speedup.median -->12.7× (goal 20×: <!-- goal: bench.speedup.median -->missed), "
        "<!-- figure: bench.calls -->1,235 calls on <!-- figure: bench.machine.cores -->2 cores at load "
        "<!-- figure: bench.machine.load_at_start.0 -->3.1")


def test_a_drifted_figure_or_verdict_is_caught_and_refreshed():
    results = {"bench": RECORD}
    found, bad = quote.quotes("page.md", PAGE)
    assert bad == [] and [q.text for q in found] == ["12.7", "missed", "1,235", "2", "3.1"]
    assert quote.problems_in("page.md", PAGE, results) == []
    drifted = PAGE.replace("-->12.7×", "-->17.2×").replace("-->missed", "-->met").replace("-->1,235", "-->1,234")
    problems = quote.problems_in("page.md", drifted, results)
    assert problems == ["page.md:1: figure bench.speedup.median: quoted 17.2, the file says 12.7",
                        "page.md:1: goal bench.speedup.median: quoted met, the file says missed",
                        "page.md:1: figure bench.calls: quoted 1,234, the file says 1,235"]
    assert quote.refreshed("page.md", drifted, results) == PAGE
    assert quote.problems_in("page.md", "<!-- figure: bench.nothing -->1 and <!-- figure: other.calls -->1", results) == [
        "page.md:1: figure bench.nothing: the results file has no such figure",
        "page.md:1: figure other.calls: no results file benchmarks/results/other.json"]
    assert quote.problems_in("page.md", "<!-- figure: bench.calls --> 1,235", results) == [
        "page.md:1: <!-- figure: bench.calls --> is not followed by a number"]


def test_unmarked_measurements_are_refused_and_code_is_not_read():
    text = ("17.2× faster, 513 calls/s, 13.8 CPU-seconds, 40 s wall, nDCG@10 0.91 (dense); a scale of 5 × 100, "
            "8 × 80 GB GPUs, `python bench.py --ratio 2×`\n```\n1,235 calls/s\n```\n<!-- figure: b.x -->1.5× marked, "
            "goal ≥ 20×, within 1.3× (goal: 1.5×)")
    found = [p.split(": ", 1)[1].split(" looks")[0] for p in quote.unmarked("page.md", text)]
    assert found == ["17.2", "513", "13.8", "40", "0.91"]


def test_every_benchmark_writes_its_results_file_and_every_file_has_its_benchmark():
    scripts = {p.stem for p in BENCHMARKS.glob("*.py") if p.name not in HELPERS}
    for stem in scripts:
        source = (BENCHMARKS / f"{stem}.py").read_text(encoding="utf-8")
        assert "write_results(__file__" in source, f"benchmarks/{stem}.py writes no results file"
    results = quote.load_results()
    for stem, record in results.items():
        # a script's file is named for it; one of other settings (`--out`) adds a suffix: `<script>_<settings>`
        script = record["script"].removeprefix("benchmarks/").removesuffix(".py")
        assert script in scripts, f"{stem}.json: a results file without its script"
        assert stem == script or stem.startswith(f"{script}_"), f"{stem}.json names another script than {script}"
        assert {"command", "date", "bespoke_eval_version", "machine", "figures", "goals"} <= set(record)
        machine = record["machine"]
        # the load the figures were measured under (files written before record.py noted it at the start: at the end)
        assert machine["cores"] >= 1 and len(machine.get("load_at_start", machine.get("load_1m_5m_15m", []))) == 3


def test_record_writes_figures_goals_and_conditions(tmp_path):
    record = _module("record")
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
