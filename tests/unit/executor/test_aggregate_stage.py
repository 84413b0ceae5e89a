"""The executor side of Python aggregations (full, partial, final) over Arrow batches, without Spark."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

from trident_spark import FailedException, Fields
from trident_spark.errors import OperatorError
from trident_spark.executor.aggregate_stage import AggLayout, AggStep, run_aggregate
from trident_spark.operation import Aggregator, CombinerAggregator, ReducerAggregator


def batch(**columns):
    return pa.RecordBatch.from_pydict(columns)


WORDS = batch(word=["a", "b", "a", None, "a"], n=[1, 2, 3, 4, 5])


class PyCount(CombinerAggregator):
    def init(self, tuple):
        return 1

    def combine(self, a, b):
        return a + b

    def zero(self):
        return 0


class FastSum(CombinerAggregator):
    """A Combiner with an Arrow fast path: arrow_reduce sums a whole batch."""

    def init(self, tuple):
        return tuple[0]

    def combine(self, a, b):
        return a + b

    def zero(self):
        return 0

    def arrow_reduce(self, arrays, num_rows):
        return sum(arrays[0].to_pylist())


class Concat(ReducerAggregator):
    def init(self):
        return ""

    def reduce(self, curr, tuple):
        return curr + str(tuple[0])


class Twice(Aggregator):
    """Emits two tuples at complete: chained with another aggregator, the cross product."""

    def init(self, batch_id, collector):
        return {"n": 0, "txid": batch_id}

    def aggregate(self, state, tuple, collector):
        state["n"] += 1

    def complete(self, state, collector):
        collector.emit([state["n"], state["txid"]])
        collector.emit([-state["n"], state["txid"]])


class Immutable(Aggregator):
    """A Python aggregator may return the new state instead of mutating it."""

    def init(self, batch_id, collector):
        return 0

    def aggregate(self, state, tuple, collector):
        return state + tuple[0]

    def complete(self, state, collector):
        collector.emit([state])


def step(agg, inputs, outputs):
    return AggStep(type(agg).__name__, agg, Fields(*inputs), Fields(*outputs))


def layout(mode, group, outputs, types, single_emit=None):
    return AggLayout(mode, group, [*group, *outputs], types,
                     single_emit=(not group and mode != "partial") if single_emit is None else single_emit)


def run(steps, lay, batches, txid=7):
    out = list(run_aggregate(steps, lay, txid, {}, 1, iter(batches)))
    return [row for b in out for row in b.to_pylist()]


def test_full_grouped_each_aggregator_kind_side_by_side():
    steps = [step(PyCount(), [], ["count"]), step(Concat(), ["n"], ["ns"]), step(Immutable(), ["n"], ["sum"])]
    types = {"word": pa.string(), "count": pa.int64(), "ns": pa.string(), "sum": pa.int64()}
    rows = run(steps, layout("full", ["word"], ["count", "ns", "sum"], types), [WORDS])
    assert rows == [
        {"word": "a", "count": 3, "ns": "135", "sum": 9},
        {"word": "b", "count": 1, "ns": "2", "sum": 2},
        {"word": None, "count": 1, "ns": "4", "sum": 4},  # a null group value is a group, as in Trident
    ]


def test_full_chained_emits_are_a_cross_product_and_see_the_txid():
    steps = [step(PyCount(), [], ["count"]), step(Twice(), ["n"], ["m", "txid"])]
    types = {"count": pa.int64(), "m": pa.int64(), "txid": pa.int64()}
    rows = run(steps, layout("full", [], ["count", "m", "txid"], types), [WORDS], txid=42)
    assert rows == [{"count": 5, "m": 5, "txid": 42}, {"count": 5, "m": -5, "txid": 42}]


def test_full_ungrouped_emits_once_even_without_tuples():
    steps = [step(PyCount(), [], ["count"]), step(Twice(), ["n"], ["m", "txid"])]
    types = {"count": pa.int64(), "m": pa.int64(), "txid": pa.int64()}
    rows = run(steps, layout("full", [], ["count", "m", "txid"], types), [], txid=3)
    assert rows == [{"count": 0, "m": 0, "txid": 3}, {"count": 0, "m": 0, "txid": 3}]


def test_full_grouped_without_tuples_emits_nothing():
    types = {"word": pa.string(), "count": pa.int64()}
    assert run([step(PyCount(), [], ["count"])], layout("full", ["word"], ["count"], types), []) == []


def test_partial_then_final_equals_full():
    steps = [step(PyCount(), [], ["count"]), step(FastSum(), ["n"], ["sum"])]
    partial_types = {"word": pa.string(), "__partial0": pa.binary(), "__partial1": pa.binary()}
    half1, half2 = WORDS.slice(0, 2), WORDS.slice(2)
    partials = []
    for part in (half1, half2):  # two partitions, partially aggregated each
        partial_layout = AggLayout("partial", ["word"], list(partial_types), partial_types, False)
        out = list(run_aggregate(steps, partial_layout, 7, {}, 2, iter([part])))
        partials.extend(out)
    assert sum(b.num_rows for b in partials) == 4  # a, b | a, None, a -> 2 + 2 partial rows
    final_types = {"word": pa.string(), "count": pa.int64(), "sum": pa.int64()}
    rows = run(steps, layout("final", ["word"], ["count", "sum"], final_types), partials)
    assert sorted(rows, key=lambda r: (r["word"] is None, r["word"] or "")) == [
        {"word": "a", "count": 3, "sum": 9}, {"word": "b", "count": 1, "sum": 2},
        {"word": None, "count": 1, "sum": 4}]


def test_partial_ungrouped_uses_the_arrow_fast_path():
    agg = FastSum()
    calls = []
    agg.init = lambda tuple: calls.append(tuple) or tuple[0]
    types = {"__partial0": pa.binary()}
    partial_layout = AggLayout("partial", [], ["__partial0"], types, False)
    out = list(run_aggregate([step(agg, ["n"], ["sum"])], partial_layout, 0, {}, 1, iter([WORDS, WORDS])))
    assert [pickle.loads(v) for v in out[0].column("__partial0").to_pylist()] == [30]
    assert calls == []  # no per-tuple init


def test_final_ungrouped_without_partials_emits_zero_once():
    rows = run([step(PyCount(), [], ["count"])], layout("final", [], ["count"], {"count": pa.int64()}), [])
    assert rows == [{"count": 0}]


def test_emitting_too_few_values_names_the_aggregator_and_extra_values_are_dropped():
    expected = r"Twice: emitted 2 values \[5, 7\] but declared 3 fields \['m', 'x', 'y'\]"
    with pytest.raises(OperatorError, match=expected):
        run([step(Twice(), ["n"], ["m", "x", "y"])],
            layout("full", [], ["m", "x", "y"], {"m": pa.int64(), "x": pa.int64(), "y": pa.int64()}), [WORDS])
    # Trident keeps values beyond the declared fields where nothing addresses them: only 'm' is seen.
    assert run([step(Twice(), ["n"], ["m"])], layout("full", [], ["m"], {"m": pa.int64()}), [WORDS]) == [
        {"m": 5}, {"m": -5}]


def test_an_error_in_user_code_names_the_aggregator_the_method_and_the_tuple():
    class Broken(CombinerAggregator):
        def init(self, tuple):
            return 1 / 0

        def combine(self, a, b):
            return a + b

        def zero(self):
            return 0

    with pytest.raises(OperatorError, match=r"Broken.init failed on tuple \{'n': 1\}: ZeroDivisionError"):
        run([step(Broken(), ["n"], ["x"])], layout("full", [], ["x"], {"x": pa.int64()}), [WORDS])


def test_failed_exception_passes_through_for_a_replay():
    class Flaky(Aggregator):
        def init(self, batch_id, collector):
            raise FailedException("store down")

    with pytest.raises(FailedException, match="store down"):
        run([step(Flaky(), ["n"], ["x"])], layout("full", [], ["x"], {"x": pa.int64()}), [WORDS])


def test_prepare_and_cleanup_see_the_context():
    seen = []

    class Lifecycle(PyCount):
        def prepare(self, conf, context):
            seen.append(("prepare", conf, context.num_partitions, context.txid, context.operation_name))

        def cleanup(self):
            seen.append("cleanup")

    list(run_aggregate([step(Lifecycle(), [], ["c"])], layout("full", [], ["c"], {"c": pa.int64()}), 9,
                       {"k": "v"}, 4, iter([WORDS])))
    assert seen == [("prepare", {"k": "v"}, 4, 9, "Lifecycle"), "cleanup"]


def test_unhashable_group_values_still_group():
    data = batch(tags=[["x", "y"], ["x", "y"], ["z"]])
    types = {"tags": pa.list_(pa.string()), "count": pa.int64()}
    rows = run([step(PyCount(), [], ["count"])], layout("full", ["tags"], ["count"], types), [data])
    assert rows == [{"tags": ["x", "y"], "count": 2}, {"tags": ["z"], "count": 1}]
