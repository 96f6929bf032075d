"""A sweep written as a YAML file: the same names as the command's flags, read into the words of a command line.

    models: [openai:gpt-4o, hf:Qwen/Qwen3-8B]
    contexts: [none, selected-profile, oracle]
    top-k: [3, 5]          # or top_k
    judge: openai:gpt-5
    no-guards: true        # a flag without a value: true gives it, false leaves it out
    out: sweeps/main

The words are then parsed by the command's own parser, so a file can say nothing a command line could
not, and a wrong value gets the same message, naming the file.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Mapping

import yaml

from bespoke_dataset.errors import UserError


class SweepConfigError(UserError):
    """A sweep that cannot run as given: a bad config file, key or value, or flags that do not fit together."""


def flag_keys(option: str) -> tuple[str, ...]:
    """The config keys of a long option: `--top-k` -> `top-k`, `top_k`."""
    name = option.lstrip("-")
    return tuple(dict.fromkeys((name, name.replace("-", "_"))))


def config_words(path: str | os.PathLike[str], flags: Mapping[str, tuple[str, bool]]) -> list[str]:
    """The command-line words a config file stands for. `flags` maps each accepted key to its option and
    whether it takes values (`"top_k": ("--top-k", True)`, `"no_guards": ("--no-guards", False)`).
    A missing or malformed file, an unknown key, or a value of the wrong shape is a `SweepConfigError`
    naming the file and the key."""
    content = _read(Path(path))
    words: list[str] = []
    for key, value in content.items():
        if key not in flags:
            close = difflib.get_close_matches(str(key), list(flags), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise SweepConfigError(f"{path}: unknown key {key!r}{hint}; the keys are the flags of bespoke sweep, without the dashes")
        option, takes_values = flags[key]
        if not takes_values:
            if not isinstance(value, bool):
                raise SweepConfigError(f"{path}: {key} is a flag without a value: write {key}: true or {key}: false")
            words += [option] if value else []
            continue
        values = value if isinstance(value, list) else [value]
        bad = [v for v in values if isinstance(v, (dict, list)) or v is None]
        if bad or not values:
            raise SweepConfigError(f"{path}: {key} takes a value or a list of values, got {value!r}")
        words += [option, *(_word(v) for v in values)]
    return words


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise SweepConfigError(f"{path}: cannot read the sweep config ({error.strerror or error})") from None
    try:
        content = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise SweepConfigError(f"{path}: not valid YAML ({where}{getattr(error, 'problem', None) or error})") from None
    if content is None:
        return {}
    if not isinstance(content, dict):
        raise SweepConfigError(f"{path}: a sweep config is a mapping of flag names to values, got {type(content).__name__}")
    return content


def _word(value: Any) -> str:
    # YAML reads `0.70` as a float and `3` as an int: written back as the command line would spell them
    return str(value).lower() if isinstance(value, bool) else str(value)
