"""Durations as users write them: ``"15m"``, ``"30 seconds"``, ``"500ms"`` or a number of seconds."""

from __future__ import annotations

import re

from trident_spark.errors import InvalidArgumentError

_UNITS = {
    "ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hour": 3600.0, "hours": 3600.0,
}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$")


def parse_seconds(value: float | int | str, *, what: str = "duration") -> float:
    """Seconds in ``value``: a number of seconds, or a number with a unit.

    Examples
    --------
    >>> parse_seconds("15m"), parse_seconds("500 milliseconds"), parse_seconds(2)
    (900.0, 0.5, 2.0)
    """
    if isinstance(value, int | float):
        return float(value)
    match = _PATTERN.match(value.lower())
    if not match or match.group(2) not in {**_UNITS, "": 1.0}:
        raise InvalidArgumentError(
            f"{what}: cannot read {value!r} as a duration; write e.g. '500ms', '30s', '15m' or '2 hours'"
        )
    return float(match.group(1)) * _UNITS.get(match.group(2), 1.0)


def trigger_millis(trigger: str | None) -> int | None:
    """The batch interval of a ``topology.run(trigger=...)`` in ms (None: no interval, as
    for ``available_now``, ``once`` or no trigger: each batch starts when the last ends).

    Examples
    --------
    >>> trigger_millis("500 milliseconds"), trigger_millis("2 seconds"), trigger_millis("available_now")
    (500, 2000, None)
    """
    if trigger is None or trigger in ("available_now", "availableNow", "once"):
        return None
    try:
        return round(parse_seconds(trigger, what="trigger") * 1000)
    except ValueError:
        return None
