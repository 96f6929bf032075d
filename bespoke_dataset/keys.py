"""Keys of BESPOKE records: query ids written in several forms, users ordered naturally."""

from __future__ import annotations

import re

_QUERY_ID = re.compile(r"^(?:query[-_ ]?id[-_ ]?|q)?0*(\d+)$", re.IGNORECASE)
_DIGITS = re.compile(r"(\d+)")


def normalise_query_id(value: object) -> str:
    """The digits of a query id: ``6``, ``"6"``, ``"06"``, ``"query-id_6"``, ``"query_id_6"`` -> ``"6"``.

    Raises ValueError for anything else (a float with a fraction, text without a single number).
    """
    if isinstance(value, bool):
        raise ValueError(f"not a query id: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"not a query id: {value!r}")
        return str(value)
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return str(int(value))
    if isinstance(value, str):
        match = _QUERY_ID.match(value.strip())
        if match:
            return str(int(match.group(1)))
    raise ValueError(f"not a query id: {value!r} (expected digits such as '6' or 'query-id_6')")


def natural_key(text: str) -> tuple[object, ...]:
    """Sort key that puts ``user2`` before ``user10``."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(text))


def query_key(user: str, query_id: str) -> str:
    """The key of a query across the project: ``"user/query_id"``."""
    return f"{user}/{query_id}"
