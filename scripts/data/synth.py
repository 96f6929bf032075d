"""`bespoke synth --out DIR [--users N ...] [--layout hub|github]`: write a synthetic release."""

from __future__ import annotations

import argparse

from bespoke_dataset.errors import UserError

HELP = "write a synthetic release in the public raw format (for tests, benchmarks and demos)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=None,
                        help="folder to write: new, empty, or an earlier synthetic release, which is replaced atomically; "
                             "required unless --sample")
    parser.add_argument("--force", action="store_true",
                        help="replace a non-empty folder that is not a synthetic release, and everything in it")
    parser.add_argument("--sample", action="store_true",
                        help="write the bundled sample (3 users, with predictions.jsonl) instead; --out defaults "
                             "to the package's sample folder")
    parser.add_argument("--users", type=int, default=30, help="number of users (default 30, as in the real release)")
    parser.add_argument("--queries-per-user", type=int, default=5, help="queries each user asks (default 5)")
    parser.add_argument("--sessions", type=int, default=2870,
                        help="history sessions in all, about 3/4 of them search (default 2870, as in the real release)")
    parser.add_argument("--shots-per-query", type=int, default=5,
                        help="human-judged example responses (R-J pairs) per query, shown to the judge (default 5)")
    parser.add_argument("--meta-test-per-query", type=int, default=2,
                        help="held-out human-judged responses per query, for meta-evaluation (default 2)")
    parser.add_argument("--layout", choices=("hub", "github"), default="hub",
                        help="hub: the seven parquet tables of the Hub repo; github: the official code repo's "
                             "per-user files, without histories (default hub)")
    parser.add_argument("--seed", type=int, default=0, help="random seed: the same seed writes the same release (default 0)")


def run(args: argparse.Namespace) -> int:
    from bespoke_dataset.synthetic import write_release, write_sample

    if args.sample:
        out = write_sample(force=args.force) if args.out is None else write_sample(args.out, force=args.force)
    elif args.out is None:
        raise UserError("--out is required (or use --sample)")
    else:
        out = write_release(args.out, users=args.users, queries_per_user=args.queries_per_user,
                            sessions=args.sessions, shots_per_query=args.shots_per_query,
                            meta_test_per_query=args.meta_test_per_query, layout=args.layout, seed=args.seed,
                            force=args.force)
    print(f"wrote synthetic release to {out}")
    return 0
