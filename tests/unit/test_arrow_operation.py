"""Arrow-batch operations as pure logic: their per-tuple forms, the checks on what they return,
and the built-ins' Arrow forms against their per-tuple forms (no Spark)."""

from __future__ import annotations

import doctest

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import trident_spark
from trident_spark import (
    ArrowCombinerAggregator,
    ArrowFilter,
    ArrowFunction,
    Fields,
    TridentTuple,
    arrow_operation,
)
from trident_spark.arrow_operation import (
    combines_in_arrow,
    function_output,
    init_output,
    mask_output,
    takes_arrow_batches,
    tuple_batch,
)
from trident_spark.builtin import Count, Equals, FilterNull, Max, Negate, Split, Sum
from trident_spark.errors import OperatorError, WrongTypeError
from trident_spark.operation import BaseFilter, TridentCollector


class ArrowSplit(ArrowFunction):
    def execute_arrow(self, batch):
        lists = pc.split_pattern(batch.column(0), " ")
        return pc.list_parent_indices(lists), [pc.list_flatten(lists)]


class WordAndLength(ArrowFunction):
    def execute_arrow(self, batch):
        words = batch.column("word")
        return None, pa.record_batch({"upper": pc.utf8_upper(words), "n": pc.utf8_length(words)})


class Short(ArrowFilter):
    def keep_arrow(self, batch):
        return pc.less(pc.utf8_length(batch.column(0)), 4)


class Letters(ArrowCombinerAggregator):
    arrow_combine = "sum"

    def init_arrow(self, batch):
        return pc.utf8_length(batch.column(0)).cast(pa.int64())

    def combine(self, a, b):
        return a + b

    def zero(self):
        return 0


def emitted(function, values, fields):
    out = TridentCollector()
    function.execute(TridentTuple(values, Fields(*fields)), out)
    return out.emitted


def test_the_module_examples_run():
    failures, attempted = doctest.testmod(arrow_operation, optionflags=doctest.ELLIPSIS)
    assert (failures, attempted > 10) == (0, True)


def test_the_names_are_exported_from_the_package():
    assert {"ArrowFunction", "ArrowFilter", "ArrowCombinerAggregator"} <= set(trident_spark.__all__)


def test_the_per_tuple_forms_run_one_row_batches():
    assert emitted(ArrowSplit(), ["the cat sat"], ["line"]) == [["the"], ["cat"], ["sat"]]
    assert emitted(WordAndLength(), ["cat"], ["word"]) == [["CAT", 3]]
    assert [Short().isKeep(TridentTuple([w], Fields("w"))) for w in ("ox", "tiger")] == [True, False]
    assert Letters().init(TridentTuple(["tiger"], Fields("w"))) == 5


def test_a_null_in_a_one_row_batch_keeps_its_declared_type():
    batch = tuple_batch(TridentTuple([None, None], Fields("w:string", "n")))
    assert batch.schema.types == [pa.string(), pa.null()]
    assert Short().isKeep(TridentTuple([None], Fields("w:string"))) is False  # null: dropped


def test_a_function_with_no_output_fields_emits_one_empty_tuple_per_parent():
    class Twice(ArrowFunction):
        def execute_arrow(self, batch):
            return pa.array([0, 0]), []

    assert emitted(Twice(), ["x"], ["w"]) == [[], []]


E = "each(F): execute_arrow"
PARENTS = f"{E}'s parents must be an integer Arrow array (each output row's input row) or None, got"
ONE_VALUE = "give every column one value per output row"


@pytest.mark.parametrize(
    ("result", "rows", "message"),
    [
        (
            [pa.array(["a"])],
            1,
            f"{E} must return a pair (parents, columns), got list; return (None, [array, ...]) for one "
            "output row per input row",
        ),
        ((None, "abc"), 1, f"{E}'s columns must be a list of Arrow arrays or a RecordBatch, got str"),
        (
            (None, [["a"]]),
            1,
            f"{E}'s column 0 is list, not an Arrow array; return pyarrow arrays (pa.array(values) makes one)",
        ),
        (
            (None, [pa.array(["a"]), pa.array([1])]),
            1,
            f"{E} gave 2 column(s) for the 1 declared field(s) ['w']; return one array per declared field, "
            "in order",
        ),
        (
            (None, [pa.array(["a"])]),
            2,
            f"{E} gave a column of 1 rows for field 'w', but 2 output rows (one per input row); {ONE_VALUE}",
        ),
        (
            (pa.array([0, 0, 1]), [pa.array(["a", "b"])]),
            2,
            f"{E} gave a column of 2 rows for field 'w', but 3 output rows (one per parent); {ONE_VALUE}",
        ),
        ((pa.array(["0"]), [pa.array(["a"])]), 1, f"{PARENTS} string"),
        (([0], [pa.array(["a"])]), 1, f"{PARENTS} list"),
        (
            (pa.array([0, None]), [pa.array(["a", "b"])]),
            1,
            f"{E}'s parents hold 1 null(s); give every output row the index of its input row",
        ),
        (
            (pa.array([0, 2]), [pa.array(["a", "b"])]),
            2,
            f"{E}'s parents hold 0..2, outside the batch's rows 0..1; give each output row the index of its "
            "input row",
        ),
    ],
)
def test_what_execute_arrow_returns_is_checked(result, rows, message):
    with pytest.raises(OperatorError) as raised:
        function_output("each(F)", result, rows, ["w"])
    assert str(raised.value) == message


def test_a_good_result_passes_as_given_chunked_arrays_combined():
    given = (pa.chunked_array([[0], [0]]), pa.record_batch({"w": ["a", "b"]}))
    parents, columns = function_output("each(F)", given, 1, ["w"])
    assert parents.to_pylist() == [0, 0] and [c.to_pylist() for c in columns] == [["a", "b"]]


def test_what_keep_arrow_and_init_arrow_return_is_checked():
    with pytest.raises(OperatorError) as raised:
        mask_output("filter(F)", pa.array([1, 0]), 2)
    assert str(raised.value) == (
        "filter(F): keep_arrow must return a pa.BooleanArray (one boolean per tuple), got int64"
    )
    with pytest.raises(OperatorError) as raised:
        mask_output("filter(F)", pa.array([True]), 2)
    assert str(raised.value) == (
        "filter(F): keep_arrow gave a mask of 1 booleans for a batch of 2 tuples; "
        "return one boolean per tuple"
    )
    assert mask_output("filter(F)", pa.array([None, True]), 2).to_pylist() == [False, True]
    with pytest.raises(OperatorError) as raised:
        init_output("agg", pa.array([1, 2, 3]), 2)
    assert str(raised.value) == (
        "agg: init_arrow gave 3 init values for a batch of 2 tuples; return one per tuple"
    )


def test_which_operations_take_arrow_batches():
    assert [
        takes_arrow_batches(op)
        for op in (
            ArrowSplit(),
            Short(),
            Split(),
            Equals(),
            FilterNull(),
            Negate(FilterNull()),
            Negate(Short()),
        )
    ] == [True] * 7
    assert [takes_arrow_batches(op) for op in (BaseFilter(), Negate(lambda t: True), Count())] == [False] * 3
    assert [combines_in_arrow(a) for a in (Count(), Sum(), Letters())] == [True] * 3
    assert [combines_in_arrow(a) for a in (Max("n"), ArrowCombinerAggregator())] == [False] * 2


# --- the built-ins' Arrow forms give what their per-tuple forms give ---------------------------
SENTENCES = ["  the cat\tsat \n", "", "   ", None, "x", "a\u3000b\x1cc\u00a0d", "one"]


def per_tuple_split(split, values):
    out = TridentCollector()
    parents = []
    for i, value in enumerate(values):
        before = len(out.emitted)
        split.execute(TridentTuple([value], Fields("v")), out)
        parents += [i] * (len(out.emitted) - before)
    return parents, [w for (w,) in out.emitted]


@pytest.mark.parametrize("split", [Split(), Split(r"\s*;\s*"), Split(",")])
def test_split_in_arrow_emits_the_words_of_the_per_tuple_form(split):
    values = [*SENTENCES, "a ; b;;c ", "a,,b,"]
    parents, (words,) = split.execute_arrow(pa.record_batch({"v": pa.array(values, pa.string())}))
    assert (parents.to_pylist(), words.to_pylist()) == per_tuple_split(split, values)


def test_split_in_arrow_of_no_text_and_of_numbers():
    parents, (words,) = Split().execute_arrow(pa.record_batch({"v": pa.nulls(2)}))
    assert (parents.to_pylist(), words.to_pylist(), words.type) == ([], [], pa.string())
    with pytest.raises(WrongTypeError) as raised:
        Split().execute_arrow(pa.record_batch({"v": [None, 3]}))
    assert str(raised.value) == "Split() splits text, but field 'v' holds int 3; convert it to str first"


def per_tuple_keep(filter_, columns):
    names = [f"c{i}" for i in range(len(columns))]
    return [filter_.isKeep(TridentTuple(list(row), Fields(*names))) for row in zip(*columns, strict=True)]


NAN = float("nan")


@pytest.mark.parametrize(
    "columns",
    [
        [[1, 2, None, None, 3], [1, 3, None, 4, 3]],
        [[1.0, NAN, NAN, None, 2.5], [1.0, NAN, 1.0, None, 2.5]],
        [["a", "b", None], ["a", "c", None], ["a", "b", None]],
        [[1, 2, 3], [1.0, 2.5, None]],  # two types: value by value (1 == 1.0, as in Python)
        [[[1], [2]], [[1], [3]]],  # lists: no Arrow equality, value by value
        [["a", None]],  # one field: every tuple kept
    ],
)
def test_equals_filternull_negate_in_arrow_keep_what_their_per_tuple_forms_keep(columns):
    batch = pa.record_batch({f"c{i}": pa.array(c) for i, c in enumerate(columns)})
    for filter_ in (Equals(), FilterNull(), Negate(Equals()), Negate(FilterNull())):
        assert filter_.keep_arrow(batch).to_pylist() == per_tuple_keep(filter_, columns), filter_


def test_negate_of_a_per_tuple_filter_has_no_arrow_form():
    with pytest.raises(WrongTypeError) as raised:
        Negate(lambda t: True).keep_arrow(pa.record_batch({"w": ["a"]}))
    assert "the filter it wraps has no keep_arrow; call isKeep per tuple" in str(raised.value)


def test_count_and_sum_init_arrow():
    batch = pa.record_batch({"n": pa.array([3, None, 4], pa.int32())})
    assert Count().init_arrow(batch).to_pylist() == [1, 1, 1]
    assert Sum().init_arrow(batch).to_pylist() == [3, None, 4]
    assert Sum().init_arrow(pa.record_batch({"n": [1.5, 2.0]})).to_pylist() == [1.5, 2.0]
    # Declined (the tuples go through init): text, booleans, a sum that could pass 64 bits
    assert Sum().init_arrow(pa.record_batch({"n": ["a"]})) is None
    assert Sum().init_arrow(pa.record_batch({"n": [True]})) is None
    assert Sum().init_arrow(pa.record_batch({"n": [2**62, 2**62]})) is None


def test_the_driver_path_runs_the_per_tuple_forms_with_the_same_results():
    from trident_spark import TridentTopology
    from trident_spark.graph import ancestors
    from trident_spark.runtime.drpc.driver_stream import DirectStream
    from trident_spark.spout import FeederBatchSpout

    stream = (TridentTopology().newStream("drpc", FeederBatchSpout(["args"]))
              .each(["args"], ArrowSplit(), ["word"]).each(["word"], Short())
              .groupBy(["word"]).aggregate(["word"], Letters(), ["letters"]))
    direct = DirectStream(ancestors([stream.node]), stream.node, {})
    try:
        answer = direct.run(0, [{"args": "the cat ate the big tiger"}])
    finally:
        direct.cleanup()
    assert sorted(answer) == [["ate", 3], ["big", 3], ["cat", 3], ["the", 6]]
