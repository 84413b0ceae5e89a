"""A partial aggregation fused at the end of a Python stage, without Spark: the stage's tuples go
to the tail, which emits one row per group with each aggregator's partial value."""

from __future__ import annotations

import doctest
import pickle

import pyarrow as pa
import pytest

from trident_spark import Fields
from trident_spark.builtin import Count, Sum
from trident_spark.errors import OperatorError
from trident_spark.executor import partial_combine
from trident_spark.executor.aggregate_stage import AggStep
from trident_spark.executor.metrics import StageClock, StageName
from trident_spark.executor.partial_combine import PartialCombine
from trident_spark.executor.python_stage import PythonStep, run_stage
from trident_spark.object_values import decode_column
from trident_spark.operation import BaseFunction, CombinerAggregator


class Split(BaseFunction):
    def execute(self, tuple, collector):
        for word in tuple.getString(0).split():
            collector.emit([word])


class Longest(CombinerAggregator):
    """A user's Combiner: the longest word (no Spark SQL merge: its partials are pickled)."""

    def init(self, tuple):
        return tuple.getString(0)

    def combine(self, a, b):
        return a if len(a) >= len(b) else b

    def zero(self):
        return ""


class Broken(CombinerAggregator):
    def init(self, tuple):
        raise KeyError("nope")

    def combine(self, a, b):
        return a

    def zero(self):
        return 0


def tail(steps, group, types, typed=True, untyped=frozenset()):
    names = [*group, *(f"__partial{i}" for i in range(len(steps)))]
    types_of = dict(zip(names, types, strict=True))
    return PartialCombine(StageName("agg", "partial"), steps, group, names, types_of, typed,
                          untyped_out=untyped)


def count_step():
    return AggStep("count", Count(), Fields(), Fields("count"))


def feed(partials, **columns):
    rows = len(next(iter(columns.values())))
    partials.add(lambda name: columns[name], rows)


def test_count_per_group_is_the_number_of_tuples_across_batches():
    partials = tail([count_step()], ["word"], [pa.string(), pa.int64()]).start()
    feed(partials, word=["a", "b", "a"])
    feed(partials, word=["b", "a", None])
    expected = [{"word": "a", "__partial0": 3}, {"word": "b", "__partial0": 2},
                {"word": None, "__partial0": 1}]
    assert sorted(partials.batch().to_pylist(), key=str) == sorted(expected, key=str)


def test_ungrouped_count_is_one_row_and_an_empty_partition_none():
    combine = tail([count_step()], [], [pa.int64()])
    partials = combine.start()
    feed(partials, word=["a", "b"])
    feed(partials, word=["c"])
    assert partials.batch().to_pylist() == [{"__partial0": 3}]
    assert combine.start().batch() is None


def test_sum_and_count_chained_over_two_group_fields():
    steps = [AggStep("sum", Sum(), Fields("n"), Fields("total")), count_step()]
    partials = tail(steps, ["k", "j"], [pa.string(), pa.int64(), pa.int64(), pa.int64()]).start()
    feed(partials, k=["x", "x", "y", "x"], j=[1, 1, 1, 2], n=[1, None, 5, 7])
    rows = {(r["k"], r["j"]): (r["__partial0"], r["__partial1"]) for r in partials.batch().to_pylist()}
    assert rows == {("x", 1): (1, 2), ("y", 1): (5, 1), ("x", 2): (7, 1)}


def test_count_chained_with_sum_reads_none_of_the_fields_it_was_handed():
    # the DSL hands an aggregator without input fields every field; the stage ships only those read
    steps = [AggStep("sum", Sum(), Fields("n"), Fields("total")),
             AggStep("count", Count(), Fields("k", "n", "unshipped"), Fields("count"))]
    partials = tail(steps, ["k"], [pa.string(), pa.int64(), pa.int64()]).start()
    feed(partials, k=["x", "x", "y"], n=[1, 2, 5])
    rows = sorted(map(tuple, (r.values() for r in partials.batch().to_pylist())))
    assert rows == [("x", 3, 2), ("y", 5, 1)]


def test_a_users_combiner_gives_pickled_partials():
    steps = [AggStep("longest", Longest(), Fields("word"), Fields("longest"))]
    partials = tail(steps, ["first"], [pa.string(), pa.binary()], typed=False).start()
    feed(partials, first=["a", "a", "b"], word=["ab", "abc", "b"])
    rows = {r["first"]: pickle.loads(r["__partial0"]) for r in partials.batch().to_pylist()}
    assert rows == {"a": "abc", "b": "b"}


def test_unhashable_group_values_are_grouped_by_value_and_written_untyped():
    steps = [count_step()]
    partials = tail(steps, ["key"], [pa.binary(), pa.int64()], untyped=frozenset({"key"})).start()
    feed(partials, key=[[1, 2], [1, 2], {"a": 1}])
    out = partials.batch()
    assert sorted(zip(map(repr, decode_column(out.column("key"))), out.column("__partial0").to_pylist(),
                      strict=True)) == [("[1, 2]", 2), ("{'a': 1}", 1)]


def test_one_one_point_zero_and_true_are_one_group_as_in_python():
    partials = tail([count_step()], ["key"], [pa.binary(), pa.int64()], untyped=frozenset({"key"})).start()
    feed(partials, key=[1, 1.0, True, 2])
    assert sorted(partials.batch().column("__partial0").to_pylist()) == [1, 3]


def test_an_aggregators_error_names_it_and_the_tuple():
    steps = [AggStep("broken", Broken(), Fields("word"), Fields("n"))]
    partials = tail(steps, [], [pa.int64()]).start()
    with pytest.raises(OperatorError, match=r"broken\.init failed on tuple .*'a'.*KeyError"):
        feed(partials, word=["a"])


def test_a_python_stage_with_a_tail_emits_the_partials_and_counts_the_partial_stage():
    class Accumulator:
        def __init__(self):
            self.value = {}

        def add(self, counters):
            for key, value in counters.items():
                self.value[key] = self.value.get(key, 0) + value

    metrics = Accumulator()
    steps = [PythonStep("each(Split)", Split(), Fields("sentence"), Fields("word"))]
    sentences = [pa.RecordBatch.from_pydict({"sentence": ["a b a", "c"]}),
                 pa.RecordBatch.from_pydict({"sentence": ["a"]})]
    out = list(run_stage(steps, ["word"], {"word": pa.string()}, 7, iter(sentences), metrics=metrics,
                         tail=tail([count_step()], ["word"], [pa.string(), pa.int64()])))
    assert len(out) == 1
    assert sorted(map(tuple, (r.values() for r in out[0].to_pylist()))) == [("a", 3), ("b", 1), ("c", 1)]
    counters = metrics.value
    assert counters[("stage", "python", "each(Split)", "rows_out")] == 5
    assert counters[("stage", "aggregate", StageName("agg", "partial"), "rows_in")] == 5
    assert counters[("stage", "aggregate", StageName("agg", "partial"), "rows_out")] == 3


def test_the_clock_counts_nothing_for_a_partition_without_tuples():
    clock = StageClock()
    tail([count_step()], ["word"], [pa.string(), pa.int64()]).start().count(clock)
    assert clock.counters[("stage", "aggregate", StageName("agg", "partial"), "rows_in")] == 0


def test_docstring_examples_run():
    failures, attempted = doctest.testmod(partial_combine, optionflags=doctest.ELLIPSIS)
    assert attempted and not failures
