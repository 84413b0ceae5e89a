"""Window configurations, Trident's ``org.apache.storm.trident.windowing.config``.

A window is counted in tuples (``TumblingCountWindow``, ``SlidingCountWindow``) or measured
in time (``TumblingDurationWindow``, ``SlidingDurationWindow``); a tumbling window is a
sliding one whose slide equals its length.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from trident_spark.errors import TopologyError
from trident_spark.windowing.duration import Duration


class WindowType(StrEnum):
    """Trident's ``WindowConfig.Type``.

    Examples
    --------
    >>> WindowType("tumbling_count") is WindowType.TUMBLING_COUNT
    True
    """

    SLIDING_COUNT = "sliding_count"
    TUMBLING_COUNT = "tumbling_count"
    SLIDING_DURATION = "sliding_duration"
    TUMBLING_DURATION = "tumbling_duration"


@dataclass(frozen=True)
class BaseWindowConfig:
    """A window's length and slide: tuples for a count window, milliseconds for a duration one.

    Create one with a subclass's ``of(...)``.

    Examples
    --------
    >>> config = SlidingCountWindow.of(100, 10)
    >>> config.getWindowLength(), config.getSlidingLength(), config.getWindowType().value
    (100, 10, 'sliding_count')
    """

    window_length: int
    sliding_length: int

    #: The kind of window (each subclass sets its own).
    TYPE = WindowType.SLIDING_COUNT

    def __post_init__(self) -> None:
        name = type(self).__name__
        unit = "ms" if self.is_duration else "tuples"
        for what, value in (("window length", self.window_length), ("slide", self.sliding_length)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TopologyError(f"{name}: the {what} must be at least 1 ({unit}), got {value!r}")
        if self.sliding_length > self.window_length:
            raise TopologyError(f"{name}: the slide ({self.sliding_length} {unit}) is longer than the "
                                f"window ({self.window_length} {unit}); tuples between windows would be "
                                "lost: give a slide no longer than the window")

    @property
    def is_duration(self) -> bool:
        """Whether the window is measured in time (ms) rather than counted in tuples."""
        return self.TYPE in (WindowType.SLIDING_DURATION, WindowType.TUMBLING_DURATION)

    def getWindowLength(self) -> int:
        """The window's length: tuples, or milliseconds."""
        return self.window_length

    def getSlidingLength(self) -> int:
        """How far the window moves each time: tuples, or milliseconds."""
        return self.sliding_length

    def getWindowType(self) -> WindowType:
        """The kind of window."""
        return self.TYPE

    def describe(self) -> str:
        """A short text for labels: ``tumbling 100 tuples``, ``sliding 10000ms by 2000ms``."""
        unit = "ms" if self.is_duration else " tuples"
        if self.TYPE in (WindowType.TUMBLING_COUNT, WindowType.TUMBLING_DURATION):
            return f"tumbling {self.window_length}{unit}"
        return f"sliding {self.window_length}{unit} by {self.sliding_length}{unit}"


def _count(name: str, value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TopologyError(f"{name}.of: the {what} is a number of tuples (an int), got {value!r}")
    return value


def _millis(name: str, value: object, what: str) -> int:
    if not isinstance(value, Duration):
        raise TopologyError(f"{name}.of: the {what} is a Duration, got {value!r}; "
                            "e.g. Duration.seconds(10)")
    return value.value


@dataclass(frozen=True)
class TumblingCountWindow(BaseWindowConfig):
    """A window of every ``n`` tuples, one after the other.

    Examples
    --------
    >>> TumblingCountWindow.of(1000).describe()
    'tumbling 1000 tuples'
    """

    TYPE = WindowType.TUMBLING_COUNT

    @classmethod
    def of(cls, window_count: int) -> TumblingCountWindow:
        """A tumbling window of ``window_count`` tuples."""
        n = _count(cls.__name__, window_count, "window count")
        return cls(n, n)


@dataclass(frozen=True)
class SlidingCountWindow(BaseWindowConfig):
    """The last ``window_count`` tuples (or fewer, at the start), every ``sliding_count`` tuples.

    Examples
    --------
    >>> SlidingCountWindow.of(100, 10).describe()
    'sliding 100 tuples by 10 tuples'
    """

    TYPE = WindowType.SLIDING_COUNT

    @classmethod
    def of(cls, window_count: int, sliding_count: int) -> SlidingCountWindow:
        """A window of the last ``window_count`` tuples, every ``sliding_count`` tuples."""
        return cls(_count(cls.__name__, window_count, "window count"),
                   _count(cls.__name__, sliding_count, "slide count"))


@dataclass(frozen=True)
class TumblingDurationWindow(BaseWindowConfig):
    """Windows of ``window_length`` of time, one after the other.

    Examples
    --------
    >>> TumblingDurationWindow.of(Duration.seconds(10)).describe()
    'tumbling 10000ms'
    """

    TYPE = WindowType.TUMBLING_DURATION

    @classmethod
    def of(cls, window_length: Duration) -> TumblingDurationWindow:
        """A tumbling window of ``window_length``."""
        ms = _millis(cls.__name__, window_length, "window length")
        return cls(ms, ms)


@dataclass(frozen=True)
class SlidingDurationWindow(BaseWindowConfig):
    """Windows of ``window_length`` of time, one every ``sliding_interval``.

    Examples
    --------
    >>> SlidingDurationWindow.of(Duration.seconds(6), Duration.seconds(2)).describe()
    'sliding 6000ms by 2000ms'
    """

    TYPE = WindowType.SLIDING_DURATION

    @classmethod
    def of(cls, window_length: Duration, sliding_interval: Duration) -> SlidingDurationWindow:
        """A window of ``window_length``, every ``sliding_interval``."""
        return cls(_millis(cls.__name__, window_length, "window length"),
                   _millis(cls.__name__, sliding_interval, "slide"))


#: What ``stream.window`` accepts.
WindowConfig = BaseWindowConfig

__all__ = ["BaseWindowConfig", "SlidingCountWindow", "SlidingDurationWindow", "TumblingCountWindow",
           "TumblingDurationWindow", "WindowConfig", "WindowType"]
