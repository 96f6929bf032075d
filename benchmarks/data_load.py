"""Cold and warm `bespoke_dataset.load` times and peak memory per config, on a full-size synthetic release.

Goals: cold `benchmark` build under 10 s, warm load under 1 s on a 2-core machine. The baseline, measured
in the same run, is reading the seven raw parquet tables with pyarrow. Writes
`benchmarks/results/data_load.json` (medians and ranges over the runs).

    python benchmarks/data_load.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import logging
import resource
import statistics
import tempfile
import time
import tracemalloc
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path

import datasets
import pyarrow.parquet as pq
from record import over_runs, write_results  # first: it notes the load the run starts under

from bespoke_dataset import CONFIGS, load
from bespoke_dataset.synthetic import write_release


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="cold builds per config (median reported)")
    args = parser.parse_args()
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_seconds = timed(lambda: write_release(root / "release"))
        release = root / "release"
        files = sorted(release.glob("*/*.parquet"))
        raws = [timed(lambda: [pq.read_table(f) for f in files]) for _ in range(5)]
        raw = statistics.median(raws)
        size_mb = sum(f.stat().st_size for f in files) / 1e6
        print(f"full-size synthetic release: 30 users, 2,870 sessions, 150 queries ({size_mb:.1f} MB parquet), "
              f"written in {write_seconds:.2f} s")
        print(f"baseline: pyarrow reads the seven raw tables in {raw * 1000:.1f} ms\n")
        print(f"{'config':<12} {'rows':>6} {'cold s':>8} {'warm s':>8} {'cold/raw':>9} {'warm/raw':>9} "
              f"{'peak MB (cold, tracemalloc)':>28}")
        configs = {}
        for config in CONFIGS:
            colds = [timed(partial(load, config, release, cache_dir=root / f"cold-{config}-{run}"))
                     for run in range(args.repeat)]
            warm_load = partial(load, config, release, cache_dir=root / f"cold-{config}-0")
            warms = [timed(warm_load) for _ in range(5)]
            warm = statistics.median(warms)
            tracemalloc.start()
            rows = len(load(config, release, cache_dir=root / f"traced-{config}"))
            peak = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
            cold = statistics.median(colds)
            print(f"{config:<12} {rows:>6} {cold:>8.3f} {warm:>8.3f} {cold / raw:>9.1f} {warm / raw:>9.1f} "
                  f"{peak:>28.1f}")
            configs[config] = {"rows": rows, "cold_s": over_runs(colds), "warm_s": over_runs(warms),
                               "peak_mb": round(peak, 1)}
        peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"\nprocess peak RSS: {peak_rss:.0f} MB")
    write_results(__file__, {"release_mb": round(size_mb, 1), "write_release_s": round(write_seconds, 2),
                             "raw_parquet_s": over_runs(raws), "configs": configs, "peak_rss_mb": round(peak_rss)},
                  goals={"configs.benchmark.cold_s.median": ("<", 10.0), "configs.benchmark.warm_s.median": ("<", 1.0)},
                  notes={"cold_s": "load() into an empty cache", "warm_s": "load() from the cache a cold run wrote",
                         "peak_mb": "tracemalloc peak of one cold load"})


if __name__ == "__main__":
    main()
