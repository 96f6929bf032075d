"""`bespoke stand-in`: a local OpenAI-compatible server answering as a system model, a profiler and a judge
would, so that `openai:` commands run without a key (`bespoke_metric.testing.stand_in`)."""

from __future__ import annotations

import argparse
import signal
import sys

from bespoke_metric.testing.provider_limits import Limits
from bespoke_metric.testing.stand_in import serve_stand_in

HELP = ("serve a stand-in OpenAI-compatible model on 127.0.0.1 (a system, profiler and judge of fixed rules, no "
        "key needed): set OPENAI_BASE_URL to the URL it prints; Ctrl-C stops it. --rpm, --tpm and --quota-calls "
        "make it enforce a provider's limits as OpenAI does, to rehearse them offline")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--url-file", metavar="F", help="also write the URL to this file, once the server answers")
    limits = parser.add_argument_group(
        "rehearsing a provider's limits", "enforced as OpenAI does: x-ratelimit-* headers on every answer, 429 "
        "rate_limit_exceeded with retry-after-ms past a limit (a refused call counts), 429 insufficient_quota once "
        "the quota is spent; `kill -USR1 PID` tops the account up")
    limits.add_argument("--rpm", type=_positive, metavar="N", help="requests per minute")
    limits.add_argument("--tpm", type=_positive, metavar="N",
                        help="tokens per minute, a call charged its prompt's words plus the output cap it asks for")
    limits.add_argument("--window", type=_positive, default=1.0, metavar="S",
                        help="a limit is enforced over this many seconds (default 1: 60 RPM as 1 request per second)")
    limits.add_argument("--quota-calls", type=_count, metavar="N", help="calls answered before the account is spent")


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
    return value


def run(args: argparse.Namespace) -> int:
    def say(url: str) -> None:
        print(url, flush=True)  # one line, at once: a script reading the pipe waits for it

    # Ctrl-C, and `kill` too, stop it cleanly; also when started in the background (`&`), where a shell
    # without job control leaves SIGINT ignored
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, signal.default_int_handler)
    try:
        serve_stand_in(args.port, url_file=args.url_file, say=say,
                       limits=Limits(rpm=args.rpm, tpm=args.tpm, window_s=args.window, quota_calls=args.quota_calls))
    except KeyboardInterrupt:
        print("stand-in server stopped", file=sys.stderr)
    return 0
