"""Trident's API forms without Spark: build-time validation, the executor functions, FixedBatchSpout's
batches, TridentTuple's Java getters and MemoryState served to another process."""

from __future__ import annotations

import multiprocessing
import pickle
from typing import Any

import pyarrow as pa
import pytest

from trident_spark import Fields, JoinOutFieldsMode, JoinType, TopologyError, TridentTopology, TridentTuple
from trident_spark.builtin import Count, Max, Min
from trident_spark.errors import OperatorError
from trident_spark.executor.grouping_stage import choose_partitions
from trident_spark.operation import BaseFunction, GroupedMultiReducer, MultiReducer, TridentCollector
from trident_spark.spout import FeederBatchSpout, FixedBatchSpout
from trident_spark.state import MemoryState


class Emit(BaseFunction):
    def execute(self, tuple: Any, collector: TridentCollector) -> None:
        collector.emit([1])


class Reducer(MultiReducer):
    pass


class Grouped(GroupedMultiReducer):
    pass


@pytest.fixture
def streams() -> tuple[TridentTopology, Any, Any]:
    topology = TridentTopology()
    return (topology, topology.newStream("a", FeederBatchSpout(["k", "x"])),
            topology.newStream("b", FeederBatchSpout(["k", "y"])))


def error(build: Any) -> str:
    with pytest.raises(TopologyError) as caught:
        build()
    return str(caught.value)


def test_each_without_input_fields_appends_to_the_whole_tuple(streams: Any) -> None:
    _, a, _ = streams
    node = a.each(Emit(), ["n"]).node
    assert (list(node.fields), list(node.input_fields)) == (["k", "x", "n"], [])
    assert error(lambda: a.each(Emit(), ["x"])) == (
        "each(Emit): duplicate output field 'x'; the stream already has ['k', 'x']; choose another name "
        "(or project() the old field away first)")


def test_min_max_and_by_with_comparators_validate(streams: Any) -> None:
    _, a, _ = streams
    assert a.min(lambda p, q: 0).node.label == "min(<lambda>)"
    assert error(lambda: a.max(len)) == (
        "max: expected a comparator, compare(a, b) -> int over two TridentTuples (or an object with such "
        "a compare method), got len (a plain function); for one field use maxBy(field, ...)")
    assert error(lambda: a.minBy("x", lambda: 0)) == (
        "minBy('x'): the second argument must be a comparator compare(a, b) -> int or a key function "
        "key(value), got <lambda> (a plain function); say which with comparator= or key=")
    assert error(lambda: a.maxBy("z", lambda p, q: 0)) == (
        "maxBy('z'): unknown input field 'z'; the stream has ['k', 'x']")
    assert repr(a.minBy("x", len).node.specs[0].aggregator) == "Min('x', key=len)"


def test_comparator_aggregators_follow_storm_ties_and_nones() -> None:
    calls: list[tuple[Any, Any]] = []

    def compare(p: Any, q: Any) -> int:
        calls.append((p, q))
        return (p > q) - (p < q)

    for agg, expected in [(Max("n", comparator=compare), ["c", 5]), (Min("n", comparator=compare), ["d", 1])]:
        out = TridentCollector()
        state = agg.init(0, out)
        for row in [["a", 5], ["b", None], ["c", 5], ["d", 1]]:
            agg.aggregate(state, TridentTuple(row, Fields("w", "n")), out)
        agg.complete(state, out)
        assert out.emitted == [expected]
    assert calls[:2] == [(5, 5), (5, 1)]  # compare(best, new), as MaxWithComparator calls it
    bad = Max(comparator=lambda p, q: "less")
    state = bad.init(0, TridentCollector())
    bad.aggregate(state, TridentTuple([1], Fields("n")), TridentCollector())
    with pytest.raises(TypeError, match=r"the comparator returned 'less'; it must return a negative number"):
        bad.aggregate(state, TridentTuple([2], Fields("n")), TridentCollector())


def test_merge_with_fields_validates_the_count(streams: Any) -> None:
    topology, a, b = streams
    assert list(topology.merge(Fields("p", "q:bigint"), a, b).getOutputFields().types.items()) == [
        ("p", "object"), ("q", "bigint")]
    assert error(lambda: topology.merge(Fields("p"), a, b)) == (
        "merge(p): stream 0 (from 'a') has 2 fields ['k', 'x'] but the output Fields name 1 ['p']; each "
        "tuple passes as it is, so give one output name per field (or project the streams first)")


def test_join_types_and_modes(streams: Any) -> None:
    topology, a, b = streams
    assert topology.join(a, ["k"], b, ["k"], ["k", "x", "y"], "left").node.join_types == ["inner", "outer"]
    node = topology.join(a, ["k"], b, ["k"], ["k", "k1", "x", "k2", "y"], [JoinType.OUTER, JoinType.INNER],
                         JoinOutFieldsMode.PRESERVE).node
    assert (node.join_types, node.mode) == (["outer", "inner"], "preserve")
    assert error(lambda: topology.join(a, ["k"], b, ["k"], ["k", "x", "y"], mode="PRESERVE")) == (
        "join: 3 output fields ['k', 'x', 'y'] declared but the join produces 5: join fields ['k'], then "
        "stream 0's fields (PRESERVE mode) ['k', 'x'], then stream 1's fields (PRESERVE mode) ['k', 'y']; "
        "declare 5 names in that order")
    assert error(lambda: topology.join(a, ["k"], b, ["k"], ["k", "x", "y"], [JoinType.INNER])) == (
        "join: give one JoinType (INNER or OUTER) for each of the 2 streams, got ['inner']")
    assert error(lambda: topology.join(a, ["k"], b, ["k"], ["k", "x", "y"], mode=3)) == (
        "join: mode must be JoinOutFieldsMode.COMPACT or JoinOutFieldsMode.PRESERVE (from trident_spark "
        "import JoinOutFieldsMode), got 3 (an int)")


def test_partition_forms_validate(streams: Any) -> None:
    _, a, _ = streams
    assert a.identityPartition().node.kind == "identity"
    assert error(lambda: a.partition("k")) == (
        "partition: expected a grouping, a callable grouping(tuple, num_partitions) -> partition index, "
        "got 'k' (a str); e.g. partition(lambda t, n: hash(t['user']) % n)")
    assert error(lambda: a.partition(lambda t: 0)) == (
        "partition(<lambda>): the grouping is called as grouping(tuple, num_partitions); <lambda> (a plain "
        "function) does not take two arguments")


def test_a_grouping_index_out_of_range_names_the_operator() -> None:
    batch = pa.RecordBatch.from_pydict({"id": [0, 1]})
    def grouping(t: Any, n: int) -> Any:
        return [0, 1] if t["id"] else 0

    out = list(choose_partitions("partition(g)", grouping, ["id"], 2, iter([batch])))
    assert out[0].to_pydict() == {"id": [0, 1, 1], "__partition": [0, 0, 1]}
    with pytest.raises(OperatorError) as caught:
        list(choose_partitions("partition(g)", lambda t, n: t["id"] + 1, ["id"], 2, iter([batch, batch])))
    assert str(caught.value) == (
        "partition(g): the grouping returned 2 for tuple {'id': 1}; a partition index must be an int from 0 "
        "to 1 (grouping(tuple, num_partitions) is called with num_partitions=2)")


def test_multi_reduce_validates_streams_reducers_and_outputs(streams: Any) -> None:
    topology, a, b = streams
    assert list(topology.multiReduce([["x"], ["y"]], [a, b], Reducer(), ["n"]).node.input_fields) == [
        Fields("x"), Fields("y")]
    assert error(lambda: topology.multiReduce([a, b.groupBy(["k"])], Reducer(), ["n"])) == (
        "multiReduce(Reducer): give only Streams (for a MultiReducer) or only GroupedStreams (for a "
        "GroupedMultiReducer), not both; group every stream, e.g. s.groupBy(['key'])")
    assert error(lambda: topology.multiReduce([a.groupBy(["k"]), b.groupBy(["k"])], Reducer(), ["n"])) == (
        "multiReduce(Reducer): GroupedStreams need a GroupedMultiReducer, got Reducer (a MultiReducer); a "
        "MultiReducer takes the streams ungrouped (drop the groupBy)")
    uneven = [a.groupBy(["k"]), b.groupBy(["k", "y"])]
    assert error(lambda: topology.multiReduce(uneven, Grouped(), ["k", "n"])) == (
        "multiReduce(Grouped): every stream must be grouped by the same number of fields; got ['k'] for "
        "stream 0, ['k', 'y'] for stream 1")
    assert error(lambda: topology.multiReduce([["z"], ["y"]], [a, b], Reducer(), ["n"])) == (
        "multiReduce(Reducer): unknown input field 'z'; stream 0 (from 'a') has ['k', 'x']")


def test_fixed_batch_spout_cuts_batches_as_trident() -> None:
    spout = FixedBatchSpout(["w"], 2, ["a"], ["b"], ["c"])
    assert [spout.batch(k) for k in range(3)] == [[["a"], ["b"]], [["c"]], []]
    spout.setCycle(True)
    assert [spout.batch(k) for k in range(4)] == [[["a"], ["b"]], [["c"]], [["a"], ["b"]], [["c"]]]
    with pytest.raises(ValueError, match=r"FixedBatchSpout\(max_batch_size=0\): give an int >= 1"):
        FixedBatchSpout(["w"], 0, ["a"])
    with pytest.raises(ValueError, match=r"tuple 0 has 2 values \['a', 'b'\], expected 1 for fields \['w'\]"):
        FixedBatchSpout(["w"], 2, ["a", "b"])


def test_trident_tuple_java_getters() -> None:
    t = TridentTuple([1, 2.5, True, b"x"], Fields("n", "f", "ok", "raw"))
    assert (t.size(), t.get(1), t.select(Fields("raw", "n"))) == (4, 2.5, [b"x", 1])
    assert (t.getFloat(0), t.getShort(0), t.getBoolean(2), t.getBinary(3)) == (1.0, 1, True, b"x")
    assert (t.getFloatByField("f"), t.getShortByField("n"), t.getBooleanByField("ok"),
            t.getBinaryByField("raw")) == (2.5, 1, True, b"x")
    with pytest.raises(KeyError, match=r"tuple has no field 'm'; its fields are \['n', 'f', 'ok', 'raw'\]"):
        t.select(["m"])


def _write_in_child(data: bytes) -> None:
    factory = pickle.loads(data)
    factory.open().multiUpdate(0, [["cat"]], [lambda old: (old or 0) + 5])


def test_memory_state_served_to_another_process() -> None:
    MemoryState.drop("unit-served")
    MemoryState.serve()
    data = pickle.dumps(MemoryState.opaque(name="unit-served"))
    child = multiprocessing.get_context("spawn").Process(target=_write_in_child, args=(data,))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert MemoryState.opaque(name="unit-served").open().multiGet([["cat"]]) == [5]


def test_memory_state_is_refused_on_a_cluster_master(monkeypatch: pytest.MonkeyPatch) -> None:
    from trident_spark.planner import state_plan

    topology = TridentTopology()
    state = topology.newStream("w", FeederBatchSpout(["word"])).groupBy(["word"]).persistentAggregate(
        MemoryState.opaque(name="wc"), Count(), ["count"])
    monkeypatch.setattr(state_plan, "_active_master", lambda: "spark://10.0.0.1:7077")
    assert error(lambda: state_plan.check_shared(state.node)) == (
        "persistentAggregate(Count): memory://wc?type=opaque keeps its values in the driver's memory, which "
        "Spark's executors on the cluster (spark://10.0.0.1:7077) cannot reach; MemoryState works in local "
        "mode only. Use SqliteState on one machine, or RedisState / ElasticsearchState on a cluster")



