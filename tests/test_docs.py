"""Every example in README.md and docs/ runs: each page's ```python and ```bash blocks, in order, in a
fresh folder, offline, with one namespace for the page's python blocks.

A block preceded on the line above by `<!-- not run: REASON -->` is not run (it needs an API key, a
GPU, the Hub, or a package that is not installed). The others see, in their environment, a local
OpenAI-compatible server (`OPENAI_BASE_URL`, a placeholder `OPENAI_API_KEY`) that answers as a system
model and as a judge would (`bespoke_metric.testing.system_responder.answer_any`), so `openai:` systems
and judges work as written; the Hub is offline. Bash blocks run with `bash -e -o pipefail`; python
blocks in this process, so a model loaded once (the `embed:` judge's MiniLM) serves every page.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from bespoke_metric.testing.server import serve
from bespoke_metric.testing.system_responder import answer_any

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

NOT_RUN = re.compile(r"<!-- not run: (?P<reason>\S.*?) -->")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
RUN = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
"""Fence languages that run, and how."""
BLOCK_TIMEOUT_S = 600


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    """1-based line of the opening fence."""
    language: str
    code: str
    not_run: str | None
    """The reason given in `<!-- not run: REASON -->` on the line above, if any."""

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
        blocks.append(Block(page, index + 1, language, code, above["reason"] if above else None))
        index = end + 1
    return blocks


@pytest.fixture(scope="module")
def endpoint():
    """One server for every page: a system model and a judge at `OPENAI_BASE_URL`."""
    with serve(answer_any, model_ids=("gpt-5", "gpt-4o-mini")) as server:
        yield server


@pytest.fixture
def page_env(endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment a page's blocks see (set in this process too, for its python blocks)."""
    settings = {
        "OPENAI_BASE_URL": endpoint.base_url,
        "OPENAI_API_KEY": "sk-docs-placeholder",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "BESPOKE_CACHE": str(tmp_path / "bespoke-cache"),
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "NO_COLOR": "1",
    }
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    # the `bespoke` and `python` a user's shell would find: this interpreter's
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
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
    code = compile("\n" * block.line + block.code, block.where, "exec")
    exec(code, namespace)  # noqa: S102 - running the documentation's own examples is the point


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_example_of_the_page_runs(page: Path, page_env: dict[str, str]) -> None:
    namespace: dict[str, object] = {"__name__": "__main__"}
    for block in read_blocks(page):
        if block.language not in RUN or block.not_run:
            continue
        if RUN[block.language] == "bash":
            run_bash(block, page_env)
        else:
            run_python(block, namespace)


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


def test_most_examples_run() -> None:
    """The docs are mostly runnable: a page of examples all marked `not run` would test nothing."""
    blocks = [block for page in PAGES for block in read_blocks(page) if block.language in RUN]
    ran = [block for block in blocks if not block.not_run]
    assert len(ran) >= 40 and len(ran) >= 2 * (len(blocks) - len(ran)), (len(ran), len(blocks))


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

