"""Trident's windows on Spark, as users write them: FeederBatchSpout in, ``collect()`` out.

One topology, several windows over one stream of numbers: each window's output equals a direct
computation of the same windows here (count windows from the feed order; processing-time
windows from the batches' own timestamps in Spark's offset log; event-time windows from the
tuples' timestamps). An operation after a window asks for batch 2 to be replayed: the windows
still come out once each, the same.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import FailedException, TridentTopology
from trident_spark.operation import BaseFilter, ReducerAggregator
from trident_spark.spout import FeederBatchSpout
from trident_spark.windowing import (
    Duration,
    InMemoryWindowsStoreFactory,
    SlidingDurationWindow,
    TumblingCountWindow,
)

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])

#: (numbers, event timestamps in ms) per batch
BATCHES = [
    ([0, 1, 2], [1000, 2500, 1200]),
    ([3, 4, 5, 6, 7], [5200, 1800, 6100, 3000, 4100]),
    ([8, 9], [9000, 2000]),
    ([10, 11, 12, 13], [12500, 7000, 13900, 15100]),
    ([14], [21000]),
]
LATENESS = 1000


class Gather(ReducerAggregator):
    """A window's numbers, in the order the window saw them."""

    def init(self) -> list[int]:
        return []

    def reduce(self, curr: list[int], tuple: Any) -> list[int]:
        return [*curr, tuple[0]]


class ReplayOnce(BaseFilter):
    """Asks for batch ``txid`` to be replayed, the first time only (a marker file says so)."""

    def __init__(self, marker: str, txid: int) -> None:
        self.marker, self.txid = marker, txid
        self.batch = -1

    def prepare(self, conf: Any, context: Any) -> None:
        self.context = context

    def isKeep(self, tuple: Any) -> bool:
        if self.context.txid == self.txid:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                return True
            raise FailedException(f"replay batch {self.txid} once")
        return True


def count_windows(stream: list[int], n: int, slide: int) -> list[list[int]]:
    return [stream[max(0, end - n):end] for end in range(slide, len(stream) + 1, slide)]


def time_windows(stamped: list[tuple[int, int]], length: int, slide: int, until: int) -> list[list[int]]:
    """Non-empty windows ending at multiples of ``slide`` up to ``until``, in order; tuples by arrival."""
    ends = sorted({e for ts, _ in stamped for e in range((ts // slide + 1) * slide, ts + length + 1, slide)
                   if e <= until})
    return [[v for ts, v in stamped if e - length <= ts < e] for e in ends]


@pytest.fixture(scope="module")
def ran(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("windows")
    spout = FeederBatchSpout(["n", "ts"], num_partitions=2)
    topology = TridentTopology()
    numbers = topology.newStream("numbers", spout)
    memory = InMemoryWindowsStoreFactory()
    sinks = {
        "tumbling": numbers.window(TumblingCountWindow.of(4), ["n"], Gather(), ["w"]).collect(),
        "sliding": (numbers.slidingWindow(5, 2, memory, ["n"], Gather(), ["w"])
                    .each(["w"], ReplayOnce(str(work / "replayed"), 2)).collect()),
        "time": numbers.slidingWindow(Duration.of(300), Duration.of(100), memory, ["n"], Gather(),
                                      ["w"]).collect(),
        "partitioned": numbers.tumblingWindow(3, memory, ["n"], Gather(), ["w"]).parallelismHint(2).collect(),
        "shuffled": numbers.shuffle().window(TumblingCountWindow.of(5), ["n"], Gather(), ["w"]).collect(),
        "event": numbers.window(SlidingDurationWindow.of(Duration.seconds(4), Duration.seconds(2)), memory,
                                ["n"], Gather(), ["w"], timestamp_field="ts",
                                lateness=Duration.of(LATENESS)).collect(),
    }
    for values, stamps in BATCHES:
        spout.feed([[v, ts] for v, ts in zip(values, stamps, strict=True)])
    handle = topology.run(checkpoint_location=work / "ckpt", trigger="available_now", spark=spark)
    handle.processAllAvailable()
    progress = list(handle.progress)
    handle.stop()
    offsets = work / "ckpt" / "numbers" / "offsets"
    stamps = {int(p.name): json.loads(p.read_text().splitlines()[1])["batchTimestampMs"]
              for p in offsets.iterdir() if p.name.isdigit()}
    return {"sinks": sinks, "stamps": stamps, "progress": progress}


def windows_of(sink: Any) -> list[list[int]]:
    return [t["w"] for txid in sorted(sink.batches) for t in sink.batches[txid]]


def test_count_windows_equal_the_direct_computation(ran):
    stream = [v for values, _ in BATCHES for v in values]
    assert windows_of(ran["sinks"]["tumbling"]) == count_windows(stream, 4, 4)
    assert windows_of(ran["sinks"]["sliding"]) == count_windows(stream, 5, 2)


def test_each_count_window_comes_out_in_the_batch_of_its_last_tuple(ran):
    for txid, tuples in ran["sinks"]["tumbling"].batches.items():
        assert all(t["w"][-1] in BATCHES[txid][0] for t in tuples)


def test_processing_time_windows_use_each_batch_timestamp(ran):
    stamps = ran["stamps"]
    assert sorted(stamps) == list(range(len(BATCHES)))
    stamped = [(stamps[txid], v) for txid, (values, _) in enumerate(BATCHES) for v in values]
    expected = time_windows(stamped, 300, 100, (stamps[len(BATCHES) - 1] // 100) * 100)
    assert windows_of(ran["sinks"]["time"]) == expected


def test_event_time_windows_close_at_the_watermark_and_drop_late_tuples(ran):
    accepted, watermark, late = [], None, 0
    for values, stamps in BATCHES:
        batch = [(ts, v) for v, ts in zip(values, stamps, strict=True)]
        kept = [(ts, v) for ts, v in batch if watermark is None or ts >= watermark]
        late += len(batch) - len(kept)
        accepted.extend(kept)
        if kept:
            top = max(ts for ts, _ in kept) - LATENESS
            watermark = top if watermark is None else max(watermark, top)
    assert late == 2  # 9 at 2000 and 11 at 7000 come after the watermark passed them
    reported = sum(n for p in ran["progress"] for name, n in p.errors_reported.items() if "late" in name)
    assert reported == late
    assert windows_of(ran["sinks"]["event"]) == time_windows(accepted, 4000, 2000, (watermark // 2000) * 2000)


def test_with_a_parallelism_hint_each_partition_keeps_its_own_windows(ran):
    windows = windows_of(ran["sinks"]["partitioned"])
    stream = [v for values, _ in BATCHES for v in values]
    assert all(len(w) == 3 and w == sorted(w) for w in windows)  # each in arrival order
    taken = [v for w in windows for v in w]
    assert len(taken) == len(set(taken)) and set(taken) <= set(stream)  # disjoint, from the stream
    assert len(windows) >= (len(stream) - 2 * 2) // 3  # at most 2 tuples wait in each partition


def test_after_a_repartitioning_windows_take_the_tuples_in_an_order_of_their_values(ran):
    # a shuffled batch may come in another order when Spark runs it again: the window sorts by a
    # hash of each tuple's values, so the windows hold 5 tuples each and, together, the stream
    windows = windows_of(ran["sinks"]["shuffled"])
    assert [len(w) for w in windows] == [5, 5, 5]
    assert sorted(v for w in windows for v in w) == [v for values, _ in BATCHES for v in values]


def test_a_replayed_batch_gives_each_window_once(ran):
    batches = ran["sinks"]["sliding"].batches
    assert [t["w"] for t in batches[2]] == [[5, 6, 7, 8, 9]]
    replayed = [p for p in ran["progress"] if p.txid == 2]
    assert replayed and replayed[-1].attempts == 2
