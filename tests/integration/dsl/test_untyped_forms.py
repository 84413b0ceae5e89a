"""Untyped fields through every form that compares, orders or moves values, on Spark.

FeederBatchSpout fields without a type carry any value; the built-ins (Sum, Min, Max,
FirstN, minBy/maxBy, Equals, FilterNull), merge, join and partitionBy treat them with
Python's equality and ordering, and a value that cannot travel fails naming the operator,
the field and the value.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from trident_spark import TridentTopology
from trident_spark.builtin import Count, Equals, FilterNull, FirstN, Max, Min, Sum
from trident_spark.errors import OperatorError
from trident_spark.operation import Aggregator, BaseFunction
from trident_spark.spout import FeederBatchSpout

pytestmark = pytest.mark.integration

ROWS = [["a", 1], ["b", 2.5], ["a", True], ["c", None], ["b", -4], ["a", 1.0], ["d", 10]]


class Gather(Aggregator):
    """A partition's values, in one list."""

    def init(self, batch_id: Any, collector: Any) -> list[Any]:
        return []

    def aggregate(self, state: list[Any], tuple: Any, collector: Any) -> None:
        state.append(tuple[0])

    def complete(self, state: list[Any], collector: Any) -> None:
        collector.emit([state])


def _values(sink: Any) -> list[dict[str, Any]]:
    return [t for _, batch in sorted(sink.batches.items()) for t in batch]


@pytest.fixture(scope="module")
def run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("untyped-forms")
    spout = FeederBatchSpout(["k", "v"], num_partitions=2)
    other = FeederBatchSpout(["key", "label"], num_partitions=1)
    spout.feed(ROWS)
    other.feed([[1.0, "one"], ["a", "letter"], [2, "two"]])
    topology = TridentTopology()
    s = topology.newStream("s", spout)
    labels = topology.newStream("labels", other)
    sinks = {
        "sum": s.groupBy(["k"]).aggregate(["v"], Sum(), ["sum"]).collect(),
        "count_v": s.groupBy(["v"]).aggregate(Count(), ["n"]).collect(),
        "count_no_int": (s.filter(lambda t: type(t["v"]) is not int).groupBy(["v"])
                         .aggregate(Count(), ["n"]).collect()),
        "min": s.each(["v"], FilterNull()).aggregate(["v"], Min(), ["min"]).collect(),
        "max": s.each(["v"], FilterNull()).aggregate(["v"], Max(), ["max"]).collect(),
        "first": s.each(["v"], FilterNull()).global_().applyAssembly(FirstN(2, "v", reverse=True)).collect(),
        "min_by": s.each(["v"], FilterNull()).global_().minBy("v").collect(),
        "max_by": s.each(["v"], FilterNull()).global_().maxBy("v").collect(),
        "equal": s.each(["v"], FilterNull()).map(lambda t: [t["v"], 1], ["v", "one"])
                  .each(["v", "one"], Equals()).collect(),
        "not_null": s.each(["v"], FilterNull()).collect(),
        "by_value": s.partitionBy(["v"]).partitionAggregate(["v"], Gather(), ["values"]).collect(),
        "merged": topology.merge(s.project(["v"]), labels.project(["label"])).collect(),
        "joined": topology.join(s, ["v"], labels, ["key"], ["v", "k", "label"]).collect(),
    }
    with topology.run(str(tmp / "ckpt"), trigger="available_now", spark=spark) as handle:
        handle.awaitTermination()
    return sinks


def test_sum_per_untyped_group_is_python_arithmetic(run):
    sums = {t["k"]: t["sum"] for t in _values(run["sum"])}
    assert sums == {"a": 3.0, "b": -1.5, "c": 0, "d": 10}
    assert type(sums["a"]) is float and type(sums["d"]) is int


def test_count_by_untyped_value_groups_python_equal_values_showing_an_int_first(run):
    counts = sorted(((t["v"], t["n"]) for t in _values(run["count_v"])), key=repr)
    assert counts == sorted([(1, 3), (2.5, 1), (None, 1), (-4, 1), (10, 1)], key=repr)
    assert type(next(v for v, n in counts if n == 3)) is int
    without_ints = {repr(t["v"]): t["n"] for t in _values(run["count_no_int"])}
    assert without_ints == {"1.0": 2, "2.5": 1, "None": 1}   # 1.0 and True: the float shows


def test_min_max_first_n_min_by_and_max_by_order_with_python(run):
    assert _values(run["min"]) == [{"min": -4}]
    assert _values(run["max"]) == [{"max": 10}]
    assert sorted(t["v"] for t in _values(run["first"])) == [2.5, 10]
    assert _values(run["min_by"]) == [{"k": "b", "v": -4}]
    assert _values(run["max_by"]) == [{"k": "d", "v": 10}]


def test_equals_and_filter_null_on_untyped_fields(run):
    equal = sorted((t["v"] for t in _values(run["equal"])), key=repr)
    assert equal == [1, 1.0, True]   # each equal to the int 1, compared by Spark SQL on group keys
    assert [type(v) for v in equal] == [int, float, bool]
    assert len(_values(run["not_null"])) == 6


def test_partition_by_puts_python_equal_values_in_one_partition(run):
    partitions = [t["values"] for t in _values(run["by_value"])]
    together = [values for values in partitions if 1 in values]
    assert len(together) == 1 and sorted(map(repr, together[0]))[:3] == ["1", "1.0", "True"]
    assert sorted(map(repr, (v for values in partitions for v in values))) == sorted(repr(r[1]) for r in ROWS)


def test_merge_keeps_each_value_as_it_was(run):
    merged = [t["v"] for t in _values(run["merged"])]
    assert sorted(map(repr, merged)) == sorted(map(repr, [r[1] for r in ROWS] + ["one", "letter", "two"]))


def test_join_matches_python_equal_keys(run):
    joined = sorted((repr(t["v"]), t["k"], t["label"]) for t in _values(run["joined"]))
    # 1, 1.0 and True match the key 1.0; the join field shows the first stream's value
    assert joined == [("1", "a", "one"), ("1.0", "a", "one"), ("True", "a", "one")]


class Unpicklable(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        collector.emit([threading.Lock()])


def test_a_value_that_cannot_travel_fails_naming_the_operator_field_and_value(spark, tmp_path):
    spout = FeederBatchSpout(["word"])
    spout.feed([["cat"]])
    topology = TridentTopology()
    topology.newStream("s", spout).each(["word"], Unpicklable(), ["lock"]).collect()
    with pytest.raises(OperatorError) as info, \
            topology.run(str(tmp_path / "ckpt"), trigger="available_now", spark=spark) as handle:
        handle.awaitTermination()
    message = str(info.value)
    assert message.startswith("each(Unpicklable): field 'lock': the value <unlocked _thread.lock object at ")
    assert "(lock) cannot be carried: an untyped field carries values that pickle" in message
