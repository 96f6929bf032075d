"""A warm `bespoke` for the docs tests: the command a page's bash blocks find first on PATH hands its
arguments, folder, environment and standard streams to one server process that imported the heavy
libraries (torch, transformers, datasets, ...) once; the server forks, and the child runs
`bespoke_cli.cli:main` (the console script's function) as the real `bespoke` would, then exits with
its code.

On 2 cores a cold `bespoke score --judge embed:...` spends half its CPU importing torch and
sentence-transformers; the docs run some 70 `bespoke` commands. Our own packages are imported fresh
in each child, so what they do on import (and print) is what a user's command does. A page's blocks
run as written; `tests/house/test_docs.py` checks that the warm command and the installed one answer alike.

    python tests/house/warm_cli.py SOCKET      # serve (the docs tests start it)
    bespoke ARGS...                      # the shim written by `write_shim`, with the socket in its text
"""

from __future__ import annotations

import array
import atexit
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import NoReturn

PRELOADED = ("numpy", "pandas", "pyarrow", "scipy", "sklearn", "matplotlib", "httpx", "openai", "huggingface_hub",
             "datasets", "evaluate", "torch", "transformers", "sentence_transformers", "bm25s")
"""Third-party libraries the commands import, imported once in the server (never Ray: its start-up
spawns processes a fork must not share)."""

STREAMS = 3
"""Standard input, output and error, passed as file descriptors."""

SHIM = '''#!{python} -S
# The warm `bespoke` of the docs tests (tests/house/warm_cli.py): runs the command in the server at {socket!r}.
import array, json, os, signal, socket, sys

connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
connection.connect({socket!r})
request = json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
connection.sendmsg([len(request).to_bytes(8, "big") + request],
                   [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
reader = connection.makefile("r")
child = int(reader.readline())
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
    signal.signal(number, lambda received, frame: os.kill(child, received))
code = reader.readline()
sys.exit(int(code) if code else 1)
'''
"""The command on PATH: stdlib only (`-S`), so it starts in milliseconds. It forwards the signals a
shell sends (`kill`, `kill -USR1`, Ctrl-C) to the child; a child that dies without a code is exit 1."""


def write_shim(folder: Path, socket_path: Path) -> Path:
    """`folder/bespoke`, the warm command talking to the server at `socket_path`."""
    shim = folder / "bespoke"
    shim.write_text(SHIM.format(python=sys.executable, socket=str(socket_path)), encoding="utf-8")
    shim.chmod(0o755)
    return shim


def receive(connection: socket.socket) -> tuple[dict, list[int]]:
    """One request: its JSON (argv, cwd, env) and the caller's standard streams."""
    fds = array.array("i")
    data, ancillary, _, _ = connection.recvmsg(1 << 16, socket.CMSG_SPACE(STREAMS * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    size = int.from_bytes(data[:8], "big")
    body = data[8:]
    while len(body) < size:
        more = connection.recv(size - len(body))
        if not more:
            raise ConnectionError("the warm bespoke's caller went away mid-request")
        body += more
    return json.loads(body), list(fds)


_reply: socket.socket | None = None
"""In a child: the connection its exit code goes back on."""
_code = 1
"""In a child: the code the command exits with (1 until it returns: an uncaught exception's code)."""


def _reply_at_exit() -> None:
    """Registered before any library's: at a child's exit it runs last of the exit handlers. It flushes
    the command's output, sends the exit code and ends the process: tearing down the heap of torch and
    every preloaded library would hold the caller's pipes open for seconds, and nothing is left to run."""
    if _reply is None:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _reply.sendall(f"{_code}\n".encode())
    os._exit(_code)


def run_child(request: dict, streams: list[int], connection: socket.socket) -> NoReturn:
    """In the forked child: become the caller's `bespoke` and run the command, then exit as a fresh
    interpreter would (exit handlers, flushed streams, a traceback for an uncaught exception)."""
    global _reply, _code
    _reply = connection
    connection.sendall(f"{os.getpid()}\n".encode())  # for the shim to forward signals to
    for target, fd in enumerate(streams):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C is KeyboardInterrupt, as in a fresh Python
    sys.argv = ["bespoke", *request["argv"]]
    from bespoke_cli.cli import main

    try:
        _code = int(main(request["argv"]) or 0)
    except SystemExit as done:  # argparse's exits, and `sys.exit` anywhere in a command
        _code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        raise
    sys.exit(_code)


def serve(socket_path: Path) -> None:
    """Import the heavy libraries, then fork one child per connection until terminated."""
    import importlib

    atexit.register(_reply_at_exit)
    for name in PRELOADED:
        importlib.import_module(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_path))
    listener.listen(16)
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        request, streams = receive(connection)
        sys.stdout.flush()
        sys.stderr.flush()
        child = os.fork()
        if child == 0:
            listener.close()
            run_child(request, streams, connection)
        for fd in streams:
            os.close(fd)
        connection.close()


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
