"""Trident's API forms on Spark, one topology and one run: each result is what Trident emits.

each(function, out) with no input fields, min/max(comparator), minBy/maxBy with a comparator,
merge(Fields, streams), join with JoinType and JoinOutFieldsMode.PRESERVE, identityPartition,
partition(grouping), multiReduce (MultiReducer, GroupedMultiReducer), FixedBatchSpout (once and
cycling) and a MemoryState written by the local workers and read on the driver. The expected
values follow Storm's Java source (ComparisonAggregator, PreservingFieldsOrderJoinerMultiReducer,
GroupedMultiReducerExecutor, FixedBatchSpout.emitBatch).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import Fields, JoinOutFieldsMode, JoinType, TridentTopology
from trident_spark.builtin import Count
from trident_spark.operation import BaseFunction, GroupedMultiReducer, MultiReducer, TridentCollector
from trident_spark.spout import FeederBatchSpout, FixedBatchSpout
from trident_spark.state import MemoryState

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import test modules

CARS = [[["a", 30], ["b", 50], ["c", 50], ["d", 10]], [["e", 70]]]
LEFT = [[["a", "1"], ["b", "2"]], [["c", "3"]]]
RIGHT = [[["a", "p"], ["c", "q"]], [["c", "r"], ["c", "s"]]]
SENTENCES = [["the cow jumped over the moon"], ["the man went to the store"],
             ["four score and seven years ago"], ["how many apples can you eat"]]
MEMORY = "api-forms-speeds"


class Size(BaseFunction):
    """Emits the size of the tuple it is given (0 for each(function, out))."""

    def execute(self, tuple: Any, collector: TridentCollector) -> None:
        collector.emit([tuple.size()])


class Where(BaseFunction):
    """Emits the Spark partition the tuple is in."""

    def execute(self, tuple: Any, collector: TridentCollector) -> None:
        from pyspark import TaskContext

        collector.emit([TaskContext.get().partitionId()])


class BySpeed:
    """A Java-style Comparator object over whole tuples."""

    def compare(self, a: Any, b: Any) -> int:
        return int(a.getLongByField("speed") - b.getLongByField("speed"))


class CountSides(MultiReducer):
    def init(self, collector: TridentCollector) -> list[Any]:
        return [0, 0, []]

    def execute(self, state: list[Any], streamIndex: int, input: Any, collector: TridentCollector) -> None:
        state[streamIndex] += 1
        state[2].append(input.select(["k"])[0])

    def complete(self, state: list[Any], collector: TridentCollector) -> None:
        collector.emit([state[0], state[1], ",".join(sorted(state[2]))])


class PairSides(GroupedMultiReducer):
    def init(self, collector: TridentCollector, group: Any) -> list[list[str]]:
        return [[], []]

    def execute(self, state: list[list[str]], streamIndex: int, group: Any, input: Any,
                collector: TridentCollector) -> None:
        state[streamIndex].append(input.get(input.size() - 1))

    def complete(self, state: list[list[str]], group: Any, collector: TridentCollector) -> None:
        collector.emit([len(state[0]), "".join(sorted(state[1]))])


def _by_batch(sink: Any, keys: list[str] | None = None) -> dict[int, list[Any]]:
    out = {}
    for txid, tuples in sink.batches.items():
        rows = [tuple(t[k] for k in (keys or list(t))) for t in tuples]
        out[txid] = sorted(rows, key=repr)
    return out


@pytest.fixture(scope="module")
def run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    MemoryState.drop(MEMORY)
    topology = TridentTopology()
    cars_spout = FeederBatchSpout(["name", "speed:bigint"], num_partitions=1)
    left_spout = FeederBatchSpout(["k", "x"], num_partitions=1)
    right_spout = FeederBatchSpout(["k", "y"], num_partitions=1)
    ids_spout = FeederBatchSpout(["id:bigint"], num_partitions=2)
    cars = topology.newStream("cars", cars_spout)
    left = topology.newStream("left", left_spout)
    right = topology.newStream("right", right_spout)
    ids = topology.newStream("ids", ids_spout)
    cycling = FixedBatchSpout(Fields("sentence"), 3, *SENTENCES, max_batches=5)
    cycling.setCycle(True)
    once = FixedBatchSpout(Fields("sentence"), 3, *SENTENCES)
    sinks = {
        "each_no_inputs": cars.each(Size(), ["n:bigint"]).collect(),
        "min": cars.min(lambda a, b: a.getLong(1) - b.getLong(1)).collect(),
        "max": cars.max(BySpeed()).collect(),
        "minBy": cars.minBy("speed", lambda a, b: a - b).collect(),
        "maxBy": cars.maxBy("speed", comparator=lambda a, b: a - b).collect(),
        "merge": topology.merge(Fields("key", "val"), left, right).collect(),
        "left_outer": topology.join(left, ["k"], right, ["k"], ["k", "x", "y"],
                                    [JoinType.INNER, JoinType.OUTER]).collect(),
        "preserve_inner": topology.join(left, ["k"], right, ["k"], ["key", "lk", "x", "rk", "y"],
                                        JoinType.INNER, JoinOutFieldsMode.PRESERVE).collect(),
        "preserve_outer": topology.join([left, right], [["k"], ["k"]], ["key", "lk", "x", "rk", "y"],
                                        JoinType.OUTER, mode=JoinOutFieldsMode.PRESERVE).collect(),
        "multi": topology.multiReduce([left, right], CountSides(),
                                      ["n_left:bigint", "n_right:bigint", "keys"]).collect(),
        "grouped_multi": topology.multiReduce([left.groupBy(["k"]), right.groupBy(["k"])], PairSides(),
                                              ["k", "n_left:bigint", "rights"]).collect(),
        "identity": ids.identityPartition().each(["id"], Where(), ["p:bigint"]).collect(),
        "custom": ids.partition(lambda t, n: t["id"] % n).parallelismHint(3)
                     .each(["id"], Where(), ["p:bigint"]).collect(),
        "cycling": topology.newStream("cycling", cycling).collect(),
        "once": topology.newStream("once", once).collect(),
    }
    cars.groupBy(["speed"]).persistentAggregate(MemoryState.opaque(name=MEMORY), Count(), ["count"])
    for k in range(2):
        cars_spout.feed(CARS[k])
        left_spout.feed(LEFT[k])
        right_spout.feed(RIGHT[k])
    ids_spout.feed([[i] for i in range(6)])
    handle = topology.run(tmp_path_factory.mktemp("api-forms") / "ckpt", trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(600), "the availableNow run did not finish in 600 s"
    finally:
        handle.stop()
    return sinks


def test_each_without_input_fields_sees_an_empty_tuple_and_appends(run: dict[str, Any]) -> None:
    assert _by_batch(run["each_no_inputs"]) == {
        0: [("a", 30, 0), ("b", 50, 0), ("c", 50, 0), ("d", 10, 0)], 1: [("e", 70, 0)]}


def test_min_and_max_with_a_comparator_emit_the_whole_tuple_ties_to_the_later(run: dict[str, Any]) -> None:
    assert _by_batch(run["min"]) == {0: [("d", 10)], 1: [("e", 70)]}
    assert _by_batch(run["max"]) == {0: [("c", 50)], 1: [("e", 70)]}  # b and c tie: c came later
    assert _by_batch(run["minBy"]) == {0: [("d", 10)], 1: [("e", 70)]}
    assert _by_batch(run["maxBy"]) == {0: [("c", 50)], 1: [("e", 70)]}


def test_merge_with_fields_renames_the_output(run: dict[str, Any]) -> None:
    assert run["merge"].fields == Fields("key", "val")
    assert _by_batch(run["merge"]) == {0: [("a", "1"), ("a", "p"), ("b", "2"), ("c", "q")],
                                       1: [("c", "3"), ("c", "r"), ("c", "s")]}


def test_join_with_join_types_and_preserve_mode(run: dict[str, Any]) -> None:
    assert _by_batch(run["left_outer"]) == {0: [("a", "1", "p"), ("b", "2", None)],
                                            1: [("c", "3", "r"), ("c", "3", "s")]}
    assert _by_batch(run["preserve_inner"]) == {0: [("a", "a", "1", "a", "p")],
                                                1: [("c", "c", "3", "c", "r"), ("c", "c", "3", "c", "s")]}
    assert _by_batch(run["preserve_outer"]) == {
        0: [("a", "a", "1", "a", "p"), ("b", "b", "2", None, None), ("c", None, None, "c", "q")],
        1: [("c", "c", "3", "c", "r"), ("c", "c", "3", "c", "s")]}


def test_multi_reduce_sees_every_tuple_of_the_batch_with_its_stream_index(run: dict[str, Any]) -> None:
    assert _by_batch(run["multi"]) == {0: [(2, 2, "a,a,b,c")], 1: [(1, 2, "c,c,c")]}


def test_grouped_multi_reduce_emits_the_group_then_the_reducer_values(run: dict[str, Any]) -> None:
    assert _by_batch(run["grouped_multi"]) == {0: [("a", 1, "p"), ("b", 1, ""), ("c", 0, "q")],
                                               1: [("c", 1, "rs")]}


def test_identity_partition_keeps_partitions_and_a_grouping_chooses_them(run: dict[str, Any]) -> None:
    # the feeder cuts 6 rows into 2 contiguous chunks: ids 0-2 in partition 0, 3-5 in partition 1
    assert _by_batch(run["identity"]) == {0: [(0, 0), (1, 0), (2, 0), (3, 1), (4, 1), (5, 1)]}
    assert _by_batch(run["custom"]) == {0: [(i, i % 3) for i in range(6)]}


def test_fixed_batch_spout_batches_once_and_cycling(run: dict[str, Any]) -> None:
    first, second = [s[0] for s in SENTENCES[:3]], [SENTENCES[3][0]]
    assert {k: [t["sentence"] for t in v] for k, v in run["once"].batches.items()} == {0: first, 1: second}
    assert {k: [t["sentence"] for t in v] for k, v in run["cycling"].batches.items()} == {
        0: first, 1: second, 2: first, 3: second, 4: first}


def test_memory_state_written_on_local_workers_is_read_on_the_driver(run: dict[str, Any]) -> None:
    counts = MemoryState.opaque(name=MEMORY).open()
    assert counts.multiGet([[10], [30], [50], [70], [99]]) == [1, 1, 2, 1, None]
