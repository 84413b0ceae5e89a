"""The window operators' build-time checks: Trident's argument shapes, sizes, fields, aggregators."""

from __future__ import annotations

import pytest

from trident_spark import Fields, TopologyError, TridentTopology
from trident_spark.builtin import Count, Debug, Sum
from trident_spark.graph import WindowNode
from trident_spark.spout import FeederBatchSpout
from trident_spark.windowing import (
    Duration,
    InMemoryWindowsStoreFactory,
    SlidingCountWindow,
    SlidingDurationWindow,
    SqliteWindowsStoreFactory,
    TumblingCountWindow,
    TumblingDurationWindow,
)


@pytest.fixture
def stream():
    return TridentTopology().newStream("s", FeederBatchSpout(["word", "n", "ts"]))


def test_each_trident_form_builds_its_window(stream, tmp_path):
    memory = InMemoryWindowsStoreFactory()
    cases = [
        (stream.tumblingWindow(100, memory, ["word"], Count(), ["count"]), TumblingCountWindow.of(100)),
        (stream.tumblingWindow(Duration.seconds(10), memory, Fields("n"), Sum(), ["y"]),
         TumblingDurationWindow.of(Duration.seconds(10))),
        (stream.slidingWindow(100, 10, memory, ["n"], Sum(), ["y"]), SlidingCountWindow.of(100, 10)),
        (stream.slidingWindow(Duration.seconds(10), Duration.seconds(2), memory, ["n"], Sum(), ["y"]),
         SlidingDurationWindow.of(Duration.of(10_000), Duration.of(2000))),
        (stream.window(TumblingCountWindow.of(1000), memory, ["n"], Sum(), ["y"]),
         TumblingCountWindow.of(1000)),
    ]
    for built, config in cases:
        node = built.node
        assert isinstance(node, WindowNode) and node.config == config
        assert list(built.getOutputFields()) == list(node.spec.function_fields)  # the aggregator's only
    config = SlidingDurationWindow.of(Duration.seconds(6), Duration.seconds(2))
    default = stream.window(config, ["n"], Sum(), ["y"])
    assert isinstance(default.node.store_factory, InMemoryWindowsStoreFactory)  # Trident's default store
    durable = SqliteWindowsStoreFactory(path=str(tmp_path / "w.db"))
    assert stream.tumblingWindow(5, durable, ["n"], Sum(), ["y"]).node.store_factory is durable
    timed = stream.window(TumblingDurationWindow.of(Duration.seconds(2)), ["n"], Sum(), ["y"],
                          timestamp_field="ts", lateness=Duration.seconds(5))
    assert (timed.node.timestamp_field, timed.node.lateness_ms) == ("ts", 5000)


@pytest.mark.parametrize(("build", "message"), [
    (lambda s: s.tumblingWindow(10, InMemoryWindowsStoreFactory(), ["wrd"], Count(), ["c"]),
     "unknown input field 'wrd'.*did you mean 'word'"),
    (lambda s: s.tumblingWindow(0, InMemoryWindowsStoreFactory(), ["n"], Count(), ["c"]), "at least 1"),
    (lambda s: s.tumblingWindow("10s", InMemoryWindowsStoreFactory(), ["n"], Count(), ["c"]),
     "tuple count .* or a Duration"),
    (lambda s: s.slidingWindow(10, Duration.seconds(1), InMemoryWindowsStoreFactory(), ["n"], Count(), ["c"]),
     "two tuple counts or two Durations"),
    (lambda s: s.slidingWindow(5, 10, InMemoryWindowsStoreFactory(), ["n"], Count(), ["c"]),
     "slide .* is longer than the window"),
    (lambda s: s.tumblingWindow(10, "memory", ["n"], Count(), ["c"]), "expected a windows store factory"),
    (lambda s: s.tumblingWindow(10, InMemoryWindowsStoreFactory(), ["n"], Debug(), ["c"]),
     "expected an Aggregator"),
    (lambda s: s.tumblingWindow(10, InMemoryWindowsStoreFactory(), ["n"], Count()), "got 3 arguments"),
    (lambda s: s.window(TumblingCountWindow.of(5), ["n"], Sum(), ["y"], timestamp_field="ts"),
     "needs a duration window"),
    (lambda s: s.window(TumblingDurationWindow.of(Duration.seconds(1)), ["n"], Sum(), ["y"],
                        timestamp_field="when"), "unknown input field 'when'"),
    (lambda s: s.window(TumblingDurationWindow.of(Duration.seconds(1)), ["n"], Sum(), ["y"],
                        lateness=Duration.seconds(1)), "give timestamp_field"),
    (lambda s: s.window(100, ["n"], Sum(), ["y"]), "expected a window config"),
])
def test_a_bad_window_is_a_topology_error_naming_the_operator(stream, build, message):
    with pytest.raises(TopologyError, match=message):
        build(stream)
