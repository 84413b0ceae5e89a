"""``Duration``: a length of time in milliseconds, as Storm's ``BaseWindowedBolt.Duration``."""

from __future__ import annotations

from dataclasses import dataclass

from trident_spark.errors import TopologyError


@dataclass(frozen=True, order=True)
class Duration:
    """A length of time, held in whole milliseconds (Storm's ``BaseWindowedBolt.Duration``).

    Parameters
    ----------
    value : int
        Milliseconds; at least 1 for a window's length or slide (checked where it is used).

    Examples
    --------
    >>> Duration.seconds(10).value, Duration.of(1500).value, Duration.minutes(2)
    (10000, 1500, Duration(value=120000))
    >>> Duration.hours(1) == Duration.minutes(60) == Duration.seconds(3600)
    True
    """

    value: int

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            raise TopologyError(f"Duration: expected whole milliseconds (an int), got {self.value!r}; "
                                "e.g. Duration.of(500) or Duration.seconds(2)")
        if self.value < 0:
            raise TopologyError(f"Duration: {self.value} ms is negative; give 0 or more")

    @classmethod
    def of(cls, milliseconds: int) -> Duration:
        """``milliseconds`` ms."""
        return cls(milliseconds)

    @classmethod
    def seconds(cls, seconds: int) -> Duration:
        """``seconds`` s."""
        return cls(_whole(seconds, "seconds") * 1000)

    @classmethod
    def minutes(cls, minutes: int) -> Duration:
        """``minutes`` min."""
        return cls(_whole(minutes, "minutes") * 60_000)

    @classmethod
    def hours(cls, hours: int) -> Duration:
        """``hours`` h."""
        return cls(_whole(hours, "hours") * 3_600_000)

    @classmethod
    def days(cls, days: int) -> Duration:
        """``days`` days."""
        return cls(_whole(days, "days") * 86_400_000)

    def toMillis(self) -> int:
        """The duration in milliseconds (``value``)."""
        return self.value


def _whole(value: object, unit: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TopologyError(f"Duration.{unit}({value!r}): give a whole number of {unit}")
    return value


__all__ = ["Duration"]
