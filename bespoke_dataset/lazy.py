"""Package attributes imported on first use (PEP 562), so that importing a package stays cheap."""

from __future__ import annotations

import importlib
import sys
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
