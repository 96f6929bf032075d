"""A row of a provider's model catalogue (`openai_models`, `anthropic_models`): its name, the pattern its models'
names match, and the first row a model name matches. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence, TypeVar

PROVIDER_PREFIX = r"^(?:.*/)?"
"""A model name may come with a provider prefix (`openai/gpt-6.2-astra`, `anthropic/claude-sonnet-4-5`)."""


@dataclass(frozen=True)
class ModelRow:
    """One family of a provider's models."""

    name: str
    pattern: str
    """A regular expression matched (case-insensitively) at the start of the model name, past any prefix."""

    def matches(self, model: str) -> bool:
        return re.match(PROVIDER_PREFIX + f"(?:{self.pattern})", model, re.IGNORECASE) is not None


Row = TypeVar("Row", bound=ModelRow)


def first_match(rows: Sequence[Row], model: str, other: Row) -> Row:
    """The first of `rows` that `model` matches (most specific first), else `other`."""
    return next((row for row in rows if row.matches(model)), other)
