"""Reading a full-size release in each plausible layout: `histories` and `benchmark` rows, and `check`.

On a full-size synthetic release (30 users, 2,870 sessions, 150 queries) and its rewrites into the other
layouts (`bespoke_dataset.synthetic.layouts`: one row per judged response, Google activity text and JSON,
JSON chats, ...), the median time to build the `histories` and `benchmark` rows straight from the tables
(`load_rows`, no `datasets`) and to run `bespoke_dataset.check`. The baseline, measured in the same run on
the same folder, is pyarrow reading the seven tables. Goal: `check` of the whole release under 5 s on 2 cores.

    python benchmarks/data_layouts.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
from record import write_results

from bespoke_dataset import check
from bespoke_dataset.rows import load_rows
from bespoke_dataset.synthetic import write_release
from bespoke_dataset.synthetic.layouts import VARIANTS, rewrite

CHECK_GOAL_S = 5.0


def median_seconds(fn: Callable[..., object], repeat: int, *args: object) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median reported)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the synthetic histories plant a few fallbacks on purpose
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        original = write_release(Path(tmp) / "hub")
        layouts = {"hub": original, **{variant: rewrite(original, Path(tmp) / variant, variant) for variant in VARIANTS}}
        print(f"{'layout':<18}{'raw read ms':>12}{'histories ms':>14}{'benchmark ms':>14}{'check ms':>10}{'check/raw':>11}")
        for name, folder in layouts.items():
            files = sorted(folder.glob("*/*.parquet"))
            raw = median_seconds(lambda paths: [pq.read_table(f) for f in paths], args.repeat, files)
            histories = median_seconds(load_rows, args.repeat, "histories", folder)
            bench = median_seconds(load_rows, args.repeat, "benchmark", folder)
            checked = median_seconds(check, args.repeat, folder)
            figures.update({f"{name}_raw_read_s": round(raw, 4), f"{name}_histories_s": round(histories, 4),
                            f"{name}_benchmark_s": round(bench, 4), f"{name}_check_s": round(checked, 4),
                            f"{name}_check_over_raw": round(checked / raw, 1)})
            print(f"{name:<18}{raw * 1000:>12.0f}{histories * 1000:>14.0f}{bench * 1000:>14.0f}{checked * 1000:>10.0f}"
                  f"{checked / raw:>10.1f}x")
    figures["slowest_check_s"] = max(figures[f"{name}_check_s"] for name in layouts)
    write_results(__file__, figures, goals={"slowest_check_s": ("<=", CHECK_GOAL_S)},
                  notes={"release": "full-size synthetic: 30 users, 2,870 sessions, 150 queries; each layout a rewrite "
                                    "of it (bespoke_dataset.synthetic.layouts)",
                         "baseline": "pyarrow.parquet.read_table of the seven tables, same folder, same run"})


if __name__ == "__main__":
    main()
