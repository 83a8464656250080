"""Durations as people write them in specs and options: ``30s``, ``10 minutes``, ``1 hour``."""

from __future__ import annotations

import re

from spark_jobs.contract.errors import UserError

_UNITS = {
    "ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
}  # fmt: skip
_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$")


def parse_seconds(text: str | int | float, what: str = "duration") -> float:
    """Seconds in ``text``; a bare number means seconds."""
    if isinstance(text, int | float):
        return float(text)
    m = _RE.match(str(text).lower())
    if not m or m.group(2) not in _UNITS:
        raise UserError(f"{what} {text!r} is not a duration; write e.g. 30s, 10 minutes, 1 hour")
    return float(m.group(1)) * _UNITS[m.group(2)]


def describe(seconds: float) -> str:
    """``seconds`` as people write it in a spec: ``2 hours``, ``1 day``, ``90 seconds``."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}" if n == 1 else f"{n} {unit}s"
    return "1 second" if seconds == 1 else f"{seconds:g} seconds"


def spark_interval(seconds: float) -> str:
    """A Spark interval string (``withWatermark``, ``window``, trigger) for ``seconds``."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)} hours"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)} minutes"
    if seconds == int(seconds):
        return f"{int(seconds)} seconds"
    return f"{int(seconds * 1000)} milliseconds"
