"""Quoting measured figures in Markdown: each stands right after a marker naming its results file
(`benchmarks/results/<script>.json`) and its dotted path there, a goal's verdict after a `goal:` marker:

    <!-- figure: judge_throughput.speedup.median -->12.7× faster (goal 20×: <!-- goal: judge_throughput.speedup.median -->missed)

The quoted number's decimals are its rounding (`12.7` quotes 12.65..12.75); thousands separators are
allowed (`1,235`). A path is looked up in the file's `figures`, else in the file itself (`machine.cores`,
`machine.load_at_start.0`). A number that can only be a measurement (a ratio like `17.2×`, a rate per
second, a wall or CPU time, an nDCG) must carry a marker, unless it is a bound (`goal ≥ 20×`). `tests/results/test_figures.py` holds README.md and
docs/ to this; after rerunning benchmarks, `--write` puts each file's new figures in place.

    python benchmarks/quote.py README.md docs/*.md            # check: one line per mismatch, exit 1
    python benchmarks/quote.py --write docs/performance.md     # rewrite the quoted figures from the results
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"

MARKER = re.compile(r"<!--\s*(?P<kind>figure|goal):\s*(?P<script>\w+)\.(?P<path>[\w./-]+)\s*-->")
NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?")
VERDICT = re.compile(r"met|missed")
MEASURED = re.compile(
    r"(?<![\w.,@-])(?P<number>\d[\d,]*(?:\.\d+)?)(?=×|\s?x faster|\s(?:calls|prompts|requests|tokens|texts)/s|"
    r"\s?CPU-seconds|\s?s wall)"
    r"|nDCG@10\D{0,30}?(?P<ndcg>\d\.\d+)")
"""Numbers that can only be measurements: a ratio (`17.2×`), a rate per second, a wall or CPU time, an nDCG."""
BOUND = re.compile(r"(?:goal:?|[≤≥<>]|at (?:least|most)|within|under)\s*$")
"""What a goal or a limit is written after (`goal ≥ 20×`, `within 1.3×`): a bound, not a measurement."""
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)


@dataclass(frozen=True)
class Quote:
    file: str
    line: int
    kind: str
    """`figure` or `goal`."""
    script: str
    path: str
    text: str
    """What follows the marker: the number (figure) or the verdict (goal), as written."""
    start: int
    """Where that text starts in the file."""


def load_results(folder: Path = RESULTS) -> dict[str, dict[str, Any]]:
    """Every results file, by script name."""
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}


def blank_code(text: str) -> str:
    """The text with code blocks and inline code blanked out (same length: positions and lines hold)."""
    return CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def quotes(name: str, text: str) -> tuple[list[Quote], list[str]]:
    """The figures and verdicts quoted behind markers outside code, and a problem for each marker that
    is not followed by one."""
    plain = blank_code(text)
    found, problems = [], []
    for marker in MARKER.finditer(plain):
        line = plain.count("\n", 0, marker.start()) + 1
        value = (NUMBER if marker["kind"] == "figure" else VERDICT).match(plain, marker.end())
        if value is None:
            wanted = "number" if marker["kind"] == "figure" else "met/missed"
            problems.append(f"{name}:{line}: {marker.group(0)} is not followed by a {wanted}")
            continue
        found.append(Quote(name, line, marker["kind"], marker["script"], marker["path"], value.group(0), value.start()))
    return found, problems


def lookup(record: dict[str, Any], path: str) -> Any:
    """The value at a dotted path of a results file: in its figures, else in the file itself."""
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


def expected(quote: Quote, results: dict[str, dict[str, Any]]) -> str:
    """What the quote should say, at its rounding; ValueError saying why there is nothing to say."""
    record = results.get(quote.script)
    if record is None:
        raise ValueError(f"no results file benchmarks/results/{quote.script}.json")
    if quote.kind == "goal":
        if quote.path not in record["goals"]:
            raise ValueError(f"the results file has no goal for {quote.path}")
        return "met" if record["goals"][quote.path]["met"] else "missed"
    try:
        value = lookup(record, quote.path)
    except KeyError:
        raise ValueError("the results file has no such figure") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"the figure is {value!r}, not a number")
    decimals = len(quote.text.partition(".")[2])
    return f"{value:,.{decimals}f}" if "," in quote.text else f"{value:.{decimals}f}"


def check(quoted: list[Quote], results: dict[str, dict[str, Any]]) -> list[str]:
    """A line per quote that does not say what its results file says."""
    problems = []
    for quote in quoted:
        where = f"{quote.file}:{quote.line}: {quote.kind} {quote.script}.{quote.path}"
        try:
            should = expected(quote, results)
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        if quote.text.replace(",", "") != should.replace(",", ""):
            problems.append(f"{where}: quoted {quote.text}, the file says {should}")
    return problems


def unmarked(name: str, text: str) -> list[str]:
    """A line per measured-looking number outside code that no marker vouches for."""
    plain = blank_code(text)
    vouched = {m.end() for m in MARKER.finditer(plain)}
    problems = []
    for match in MEASURED.finditer(plain):
        group = "number" if match["number"] is not None else "ndcg"
        start = match.start(group)
        if start not in vouched and not BOUND.search(plain[max(0, start - 12):start]):
            line = plain.count("\n", 0, start) + 1
            problems.append(f"{name}:{line}: {match.group(group)} looks measured but has no <!-- figure: ... --> marker")
    return problems


def problems_in(name: str, text: str, results: dict[str, dict[str, Any]]) -> list[str]:
    found, bad = quotes(name, text)
    return bad + check(found, results) + unmarked(name, text)


def refreshed(name: str, text: str, results: dict[str, dict[str, Any]]) -> str:
    """The text with every quoted figure and verdict as its results file says it now (a quote with
    nothing to say is left as it is, for `check` to name)."""
    found, _ = quotes(name, text)
    for quote in sorted(found, key=lambda q: -q.start):
        try:
            text = text[:quote.start] + expected(quote, results) + text[quote.start + len(quote.text):]
        except ValueError:
            continue
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--write", action="store_true", help="rewrite each quoted figure from its results file")
    args = parser.parse_args(argv)
    results, problems = load_results(), []
    for path in args.files:
        text = path.read_text(encoding="utf-8")
        if args.write:
            text = refreshed(str(path), text, results)
            path.write_text(text, encoding="utf-8")
        problems += problems_in(str(path), text, results)
    print("\n".join(problems) or f"every quoted figure matches its results file ({len(args.files)} file(s))")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
