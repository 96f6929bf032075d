"""Keys of BESPOKE records: query ids written in several forms, users ordered naturally."""

from __future__ import annotations

import re

_QUERY_ID = re.compile(r"^(?:(?:query|q)[-_ :#]*(?:id)?[-_ :#]*)?0*(\d+)(?:\.0+)?$", re.IGNORECASE)
_DIGITS = re.compile(r"(\d+)")


def normalise_query_id(value: object) -> str:
    """The digits of a query id, without leading zeros.

    Accepted: an int (``6``), an integral float (``6.0``), or text holding exactly one whole number, bare or
    after a ``query``/``query-id``/``q`` prefix in any case with ``-``, ``_``, space, ``:`` or ``#`` between:
    ``"6"``, ``"06"``, ``"6.0"``, ``"query-id_6"``, ``"query_id_6"``, ``"Query-ID 6"``, ``"query_6"``,
    ``"query6"``, ``"q6"`` all give ``"6"``.

    Raises ValueError for anything else: a negative number or one with a fraction (``4.5``, ``"6.5"``), text
    without exactly one number (``"six"``, ``"6/7"``, ``"query-id_"``), text around the number (``"6a"``),
    None or a bool.
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
    raise ValueError(f"not a query id: {value!r} (expected one whole number such as '6', 'query-id_6' or 'q6')")


def natural_key(text: str) -> tuple[object, ...]:
    """Sort key that puts ``user2`` before ``user10``."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(text))


def query_key(user: str, query_id: object) -> str:
    """The key of a query across the project: ``"user/query_id"``, the query id normalised
    (`normalise_query_id`, so ``query_key("user2", "query-id_06") == "user2/6"``); ValueError for an
    unreadable query id."""
    return f"{user}/{normalise_query_id(query_id)}"


def parse_query_key(key: str) -> tuple[str, str]:
    """The inverse of `query_key`: ``"user2/6"`` (or ``"user2/query-id_6"``) -> ``("user2", "6")``."""
    user, sep, query_id = str(key).rpartition("/")
    if not sep or not user or not query_id:
        raise ValueError(f"a query reference must look like 'user/query_id', got {key!r}")
    return user, normalise_query_id(query_id)
