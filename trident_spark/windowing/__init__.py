"""Trident's windows: ``stream.tumblingWindow``, ``slidingWindow`` and ``window``, their configs
and the stores that keep open windows between batches (``org.apache.storm.trident.windowing``).

Configuration and store code only: no Spark here. The window task is
``trident_spark.executor.window_stage``; its driver half ``trident_spark.planner.window_plan``.

Examples
--------
>>> from trident_spark.windowing import SlidingDurationWindow, Duration
>>> SlidingDurationWindow.of(Duration.seconds(6), Duration.seconds(2)).describe()
'sliding 6000ms by 2000ms'
"""

from trident_spark.windowing.config import (
    BaseWindowConfig,
    SlidingCountWindow,
    SlidingDurationWindow,
    TumblingCountWindow,
    TumblingDurationWindow,
    WindowConfig,
    WindowType,
)
from trident_spark.windowing.duration import Duration
from trident_spark.windowing.processor import WindowProcessor, WindowsStoreAheadError
from trident_spark.windowing.store import (
    BackingMapWindowsStore,
    ElasticsearchWindowsStoreFactory,
    InMemoryWindowsStore,
    InMemoryWindowsStoreFactory,
    PostgresWindowsStoreFactory,
    RedisWindowsStoreFactory,
    SqliteWindowsStoreFactory,
    StateWindowsStoreFactory,
    WindowsStore,
    WindowsStoreFactory,
)

__all__ = ["BackingMapWindowsStore", "BaseWindowConfig", "Duration", "ElasticsearchWindowsStoreFactory",
           "InMemoryWindowsStore", "InMemoryWindowsStoreFactory", "PostgresWindowsStoreFactory",
           "RedisWindowsStoreFactory", "SlidingCountWindow", "SlidingDurationWindow",
           "SqliteWindowsStoreFactory", "StateWindowsStoreFactory", "TumblingCountWindow",
           "TumblingDurationWindow", "WindowConfig", "WindowProcessor", "WindowType", "WindowsStore",
           "WindowsStoreAheadError", "WindowsStoreFactory"]
