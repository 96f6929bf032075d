"""The grid of a sweep: its axes, their product (the cells), and each cell's name (pure functions).

An axis is a setting of `bespoke run` given several values (`--models A B`, `--contexts none oracle`,
`--top-k 3 5`, `--search-noise 0 0.7`); it is named by the setting (`model`, `context`, `top_k`,
`search_noise`). Every cell is one system under test: one value of each axis.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.registry import split_spec

MODEL = "model"
CONTEXT = "context"
BASELINE_CONTEXT = "none"
"""The context every other is compared with: the same system without personalization."""
NOISE = "search_noise"
"""The axis whose relative drop the table reports (`--search-noise`)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


@dataclass(frozen=True)
class Axis:
    """One setting that takes several values in a sweep."""

    name: str
    """The setting, as `bespoke run` names it (the flag's destination): `model`, `context`, `top_k`."""
    flag: str
    """How a user spells it: `--models`, `--contexts`, `--top-k`."""
    values: tuple[Any, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise UserError(f"{self.flag} has no value")
        repeated = sorted({str(v) for v in self.values if list(self.values).count(v) > 1})
        if repeated:
            raise UserError(f"{self.flag} names {', '.join(repeated)} more than once")


@dataclass(frozen=True)
class Cell:
    """One system of the grid: a value of every axis, and the name its files carry."""

    name: str
    values: dict[str, Any]
    """Axis name -> this cell's value, for every axis of the grid."""

    def without(self, *axes: str) -> tuple[tuple[str, str], ...]:
        """The cell's values on every axis but `axes`, as a hashable key: cells equal on it differ only there."""
        return tuple((name, repr(value)) for name, value in self.values.items() if name not in axes)


def cells(axes: Sequence[Axis]) -> list[Cell]:
    """Every combination of the axes' values, the first axis outermost (so the cells of one model come
    together when `model` is first), each named by `cell_names`."""
    combos = [dict(zip((axis.name for axis in axes), combo, strict=True)) for combo in itertools.product(*(axis.values for axis in axes))]
    return [Cell(name, combo) for name, combo in zip(cell_names(combos, axes), combos, strict=True)]


def cell_names(combos: Sequence[Mapping[str, Any]], axes: Sequence[Axis]) -> list[str]:
    """A file-safe name per cell: the model, the context, then `flag-value` for the other axes that vary
    (`openai-gpt-4o__selected-profile__top-k-5`). Models whose short names collide keep a hash of their spec."""
    short = _model_names([combo[MODEL] for combo in combos if MODEL in combo])
    names = []
    for combo in combos:
        parts = []
        for axis in axes:
            value = combo[axis.name]
            if axis.name == MODEL:
                parts.append(short[value])
            elif axis.name == CONTEXT:
                parts.append(_safe(value))
            elif len(axis.values) > 1:
                parts.append(f"{axis.flag.lstrip('-')}-{_safe(value)}")
        names.append("__".join(parts) or "cell")
    return names


def _model_names(specs: Sequence[str]) -> dict[str, str]:
    """`hf:Qwen/Qwen3-8B` -> `hf-Qwen--Qwen3-8B`; a local folder by its last part (`hf:/tmp/m/tiny` ->
    `hf-tiny`); specs whose names would collide get the first 6 hex digits of the spec's SHA-256."""
    short = {spec: _model_name(spec) for spec in dict.fromkeys(specs)}
    taken = list(short.values())
    return {spec: name if taken.count(name) == 1 else f"{name}-{hashlib.sha256(spec.encode()).hexdigest()[:6]}"
            for spec, name in short.items()}


def _model_name(spec: str) -> str:
    engine, model = split_spec(str(spec))
    if model.startswith(("/", ".", "~")):  # a folder: its path says where it is, not what it is
        model = model.rstrip("/").rsplit("/", 1)[-1]
    return _safe(f"{engine}-{model.replace('/', '--')}" if model else engine)


def _safe(value: Any) -> str:
    return _UNSAFE.sub("_", str(value)).strip("_") or "_"
