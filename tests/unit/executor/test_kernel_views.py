"""The kernel's lean per-tuple loops: one tuple view rebound from tuple to tuple over TupleColumns
(a tuple an operation keeps keeps its own values), and a Function's values collected by column
(emit copies what it is given, and the width rule is Trident's), each giving exactly what the
loops over a list of views give."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

from trident_spark.errors import OperatorError
from trident_spark.executor.kernel import (
    TupleColumns,
    consume,
    each_columns,
    each_values,
    keep_indices,
    map_columns,
    map_values,
    tuple_views,
)
from trident_spark.executor.python_stage import PythonStep, run_stage
from trident_spark.fields import Fields, TridentTuple
from trident_spark.operation import BaseFunction, TridentCollector

LINES = ["a bb", "", "ccc d", "e"]


def columns(*values: str) -> TupleColumns:
    return TupleColumns(Fields("line"), [list(values)], len(values))


def views(*values: str) -> list[TridentTuple]:
    return tuple_views(Fields("line"), [list(values)], len(values))


# --- TupleColumns ------------------------------------------------------------------------------
def test_tuple_columns_index_and_iterate_as_a_list_of_views_does() -> None:
    tuples = TupleColumns(Fields("w", "n"), [["a", "b", "c"], [1, 2, 3]], 3)
    assert len(tuples) == 3
    assert [t.getValues() for t in tuples] == [["a", 1], ["b", 2], ["c", 3]]
    assert tuples[-1].getValueByField("n") == 3 and tuples[0]["w"] == "a"
    assert [t.getValues() for t in tuples[1:]] == [["b", 2], ["c", 3]]
    assert tuples[0] is not tuples[0]  # each view its own, as a list of views holds
    with pytest.raises(IndexError, match=r"^tuple 3 of 3$"):
        tuples[3]
    empty = TupleColumns(Fields(), [], 2)  # each(function, out): an empty tuple for each tuple
    assert [len(t) for t in empty] == [0, 0] and len(empty[1]) == 0


def test_tuple_columns_refuse_columns_that_do_not_fit_the_fields_or_the_rows() -> None:
    with pytest.raises(ValueError) as info:
        TupleColumns(Fields("w", "n"), [["a", "b"], [1]], 2)
    assert str(info.value) == ("TupleColumns: 2 columns of [2, 1] values for the 2 fields ['w', 'n'] "
                               "of 2 tuples")
    with pytest.raises(ValueError, match=r"^TupleColumns: 1 columns of \[2\] values for the 2 fields"):
        TupleColumns(Fields("w", "n"), [["a", "b"]], 2)


# --- a tuple an operation keeps keeps its values -------------------------------------------------
class KeepsTuples(BaseFunction):
    """Keeps the tuples with a line and emits the line of the last one it kept (Trident's tuples
    are immutable: a kept one never changes)."""

    def __init__(self) -> None:
        self.kept: list[TridentTuple] = []

    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        collector.emit([self.kept[-1].getString(0) if self.kept else None])
        if tuple.getString(0):
            self.kept.append(tuple)


def test_a_function_that_keeps_tuples_sees_each_with_its_own_values() -> None:
    function = KeepsTuples()
    parents, out = each_columns("each(Keeps)", function.execute, columns(*LINES), ["previous"])
    assert parents == [0, 1, 2, 3]
    assert [t.getString(0) for t in function.kept] == ["a bb", "ccc d", "e"]
    assert out == [[None, "a bb", "a bb", "ccc d"]]


def test_every_loop_over_tuple_columns_leaves_kept_tuples_their_values() -> None:
    def keeping(fn: Callable[[TridentTuple], Any]) -> tuple[list[TridentTuple], Callable[..., Any]]:
        kept: list[TridentTuple] = []

        def call(t: TridentTuple, *rest: Any) -> Any:
            if t[0] != "":
                kept.append(t)
            return fn(t)
        return kept, call

    kept, keep = keeping(lambda t: True)
    assert keep_indices("filter(keep)", keep, columns(*LINES)) == [0, 1, 2, 3]
    assert [t[0] for t in kept] == ["a bb", "ccc d", "e"]
    kept, peek = keeping(lambda t: None)
    consume("peek(keep)", peek, columns(*LINES))
    assert [t[0] for t in kept] == ["a bb", "ccc d", "e"]
    kept, upper = keeping(lambda t: t[0].upper())
    assert map_values("map(upper)", upper, columns(*LINES), ["u"]) == (
        [0, 1, 2, 3], [["A BB"], [""], ["CCC D"], ["E"]])
    assert [t[0] for t in kept] == ["a bb", "ccc d", "e"]
    kept, split = keeping(lambda t: ([w] for w in t[0].split()))
    assert map_values("flatMap(split)", split, columns(*LINES), ["w"], flat=True) == (
        [0, 0, 2, 2, 3], [["a"], ["bb"], ["ccc"], ["d"], ["e"]])
    assert [t[0] for t in kept] == ["a bb", "ccc d", "e"]


def test_a_tuple_emitted_as_a_value_or_returned_by_a_map_keeps_its_values() -> None:
    def itself(t: TridentTuple, collector: TridentCollector) -> None:
        collector.emit([t])

    _, out = each_columns("each(itself)", itself, columns("x", "y"), ["t"])
    assert [t.getValues() for t in out[0]] == [["x"], ["y"]]
    _, rows = map_values("map(itself)", lambda t: t, columns("x", "y"), ["t"])
    assert [row[0].getValues() for row in rows] == [["x"], ["y"]]


def test_a_failing_call_over_tuple_columns_names_its_tuple() -> None:
    def boom(t: TridentTuple, *_: Any) -> bool:
        if t[0] == "bad":
            raise ValueError("no good")
        return True

    for run in (lambda ts: each_columns("each(boom)", boom, ts, ["x"]),
                lambda ts: keep_indices("each(boom)", boom, ts),
                lambda ts: consume("each(boom)", boom, ts),
                lambda ts: map_values("each(boom)", boom, ts, ["x"])):
        with pytest.raises(OperatorError) as info:
            run(columns("fine", "bad", "after"))
        assert str(info.value) == "each(boom) failed on tuple {'line': 'bad'}: ValueError: no good"


# --- emit: copies, the width rule, failures -------------------------------------------------------
def both(execute: Callable[[TridentTuple, TridentCollector], Any], fields: list[str],
         *values: str) -> tuple[list[int], list[Any]]:
    """each_values over a list of views, checked against each_columns over TupleColumns."""
    by_rows = each_values("each(f)", execute, views(*values), fields)
    parents, by_columns = each_columns("each(f)", execute, columns(*values), fields)
    assert parents == by_rows[0]
    assert by_columns == [[row[j] for row in by_rows[1]] for j in range(len(fields))]
    return by_rows


def test_emit_copies_a_list_the_function_changes_or_emits_again() -> None:
    def reuse(t: TridentTuple, collector: TridentCollector) -> None:
        buffer = [None]
        for word in t[0].split():
            buffer[0] = word
            collector.emit(buffer)
        buffer.append("after")

    def reuse_pair(t: TridentTuple, collector: TridentCollector) -> None:
        buffer = [None, 0]
        for word in t[0].split():
            buffer[0], buffer[1] = word, len(word)
            collector.emit(buffer)
            buffer.clear()
            buffer.extend([None, 0])

    assert both(reuse, ["w"], *LINES) == ([0, 0, 2, 2, 3], [["a"], ["bb"], ["ccc"], ["d"], ["e"]])
    assert both(reuse_pair, ["w", "n"], "a bb") == ([0, 0], [["a", 1], ["bb", 2]])


def test_emit_takes_any_iterable_as_list_does_and_keeps_the_declared_fields() -> None:
    def shapes(t: TridentTuple, collector: TridentCollector) -> None:
        collector.emit((t[0], 1))                      # a tuple
        collector.emit(iter([t[0], 2, "extra"]))       # an iterator, one value too many
        collector.emit({t[0]: 3, "k": 4})              # a dict: its keys
        collector.emit(t[0] * 2)                       # a string: its characters

    assert both(shapes, ["a", "b"], "xy") == (
        [0, 0, 0, 0], [["xy", 1], ["xy", 2], ["xy", "k"], ["x", "y"]])
    assert both(shapes, ["a"], "xy")[1] == [["xy"], ["xy"], ["xy"], ["x"]]


def test_too_few_values_are_the_same_error_with_every_collector() -> None:
    def short(t: TridentTuple, collector: TridentCollector) -> None:
        collector.emit([t[0], 1])
        collector.emit([t[0]] if t[0] == "b" else [t[0], 2])

    for run in (lambda: each_values("each(short)", short, views("a", "b", "c"), ["w", "n"]),
                lambda: each_columns("each(short)", short, columns("a", "b", "c"), ["w", "n"])):
        with pytest.raises(OperatorError) as info:
            run()
        assert str(info.value) == "each(short): emitted 1 values ['b'] but declared 2 fields ['w', 'n']"

    def nothing(t: TridentTuple, collector: TridentCollector) -> None:
        collector.emit([])

    with pytest.raises(OperatorError) as info:
        each_columns("each(nothing)", nothing, columns("a"), ["w"])
    assert str(info.value) == "each(nothing): emitted 0 values [] but declared 1 fields ['w']"


def test_a_failed_emit_leaves_nothing_and_reports_as_list_would() -> None:
    def broken() -> Iterator[str]:
        yield "half"
        raise RuntimeError("source gone")

    def tries(t: TridentTuple, collector: TridentCollector) -> None:
        try:
            collector.emit(broken())
        except RuntimeError:
            collector.emit([t[0]])

    assert both(tries, ["w"], "a", "b") == ([0, 1], [["a"], ["b"]])

    def emits_none(t: TridentTuple, collector: TridentCollector) -> None:
        collector.emit(None)  # type: ignore[arg-type]

    for run in (lambda: each_values("each(none)", emits_none, views("a"), ["w"]),
                lambda: each_columns("each(none)", emits_none, columns("a"), ["w"])):
        with pytest.raises(OperatorError) as info:
            run()
        assert str(info.value) == ("each(none) failed on tuple {'line': 'a'}: "
                                   "TypeError: 'NoneType' object is not iterable")


def test_a_function_without_output_fields_passes_a_tuple_per_emit() -> None:
    def twice(t: TridentTuple, collector: TridentCollector) -> None:
        if t[0]:
            collector.emit([])
            collector.emit([t[0]])  # a value beyond the (no) fields: dropped

    assert both(twice, [], *LINES) == ([0, 0, 2, 2, 3, 3], [[], [], [], [], [], []])


def test_collector_emitted_shows_what_was_emitted_so_far() -> None:
    seen: list[Any] = []

    def look(t: TridentTuple, collector: TridentCollector) -> None:
        collector.emit([t[0], len(t[0])])
        seen.append(collector.emitted)

    each_columns("each(look)", look, columns("a", "bb"), ["w", "n"])
    assert seen == [[["a", 1]], [["a", 1], ["bb", 2]]]


# --- map by column ---------------------------------------------------------------------------------
class Pair(list):  # type: ignore[type-arg]
    """A list subclass: a map's result is a tuple's values when it is a list or a tuple."""


@pytest.mark.parametrize(("results", "fields"), [
    (["x", 1, None], ["v"]),                      # single values
    ([("x", 1), ["y", 2], Pair(["z", 3])], ["w", "n"]),
    ([("x", 1, "extra"), ["y", 2]], ["w", "n"]),  # more values than fields: the first ones
    ([("x",), "y", ["z"]], ["w"]),                # a one-value tuple and a single value mixed
    ([], ["w", "n"]),
    ([[], []], []),
])
def test_map_columns_give_map_values_by_column(results: list[Any], fields: list[str]) -> None:
    given = iter(results)
    by_rows = map_values("map(f)", lambda t: next(given), views(*["a"] * len(results)), fields)
    given = iter(results)
    parents, by_columns = map_columns("map(f)", lambda t: next(given), columns(*["a"] * len(results)), fields)
    assert parents == by_rows[0] == list(range(len(results)))
    assert by_columns == [[row[j] for row in by_rows[1]] for j in range(len(fields))]


def test_map_columns_refuse_too_few_values_as_map_values_does() -> None:
    for run in (map_values, map_columns):
        with pytest.raises(OperatorError) as info:
            run("map(one)", lambda t: t[0], columns("a", "b"), ["w", "n"])
        assert str(info.value) == "map(one): emitted 1 values ['a'] but declared 2 fields ['w', 'n']"


# --- the stage ---------------------------------------------------------------------------------------
class Previous(BaseFunction):
    """Emits the line of the tuple before, kept across tuples and Arrow batches."""

    def __init__(self) -> None:
        self.last: TridentTuple | None = None

    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        collector.emit([None if self.last is None else self.last.getStringByField("value")])
        self.last = tuple


def test_a_stage_whose_function_keeps_the_last_tuple_across_batches() -> None:
    batches = [pa.RecordBatch.from_pydict({"value": ["a", "b"]}),
               pa.RecordBatch.from_pydict({"value": ["c"]})]
    step = PythonStep("each(Previous)", Previous(), Fields("value"), Fields("previous"))
    out = pa.Table.from_batches(list(run_stage([step], ["value", "previous"], {"previous": pa.string()}, 0,
                                               iter(batches))))
    assert out.to_pylist() == [{"value": "a", "previous": None}, {"value": "b", "previous": "a"},
                               {"value": "c", "previous": "b"}]
