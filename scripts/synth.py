"""`bespoke synth --out DIR [--users N ...] [--layout hub|github]`: write a synthetic release."""

from __future__ import annotations

import argparse

HELP = "write a synthetic release in the public raw format (for tests, benchmarks and demos)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=None, help="folder to write (replaced atomically); required unless --sample")
    parser.add_argument("--sample", action="store_true",
                        help="write the bundled sample (3 users, with predictions.jsonl) instead; --out defaults "
                             "to the package's sample folder")
    parser.add_argument("--users", type=int, default=30)
    parser.add_argument("--queries-per-user", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=2870, help="history sessions in all (about 3/4 search)")
    parser.add_argument("--shots-per-query", type=int, default=5)
    parser.add_argument("--meta-test-per-query", type=int, default=2)
    parser.add_argument("--layout", choices=("hub", "github"), default="hub")
    parser.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    from bespoke_dataset.synthetic import write_release, write_sample

    if args.sample:
        out = write_sample() if args.out is None else write_sample(args.out)
    elif args.out is None:
        raise SystemExit("bespoke synth: --out is required (or use --sample)")
    else:
        out = write_release(args.out, users=args.users, queries_per_user=args.queries_per_user,
                            sessions=args.sessions, shots_per_query=args.shots_per_query,
                            meta_test_per_query=args.meta_test_per_query, layout=args.layout, seed=args.seed)
    print(f"wrote synthetic release to {out}")
    return 0
