"""`bespoke stand-in`: a local OpenAI-compatible server answering as a system model, a profiler and a judge
would, so that `openai:` commands run without a key (`bespoke_metric.testing.stand_in`)."""

from __future__ import annotations

import argparse
import signal
import sys

from bespoke_metric.testing.stand_in import serve_stand_in

HELP = ("serve a stand-in OpenAI-compatible model on 127.0.0.1 (a system, profiler and judge of fixed rules, no "
        "key needed): set OPENAI_BASE_URL to the URL it prints; Ctrl-C stops it")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--url-file", metavar="F", help="also write the URL to this file, once the server answers")


def run(args: argparse.Namespace) -> int:
    def say(url: str) -> None:
        print(url, flush=True)  # one line, at once: a script reading the pipe waits for it

    # Ctrl-C, and `kill` too, stop it cleanly; also when started in the background (`&`), where a shell
    # without job control leaves SIGINT ignored
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, signal.default_int_handler)
    try:
        serve_stand_in(args.port, url_file=args.url_file, say=say)
    except KeyboardInterrupt:
        print("stand-in server stopped", file=sys.stderr)
    return 0
