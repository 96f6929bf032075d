"""Every wing on its floor (issues 18 and 33), read from the code's own imports.

- No folder of the packages holds more than 15 modules.
- At every level, the rooms of a folder (its modules and its sub-folders) stand on floors: none imports one that
  imports it back, directly or through the others of that folder. So no module is in a circle, and no import
  runs from a lower wing to a higher one: the wing that imports is above what it imports, at every level.
- Data flows one way: `bespoke_dataset` imports nothing of `bespoke_metric`, and neither imports the CLI.
- No module imports another's private name (`from x import _name`): what is shared is public where it lives.

Every import counts, at the top of a module or inside a function (an import made only when needed still
ties the two modules), including those only for type checking, and a `"package.module:attribute"` string that
the code imports at run time (a factory named so that nothing is imported before it is built).
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"bespoke_dataset": "bespoke_dataset", "bespoke_metric": "bespoke_metric", "scripts": "bespoke_cli"}
"""Folder -> the package it is installed as (the CLI's folder is `bespoke_cli`)."""
MAX_MODULES = 15


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    names: tuple[str, ...]
    line: int


def module_files() -> dict[str, Path]:
    """Every module of the packages by its dotted name (a package by its `__init__.py`)."""
    found = {}
    for folder, package in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


MODULES = module_files()


NAMED_IMPORT = re.compile(r"(?P<module>[A-Za-z_][\w.]*):(?P<attribute>[A-Za-z_]\w*)")
"""A `"package.module:attribute"` string, imported when it is resolved at run time (as an entry point's value)."""


def imports(name: str, path: Path) -> Iterator[Import]:
    """The imports of module `name` that land in one of the packages, each resolved to the module it reads."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = NAMED_IMPORT.fullmatch(node.value)
            if named and named["module"] in MODULES:
                yield Import(name, named["module"], (named["attribute"],), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                full = f"{target}.{alias.name}"
                if full in MODULES:  # `from package import module`
                    yield Import(name, full, (), node.lineno)
                elif target in MODULES:
                    yield Import(name, target, (alias.name,), node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in MODULES:
                    target = target.rpartition(".")[0]
                if target:
                    yield Import(name, target, (), node.lineno)


IMPORTS = [found for name, path in MODULES.items() for found in imports(name, path) if found.target != name]


def folder_of(path: Path) -> Path:
    return path.parent


def room(path: Path, folder: Path) -> str | None:
    """The room of `folder` that `path` is in: a module's file name, or a sub-folder's name; None for the
    folder's own `__init__.py` (its face, no room) and for a path outside it."""
    try:
        parts = path.relative_to(folder).parts
    except ValueError:
        return None
    if parts == ("__init__.py",):
        return None
    return parts[0]


def circle(edges: dict[str, set[str]]) -> list[str] | None:
    """A circle of `edges` (its rooms in order, the first again at the end), or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for other in sorted(edges.get(node, ())):
            if state.get(other) == 1:
                return [*path[path.index(other):], other]
            if other not in state and (found := visit(other)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


FOLDERS = sorted({folder_of(path) for path in MODULES.values()})


def test_the_import_reader_finds_what_the_code_imports() -> None:
    # the reader must see relative, absolute, in-function and `from package import module` imports, or
    # every test below passes on nothing
    pairs = {(found.source, found.target) for found in IMPORTS}
    assert ("bespoke_metric.backends.providers.anthropic", "bespoke_metric.backends.http") in pairs  # from ..http
    assert ("bespoke_metric.backends.registry", "bespoke_metric.backends.local.hf_backend") in pairs  # in a function
    assert ("bespoke_cli.executor", "bespoke_metric.backends.config.shared_options") in pairs  # from package import module
    assert ("bespoke_metric.backends.registry", "bespoke_metric.backends.providers.anthropic_batch") in pairs  # "module:Class"
    assert len(MODULES) > 200 and len(IMPORTS) > 1000


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda folder: folder.relative_to(ROOT).as_posix())
def test_no_folder_holds_more_than_15_modules(folder: Path) -> None:
    modules = sorted(path.name for path in folder.glob("*.py") if path.name != "__init__.py")
    assert len(modules) <= MAX_MODULES, f"{folder.relative_to(ROOT)} holds {len(modules)} modules: group some in a sub-folder"


@pytest.mark.parametrize("folder", [ROOT, *FOLDERS], ids=lambda folder: folder.relative_to(ROOT).as_posix() or ".")
def test_the_rooms_of_every_folder_stand_on_floors(folder: Path) -> None:
    edges: dict[str, set[str]] = {}
    ties: dict[tuple[str, str], list[str]] = {}
    for found in IMPORTS:
        source, target = room(MODULES[found.source], folder), room(MODULES[found.target], folder)
        if source and target and source != target:
            edges.setdefault(source, set()).add(target)
            ties.setdefault((source, target), []).append(f"{found.source}:{found.line} -> {found.target}")
    found_circle = circle(edges)
    assert found_circle is None, (f"{folder.relative_to(ROOT)}: {' -> '.join(found_circle)} import each other back: "
                                  + "; ".join(ties[pair][0] for pair in itertools.pairwise(found_circle)))


def test_data_flows_one_way() -> None:
    upward = [f"{found.source}:{found.line} -> {found.target}" for found in IMPORTS
              if (found.source.startswith("bespoke_dataset") and not found.target.startswith("bespoke_dataset"))
              or (found.source.startswith("bespoke_metric") and found.target.startswith("bespoke_cli"))]
    assert upward == []


def test_no_private_name_is_imported_across_modules() -> None:
    private = [f"{found.source}:{found.line} takes {name} from {found.target}" for found in IMPORTS for name in found.names
               if name.startswith("_") and not name.startswith("__")]
    assert private == []
