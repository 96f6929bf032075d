"""Config values, whoever gives them: a YAML file's settings or a command line's flags, by key (the name
a flag sets in the parsed arguments; `top-k` and `top_k` alike in a file), and the mistakes they can hold.
The typed configs that take them: `systems.config.SystemConfig`, `judging.config.JudgeConfig`,
`experiments.config.SweepConfig`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from bespoke_dataset.errors import UserError, did_you_mean

from ..options import BatchOptions, option_names
from .shared_options import APPLIES_TO

SHARED_KEYS = frozenset({*APPLIES_TO, *option_names(BatchOptions)})
"""Where the engines run and the Batch API: a command's one value for every engine it has (system model,
profiler, judge), each reaching the engines it applies to (`backends.config.shared_options`)."""


class ConfigError(UserError):
    """A config that cannot be made: an unknown key, a file that cannot be read, a value of the wrong kind."""


def refuse_unknown(values: Mapping[str, Any], known: frozenset[str], where: str, keys: str) -> None:
    """`ConfigError` for a key none of `known` is, with the closest known key as a hint; `keys` says what the
    caller's keys are (`the keys are the flags of bespoke sweep, without the dashes`)."""
    for key in values:
        if key not in known:
            raise ConfigError(f"{where}unknown key {key!r}{did_you_mean(str(key), known)}; {keys}")


ALIASES: dict[str, str] = {"models": "model", "contexts": "context"}
"""How a sweep's axes are spelled in a config file (`models:`, `contexts:`), as on its command line."""


def read_values(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A YAML config file's settings by key: `top-k` and `top_k` alike, `models` for `model`. A missing or
    malformed file is a `ConfigError` naming it."""
    import yaml  # here: the commands that read no config file start without it

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config ({error.strerror or error})") from None
    try:
        content = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML ({where}{getattr(error, 'problem', None) or error})") from None
    if content is None:
        return {}
    if not isinstance(content, dict):
        raise ConfigError(f"{path}: a config is a mapping of setting names to values, got {type(content).__name__}")
    keys = {str(key): ALIASES.get(str(key).replace("-", "_"), str(key).replace("-", "_")) for key in content}
    taken = [key for key in keys if list(keys.values()).count(keys[key]) > 1]
    if taken:
        raise ConfigError(f"{path}: {' and '.join(taken)} name the same setting; give one")
    return {keys[str(key)]: value for key, value in content.items()}

