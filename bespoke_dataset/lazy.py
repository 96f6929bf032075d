"""Package attributes imported on first use (PEP 562), so that importing a package stays cheap; module paths
that moved, served for one more release."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any, Callable, Mapping


def lazy_attributes(package: str, where: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level `__getattr__` and `__dir__` of `package`, for names it exports without importing
    them: `where` maps each name to the module that defines it (relative to `package`)."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value  # later lookups find it without this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__


class _Alias:  # a loader (PEP 451)
    """Loads an old module path as the module that now lives at `target`: the same object, with a warning."""

    def __init__(self, target: str, removed_in: str) -> None:
        self.target = target
        self.removed_in = removed_in

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.target}; the old path goes in {self.removed_in}",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """The target module ran already."""


class _MovedFinder:  # a meta path finder (PEP 451)
    def __init__(self, moved: Mapping[str, str], removed_in: str) -> None:
        self.moved = dict(moved)
        self.removed_in = removed_in

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name not in self.moved:
            return None
        return importlib.machinery.ModuleSpec(name, _Alias(self.moved[name], self.removed_in))


def serve_moved(package: str, moved: Mapping[str, str], removed_in: str) -> None:
    """Serve the old module paths of `package` for one more release: `moved` maps each old module of it to
    where that module lives now (relative to `package` as in an import: `.sub.name`, `..name`), and
    `import package.OLD` gives that module object itself, with a `DeprecationWarning` naming the new path
    (what a user patched or imported before still works)."""
    full = {f"{package}.{old}": importlib.util.resolve_name(new, package) for old, new in moved.items()}
    if not any(isinstance(finder, _MovedFinder) and finder.moved == full for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder(full, removed_in))
