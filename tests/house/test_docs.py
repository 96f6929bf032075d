"""Every example in README.md and docs/ runs: each page's ```python and ```bash blocks, in order, in a
fresh folder, offline, with one namespace for the page's python blocks.

A block preceded on the line above by `<!-- not run: REASON -->` is not run (it needs an API key, a
GPU, the Hub, or a package that is not installed). The others see, in their environment, a local
OpenAI-compatible server (`OPENAI_BASE_URL`, a placeholder `OPENAI_API_KEY`) that answers as a system
model and as a judge would (`bespoke stand-in`, started once as the "No API key?" section of Getting
started starts it), so `openai:` systems and judges work as written; the Hub is offline. Bash blocks run with
`bash -e -o pipefail`, their `bespoke` the warm one of `warm_cli.py` (the command's own function, forked from a
server that imported torch and datasets once); python blocks in this process, so a model loaded once (the
`embed:` judge's MiniLM) serves every page.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from warm_cli import write_shim

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

NOT_RUN = re.compile(r"<!-- not run: (?P<reason>\S.*?) -->")
CHECKED = re.compile(r"<!-- the commands above write: (?P<path>\S+) -->")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
RUN = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
"""Fence languages that run, and how."""
BLOCK_TIMEOUT_S = 600
SMOLLM2 = ("smollm2_path()", "smollm2_folder()")
"""What a page that loads SmolLM2 calls: its GGUF file is converted once a session, by the `smollm2` fixture."""


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    """1-based line of the opening fence."""
    language: str
    code: str
    not_run: str | None
    """The reason given in `<!-- not run: REASON -->` on the line above, if any."""
    checked: str | None = None
    """The file named in `<!-- the commands above write: PATH -->` on the line above, if any: the block shows
    (part of) what the page's commands wrote there, checked against it once they ran (`output_departures`)."""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def read_blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, indented ones (in lists, admonitions) included."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        language = opening["info"].strip().split(" ", 1)[0].lower()
        end = index + 1
        while end < len(lines) and not (lines[end].startswith(indent) and lines[end].strip().startswith(fence) and lines[end].strip().strip(fence[0]) == ""):
            end += 1
        if end == len(lines):
            raise AssertionError(f"{page.relative_to(ROOT)}:{index + 1}: a code block that never closes")
        code = "\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines[index + 1:end]) + "\n"
        above = NOT_RUN.fullmatch(lines[index - 1].strip()) if index > 0 else None
        checked = CHECKED.fullmatch(lines[index - 1].strip()) if index > 0 else None
        blocks.append(Block(page, index + 1, language, code, above["reason"] if above else None,
                            checked["path"] if checked else None))
        index = end + 1
    return blocks


OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
"""Read by the Hugging Face libraries when imported: the warm `bespoke` server imports them offline too."""


@pytest.fixture(scope="module")
def warm_bespoke(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder holding the warm `bespoke` (tests/house/warm_cli.py), its server started once for every page:
    each page's `bespoke` commands skip the seconds of importing torch and datasets."""
    folder = tmp_path_factory.mktemp("warm-bespoke")
    socket_path = folder / "bespoke.sock"
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("warm_cli.py")), str(socket_path)],
                              env={**os.environ, **OFFLINE}, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline() == "ready\n", "the warm bespoke server did not start"
        (folder / "bin").mkdir()
        write_shim(folder / "bin", socket_path)
        yield folder / "bin"
    finally:
        server.terminate()
        server.wait(timeout=60)


@pytest.fixture
def page_env(stand_in, warm_bespoke: Path, bespoke_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment a page's blocks see (set in this process too, for its python blocks): one
    `bespoke stand-in` for every page, a system model and a judge at `OPENAI_BASE_URL`, and a fresh
    `BESPOKE_CACHE` whose GGUF conversions are the session's (conftest `bespoke_cache`)."""
    settings = {
        "OPENAI_BASE_URL": stand_in.url,
        "OPENAI_API_KEY": "sk-docs-placeholder",
        **OFFLINE,
        "BESPOKE_CACHE": str(bespoke_cache),
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        # a fresh local Ray instance, never another test's cluster that happens to run on this machine
        "RAY_ADDRESS": "local",
        "NO_COLOR": "1",
        # the fakes of the providers' APIs some pages start (tests/fakes/), as from a checkout's root with PYTHONPATH=tests
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")])),
    }
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    # the `bespoke` and `python` a user's shell would find: the warm `bespoke`, this interpreter's
    monkeypatch.setenv("PATH", os.pathsep.join([str(warm_bespoke), str(Path(sys.executable).parent), os.environ["PATH"]]))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return dict(os.environ)


def run_bash(block: Block, env: dict[str, str]) -> None:
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.code], cwd=os.getcwd(), env=env, capture_output=True,
        text=True, timeout=BLOCK_TIMEOUT_S,
    )
    if done.returncode != 0:
        pytest.fail(f"{block.where}: the bash block exited {done.returncode}\n{block.code}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}", pytrace=False)


def run_python(block: Block, namespace: dict[str, object]) -> None:
    # line numbers in a traceback are the page's
    code = compile("\n" * block.line + block.code, str(block.page.relative_to(ROOT)), "exec")
    exec(code, namespace)  # noqa: S102 - running the documentation's own examples is the point


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_example_of_the_page_runs(page: Path, page_env: dict[str, str], request: pytest.FixtureRequest) -> None:
    if any(call in page.read_text(encoding="utf-8") for call in SMOLLM2):
        request.getfixturevalue("smollm2")  # the session's first load of SmolLM2: the page reads its conversion
    namespace: dict[str, object] = {"__name__": "__main__"}
    for block in read_blocks(page):
        if block.checked:  # what the commands above it wrote, as the page shows it
            written = json.loads(Path(block.checked).read_text(encoding="utf-8"))
            assert output_departures(json.loads(block.code), written) == [], f"{block.where}: {block.checked} is not as shown"
        if block.language not in RUN or block.not_run:
            continue
        if RUN[block.language] == "bash":
            run_bash(block, page_env)
        else:
            run_python(block, namespace)


def output_departures(shown: object, written: object, where: str = "") -> list[str]:
    """How a page's example of a file departs from the file its commands wrote: a field it does not hold, or a
    value other than shown (a number as shown: at the digits shown); `"..."` in a list stands for the rest."""
    if isinstance(shown, dict):
        if not isinstance(written, dict):
            return [f"{where or 'the file'}: an object on the page, {type(written).__name__} in the file"]
        return [problem for key, value in shown.items() for problem in
                (output_departures(value, written[key], f"{where}.{key}") if key in written else [f"{where}.{key}: not in the file"])]
    if isinstance(shown, list):
        listed = [value for value in shown if value != ELIDED]
        if not isinstance(written, list) or len(written) < len(listed) or (ELIDED not in shown and len(written) != len(listed)):
            return [f"{where}: {json.dumps(shown)[:80]} on the page, {json.dumps(written)[:80]} in the file"]
        # strict=False: an elided list (`...`) shows only the first of the values written
        return [problem for index, (value, real) in enumerate(zip(listed, written, strict=False))
                for problem in output_departures(value, real, f"{where}[{index}]")]
    if isinstance(shown, float) and isinstance(written, (int, float)) and not isinstance(written, bool):
        digits = len(repr(shown).partition(".")[2])
        return [] if round(written, digits) == shown else [f"{where}: {shown} on the page, {written} in the file"]
    return [] if shown == written and type(shown) is type(written) else [f"{where}: {shown!r} on the page, {written!r} in the file"]


@pytest.mark.slow
def test_the_warm_bespoke_answers_as_the_installed_one(warm_bespoke: Path, tmp_path: Path) -> None:
    """The pages' `bespoke` is the console script's function in a forked server: the same output, the
    same exit codes (a result, a user's mistake, a bad flag) as the installed command's."""
    installed = Path(sys.executable).with_name("bespoke")
    env = {**os.environ, **OFFLINE, "BESPOKE_CACHE": str(tmp_path / "cache"), "NO_COLOR": "1"}
    codes = []
    for argv in (["info", "--source", "sample"], ["info", "--source", "no-such-release"], ["score", "--bogus"]):
        warm, cold = (subprocess.run([str(command), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)
                      for command in (warm_bespoke / "bespoke", installed))
        assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr), argv
        codes.append(warm.returncode)
    assert codes == [0, 2, 2]


def test_every_block_says_its_language_and_why_it_is_not_run() -> None:
    """An untagged block would be skipped silently, and a `not run` note must name its reason."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        blocks = read_blocks(page)
        for block in blocks:
            assert block.language, f"{block.where}: a code block without a language"
        noted = {block.line - 1 for block in blocks if block.not_run}
        for number, line in enumerate(text.splitlines(), start=1):
            if "not run" in line and line.strip().startswith("<!--"):
                assert NOT_RUN.fullmatch(line.strip()), f"{page.relative_to(ROOT)}:{number}: write `<!-- not run: REASON -->`"
                assert number in noted, f"{page.relative_to(ROOT)}:{number}: a `not run` note not on the line above a code block"


EXAMPLE_COPY = re.compile(r"# (?P<file>docs/examples/\S+)\n")
"""The first line of a block that shows a file of docs/examples/ whole: the file's path, as a comment."""


def test_every_copy_of_an_example_file_is_the_file_as_it_is() -> None:
    """The pages show example files copied in (an include would show on GitHub as its marker only), each copy
    kept equal to its file here."""
    copies = 0
    for page in PAGES:
        assert "--8<--" not in page.read_text(encoding="utf-8"), f"{page.relative_to(ROOT)}: copy the file in instead"
        for block in read_blocks(page):
            found = EXAMPLE_COPY.match(block.code)
            if found:
                copied = block.code[found.end():]
                assert copied == (ROOT / found["file"]).read_text(encoding="utf-8"), f"{block.where}: not {found['file']} as it is"
                copies += 1
    assert copies >= 2, copies


def test_the_hub_page_says_its_first_block_needs_the_stand_in() -> None:
    """docs/hub.md opens with `bespoke score --judge openai:gpt-5`: run as written it needs a key, or the stand-in
    server the tests give every page; the page says so before that block."""
    page = ROOT / "docs" / "hub.md"
    first = next(block for block in read_blocks(page) if not block.not_run and "openai:" in block.code)
    before = "\n".join(page.read_text(encoding="utf-8").splitlines()[: first.line])
    assert "`bespoke stand-in`" in before and "getting-started.md#no-api-key" in before


def test_most_examples_run() -> None:
    """The docs are mostly runnable: a page of examples all marked `not run` would test nothing."""
    blocks = [block for page in PAGES for block in read_blocks(page) if block.language in RUN]
    ran = [block for block in blocks if not block.not_run]
    assert len(ran) >= 40 and 2 * len(ran) >= len(blocks), (len(ran), len(blocks))


def test_the_block_reader_reads_fences_notes_and_indented_blocks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Text\n\n```bash\necho one\n```\n\n<!-- not run: needs a GPU -->\n```python\nimport vllm\n```\n\n"
        "- a list item:\n\n    ```python\n    x = 1\n\n    y = x + 1\n    ```\n\n````json\n{\"a\": \"```\"}\n````\n",
        encoding="utf-8",
    )
    found = [(b.language, b.code, b.not_run, b.line) for b in read_blocks(page)]
    assert found == [
        ("bash", "echo one\n", None, 3),
        ("python", "import vllm\n", "needs a GPU", 8),
        ("python", "x = 1\n\ny = x + 1\n", None, 14),
        ("json", '{"a": "```"}\n', None, 20),
    ]



# --- what the examples claim, checked against real runs -------------------------------------------------

def command_lines(block: Block) -> list[str]:
    """The `bespoke ...` command lines of a bash block: continuation lines joined, comments dropped,
    and each command of a `&&`, `||` or `;` chain, or sent to the background with `&`."""
    joined = re.sub(r"\\\n\s*", " ", block.code)
    commands = []
    for line in joined.splitlines():
        for part in re.split(r"&&|\|\||;|\||&", line.split(" # ", 1)[0]):
            words = part.strip()
            if words.startswith("bespoke ") and "..." not in words:
                commands.append(words)
    return commands


def test_every_documented_command_line_parses() -> None:
    """Every `bespoke` command written in README.md and docs/, run or not, names flags that exist."""
    from bespoke_cli.cli import build_parser

    checked = 0
    for page in PAGES:
        for block in read_blocks(page):
            if RUN.get(block.language) != "bash":
                continue
            for command in command_lines(block):
                argv = shlex.split(command)[1:]
                name = next(word for word in argv if not word.startswith("-"))
                try:
                    build_parser(name).parse_args(argv)
                except SystemExit:
                    pytest.fail(f"{block.where}: `{command}` is not a valid bespoke command line", pytrace=False)
                checked += 1
    assert checked >= 60, checked


@pytest.mark.slow
def test_the_readme_quickstart_scores_the_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """The Quickstart's scoring command, as written, from the top of a checkout."""
    from test_readme import quickstart_score_command

    from bespoke_cli.cli import main

    (tmp_path / "bespoke_dataset").symlink_to(ROOT / "bespoke_dataset")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    command = quickstart_score_command()
    assert main(command[1:]) == 0
    results = json.loads((tmp_path / "results" / "sample.json").read_text(encoding="utf-8"))
    assert results["summary"]["items"] == 15 and results["judge"]["proxy"] is True
    out = capsys.readouterr()
    printed = out.out + out.err
    assert "average" in printed and "proxy" in printed and "synthetic" in printed


def documented_results() -> dict:
    text = (ROOT / "docs" / "results-format.md").read_text(encoding="utf-8")
    [example] = [block for block in read_blocks(ROOT / "docs" / "results-format.md") if block.language == "json"]
    assert text
    return json.loads(example.code)


ELIDED = "..."
COMPLETE = ("", ".summary", ".judge", ".usage", ".n_samples", ".items[0]")
"""Where the example shows every field a run writes (elsewhere it may show a part)."""


def differences(shown: object, real: object, where: str = "") -> list[str]:
    """How the documented example departs from a real results file: a field a run does not write, a
    value of another kind, or (where the example is complete) a field left out."""
    if shown == ELIDED:
        return []
    if isinstance(shown, dict):
        if not isinstance(real, dict):
            return [f"{where or 'the file'}: an object in the example, {type(real).__name__} in a run"]
        found = [f"{where}.{key}: not written by a run" for key in shown if key != ELIDED and key not in real]
        if where in COMPLETE and ELIDED not in shown:
            found += [f"{where}.{key}: written by a run, missing from the example" for key in real if key not in shown]
        return found + [problem for key, value in shown.items() if key in real for problem in differences(value, real[key], f"{where}.{key}")]
    if isinstance(shown, list):
        if not isinstance(real, list):
            return [f"{where}: a list in the example, {type(real).__name__} in a run"]
        pairs = zip([value for value in shown if value != ELIDED], real, strict=False)  # an elided list shows the first values
        return [problem for index, (value, actual) in enumerate(pairs) for problem in differences(value, actual, f"{where}[{index}]")]
    if shown is None or real is None:
        return []  # optional fields: null in one file, set in another
    kinds = (bool, (int, float), str)
    if not any(isinstance(shown, kind) and isinstance(real, kind) for kind in kinds) or isinstance(shown, bool) != isinstance(real, bool):
        return [f"{where}: {shown!r} in the example, {real!r} in a run"]
    return []


@pytest.mark.slow
def test_the_results_example_is_what_a_run_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The example shows a run against the provider: the stand-in's answers, served as a provider serves them
    (without the stand-in's mark, which would make the results say a stand-in answered)."""
    from bespoke_cli.cli import main
    from bespoke_metric.judging import PROTOCOL_VERSION
    from bespoke_metric.testing.server import serve
    from bespoke_metric.testing.system_responder import answer_any

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-placeholder")
    with serve(answer_any) as provider:
        monkeypatch.setenv("OPENAI_BASE_URL", provider.base_url)
        assert main(["run", "--model", "openai:gpt-4o-mini", "--source", "sample", "--context", "selected-profile",
                     "--retriever", "bm25", "--judge", "openai:gpt-5", "--output", "run.json"]) == 0
    real = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    shown = documented_results()
    assert differences(shown, real) == [], f"docs/results-format.md departs from what `bespoke run` writes:\n{json.dumps(real, indent=1)[:4000]}"
    # the protocol version as runs record it: major.hash
    major, _, digest = shown["judge"]["protocol_version"].partition(".")
    assert major == PROTOCOL_VERSION.split(".")[0] and len(digest) == len(PROTOCOL_VERSION.split(".")[1])
    assert int(digest, 16) >= 0


def test_the_output_check_finds_what_departs() -> None:
    written = {"tau": {"value": 1.0, "queries": 15}, "systems": [{"name": "a", "average": 33.333333}, {"name": "b", "average": 30.2}]}
    assert output_departures({"tau": {"value": 1.0}, "systems": [{"name": "a", "average": 33.33}, "..."]}, written) == []
    assert output_departures({"tau": {"value": 1.0, "queries": 15}, "systems": [{"average": 33.3}, {"average": 30.2}]}, written) == []
    assert output_departures({"tau": {"p": 1}, "systems": [{"name": "a", "average": 61.2}, "..."]}, written) == [
        ".tau.p: not in the file", ".systems[0].average: 61.2 on the page, 33.333333 in the file"]
    assert output_departures({"systems": [{"name": "a"}]}, written) == [
        '.systems: [{"name": "a"}] on the page, [{"name": "a", "average": 33.333333}, {"name": "b", "average": 30.2}] in the file']
    assert output_departures({"tau": {"queries": 15.0}}, written) == []  # 15 as shown
    assert output_departures({"tau": {"queries": "15"}}, written) == [".tau.queries: '15' on the page, 15 in the file"]


def test_the_results_comparison_finds_what_departs() -> None:
    real = {"summary": {"average": 1.0, "items": 3}, "judge": {"protocol_version": "2.abc"}, "items": [{"guard": None, "recall": 0.5}]}
    assert differences({"summary": {"average": 2.0, "items": 3}, "judge": {"protocol_version": "2.x"}, "items": [{"guard": None, "recall": 1}]}, real) == []
    assert differences({"summary": {"average": "high", "items": 3, "extra": 1}, "judge": {ELIDED: ELIDED}, "items": []}, real) == [
        ".summary.extra: not written by a run", ".summary.average: 'high' in the example, 1.0 in a run"]
    assert differences({"summary": {"average": 1.0}, "judge": {}, "items": [{"guard": None}]}, real) == [
        ".summary.items: written by a run, missing from the example",
        ".judge.protocol_version: written by a run, missing from the example",
        ".items[0].recall: written by a run, missing from the example"]


def test_the_stand_in_system_answers_systems_and_leaves_judges_to_the_judge() -> None:
    """The docs' server answers a system's request from what the system was told, and a judge's as
    `judge_responder` does: a richer context earns a higher score."""
    import bespoke_dataset
    from bespoke_metric.judging.protocol import personalization_request
    from bespoke_metric.systems.prompts import answer_request, expansion_request, notes_request
    from bespoke_metric.testing.judge_responder import judge_answer
    from bespoke_metric.testing.system_responder import system_answer

    row = bespoke_dataset.load("benchmark", source="sample")[0]

    def body(request) -> dict:
        return {"model": "m", "messages": list(request.messages)}

    plain = system_answer(body(answer_request(row["query"], "", "", 64)))
    oracle = system_answer(body(answer_request(row["query"], f"What the user wants:\n{row['gold_information_need']}", "", 64)))
    assert row["query"] in plain and " ".join(row["gold_information_need"].split()[:10]) in oracle
    profile = system_answer(body(notes_request(["[search] Searched: used EV battery warranty"], 0, None, 64)))
    assert profile.endswith("Searched: used EV battery warranty")
    assert "Search terms:" in system_answer(body(expansion_request(row["query"], "cot", 64)))
    judged = body(personalization_request(row, plain))
    assert system_answer(judged) is None  # a judge's request: judge_answer's to answer

    def score(answer: str) -> int:
        return int(judge_answer(body(personalization_request(row, answer))).split("Need Alignment Score: ")[1][0])

    assert score(oracle) > score(plain)


def test_every_module_is_in_the_api_reference() -> None:
    """A module added to a wing shows in the reference once a `::: module` line names it."""
    documented: set[str] = set()
    for page in (ROOT / "docs" / "api").glob("*.md"):
        documented |= set(re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), flags=re.MULTILINE))
    modules = set()
    for package in ("bespoke_dataset", "bespoke_metric"):
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            modules.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    assert sorted(modules - documented) == [], "add these to a page of docs/api/"
    assert sorted(documented - modules) == []
