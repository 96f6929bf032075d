"""The table of judges against single meta-evaluations: what three judges cost together, and what the table says.

Three stand-in judges of known quality (`testing.judge_responder.known_quality_judges`: close to the people,
noisy, favouring long answers) answer over HTTP at a local OpenAI-compatible server, which counts the calls.
On the synthetic release's meta-test responses (`--users` users):

1. three single `bespoke meta-eval --judge X` runs, each with its own fresh cache: their calls and walls;
2. `bespoke meta-eval --judge A --judge B --judge C --out DIR` with a fresh cache: its calls (goal: no more
   than the three single runs together, ratio <= 1) and its wall, as a ratio to the three single runs';
3. the table again over the caches the single runs filled (one file, shared): goal 0 calls;
4. the table is written into `docs/choosing-a-judge.md` between its markers (the synthetic release's table),
   and the page's quoted figures are refreshed.

    python benchmarks/judges_table.py [--users 10]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quote  # noqa: E402
from record import write_results  # noqa: E402

import bespoke_dataset  # noqa: E402
from bespoke_cli import cli  # noqa: E402
from bespoke_dataset.synthetic import write_release  # noqa: E402
from bespoke_metric.testing.judge_responder import KNOWN_QUALITY, known_quality_judges  # noqa: E402
from bespoke_metric.testing.server import serve  # noqa: E402

DOCS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "choosing-a-judge.md"
MARKERS = ("<!-- judges-table:start (written by benchmarks/judges_table.py) -->", "<!-- judges-table:end -->")


def meta_eval(argv: list[str]) -> float:
    """Run `bespoke meta-eval` quietly; its wall in seconds (exit 0 or the script stops)."""
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["meta-eval", *argv])
    if code != 0:
        raise SystemExit(f"meta-eval {' '.join(argv)} exited {code}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10)
    args = parser.parse_args()
    specs = [f"openai:{name}" for name in KNOWN_QUALITY]
    with tempfile.TemporaryDirectory() as work:
        release = str(write_release(Path(work) / "release", users=args.users, queries_per_user=5, seed=3))
        rows = list(bespoke_dataset.load("meta_test", source=release))
        with serve(known_quality_judges(rows)) as server:
            common = ["--source", release, "--base-url", server.base_url, "--api-key", "benchmark", "--resamples", "1000"]
            single_walls, single_calls = [], []
            shared = str(Path(work) / "shared.sqlite")
            for spec in specs:  # each alone, with a fresh cache: what three meta-evals cost
                before = len(server.calls)
                single_walls.append(meta_eval(["--judge", spec, *common, "--cache", str(Path(work) / f"{spec[7:]}.sqlite")]))
                single_calls.append(len(server.calls) - before)
                meta_eval(["--judge", spec, *common, "--cache", shared])  # the shared cache, filled as users would
            before = len(server.calls)
            out = Path(work) / "table"
            judges = [flag for spec in specs for flag in ("--judge", spec)]
            table_wall = meta_eval([*judges, *common, "--cache", str(Path(work) / "table.sqlite"), "--out", str(out)])
            table_calls = len(server.calls) - before
            before = len(server.calls)
            meta_eval([*judges, *common, "--cache", shared, "--out", str(Path(work) / "again")])
            shared_calls = len(server.calls) - before
            table = json.loads((out / "judges.json").read_text())
            markdown = (out / "judges.md").read_text()
    rows_by_spec = {row["spec"]: row for row in table["judges"]}
    figures = {
        "responses": table["responses"],
        "single_calls": single_calls,
        "singles_calls_total": sum(single_calls),
        "table_calls": table_calls,
        "calls_ratio": round(table_calls / sum(single_calls), 4),
        "table_calls_over_shared_cache": shared_calls,
        "singles_wall_s": round(sum(single_walls), 3),
        "table_wall_s": round(table_wall, 3),
        "wall_ratio": round(table_wall / sum(single_walls), 3),
        "ranks": {spec: row["rank"] for spec, row in rows_by_spec.items()},
        "average_pearson": {spec: round(row["pearson"]["average"]["value"], 4) for spec, row in rows_by_spec.items()},
        "length_bias_flagged": {spec: row["length_bias"]["flagged"] for spec, row in rows_by_spec.items()},
    }
    write_results(__file__, figures, goals={"calls_ratio": ("<=", 1.0), "table_calls_over_shared_cache": ("<=", 0)})
    page = DOCS_PAGE.read_text()
    block = f"{MARKERS[0]}\n{markdown.replace('# Judges', '#### Judges', 1)}{MARKERS[1]}"
    page = re.sub(re.escape(MARKERS[0]) + ".*?" + re.escape(MARKERS[1]), lambda _: block, page, flags=re.S)
    DOCS_PAGE.write_text(quote.refreshed("docs/choosing-a-judge.md", page, quote.load_results()))  # its quoted figures too
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
