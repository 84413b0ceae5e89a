"""Durations as users write them."""

from __future__ import annotations

import pytest

from trident_spark.durations import parse_seconds


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15m", 900.0), ("15 minutes", 900.0), ("1 minute", 60.0), ("2min", 120.0),
        ("30s", 30.0), ("30 seconds", 30.0), ("1 second", 1.0), ("5 sec", 5.0),
        ("500ms", 0.5), ("500 milliseconds", 0.5), ("1 millisecond", 0.001),
        ("2h", 7200.0), ("2 hours", 7200.0), ("1 hour", 3600.0),
        ("1.5s", 1.5), ("  10  ", 10.0), ("10", 10.0), ("2 Hours", 7200.0), ("0", 0.0),
    ],
)
def test_parse_seconds_text(text, seconds):
    assert parse_seconds(text) == seconds


@pytest.mark.parametrize(("value", "seconds"), [(2, 2.0), (0.25, 0.25), (0, 0.0)])
def test_parse_seconds_numbers(value, seconds):
    result = parse_seconds(value)
    assert result == seconds
    assert isinstance(result, float)


@pytest.mark.parametrize("text", ["soon", "5 days", "-1s", "1e3", "", "s", "1,5s", "10 m s"])
def test_parse_seconds_rejects(text):
    with pytest.raises(ValueError) as info:
        parse_seconds(text, what="run(trigger=)")
    assert str(info.value) == (
        f"run(trigger=): cannot read {text!r} as a duration; write e.g. '500ms', '30s', '15m' or '2 hours'")


def test_parse_seconds_default_label():
    with pytest.raises(ValueError, match=r"^duration: cannot read 'x'"):
        parse_seconds("x")
