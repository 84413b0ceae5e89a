"""The one caller of user operation code: operators over value lists, and the report of a failing call.

Every stage (the Arrow stages, the window task, the DRPC driver path) hands its tuples here:
:func:`each_values` (:func:`each_columns`), :func:`keep_indices`, :func:`consume` and
:func:`map_values` run a Function, Filter, Consumer or map over a partition's tuples in one
loop (over :class:`TupleColumns`, with one tuple view rebound from tuple to tuple);
:class:`RunningAggregate` runs the aggregator protocols (Aggregator, CombinerAggregator,
ReducerAggregator) over one group; :func:`query_state` runs a QueryFunction. What comes out
is checked against the declared fields (:func:`declared_values`), and a failing user call is
reported one way (:func:`user_failure`): ``"<who> failed[ <where>]: <Type>: <message>"``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any, overload

import pyarrow as pa

from trident_spark.arrow_operation import function_output, init_output, mask_output
from trident_spark.errors import FailedException, OperatorError, SpoutError, TopologyError, TridentSparkError
from trident_spark.fields import Fields, TridentTuple
from trident_spark.operation import (
    Aggregator,
    ColumnCollector,
    CombinerAggregator,
    OneColumnCollector,
    ReportedErrors,
    TridentCollector,
)
from trident_spark.state.errors import StateError

#: Characters of a tuple an error message shows.
MAX_TUPLE_CHARS = 300

#: What passes a user call as it is, by where the call is made. An operator's call lets only a
#: ``FailedException`` through (the batch is replayed); an aggregator's also our own errors; a
#: state operation's the state's and the spout's own errors; a sink's every error of ours.
OPERATOR_PASSES: tuple[type[BaseException], ...] = (FailedException,)
AGGREGATOR_PASSES: tuple[type[BaseException], ...] = (FailedException, OperatorError)
STATE_PASSES: tuple[type[BaseException], ...] = (FailedException, StateError, TopologyError, SpoutError)
SINK_PASSES: tuple[type[BaseException], ...] = (FailedException, TridentSparkError)


def user_failure(who: str, exc: BaseException, where: str = "") -> OperatorError:
    """The report of a failing user call: ``"<who> failed[ <where>]: <Type>: <message>"``.

    ``who`` names the operation (``"each(Split)"``, ``"count.init"``), ``where`` says on what
    (``"on tuple {...}"``, ``"in batchRetrieve"``, ``"for batch 3"``). Raise it ``from exc``.

    Examples
    --------
    >>> str(user_failure("each(Split)", ValueError("no good"), "on tuple {'line': 'a b'}"))
    "each(Split) failed on tuple {'line': 'a b'}: ValueError: no good"
    >>> str(user_failure("foreachBatch(save)", KeyError("bucket"), "for batch 3"))
    "foreachBatch(save) failed for batch 3: KeyError: 'bucket'"
    """
    return OperatorError(f"{who} failed{' ' + where if where else ''}: {type(exc).__name__}: {exc}")


def on_tuple(t: Any, *, marked: bool = False) -> str:
    """``"on tuple <repr>"``, the repr cut at :data:`MAX_TUPLE_CHARS` (``marked``: the cut says so).

    Examples
    --------
    >>> on_tuple(TridentTuple(["cat"], Fields("word")))
    "on tuple {'word': 'cat'}"
    >>> on_tuple("x" * 400, marked=True).endswith("...(truncated)")
    True
    """
    shown = repr(t)
    if len(shown) > MAX_TUPLE_CHARS:
        shown = shown[:MAX_TUPLE_CHARS] + ("...(truncated)" if marked else "")
    return f"on tuple {shown}"


def call(who: str, fn: Callable[..., Any], *args: Any, where: str = "",
         passes: tuple[type[BaseException], ...] = OPERATOR_PASSES) -> Any:
    """``fn(*args)`` once; an error not in ``passes`` is reported as :func:`user_failure`.

    For calls made once per group, partition or batch; the per-tuple loops below make their
    calls themselves.

    Examples
    --------
    >>> call("partitionPersist(Save)", lambda: 1 / 0, where="in updateState")
    Traceback (most recent call last):
      ...
    trident_spark.errors.OperatorError: partitionPersist(Save) failed in updateState: ZeroDivisionError: ...
    """
    try:
        return fn(*args)
    except passes:
        raise
    except Exception as exc:
        raise user_failure(who, exc, where) from exc


# --- the emitted width ---------------------------------------------------------------------
def declared_values(label: str, values: Sequence[Any], fields: Sequence[str]) -> Sequence[Any]:
    """An emitted tuple's values for the declared ``fields``: more values than fields keep the
    first ones, the rest unaddressable and gone (Trident's tuple view indexes only the declared
    fields: no accessor, ``toString`` or downstream operation sees the extra values); fewer is
    an error naming the operation.

    Examples
    --------
    >>> declared_values("stateQuery(TupleCollectionGet)", ["cat", 3], ["word"])
    ['cat']
    >>> declared_values("each(Split)", [], ["word"])
    Traceback (most recent call last):
      ...
    trident_spark.errors.OperatorError: each(Split): emitted 0 values [] but declared 1 fields ['word']
    """
    if values is None or len(values) < len(fields):
        count = 0 if values is None else len(values)
        raise OperatorError(f"{label}: emitted {count} values {values!r:.100} but declared "
                            f"{len(fields)} fields {list(fields)}")
    return values if len(values) == len(fields) else list(values[:len(fields)])


def declared_rows(label: str, emitted: list[Any], fields: Sequence[str]) -> list[Any]:
    """Every emitted tuple of ``emitted`` through :func:`declared_values` (as given when all fit).

    Examples
    --------
    >>> declared_rows("each(Pair)", [[1, 2, 3], [4, 5]], ["a", "b"])
    [[1, 2], [4, 5]]
    """
    width = len(fields)
    if any(values is None or len(values) != width for values in emitted):
        return [list(declared_values(label, values, fields)) for values in emitted]
    return emitted


def reduced_values(label: str, values: Sequence[Any] | None, output_fields: Sequence[str],
                   group_width: int) -> Sequence[Any]:
    """A multiReduce's emitted tuple, which must fill the output fields after the group values.

    Examples
    --------
    >>> reduced_values("multiReduce(Join)", [1], ["word", "n", "m"], 1)
    Traceback (most recent call last):
      ...
    trident_spark.errors.OperatorError: multiReduce(Join): emitted 1 values [1] but the output fields ...
    """
    width = len(output_fields) - group_width
    if values is None or len(values) != width:
        raise OperatorError(
            f"{label}: emitted {0 if values is None else len(values)} values {values!r:.100} but "
            f"the output fields {list(output_fields)} leave {width} for it"
            + (f" after the {group_width} group value(s)" if group_width else ""))
    return values


# --- the tuple view ------------------------------------------------------------------------
def tuple_views(fields: Fields, columns: Sequence[Sequence[Any]], rows: int) -> list[TridentTuple]:
    """The tuples of ``rows`` rows of field values (``columns``, one per field), as operations see them.

    Examples
    --------
    >>> tuple_views(Fields("word", "n"), [["cat", "dog"], [1, 2]], 2)[1]
    {'word': 'dog', 'n': 2}
    """
    index = {name: i for i, name in enumerate(fields)}
    if not columns:  # each(function, out): Trident hands the function an empty tuple for each tuple
        return [TridentTuple((), fields, index)] * rows
    return [TridentTuple(values, fields, index) for values in zip(*columns, strict=True)]


def row_views(fields: Fields, rows: Iterable[Sequence[Any]]) -> list[TridentTuple]:
    """The tuples of ``rows`` (each a tuple's values, in ``fields`` order), as operations see them.

    Examples
    --------
    >>> row_views(Fields("word", "n"), [["cat", 1], ["dog", 2]])[0]
    {'word': 'cat', 'n': 1}
    """
    index = {name: i for i, name in enumerate(fields)}
    return [TridentTuple(values, fields, index) for values in rows]


class TupleColumns(Sequence[TridentTuple]):
    """A partition's tuples as columns of field values (``columns``, one per field, ``rows``
    long), for the per-tuple loops below.

    Indexed or iterated, it gives the tuples as :func:`tuple_views` does, a view per tuple. The
    loops (:func:`each_columns`, :func:`each_values`, :func:`keep_indices`, :func:`consume`,
    :func:`map_values`) instead rebind one view to each tuple's values in turn: building a view
    per tuple costs more than most operations. A Trident tuple is immutable and an operation may
    keep it (store it, emit it as a value, hand it to a thread), so the loop looks, after each
    call, whether anything but itself still refers to the view (its reference count); if so, that
    view is left as it is, with its tuple's values, and the next tuple gets a new one.

    Examples
    --------
    >>> tuples = TupleColumns(Fields("word", "n"), [["cat", "dog"], [1, 2]], 2)
    >>> len(tuples), tuples[1], list(tuples)[0]
    (2, {'word': 'dog', 'n': 2}, {'word': 'cat', 'n': 1})
    >>> kept = []
    >>> consume("peek(keep)", kept.append, tuples)
    >>> kept
    [{'word': 'cat', 'n': 1}, {'word': 'dog', 'n': 2}]
    """

    __slots__ = ("columns", "fields", "positions", "rows")

    def __init__(self, fields: Fields, columns: Sequence[Sequence[Any]], rows: int) -> None:
        if len(columns) not in (0, len(fields)) or any(len(column) != rows for column in columns):
            raise ValueError(f"TupleColumns: {len(columns)} columns of {[len(c) for c in columns]} values "
                             f"for the {len(fields)} fields {list(fields)} of {rows} tuples")
        self.fields = fields
        self.columns = columns
        self.rows = rows
        self.positions = {name: i for i, name in enumerate(fields)}

    def values(self) -> Iterator[tuple[Any, ...]]:
        """Each tuple's values, in order (the empty tuple for each when there are no fields)."""
        if not self.columns:  # each(function, out): Trident hands the function an empty tuple for each
            return repeat((), self.rows)
        return zip(*self.columns, strict=False)  # as long as each other: checked when made

    def view(self) -> TridentTuple:
        """A new view of these fields, for a loop to rebind."""
        return TridentTuple((), self.fields, self.positions)

    def __len__(self) -> int:
        return self.rows

    @overload
    def __getitem__(self, i: int) -> TridentTuple: ...
    @overload
    def __getitem__(self, i: slice) -> list[TridentTuple]: ...
    def __getitem__(self, i: int | slice) -> TridentTuple | list[TridentTuple]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self.rows))]
        if not -self.rows <= i < self.rows:
            raise IndexError(f"tuple {i} of {self.rows}")
        return TridentTuple(tuple(column[i] for column in self.columns), self.fields, self.positions)

    def __iter__(self) -> Iterator[TridentTuple]:
        return iter(tuple_views(self.fields, self.columns, self.rows))

    def __repr__(self) -> str:
        return f"TupleColumns({list(self.fields)}, {self.rows} tuples)"


# --- each / filter / peek / map over a partition's tuples ------------------------------------
# Each loop walks a TupleColumns with one view rebound to each tuple's values (``t._values``),
# kept while ``sys.getrefcount`` shows only the loop refers to it, or a list of views as given.
def each_columns(label: str, execute: Callable[[TridentTuple, TridentCollector], Any],
                 tuples: Iterable[TridentTuple], fields: Sequence[str],
                 errors: ReportedErrors | None = None) -> tuple[list[int], list[list[Any]]]:
    """A Function's ``execute`` over ``tuples``: (the input position of each emitted tuple, each
    of ``fields``' emitted values), what :func:`each_values` gives, by field.

    Examples
    --------
    >>> pair = lambda t, collector: [collector.emit([w, len(w)]) for w in t[0].split()]
    >>> each_columns("each(pair)", pair, TupleColumns(Fields("line"), [["a bb", "c"]], 2), ["w", "n"])
    ([0, 0, 1], [['a', 'bb', 'c'], [1, 2, 1]])
    """
    width = len(fields)
    if not width:  # a Function without output fields: each emit passes its input tuple on
        rows = TridentCollector(errors)
        return _each_parents(label, execute, tuples, rows, rows.emitted, 1), []
    collector = OneColumnCollector(errors) if width == 1 else ColumnCollector(width, errors)
    parents = _each_parents(label, execute, tuples, collector, collector.kept, width)
    if collector.short is not None:
        declared_values(label, collector.short, fields)  # fewer values than fields: the error
    kept = collector.kept
    return parents, [kept] if width == 1 else [kept[j::width] for j in range(width)]


def each_values(label: str, execute: Callable[[TridentTuple, TridentCollector], Any],
                tuples: Iterable[TridentTuple], fields: Sequence[str],
                errors: ReportedErrors | None = None) -> tuple[list[int], list[Any]]:
    """A Function's ``execute`` over ``tuples``: (the input position of each emitted tuple, the
    emitted values for ``fields``).

    Examples
    --------
    >>> split = lambda t, collector: [collector.emit([w]) for w in t[0].split()]
    >>> each_values("each(split)", split, tuple_views(Fields("line"), [["a b", "c"]], 2), ["word"])
    ([0, 0, 1], [['a'], ['b'], ['c']])
    """
    collector = TridentCollector(errors)
    parents = _each_parents(label, execute, tuples, collector, collector.emitted, 1)
    return parents, declared_rows(label, collector.emitted, fields)


def _each_parents(label: str, execute: Callable[[TridentTuple, TridentCollector], Any],
                  tuples: Iterable[TridentTuple], collector: TridentCollector, kept: list[Any],
                  width: int) -> list[int]:
    """``execute(t, collector)`` for each tuple: the input position of each emitted tuple, read
    from what ``kept`` gained (``width`` items per emitted tuple)."""
    parents: list[int] = []
    add = parents.extend
    before = 0
    t: Any = None
    try:
        if isinstance(tuples, TupleColumns):
            getrefcount = sys.getrefcount
            t = tuples.view()
            alone = getrefcount(t)
            for i, values in enumerate(tuples.values()):
                t._values = values
                execute(t, collector)
                after = len(kept)
                if after != before:
                    add([i] * ((after - before) // width))
                    before = after
                if getrefcount(t) != alone:  # the Function kept the tuple: it keeps its values
                    t = tuples.view()
        else:
            for i, t in enumerate(tuples):
                execute(t, collector)
                after = len(kept)
                if after != before:
                    add([i] * ((after - before) // width))
                    before = after
    except OPERATOR_PASSES:
        raise
    except Exception as exc:
        raise user_failure(label, exc, on_tuple(t, marked=True)) from exc
    return parents


def keep_indices(label: str, is_keep: Callable[[TridentTuple], Any],
                 tuples: Iterable[TridentTuple]) -> list[int]:
    """The positions of the tuples a Filter's ``isKeep`` keeps.

    Examples
    --------
    >>> keep_indices("filter(odd)", lambda t: t[0] % 2, tuple_views(Fields("n"), [[1, 2, 3]], 3))
    [0, 2]
    """
    kept: list[int] = []
    keep = kept.append
    t: Any = None
    try:
        if isinstance(tuples, TupleColumns):
            getrefcount = sys.getrefcount
            t = tuples.view()
            alone = getrefcount(t)
            for i, values in enumerate(tuples.values()):
                t._values = values
                if is_keep(t):
                    keep(i)
                if getrefcount(t) != alone:
                    t = tuples.view()
        else:
            for i, t in enumerate(tuples):
                if is_keep(t):
                    keep(i)
    except OPERATOR_PASSES:
        raise
    except Exception as exc:
        raise user_failure(label, exc, on_tuple(t, marked=True)) from exc
    return kept


def consume(label: str, accept: Callable[[TridentTuple], Any], tuples: Iterable[TridentTuple]) -> None:
    """A Consumer's ``accept`` (``peek``) for every tuple.

    Examples
    --------
    >>> seen = []
    >>> consume("peek(seen)", seen.append, tuple_views(Fields("n"), [[1, 2]], 2))
    >>> seen
    [{'n': 1}, {'n': 2}]
    """
    t: Any = None
    try:
        if isinstance(tuples, TupleColumns):
            getrefcount = sys.getrefcount
            t = tuples.view()
            alone = getrefcount(t)
            for values in tuples.values():
                t._values = values
                accept(t)
                if getrefcount(t) != alone:
                    t = tuples.view()
        else:
            for t in tuples:
                accept(t)
    except OPERATOR_PASSES:
        raise
    except Exception as exc:
        raise user_failure(label, exc, on_tuple(t, marked=True)) from exc


def map_values(label: str, execute: Callable[[TridentTuple], Any], tuples: Iterable[TridentTuple],
               fields: Sequence[str], flat: bool = False) -> tuple[list[int], list[Any]]:
    """``map`` (one tuple per input) or ``flatMap`` (any number): (the input position of each
    output tuple, its values for ``fields``); a single value stands for a one-field tuple.

    Examples
    --------
    >>> words = tuple_views(Fields("line"), [["a b", "c"]], 2)
    >>> map_values("flatMap(split)", lambda t: t[0].split(), words, ["word"], flat=True)
    ([0, 0, 1], [['a'], ['b'], ['c']])
    """
    parents, emitted = _map_each(label, execute, tuples, flat)
    return parents, _map_rows(label, emitted, fields)


def map_columns(label: str, execute: Callable[[TridentTuple], Any], tuples: Iterable[TridentTuple],
                fields: Sequence[str], flat: bool = False) -> tuple[list[int], list[list[Any]]]:
    """:func:`map_values`, each of ``fields``' values as one list.

    Examples
    --------
    >>> words = TupleColumns(Fields("line"), [["a b", "c"]], 2)
    >>> map_columns("map(length)", lambda t: len(t[0]), words, ["n"])
    ([0, 1], [[3, 1]])
    >>> pairs = lambda t: [(w, len(w)) for w in t[0].split()]
    >>> map_columns("flatMap(pairs)", pairs, words, ["w", "n"], flat=True)
    ([0, 0, 1], [['a', 'b', 'c'], [1, 1, 1]])
    """
    parents, emitted = _map_each(label, execute, tuples, flat)
    width = len(fields)
    if not emitted:
        return parents, [[] for _ in range(width)]
    kinds = set(map(type, emitted))
    if width == 1 and not any(issubclass(kind, list | tuple) for kind in kinds):  # single values
        return parents, [emitted]
    if width and all(issubclass(kind, list | tuple) for kind in kinds) and set(map(len, emitted)) == {width}:
        return parents, [list(map(itemgetter(j), emitted)) for j in range(width)]
    rows = _map_rows(label, emitted, fields)  # another shape somewhere: the rule, tuple by tuple
    return parents, [[values[j] for values in rows] for j in range(width)]


def _map_rows(label: str, emitted: list[Any], fields: Sequence[str]) -> list[Any]:
    """What a map returned, each as its values for ``fields`` (a single value a one-field tuple)."""
    emitted = [values if isinstance(values, list | tuple) else [values] for values in emitted]
    return declared_rows(label, emitted, fields)


def _map_each(label: str, execute: Callable[[TridentTuple], Any], tuples: Iterable[TridentTuple],
              flat: bool) -> tuple[list[int], list[Any]]:
    """``execute(t)`` for each tuple: (the input position of each result, the results), a
    flatMap's results one by one."""
    parents: list[int] = []
    emitted: list[Any] = []
    parent, out = parents.append, emitted.append
    t: Any = None
    try:
        if isinstance(tuples, TupleColumns):
            getrefcount = sys.getrefcount
            t = tuples.view()
            alone = getrefcount(t)
            for i, values in enumerate(tuples.values()):
                t._values = values
                if flat:
                    for row in execute(t):
                        parent(i)
                        out(row)
                else:
                    out(execute(t))
                if getrefcount(t) != alone:
                    t = tuples.view()
            if not flat:
                parents = list(range(len(emitted)))
        elif flat:
            for i, t in enumerate(tuples):
                for row in execute(t):
                    parent(i)
                    out(row)
        else:
            for i, t in enumerate(tuples):
                parent(i)
                out(execute(t))
    except OPERATOR_PASSES:
        raise
    except Exception as exc:
        raise user_failure(label, exc, on_tuple(t, marked=True)) from exc
    return parents, emitted


def grouping_choices(label: str, grouping: Callable[[TridentTuple, int], Any], tuples: Iterable[TridentTuple],
                     partitions: int) -> list[Any]:
    """What a user grouping (``partition(grouping)``) returns for each tuple, called
    ``grouping(tuple, partitions)``.

    Examples
    --------
    >>> grouping_choices("partition(g)", lambda t, n: t[0] % n, tuple_views(Fields("id"), [[1, 2]], 2), 2)
    [1, 0]
    """
    chosen: list[Any] = []
    t = None
    try:
        for t in tuples:
            chosen.append(grouping(t, partitions))
    except OPERATOR_PASSES:
        raise
    except Exception as exc:
        raise user_failure(f"{label}: the grouping", exc, on_tuple(t)) from exc
    return chosen


# --- the aggregator protocols ----------------------------------------------------------------
@dataclass
class AggStep:
    """One aggregator of an aggregation, as the executor needs it.

    Examples
    --------
    >>> from trident_spark.builtin import Count
    >>> AggStep("count", Count(), Fields(), Fields("n")).label
    'count'
    """

    label: str
    aggregator: Any
    input_fields: Fields
    function_fields: Fields
    errors: ReportedErrors | None = None  # what it reports (collector.reportError) in the running task


def aggregator_call(label: str, t: TridentTuple | None, fn: Any, *args: Any) -> Any:
    """``fn(*args)``, one of an aggregator's (or reducer's) methods; a failure names the
    aggregator (``label``), the method and the tuple (``t``, None for a call on no tuple).

    Examples
    --------
    >>> from trident_spark.builtin import Count
    >>> aggregator_call("count", None, Count().combine, 2, 3)
    5
    """
    try:
        return fn(*args)
    except AGGREGATOR_PASSES:
        raise
    except Exception as exc:
        who = f"{label}.{getattr(fn, '__name__', 'call')}"
        raise user_failure(who, exc, "" if t is None else f"on tuple {repr(t)[:MAX_TUPLE_CHARS]}") from exc


def combine_all(steps: Sequence[AggStep], left: list[Any], right: list[Any]) -> list[Any]:
    """Each aggregator's ``combine`` of its left and right value.

    Examples
    --------
    >>> from trident_spark.builtin import Count
    >>> combine_all([AggStep("count", Count(), Fields(), Fields("n"))], [2], [3])
    [5]
    """
    return [aggregator_call(s.label, None, s.aggregator.combine, a, b)
            for s, a, b in zip(steps, left, right, strict=True)]


def combiner_inits(steps: Sequence[AggStep], tuples: Sequence[Sequence[TridentTuple]], row: int) -> list[Any]:
    """Each Combiner's ``init`` of its tuple ``row`` (``tuples``: each step's tuples).

    Examples
    --------
    >>> from trident_spark.builtin import Count
    >>> count = AggStep("count", Count(), Fields(), Fields("n"))
    >>> combiner_inits([count], [tuple_views(Fields(), [], 2)], 1)
    [1]
    """
    return [aggregator_call(s.label, ts[row], s.aggregator.init, ts[row])
            for s, ts in zip(steps, tuples, strict=True)]


def zeros(steps: Sequence[AggStep]) -> list[Any]:
    """Each Combiner's ``zero()``.

    Examples
    --------
    >>> from trident_spark.builtin import Count
    >>> zeros([AggStep("count", Count(), Fields(), Fields("n"))])
    [0]
    """
    return [aggregator_call(s.label, None, s.aggregator.zero) for s in steps]


class RunningAggregate:
    """One aggregator's state for one group, with what it emitted so far: ``add`` each tuple,
    then ``finish`` (Aggregator: init/aggregate/complete; CombinerAggregator: zero/init/combine;
    ReducerAggregator: init/reduce).

    Examples
    --------
    >>> from trident_spark.builtin import Count
    >>> running = RunningAggregate(AggStep("count", Count(), Fields(), Fields("n")), txid=0)
    >>> for t in tuple_views(Fields(), [], 3):
    ...     running.add(t)
    >>> running.finish()
    [[3]]
    """

    __slots__ = ("collector", "state", "step")

    def __init__(self, step: AggStep, txid: int) -> None:
        self.step = step
        self.collector = TridentCollector(step.errors)
        agg = step.aggregator
        if isinstance(agg, Aggregator):
            self.state = aggregator_call(step.label, None, agg.init, txid, self.collector)
        elif isinstance(agg, CombinerAggregator):
            self.state = aggregator_call(step.label, None, agg.zero)
        else:
            self.state = aggregator_call(step.label, None, agg.init)

    def add(self, t: TridentTuple) -> None:
        """Take one tuple of the group."""
        agg = self.step.aggregator
        if isinstance(agg, Aggregator):
            new = aggregator_call(self.step.label, t, agg.aggregate, self.state, t, self.collector)
            if new is not None:  # Python aggregators may return the new state instead of mutating it
                self.state = new
        elif isinstance(agg, CombinerAggregator):
            self.state = aggregator_call(self.step.label, t, agg.combine, self.state,
                                         aggregator_call(self.step.label, t, agg.init, t))
        else:
            self.state = aggregator_call(self.step.label, t, agg.reduce, self.state, t)

    def add_all(self, tuples: Iterable[TridentTuple]) -> None:
        """Take every tuple of ``tuples``, in order."""
        for t in tuples:
            self.add(t)

    def add_value(self, value: Any) -> None:
        """A Combiner's already-combined value for several tuples (the Arrow fast path)."""
        self.state = aggregator_call(self.step.label, None, self.step.aggregator.combine, self.state, value)

    def finish(self) -> list[list[Any]]:
        """What the aggregator emitted for the group, each tuple's values for its fields."""
        agg = self.step.aggregator
        if isinstance(agg, Aggregator):
            aggregator_call(self.step.label, None, agg.complete, self.state, self.collector)
        else:
            self.collector.emit([self.state])
        # fewer values than fields: an error; more: the extra values go, as in Trident
        return declared_rows(self.step.label, self.collector.reset(), self.step.function_fields)


# --- query_state ---------------------------------------------------------------------------
def query_state(label: str, function: Any, view: Any, tuples: list[TridentTuple], fields: Sequence[str],
                errors: ReportedErrors | None = None) -> tuple[list[int], list[Any]]:
    """A QueryFunction over one partition's ``tuples``: ``batchRetrieve`` once on the state
    ``view``, then ``execute`` per tuple with its result: (the input position of each emitted
    tuple, its values for ``fields``).

    Examples
    --------
    >>> class Length:
    ...     def batchRetrieve(self, state, tuples):
    ...         return [len(t[0]) for t in tuples]
    ...     def execute(self, t, result, collector):
    ...         collector.emit([result])
    >>> query_state("stateQuery(Length)", Length(), None, tuple_views(Fields("w"), [["ab", "c"]], 2), ["n"])
    ([0, 1], [[2], [1]])
    >>> query_state("stateQuery(Length)", Length(), None, [], ["n"])
    ([], [])
    """
    results = list(call(label, function.batchRetrieve, view, tuples, where="in batchRetrieve",
                        passes=STATE_PASSES))
    if len(results) != len(tuples):
        raise OperatorError(f"{label}: batchRetrieve returned {len(results)} results for "
                            f"{len(tuples)} tuples; return one result per tuple, in order")
    collector = TridentCollector(errors)
    emitted = collector.emitted
    execute = function.execute
    parents: list[int] = []
    before = 0
    i, t = 0, None
    try:
        for i, (t, result) in enumerate(zip(tuples, results, strict=True)):
            execute(t, result, collector)
            after = len(emitted)
            if after != before:
                parents.extend([i] * (after - before))
                before = after
    except STATE_PASSES:
        raise
    except Exception as exc:
        raise user_failure(label, exc, f"in execute on tuple {t!r:.200}") from exc
    # Fewer values than declared fields: an error; more (TupleCollectionGet's key values and value
    # under fewer fields): the extra values go, as Trident's tuple view never shows them.
    return parents, declared_rows(label, emitted, fields)


# --- Arrow-batch operations (trident_spark.arrow_operation) ------------------------------------
def on_batch(batch: pa.RecordBatch) -> str:
    """``"on a batch of N tuples (first: <row>)"``, the row cut at :data:`MAX_TUPLE_CHARS`.

    Examples
    --------
    >>> import pyarrow as pa
    >>> on_batch(pa.record_batch({"line": ["a b", "c"]}))
    "on a batch of 2 tuples (first: {'line': 'a b'})"
    """
    first = repr(batch.slice(0, 1).to_pylist()[0]) if batch.num_rows else "none"
    if len(first) > MAX_TUPLE_CHARS:
        first = first[:MAX_TUPLE_CHARS] + "...(truncated)"
    return f"on a batch of {batch.num_rows} tuples (first: {first})"


def each_arrow(label: str, execute_arrow: Callable[[pa.RecordBatch], Any], batch: pa.RecordBatch,
               fields: Sequence[str]) -> tuple[pa.Array | None, list[pa.Array]]:
    """An ArrowFunction's ``execute_arrow`` over a whole batch: (each output row's input row, or
    None for one per input row in order; one array per declared field in ``fields``), checked.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import pyarrow.compute as pc
    >>> def split(batch):
    ...     lists = pc.split_pattern(batch.column(0), " ")
    ...     return pc.list_parent_indices(lists), [pc.list_flatten(lists)]
    >>> lines = pa.record_batch({"line": ["a b", "c"]})
    >>> parents, (words,) = each_arrow("each(Split)", split, lines, ["word"])
    >>> parents.to_pylist(), words.to_pylist()
    ([0, 0, 1], ['a', 'b', 'c'])
    """
    try:
        result = execute_arrow(batch)
    except OPERATOR_PASSES:
        raise
    except Exception as exc:
        raise user_failure(label, exc, on_batch(batch)) from exc
    return function_output(label, result, batch.num_rows, fields)


def keep_arrow(label: str, keep: Callable[[pa.RecordBatch], Any], batch: pa.RecordBatch) -> pa.Array:
    """An ArrowFilter's ``keep_arrow`` over a whole batch: one boolean per tuple (null: false).

    Examples
    --------
    >>> import pyarrow as pa
    >>> import pyarrow.compute as pc
    >>> words = pa.record_batch({"word": ["cat", "tiger", None]})
    >>> keep_arrow("filter(Short)", lambda b: pc.less(pc.utf8_length(b.column(0)), 4), words).to_pylist()
    [True, False, False]
    """
    try:
        result = keep(batch)
    except OPERATOR_PASSES:
        raise
    except Exception as exc:
        raise user_failure(label, exc, on_batch(batch)) from exc
    return mask_output(label, result, batch.num_rows)


def init_arrow(label: str, init: Callable[[pa.RecordBatch], Any], batch: pa.RecordBatch) -> pa.Array | None:
    """An ArrowCombinerAggregator's ``init_arrow`` over a whole batch: one init value per tuple
    (None: a built-in declines this batch, whose tuples then go through ``init`` one by one).

    Examples
    --------
    >>> import pyarrow as pa
    >>> ones = init_arrow("count", lambda b: pa.array([1] * b.num_rows), pa.record_batch({"w": ["a", "b"]}))
    >>> ones.to_pylist()
    [1, 1]
    """
    try:
        result = init(batch)
    except AGGREGATOR_PASSES:
        raise
    except Exception as exc:
        raise user_failure(f"{label}.init_arrow", exc, on_batch(batch)) from exc
    return None if result is None else init_output(label, result, batch.num_rows)


__all__ = ["AGGREGATOR_PASSES", "MAX_TUPLE_CHARS", "OPERATOR_PASSES", "SINK_PASSES", "STATE_PASSES",
           "AggStep", "RunningAggregate", "TupleColumns", "aggregator_call", "call", "combine_all",
           "combiner_inits", "consume", "declared_rows", "declared_values", "each_arrow", "each_columns",
           "each_values", "grouping_choices", "init_arrow", "keep_arrow", "keep_indices", "map_columns",
           "map_values", "on_batch", "on_tuple", "query_state", "reduced_values", "row_views", "tuple_views",
           "user_failure", "zeros"]
