"""The kernel: every operator over value lists, the aggregator protocols, query_state, the width
check and the one failure report, each with the exact text a stage shows."""

from __future__ import annotations

from typing import Any

import pytest

from trident_spark.builtin import Count, Sum
from trident_spark.errors import FailedException, OperatorError, TopologyError
from trident_spark.executor.kernel import (
    SINK_PASSES,
    STATE_PASSES,
    AggStep,
    RunningAggregate,
    aggregator_call,
    call,
    combine_all,
    combiner_inits,
    consume,
    declared_rows,
    declared_values,
    each_values,
    grouping_choices,
    keep_indices,
    map_values,
    on_tuple,
    query_state,
    reduced_values,
    row_views,
    tuple_views,
    user_failure,
    zeros,
)
from trident_spark.fields import Fields, TridentTuple
from trident_spark.operation import Aggregator, ReducerAggregator, ReportedErrors, TridentCollector


def lines(*values: str) -> list[TridentTuple]:
    return tuple_views(Fields("line"), [list(values)], len(values))


def test_the_tuple_views_of_columns_and_of_rows_are_the_same_tuples() -> None:
    by_columns = tuple_views(Fields("w", "n"), [["a", "b"], [1, 2]], 2)
    by_rows = row_views(Fields("w", "n"), [["a", 1], ["b", 2]])
    assert [t.getValues() for t in by_columns] == [t.getValues() for t in by_rows] == [["a", 1], ["b", 2]]
    assert [t.getValueByField("n") for t in by_rows] == [1, 2]
    assert [len(t) for t in tuple_views(Fields(), [], 3)] == [0, 0, 0]  # each(function, out): empty tuples


# --- each / filter / peek / map ----------------------------------------------------------------------
def test_each_returns_each_emit_s_parent_and_its_values() -> None:
    def split(t: TridentTuple, collector: TridentCollector) -> None:
        for word in t[0].split():
            collector.emit([word, len(word)])

    assert each_values("each(split)", split, lines("a bb", "", "ccc"), ["w", "n"]) == (
        [0, 0, 2], [["a", 1], ["bb", 2], ["ccc", 3]])


def test_each_drops_extra_values_and_refuses_too_few() -> None:
    def emit(t: TridentTuple, collector: TridentCollector) -> None:
        collector.emit(t[0])

    ok = tuple_views(Fields("v"), [[[1, 2, 3], [4, 5]]], 2)
    assert each_values("each(emit)", emit, ok, ["a", "b"]) == ([0, 1], [[1, 2], [4, 5]])
    short = tuple_views(Fields("v"), [[[1, 2], [4]]], 2)
    with pytest.raises(OperatorError) as info:
        each_values("each(emit)", emit, short, ["a", "b"])
    assert str(info.value) == "each(emit): emitted 1 values [4] but declared 2 fields ['a', 'b']"


def test_a_failing_call_names_the_operation_and_the_tuple_cut_and_marked() -> None:
    def boom(t: TridentTuple, *_: Any) -> bool:
        if t[0] == "bad":
            raise ValueError("no good")
        return True

    for run in (lambda ts: each_values("each(boom)", boom, ts, ["x"]),
                lambda ts: keep_indices("each(boom)", boom, ts),
                lambda ts: consume("each(boom)", boom, ts),
                lambda ts: map_values("each(boom)", boom, ts, ["x"])):
        with pytest.raises(OperatorError) as info:
            run(lines("fine", "bad"))
        assert str(info.value) == "each(boom) failed on tuple {'line': 'bad'}: ValueError: no good"
        assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(OperatorError) as info:
        keep_indices("filter(boom)", lambda t: 1 / 0, lines("x" * 400))
    assert str(info.value) == ("filter(boom) failed on tuple {'line': '" + "x" * 290 + "...(truncated): "
                               "ZeroDivisionError: division by zero")


def test_a_failed_exception_and_an_operator_error_of_a_user_pass_as_the_operators_see_them() -> None:
    def fails(t: TridentTuple) -> None:
        raise FailedException("replay")

    with pytest.raises(FailedException, match=r"^replay$"):
        consume("peek(fails)", fails, lines("a"))

    def nested(t: TridentTuple) -> None:
        raise OperatorError("inner")

    with pytest.raises(OperatorError) as info:  # the operators' report wraps even our own error (as before)
        consume("peek(nested)", nested, lines("a"))
    assert str(info.value) == "peek(nested) failed on tuple {'line': 'a'}: OperatorError: inner"


def test_filter_keeps_positions_and_peek_sees_every_tuple() -> None:
    assert keep_indices("filter(long)", lambda t: len(t[0]) > 1, lines("a", "bb", "ccc")) == [1, 2]
    seen: list[str] = []
    consume("peek(seen)", lambda t: seen.append(t[0]), lines("a", "b"))
    assert seen == ["a", "b"]


def test_map_takes_a_single_value_for_one_field_and_flat_map_any_number() -> None:
    assert map_values("map(upper)", lambda t: t[0].upper(), lines("a", "b"), ["u"]) == (
        [0, 1], [["A"], ["B"]])
    assert map_values("map(pair)", lambda t: (t[0], 1), lines("a"), ["w", "n"]) == ([0], [("a", 1)])
    assert map_values("flatMap(split)", lambda t: [[w] for w in t[0].split()], lines("a b", "", "c"), ["w"],
                      flat=True) == ([0, 0, 2], [["a"], ["b"], ["c"]])
    with pytest.raises(OperatorError) as info:
        map_values("map(one)", lambda t: [1], lines("a"), ["one", "two"])
    assert str(info.value) == "map(one): emitted 1 values [1] but declared 2 fields ['one', 'two']"
    assert map_values("map(three)", lambda t: [1, 2, 3], lines("a"), ["one"]) == ([0], [[1]])


# --- the width -----------------------------------------------------------------------------------------
def test_the_width_check_keeps_a_fitting_list_as_it_is() -> None:
    emitted = [[1, 2], [3, 4]]
    assert declared_rows("each(f)", emitted, ["a", "b"]) is emitted
    assert declared_values("each(f)", [1, 2, 3], ["a"]) == [1]
    with pytest.raises(OperatorError) as info:
        declared_values("each(f)", None, ["a"])  # type: ignore[arg-type]
    assert str(info.value) == "each(f): emitted 0 values None but declared 1 fields ['a']"


def test_a_multi_reduce_emit_must_fill_the_fields_after_the_group() -> None:
    assert reduced_values("multiReduce(J)", [1, 2], ["k", "a", "b"], 1) == [1, 2]
    with pytest.raises(OperatorError) as info:
        reduced_values("multiReduce(J)", [1, 2, 3], ["k", "a", "b"], 1)
    assert str(info.value) == ("multiReduce(J): emitted 3 values [1, 2, 3] but the output fields "
                               "['k', 'a', 'b'] leave 2 for it after the 1 group value(s)")
    with pytest.raises(OperatorError) as info:
        reduced_values("multiReduce(J)", None, ["a"], 0)
    assert str(info.value) == (
        "multiReduce(J): emitted 0 values None but the output fields ['a'] leave 1 for it")


# --- the aggregator protocols --------------------------------------------------------------------------
class Longest(Aggregator[str]):
    """Returns its new state (a Python aggregator may), emits it with its length."""

    def init(self, batch_id: Any, collector: TridentCollector) -> str:
        return ""

    def aggregate(self, state: str, tuple: TridentTuple,  # type: ignore[override]
                  collector: TridentCollector) -> str:
        return str(tuple[0]) if len(tuple[0]) > len(state) else state

    def complete(self, state: str, collector: TridentCollector) -> None:
        collector.emit([state, len(state), "extra"])


class Joined(ReducerAggregator[str]):
    def init(self) -> str:
        return ""

    def reduce(self, curr: str, tuple: TridentTuple) -> str:
        return curr + str(tuple[0])


@pytest.mark.parametrize(("aggregator", "fields", "expected"), [
    (Longest(), Fields("longest", "n"), [["ccc", 3]]),
    (Count(), Fields("n"), [[3]]),
    (Joined(), Fields("all"), [["abccc"]]),
])
def test_each_aggregator_kind_runs_over_a_group(aggregator: Any, fields: Fields, expected: list[Any]) -> None:
    running = RunningAggregate(AggStep("agg", aggregator, Fields("line"), fields), txid=4)
    running.add_all(lines("a", "b", "ccc"))
    assert running.finish() == expected


def test_an_aggregator_s_failure_names_the_method_and_the_tuple() -> None:
    step = AggStep("sum", Sum(), Fields("n"), Fields("s"))
    running = RunningAggregate(step, txid=0)
    with pytest.raises(OperatorError) as info:
        running.add(tuple_views(Fields("n"), [["x"]], 1)[0])
    assert str(info.value) == ("sum.init failed on tuple {'n': 'x'}: WrongTypeError: Sum() adds numbers, "
                               "but field 'n' holds str 'x'; convert it first (e.g. map it to int)")
    def combine(left: Any, right: Any) -> Any:
        return left + right

    with pytest.raises(OperatorError) as info:
        aggregator_call("sum", None, combine, 1, "x")
    assert str(info.value) == ("sum.combine failed: TypeError: unsupported operand type(s) for +: 'int' "
                               "and 'str'")
    with pytest.raises(OperatorError, match=r"^inner$"):  # an aggregator's call passes our own errors
        aggregator_call("agg", None, lambda: (_ for _ in ()).throw(OperatorError("inner")))


def test_combiners_fold_partials() -> None:
    steps = [AggStep("count", Count(), Fields(), Fields("n")),
             AggStep("sum", Sum(), Fields("v"), Fields("s"))]
    assert zeros(steps) == [0, 0]
    tuples = [tuple_views(Fields(), [], 2), tuple_views(Fields("v"), [[5, 7]], 2)]
    assert combiner_inits(steps, tuples, 1) == [1, 7]
    assert combine_all(steps, [2, 10], [1, 7]) == [3, 17]


# --- query_state ---------------------------------------------------------------------------------------
class Lookup:
    def __init__(self, results: list[Any]) -> None:
        self.results = results

    def batchRetrieve(self, state: Any, tuples: list[TridentTuple]) -> list[Any]:
        return self.results

    def execute(self, tuple: TridentTuple, result: Any, collector: TridentCollector) -> None:
        for value in result:
            collector.emit([tuple[0], value])


def test_query_state_emits_per_tuple_with_its_result() -> None:
    assert query_state("stateQuery(L)", Lookup([[1], [], [2, 3]]), None, lines("a", "b", "c"), ["w"]) == (
        [0, 2, 2], [["a"], ["c"], ["c"]])


def test_query_state_wants_one_result_per_tuple() -> None:
    with pytest.raises(OperatorError) as info:
        query_state("stateQuery(MapGet)", Lookup([1]), None, lines("a", "b"), ["v"])
    assert str(info.value) == ("stateQuery(MapGet): batchRetrieve returned 1 results for 2 tuples; "
                               "return one result per tuple, in order")


def test_query_state_reports_where_it_failed_and_passes_the_state_s_errors() -> None:
    with pytest.raises(OperatorError) as info:
        query_state("stateQuery(L)", Lookup([5]), None, lines("a"), ["v"])
    assert str(info.value) == ("stateQuery(L) failed in execute on tuple {'line': 'a'}: TypeError: "
                               "'int' object is not iterable")

    class Broken(Lookup):
        def batchRetrieve(self, state: Any, tuples: list[TridentTuple]) -> list[Any]:
            raise TopologyError("the state's own")

    with pytest.raises(TopologyError, match=r"^the state's own$"):
        query_state("stateQuery(B)", Broken([]), None, lines("a"), ["v"])
    errors = ReportedErrors("stateQuery(R)")

    class Reports(Lookup):
        def execute(self, tuple: TridentTuple, result: Any, collector: TridentCollector) -> None:
            collector.reportError(ValueError("odd"))

    assert query_state("stateQuery(R)", Reports([1]), None, lines("a"), ["v"], errors) == ([], [])
    assert errors.count == 1


# --- the report and the single calls -------------------------------------------------------------------
def test_one_report_gives_each_site_s_text() -> None:
    exc = KeyError("nope")
    assert str(user_failure("partitionPersist(B)", exc, "in updateState")) == (
        "partitionPersist(B) failed in updateState: KeyError: 'nope'")
    assert str(user_failure("foreachBatch(b)", exc, "for batch 0")) == (
        "foreachBatch(b) failed for batch 0: KeyError: 'nope'")
    assert str(user_failure("count.init", exc)) == "count.init failed: KeyError: 'nope'"
    assert on_tuple(lines("a")[0]) == "on tuple {'line': 'a'}"
    assert on_tuple("x" * 301) == "on tuple '" + "x" * 299


def test_call_lets_through_what_its_site_lets_through() -> None:
    def raises(exc: BaseException) -> None:
        raise exc

    with pytest.raises(TopologyError):
        call("s", raises, TopologyError("t"), passes=STATE_PASSES)
    with pytest.raises(OperatorError, match=r"^s failed in x: TopologyError: t$"):
        call("s", raises, TopologyError("t"), where="in x")
    with pytest.raises(OperatorError, match=r"^ours$"):
        call("sink", raises, OperatorError("ours"), passes=SINK_PASSES)
    assert call("s", lambda a, b: a + b, 1, 2) == 3


def test_a_grouping_s_failure_names_the_grouping_and_the_tuple() -> None:
    assert grouping_choices("partition(g)", lambda t, n: [0, n - 1], lines("a"), 3) == [[0, 2]]
    with pytest.raises(OperatorError) as info:
        grouping_choices("partition(g)", lambda t, n: 1 / 0, lines("a"), 3)
    assert str(info.value) == ("partition(g): the grouping failed on tuple {'line': 'a'}: ZeroDivisionError: "
                               "division by zero")
