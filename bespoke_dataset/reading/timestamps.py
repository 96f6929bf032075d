"""Session times as exports write them, read with python-dateutil; a time zone that is written is kept.

Found in text: ISO dates (``2025-03-05 21:03``, ``2025-07-05T15:04:05Z``, ``...+09:00``), Google My Activity
dates written out (``Jul 5, 2025, 3:04:05 PM UTC``, ``5 Jul 2025, 15:04:05 BST``), and either as a date
alone. In JSON: ISO or written-out strings, or Unix seconds (or milliseconds) as numbers. The result is an
ISO string: ``2025-07-05T15:04:05+00:00`` with a zone, ``2025-03-05T21:03:00`` without, ``2025-07-05`` for a
date alone. A zone abbreviation outside `TIME_ZONES` is not matched (ambiguous ones such as ``IST`` are
left out on purpose), so such a time reads without its zone.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

from dateutil import parser as date_parser
from dateutil.parser import ParserError, isoparse

_HOUR = 3600
TIME_ZONES: dict[str, int] = {
    "UTC": 0, "GMT": 0, "KST": 9 * _HOUR, "JST": 9 * _HOUR, "HKT": 8 * _HOUR, "SGT": 8 * _HOUR,
    "CET": 1 * _HOUR, "CEST": 2 * _HOUR, "BST": 1 * _HOUR, "EET": 2 * _HOUR, "EEST": 3 * _HOUR,
    "AEST": 10 * _HOUR, "AEDT": 11 * _HOUR, "EST": -5 * _HOUR, "EDT": -4 * _HOUR, "CST": -6 * _HOUR,
    "CDT": -5 * _HOUR, "MST": -7 * _HOUR, "MDT": -6 * _HOUR, "PST": -8 * _HOUR, "PDT": -7 * _HOUR,
}
"""Zone abbreviations read, as UTC offsets in seconds (Google's English exports write US zones as CST etc.)."""

_ZONE_NAMES = "|".join(sorted(TIME_ZONES, key=len, reverse=True))
_ZONE = rf"(?:\s?Z\b|\s?[+-]\d{{2}}:?\d{{2}}\b|\s?(?:UTC|GMT)[+-]\d{{1,2}}(?::?\d{{2}})?\b|\s(?:{_ZONE_NAMES})\b)?"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
_CLOCK = r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s?[AaPp]\.?[Mm]\.?)?"
_PATTERNS = (
    rf"\d{{4}}-\d{{2}}-\d{{2}}(?P<iso_time>[T ]\d{{2}}:\d{{2}}(?::\d{{2}}(?:\.\d+)?)?{_ZONE})?",
    rf"{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}(?P<written_time>,?\s+(?:at\s+)?{_CLOCK}{_ZONE})?",
    rf"\d{{1,2}}\s+{_MONTH},?\s+\d{{4}}(?P<day_first_time>,?\s+(?:at\s+)?{_CLOCK}{_ZONE})?",
)
_CANDIDATE = re.compile("|".join(f"\\b(?P<{name}>{p})" for name, p in zip(("iso", "written", "day_first"), _PATTERNS, strict=True)))
_NAMED_ZONE = re.compile(rf"\s({_ZONE_NAMES})$")
_TIME_GROUPS = ("iso_time", "written_time", "day_first_time")
_TZINFOS = {name: timezone(timedelta(seconds=offset), name) for name, offset in TIME_ZONES.items()}
_EPOCH_MS = 10**11
"""A Unix time above this is in milliseconds (10**11 seconds is the year 5138)."""


def _iso(moment: datetime, has_time: bool) -> str:
    if not has_time:
        return moment.date().isoformat()
    if moment.tzinfo is not None and moment.utcoffset() == timedelta(0):
        moment = moment.replace(tzinfo=timezone.utc)  # one spelling of UTC: +00:00
    return moment.isoformat()


def _parse(text: str, has_time: bool) -> str | None:
    """A matched date (only known zone names are matched, so dateutil meets no unknown zone)."""
    try:
        moment = date_parser.parse(text, tzinfos=_TZINFOS, default=datetime(2000, 1, 1))
    except (ParserError, ValueError, OverflowError):
        return None
    return _iso(moment, has_time)


def _parse_iso(text: str, has_time: bool) -> str | None:
    """A matched ISO date with dateutil's ISO parser (five times faster than its general one: a release
    has thousands), a zone name after it attached; anything else it refuses goes to `_parse`."""
    zone = _NAMED_ZONE.search(text)
    try:
        moment = isoparse(text[:zone.start()] if zone else text)
    except (ValueError, OverflowError):
        return _parse(text, has_time)
    return _iso(moment.replace(tzinfo=_TZINFOS[zone.group(1)]) if zone else moment, has_time)


def _readable(text: str) -> Iterator[tuple[str, bool]]:
    """Every readable date in the text, in order, as ``(ISO string, has a time)``."""
    for match in _CANDIDATE.finditer(text):
        has_time = any(match.group(group) for group in _TIME_GROUPS)
        parsed = (_parse_iso if match.group("iso") else _parse)(match.group(0), has_time)
        if parsed is not None:
            yield parsed, has_time


def first_timestamp(text: str) -> str | None:
    """The first readable date and time in free text, as an ISO string (see the module docstring); a date
    without a time is taken only when the text has no readable date and time."""
    date_only: str | None = None
    for parsed, has_time in _readable(text):
        if has_time:
            return parsed
        date_only = date_only or parsed
    return date_only


def read_time(value: Any) -> str | None:
    """A time given as a value of its own (a JSON field, a table column): a date string as `first_timestamp`
    reads it, or Unix seconds or milliseconds (as UTC); None when it cannot be read."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if abs(value) > _EPOCH_MS else value
        try:
            return _iso(datetime.fromtimestamp(seconds, tz=timezone.utc), True)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, datetime):
        return _iso(value, True)
    if isinstance(value, str) and value.strip():
        return first_timestamp(value.strip())
    return None


def instant(timestamp: str) -> datetime:
    """A sort key for the ISO strings above, comparable across zones: a zoned time in UTC, a time without
    zone as it is (ValueError for a string that is not ISO)."""
    moment = datetime.fromisoformat(timestamp)
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment
