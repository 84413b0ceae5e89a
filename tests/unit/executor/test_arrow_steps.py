"""Arrow-batch operations in a Python stage and its fused partial aggregation: run_stage over
Arrow batches, without Spark."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from trident_spark import ArrowCombinerAggregator, ArrowFilter, ArrowFunction, FailedException, Fields
from trident_spark.builtin import Count, Equals, FilterNull, Split, Sum
from trident_spark.errors import OperatorError
from trident_spark.executor.aggregate_stage import AggStep
from trident_spark.executor.metrics import StageName
from trident_spark.executor.partial_combine import PartialCombine
from trident_spark.executor.python_stage import PythonStep, run_stage
from trident_spark.object_values import decode_column, encode_column
from trident_spark.operation import BaseFunction


class ArrowSplit(ArrowFunction):
    def execute_arrow(self, batch):
        lists = pc.split_pattern(batch.column(0), " ")
        return pc.list_parent_indices(lists), [pc.list_flatten(lists)]


class Length(ArrowFunction):
    def execute_arrow(self, batch):
        return None, [pc.utf8_length(batch.column(0))]


class Short(ArrowFilter):
    def keep_arrow(self, batch):
        return pc.less(pc.utf8_length(batch.column(0)), 4)


class Upper(BaseFunction):
    def execute(self, tuple, collector):
        collector.emit([tuple[0].upper()])


class Letters(ArrowCombinerAggregator):
    arrow_combine = "sum"

    def __init__(self):
        self.batches = 0

    def init_arrow(self, batch):
        self.batches += 1
        return pc.utf8_length(batch.column(0)).cast(pa.int64())

    def combine(self, a, b):
        return a + b

    def zero(self):
        return 0


def step(label, operation, inputs, outputs=()):
    return PythonStep(label, operation, Fields(*inputs), Fields(*outputs))


def lines(values, offsets=None):
    return pa.record_batch(
        {
            "value": pa.array(values, pa.string()),
            "offset": offsets if offsets is not None else list(range(len(values))),
        }
    )


def untyped_lines(values):
    return pa.record_batch({"value": encode_column(values), "offset": list(range(len(values)))})


def run(steps, output, batches, types, untyped=(frozenset(), frozenset()), tail=None):
    return [
        row
        for b in run_stage(steps, output, types, 7, iter(batches), untyped=untyped, tail=tail)
        for row in b.to_pylist()
    ]


SPLIT = step("each(ArrowSplit)", ArrowSplit(), ["value"], ["word"])


def test_an_arrow_function_appends_fields_and_passes_the_inputs_through():
    out = run(
        [SPLIT], ["offset", "value", "word"], [lines(["the cat", "a"], [10, 20])], {"word": pa.string()}
    )
    assert out == [
        {"offset": 10, "value": "the cat", "word": "the"},
        {"offset": 10, "value": "the cat", "word": "cat"},
        {"offset": 20, "value": "a", "word": "a"},
    ]


def test_mixed_chains_of_arrow_and_per_tuple_steps():
    steps = [
        SPLIT,
        step("filter(Short)", Short(), ["word"]),
        step("each(Upper)", Upper(), ["word"], ["up"]),
        step("each(Length)", Length(), ["up"], ["n"]),
        step("filter(Short2)", Short(), ["up"]),
    ]
    out = run(
        steps,
        ["offset", "word", "up", "n"],
        [lines(["the cat", "a bigger dog"]), lines(["ox"], [5])],
        {"word": pa.string(), "up": pa.string(), "n": pa.int32()},
    )
    assert out == [
        {"offset": 0, "word": "the", "up": "THE", "n": 3},
        {"offset": 0, "word": "cat", "up": "CAT", "n": 3},
        {"offset": 1, "word": "a", "up": "A", "n": 1},
        {"offset": 1, "word": "dog", "up": "DOG", "n": 3},
        {"offset": 5, "word": "ox", "up": "OX", "n": 2},
    ]


def test_a_filter_dropping_every_tuple_yields_no_batch_and_a_null_drops():
    out = run([step("filter(Short)", Short(), ["value"])], ["value"], [lines(["tiger", None, "ox"])], {})
    assert out == [{"value": "ox"}]
    assert run([step("filter(Short)", Short(), ["value"])], ["value"], [lines(["tiger"])], {}) == []


def test_untyped_fields_reach_the_operation_as_their_one_arrow_type_and_leave_tagged():
    untyped = (frozenset({"value"}), frozenset({"word", "value"}))
    batches = run_stage(
        [SPLIT],
        ["value", "word"],
        {"word": pa.binary()},
        7,
        iter([untyped_lines(["the cat", "a"])]),
        untyped=untyped,
    )
    (batch,) = list(batches)
    assert decode_column(batch.column("word")) == ["the", "cat", "a"]
    assert decode_column(batch.column("value")) == ["the cat", "the cat", "a"]


def test_an_untyped_field_of_mixed_types_is_an_error_naming_it():
    with pytest.raises(OperatorError) as raised:
        run(
            [SPLIT],
            ["word"],
            [untyped_lines(["the cat", 3])],
            {"word": pa.binary()},
            untyped=(frozenset({"value"}), frozenset({"word"})),
        )
    assert str(raised.value) == (
        "each(ArrowSplit): field 'value': its values mix types (int, str), which no one Arrow type holds; "
        "an Arrow-batch operation needs one Arrow type per field. Declare the field's type where it is made "
        "(e.g. ['value:string']), or use a per-tuple operation"
    )


def test_ints_and_floats_of_an_untyped_field_are_not_made_one_arrow_type():
    class Pass(ArrowFunction):
        def execute_arrow(self, batch):
            return None, [batch.column(0)]

    with pytest.raises(OperatorError, match=r"field 'value': its values mix types \(float, int\)"):
        run([step("each(Pass)", Pass(), ["value"], ["v"])], ["v"], [untyped_lines([1, 2.5])],
            {"v": pa.binary()}, untyped=(frozenset({"value"}), frozenset({"v"})))
    # a built-in goes tuple by tuple instead, and the values keep their types
    tail = partial_tail([(Count(), [])], ["value"], [pa.binary(), pa.int64()], typed=True,
                        untyped=frozenset({"value"}))
    rows = run_stage([step("filter(FilterNull)", FilterNull(), ["value"])], ["value"], {}, 7,
                     iter([untyped_lines([1, 2.5, 1])]), untyped=(frozenset({"value"}), frozenset({"value"})),
                     tail=tail)
    out = [(decode_column(pa.array([r["value"]], pa.binary()))[0], r["__partial0"]) for b in rows
           for r in b.to_pylist()]
    assert [(v, type(v), n) for v, n in sorted(out)] == [(1, int, 2), (2.5, float, 1)]


def test_a_built_in_on_an_untyped_field_of_mixed_types_goes_tuple_by_tuple():
    untyped = (frozenset({"value"}), frozenset({"value"}))
    out = run_stage(
        [step("each(Equals)", Equals(), ["value", "value"])],
        ["value"],
        {},
        7,
        iter([untyped_lines(["a", 1, [2]])]),
        untyped=untyped,
    )
    assert decode_column(next(out).column("value")) == ["a", 1, [2]]


def test_emitted_columns_are_cast_to_the_declared_type_or_fail_as_per_tuple_values_do():
    out = run([step("each(Length)", Length(), ["value"], ["n"])], ["n"], [lines(["abc"])], {"n": pa.int64()})
    assert out == [{"n": 3}]  # int32 from utf8_length, widened
    with pytest.raises(OperatorError) as raised:
        run([step("each(Length)", Length(), ["value"], ["n"])], ["n"], [lines(["abc"])], {"n": pa.string()})
    assert str(raised.value).startswith(
        "each(Length): field 'n': emitted 3 (int), which does not fit its declared type string"
    )


def test_what_the_operation_returns_is_checked_naming_it():
    class TwoColumns(ArrowFunction):
        def execute_arrow(self, batch):
            return None, [batch.column(0), batch.column(0)]

    with pytest.raises(OperatorError) as raised:
        run(
            [step("each(TwoColumns)", TwoColumns(), ["value"], ["a"])],
            ["a"],
            [lines(["x"])],
            {"a": pa.string()},
        )
    assert str(raised.value) == (
        "each(TwoColumns): execute_arrow gave 2 column(s) for the 1 declared field(s) "
        "['a']; return one array per declared field, in order"
    )


def test_a_user_exception_names_the_operation_and_the_batch():
    class Broken(ArrowFilter):
        def keep_arrow(self, batch):
            raise KeyError("nope")

    with pytest.raises(OperatorError) as raised:
        run([step("filter(Broken)", Broken(), ["value"])], ["value"], [lines(["a b", "c"])], {})
    assert str(raised.value) == (
        "filter(Broken) failed on a batch of 2 tuples (first: {'value': 'a b'}): KeyError: 'nope'"
    )


def test_failed_exception_passes_unchanged():
    class Replay(ArrowFunction):
        def execute_arrow(self, batch):
            raise FailedException("store down")

    with pytest.raises(FailedException, match="store down"):
        run([step("each(Replay)", Replay(), ["value"], ["a"])], ["a"], [lines(["x"])], {"a": pa.string()})


def test_a_function_of_no_input_fields_sees_one_row_per_tuple():
    class Numbered(ArrowFunction):
        def execute_arrow(self, batch):
            return None, [pa.array(range(batch.num_rows), pa.int64())]

    out = run(
        [step("each(Numbered)", Numbered(), [], ["i"])],
        ["value", "i"],
        [lines(["a", "b"])],
        {"i": pa.int64()},
    )
    assert out == [{"value": "a", "i": 0}, {"value": "b", "i": 1}]


# --- the partial aggregation fused at the end of the stage ----------------------------------
def partial_tail(aggregators, group, types, typed=False, untyped=frozenset()):
    steps = [
        AggStep(f"agg{i}", agg, Fields(*inputs), Fields(f"out{i}"))
        for i, (agg, inputs) in enumerate(aggregators)
    ]
    names = [*group, *(f"__partial{i}" for i in range(len(steps)))]
    return PartialCombine(
        StageName("agg", "partial"),
        steps,
        group,
        names,
        dict(zip(names, types, strict=True)),
        typed,
        untyped_out=untyped,
    )


def partials(rows):
    import pickle

    return sorted((row["word"], *(pickle.loads(v) for k, v in row.items() if k != "word")) for row in rows)


def test_arrow_combiners_group_a_batch_with_pyarrow_across_batches():
    letters = Letters()
    tail = partial_tail(
        [(Count(), []), (letters, ["word"])], ["word"], [pa.string(), pa.binary(), pa.binary()]
    )
    out = run(
        [SPLIT],
        ["word"],
        [lines(["the cat the", "cat"]), lines(["the dog"])],
        {"word": pa.string()},
        tail=tail,
    )
    assert partials(out) == [("cat", 2, 6), ("dog", 1, 3), ("the", 3, 9)]
    assert letters.batches == 2  # once per batch, not per tuple


def test_arrow_combiners_ungrouped_and_typed():
    tail = partial_tail([(Sum(), ["n"])], [], [pa.int64()], typed=True)
    out = list(
        run_stage(
            [step("each(Length)", Length(), ["value"], ["n"])],
            ["n"],
            {"n": pa.int64()},
            7,
            iter([lines(["abc", "de"]), lines(["f"])]),
            tail=tail,
        )
    )
    assert [b.to_pylist() for b in out] == [[{"__partial0": 6}]]


def test_arrow_combiners_on_untyped_group_fields_give_what_typed_ones_give():
    typed = partial_tail([(Count(), [])], ["word"], [pa.string(), pa.int64()], typed=True)
    untyped = partial_tail(
        [(Count(), [])], ["word"], [pa.binary(), pa.int64()], typed=True, untyped=frozenset({"word"})
    )
    split = step("each(Split)", Split(), ["value"], ["word"])
    sentences = ["the cat the", " cat\tdog ", None]
    by_typed = run([split], ["word"], [lines(sentences)], {"word": pa.string()}, tail=typed)
    by_untyped = run_stage(
        [split],
        ["word"],
        {"word": pa.binary()},
        7,
        iter([untyped_lines(sentences)]),
        untyped=(frozenset({"value"}), frozenset({"word"})),
        tail=untyped,
    )
    rows = [r for b in by_untyped for r in b.to_pylist()]
    decoded = sorted((decode_column(pa.array([r["word"]], pa.binary()))[0], r["__partial0"]) for r in rows)
    assert (
        decoded
        == sorted((r["word"], r["__partial0"]) for r in by_typed)
        == [("cat", 2), ("dog", 1), ("the", 2)]
    )


def test_group_values_arrow_cannot_group_go_tuple_by_tuple():
    class Pairs(ArrowFunction):
        def execute_arrow(self, batch):
            return None, [pc.split_pattern(batch.column(0), " ")]

    tail = partial_tail([(Count(), [])], ["word"], [pa.binary(), pa.binary()], untyped=frozenset({"word"}))
    rows = run_stage(
        [step("each(Pairs)", Pairs(), ["value"], ["word"])],
        ["word"],
        {"word": pa.binary()},
        7,
        iter([lines(["a b", "a b", "c"])]),
        untyped=(frozenset(), frozenset({"word"})),
        tail=tail,
    )
    import pickle

    out = sorted(
        (decode_column(pa.array([r["word"]], pa.binary()))[0], pickle.loads(r["__partial0"]))
        for b in rows
        for r in b.to_pylist()
    )
    assert out == [(["a", "b"], 2), (["c"], 1)]


def test_an_arrow_combine_that_names_no_hash_aggregation_is_an_error():
    class Wrong(Letters):
        arrow_combine = "summ"

    tail = partial_tail([(Wrong(), ["word"])], ["word"], [pa.string(), pa.binary()])
    with pytest.raises(OperatorError) as raised:
        run([SPLIT], ["word"], [lines(["a"])], {"word": pa.string()}, tail=tail)
    assert str(raised.value) == (
        "agg0: arrow_combine 'summ' is not a pyarrow hash aggregation; name one that "
        "combines as combine() does, e.g. 'sum', 'min', 'max', 'product', 'any', 'all'"
    )


def test_filter_null_and_equals_in_a_stage_keep_what_they_keep_per_tuple():
    batch = pa.record_batch({"a": pa.array(["x", None, "y"]), "b": pa.array(["x", None, "z"])})
    kept = run([step("filter(Equals)", Equals(), ["a", "b"])], ["a"], [batch], {})
    assert kept == [{"a": "x"}, {"a": None}]
    kept = run([step("filter(FilterNull)", FilterNull(), ["a", "b"])], ["a"], [batch], {})
    assert kept == [{"a": "x"}, {"a": "y"}]
