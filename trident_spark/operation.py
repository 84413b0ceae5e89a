"""The interfaces user code implements: Trident's operations, in Python.

Operations are pickled to executors and run there. As in Trident, an instance
lives for its task (one per run, operator and partition): ``prepare(conf,
context)`` once, then every batch on the same instance, ``cleanup()`` when the
run stops (see ``trident_spark.executor.instances``). They must not hold
driver-side objects (SparkSession, open connections made on the driver).

Built-in operations may also offer a Spark SQL form (methods starting with
``spark_``); the planner then runs them as Spark expressions instead of Python.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from trident_spark.fields import Fields, TridentTuple

S = TypeVar("S")
V = TypeVar("V")


class StreamLike(Protocol):
    """What an :class:`Assembly` is handed: a :class:`~trident_spark.stream.Stream` (declared
    here so the operations need not import the builders that take them)."""

    def getOutputFields(self) -> Fields:
        """The stream's fields."""
        ...


if TYPE_CHECKING:  # typing's TypeVar takes a default from Python 3.13; the checker reads it here
    from typing_extensions import TypeVar as DefaultTypeVar

    StreamT = DefaultTypeVar("StreamT", bound=StreamLike, default=Any)
else:
    StreamT = TypeVar("StreamT", bound=StreamLike)

log = logging.getLogger(__name__)

#: Characters of a reported error's message kept for progress (the log has it whole).
MAX_ERROR_CHARS = 500


@dataclass
class OperationContext:
    """Where an operation runs: ``partition_index`` of ``num_partitions``, and the txid.

    ``num_partitions`` is the partition count of the stage the operation runs in. The
    instance keeps the context ``prepare`` was given, and its ``txid`` follows the batch
    being run (a value copied in ``prepare`` is the first batch's).

    Examples
    --------
    >>> context = OperationContext(1, 4, txid=0, operation_name="each(Split)")
    >>> context.getPartitionIndex(), context.numPartitions()
    (1, 4)
    """

    partition_index: int
    num_partitions: int
    txid: int
    operation_name: str = ""

    def getPartitionIndex(self) -> int:
        """Trident's name for ``partition_index``: this task's partition, from 0."""
        return self.partition_index

    def numPartitions(self) -> int:
        """Trident's name for ``num_partitions``: the partitions of the operation's stage."""
        return self.num_partitions


class ReportedErrors:
    """What one operator reported with ``collector.reportError`` in a task: logged and counted.

    Each error is logged (logger ``trident_spark.operation``, with its traceback) naming the
    operator; ``count`` and ``last`` (the last message, secrets redacted) go to the batch's
    progress. The batch goes on, as with Trident's ``reportError``.

    Examples
    --------
    >>> errors = ReportedErrors("each(Parse)")
    >>> errors.report(ValueError("bad line 'x'"))
    >>> errors.count, errors.last
    (1, "ValueError: bad line 'x'")
    """

    def __init__(self, operation_name: str = "") -> None:
        self.operation_name = operation_name
        self.count = 0
        self.last: str | None = None

    def report(self, error: BaseException) -> None:
        from trident_spark.state.redaction import redact_text

        self.count += 1
        message = redact_text(f"{type(error).__name__}: {error}")
        self.last = message if len(message) <= MAX_ERROR_CHARS else message[:MAX_ERROR_CHARS] + "..."
        _visible_logging()
        log.warning("%s reported an error (the batch goes on): %s", self.operation_name or "an operation",
                    message, exc_info=error if error.__traceback__ is not None else None)


def _visible_logging() -> None:
    """Where nothing configured logging (Spark's Python workers), reported errors go to stderr
    (the executor's log) instead of nowhere."""
    if not logging.getLogger().handlers and not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)


class TridentCollector:
    """Receives what an operation emits; one ``emit`` makes one output tuple.

    ``reportError(error)`` logs the error naming the operator and counts it in the batch's
    progress (``BatchProgress.errors_reported``); the batch goes on, as in Trident.

    Examples
    --------
    >>> c = TridentCollector()
    >>> c.emit(["cat"]); c.emit(["dog"])
    >>> c.emitted
    [['cat'], ['dog']]
    >>> c.reportError(ValueError("no number in 'cat'"))
    >>> c.errors.count
    1
    """

    def __init__(self, errors: ReportedErrors | None = None) -> None:
        self.emitted: list[list[Any]] = []
        self.errors = errors if errors is not None else ReportedErrors()

    def emit(self, values: Sequence[Any]) -> None:
        self.emitted.append(list(values))

    def reportError(self, error: BaseException) -> None:
        """Log ``error`` with the operator's name and count it; the batch goes on."""
        self.errors.report(error)

    def reset(self) -> list[list[Any]]:
        out, self.emitted = self.emitted, []
        return out


class ColumnCollector(TridentCollector):
    """The collector a Function sees in a stage: :class:`TridentCollector`'s ``emit``, whose
    values are kept one after the other in one list, ``width`` per tuple, instead of as a list
    per tuple: a stage builds no list per emitted tuple and reads each field's values as a slice
    of ``kept`` (all of it for one field).

    ``emit`` copies the values as it is called, as ``TridentCollector.emit`` does (a list the
    Function changes afterwards, or emits again, keeps what it held then); an emit that fails
    (values that are not iterable, an iterator that raises) leaves nothing. More values than
    ``width``: the first ``width`` are kept (Trident's tuple view shows only the declared
    fields). Fewer: nothing is kept, and the first such values are kept in ``short`` for the
    caller's error. ``emitted`` gives the kept tuples as lists. A Function without output fields
    (width 0) takes a :class:`TridentCollector`, which counts its tuples.

    Examples
    --------
    >>> c = ColumnCollector(2)
    >>> c.emit(["cat", 1]); c.emit(("dog", 2, "extra")); c.emit(["eel"])
    >>> c.kept, c.short, c.emitted
    (['cat', 1, 'dog', 2], ['eel'], [['cat', 1], ['dog', 2]])
    """

    def __init__(self, width: int, errors: ReportedErrors | None = None) -> None:
        if width < 1:
            raise ValueError(f"ColumnCollector: width {width}; a Function without output fields "
                             "takes a TridentCollector")
        self.width = width
        self.kept: list[Any] = []
        self.short: list[Any] | None = None
        super().__init__(errors)

    @property
    def emitted(self) -> list[list[Any]]:
        """The kept tuples so far, each its values as a list (built when asked)."""
        kept, width = self.kept, self.width
        return [kept[k:k + width] for k in range(0, len(kept), width)]

    @emitted.setter
    def emitted(self, tuples: list[list[Any]]) -> None:
        self.kept = [v for t in tuples for v in t[:self.width]]

    def emit(self, values: Sequence[Any]) -> None:
        if type(values) is list and len(values) == self.width:  # a list of the fields' values
            self.kept.extend(values)
        else:
            self._emit_any(values)

    def _emit_any(self, values: Sequence[Any]) -> None:
        """Any values, as ``list(values)`` takes them."""
        kept = self.kept
        before = len(kept)
        try:
            kept.extend(values)
        except BaseException:
            del kept[before:]  # what an iterator gave before it failed
            raise
        if len(kept) - before > self.width:
            del kept[before + self.width:]
        elif len(kept) - before < self.width:
            if self.short is None:
                self.short = kept[before:]
            del kept[before:]

    def reset(self) -> list[list[Any]]:
        out, self.kept, self.short = self.emitted, [], None
        return out


class OneColumnCollector(ColumnCollector):
    """:class:`ColumnCollector` for one field, whose ``emit([value])`` keeps ``value`` straight away.

    Examples
    --------
    >>> c = OneColumnCollector()
    >>> c.emit(["cat"]); c.emit(iter(["dog"])); c.emit("eel"); c.emit([])
    >>> c.kept, c.short
    (['cat', 'dog', 'e'], [])
    """

    def __init__(self, errors: ReportedErrors | None = None) -> None:
        super().__init__(1, errors)

    def emit(self, values: Sequence[Any]) -> None:
        if type(values) is list:
            try:
                (value,) = values  # a list of one value (unpacking a list takes nothing from it)
            except ValueError:
                self._emit_any(values)
                return
            self.kept.append(value)
        else:
            self._emit_any(values)


class Operation:
    """Lifecycle shared by every operation (Trident's): one instance per run and partition."""

    def prepare(self, conf: dict[str, Any], context: OperationContext) -> None:
        """Called on the executor once, before the instance's first batch; the instance is then
        kept for the partition's next batches while the run lasts."""

    def cleanup(self) -> None:
        """Called on the executor when the run stops (not guaranteed if the process is killed)."""


def overrides_prepare(operation: object) -> bool:
    """Whether ``operation`` does something in ``prepare`` (so it needs the partition count)."""
    method = getattr(type(operation), "prepare", None)
    return method is not None and method is not Operation.prepare


class BaseFunction(Operation):
    """Trident's Function: emit zero or more tuples of new fields per input tuple.

    ``output_types`` may give the Spark SQL type of each emitted field
    (``{"length": "int"}``); undeclared fields are strings.

    Examples
    --------
    >>> class Split(BaseFunction):
    ...     def execute(self, tuple, collector):
    ...         for word in tuple.getString(0).split():
    ...             collector.emit([word])
    >>> c = TridentCollector(); Split().execute(TridentTuple(["a b"], ["value"]), c); c.emitted
    [['a'], ['b']]
    """

    output_types: dict[str, str] = {}

    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        raise NotImplementedError(f"{type(self).__name__}.execute(tuple, collector)")

    def spark_columns(self, columns: list[Any]) -> list[Any] | None:
        """A Spark SQL form: one expression per emitted field (may hold one generator such as
        ``explode`` to emit 0..n tuples), or None to run ``execute`` in Python."""
        return None


class BaseFilter(Operation):
    """Trident's Filter: keep the tuples for which ``isKeep`` is true.

    Examples
    --------
    >>> class Short(BaseFilter):
    ...     def isKeep(self, tuple):
    ...         return len(tuple[0]) < 4
    >>> Short().isKeep(TridentTuple(["cat"], ["word"]))
    True
    """

    def isKeep(self, tuple: TridentTuple) -> bool:
        raise NotImplementedError(f"{type(self).__name__}.isKeep(tuple)")

    def spark_condition(self, columns: list[Any]) -> Any | None:
        """A Spark SQL form: a boolean expression over the input columns, or None for Python."""
        return None


class MapFunction(Operation):
    """Trident's MapFunction for ``map``: one tuple in, one tuple of values out.

    Examples
    --------
    >>> class Upper(MapFunction):
    ...     def execute(self, tuple):
    ...         return [tuple[0].upper()]
    >>> Upper().execute(TridentTuple(["cat"], ["word"]))
    ['CAT']
    """

    output_types: dict[str, str] = {}

    def execute(self, tuple: TridentTuple) -> Sequence[Any]:
        raise NotImplementedError(f"{type(self).__name__}.execute(tuple)")


class FlatMapFunction(Operation):
    """Trident's FlatMapFunction for ``flatMap``: one tuple in, any number of value lists out.

    Examples
    --------
    >>> class Words(FlatMapFunction):
    ...     def execute(self, tuple):
    ...         return [[w] for w in tuple[0].split()]
    >>> Words().execute(TridentTuple(["a b"], ["value"]))
    [['a'], ['b']]
    """

    output_types: dict[str, str] = {}

    def execute(self, tuple: TridentTuple) -> Iterable[Sequence[Any]]:
        raise NotImplementedError(f"{type(self).__name__}.execute(tuple)")


class Consumer(Operation):
    """Trident's Consumer, for ``peek``: sees every tuple, changes nothing."""

    def accept(self, tuple: TridentTuple) -> None:
        raise NotImplementedError(f"{type(self).__name__}.accept(tuple)")


class Aggregator(Operation, Generic[S]):
    """Trident's Aggregator: the most general aggregation; may emit anything at any point.

    Per batch and partition (per group, after ``groupBy``): ``init(batch_id, collector)``
    makes the state, ``aggregate`` sees each tuple, ``complete`` ends the batch.

    Examples
    --------
    >>> class CountAndFirst(Aggregator):
    ...     def init(self, batch_id, collector):
    ...         return {"n": 0, "first": None}
    ...     def aggregate(self, state, tuple, collector):
    ...         state["n"] += 1
    ...         state["first"] = state["first"] or tuple[0]
    ...     def complete(self, state, collector):
    ...         collector.emit([state["n"], state["first"]])
    """

    output_types: dict[str, str] = {}

    def init(self, batch_id: int, collector: TridentCollector) -> S:
        raise NotImplementedError(f"{type(self).__name__}.init(batch_id, collector)")

    def aggregate(self, state: S, tuple: TridentTuple, collector: TridentCollector) -> None:
        raise NotImplementedError(f"{type(self).__name__}.aggregate(state, tuple, collector)")

    def complete(self, state: S, collector: TridentCollector) -> None:
        raise NotImplementedError(f"{type(self).__name__}.complete(state, collector)")

    def spark_aggregates(self, columns: list[Any]) -> list[Any] | None:
        """A Spark SQL form: one aggregate expression per output field, emitting one tuple
        per group (none for an empty batch), or None to run in Python."""
        return None

    def spark_types(self, input_types: list[str]) -> list[str] | None:
        """Spark SQL types of the output fields, given the input fields' types."""
        return None


BaseAggregator = Aggregator


class CombinerAggregator(Operation, Generic[V]):
    """Trident's CombinerAggregator: ``init(tuple)`` per tuple, ``combine`` pairs, ``zero()``.

    Emits one field. Because ``combine`` is associative, partial results are
    combined in each partition before anything moves across the network.

    Examples
    --------
    >>> class LongestWord(CombinerAggregator):
    ...     def init(self, tuple): return len(tuple[0])
    ...     def combine(self, a, b): return max(a, b)
    ...     def zero(self): return 0
    """

    output_types: dict[str, str] = {}

    def init(self, tuple: TridentTuple) -> V:
        raise NotImplementedError(f"{type(self).__name__}.init(tuple)")

    def combine(self, val1: V, val2: V) -> V:
        raise NotImplementedError(f"{type(self).__name__}.combine(val1, val2)")

    def zero(self) -> V:
        raise NotImplementedError(f"{type(self).__name__}.zero()")

    def spark_aggregates(self, columns: list[Any]) -> list[Any] | None:
        """A Spark SQL form: ``[aggregate expression]`` (null on no rows), or None for Python."""
        return None

    def spark_types(self, input_types: list[str]) -> list[str] | None:
        """``[Spark SQL type of the output]``, given the input fields' types."""
        return None

    def arrow_reduce(self, arrays: list[Any], num_rows: int) -> V | None:
        """Optional fast path: the combined value of a whole Arrow batch (None: per tuple)."""
        return None


class ReducerAggregator(Operation, Generic[V]):
    """Trident's ReducerAggregator: ``init()`` once, then ``reduce(curr, tuple)`` per tuple.

    Examples
    --------
    >>> class Concat(ReducerAggregator):
    ...     def init(self): return ""
    ...     def reduce(self, curr, tuple): return curr + tuple[0]
    """

    output_types: dict[str, str] = {}

    def init(self) -> V:
        raise NotImplementedError(f"{type(self).__name__}.init()")

    def reduce(self, curr: V, tuple: TridentTuple) -> V:
        raise NotImplementedError(f"{type(self).__name__}.reduce(curr, tuple)")


class QueryFunction(Operation, Generic[S, V]):
    """Trident's QueryFunction for ``stateQuery``: read state for a partition's tuples.

    ``batchRetrieve(state, tuples)`` returns one result per tuple, in order;
    ``execute(tuple, result, collector)`` emits the appended fields.
    """

    output_types: dict[str, str] = {}

    def batchRetrieve(self, state: S, tuples: list[TridentTuple]) -> list[V]:
        raise NotImplementedError(f"{type(self).__name__}.batchRetrieve(state, tuples)")

    def execute(self, tuple: TridentTuple, result: V, collector: TridentCollector) -> None:
        raise NotImplementedError(f"{type(self).__name__}.execute(tuple, result, collector)")


class StateUpdater(Operation, Generic[S]):
    """Trident's StateUpdater for ``partitionPersist``: hand a partition's tuples to the state."""

    output_types: dict[str, str] = {}

    def updateState(self, state: S, tuples: list[TridentTuple], collector: TridentCollector) -> None:
        raise NotImplementedError(f"{type(self).__name__}.updateState(state, tuples, collector)")


class Assembly(Generic[StreamT]):
    """A reusable piece of topology: ``stream.applyAssembly(assembly)`` returns ``apply(stream)``.

    ``apply`` takes and returns a :class:`~trident_spark.stream.Stream`; a typed subclass says
    so with ``Assembly[Stream]`` (a plain ``Assembly`` subclass may annotate ``apply`` as it likes).

    Examples
    --------
    >>> class Firsts(Assembly):
    ...     def apply(self, stream):
    ...         return stream.global_()
    """

    def apply(self, stream: StreamT) -> StreamT:
        raise NotImplementedError(f"{type(self).__name__}.apply(stream)")


# --- plain callables where the shape is obvious --------------------------------------------
def _callable_name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__name__", None) or repr(fn)


class CallableConsumer(Consumer):
    """A plain callable used where a Consumer (``peek``) is expected."""

    def __init__(self, fn: Callable[[TridentTuple], Any]) -> None:
        self.fn = fn

    def accept(self, tuple: TridentTuple) -> None:
        self.fn(tuple)

    def __repr__(self) -> str:
        return _callable_name(self.fn)


class CallableFilter(BaseFilter):
    """A plain predicate used where a Filter is expected."""

    def __init__(self, predicate: Callable[[TridentTuple], Any]) -> None:
        self.predicate = predicate

    def isKeep(self, tuple: TridentTuple) -> bool:
        return bool(self.predicate(tuple))

    def __repr__(self) -> str:
        return _callable_name(self.predicate)


class CallableMapFunction(MapFunction):
    """A plain callable for ``map``: returns the new values (a list/tuple, or one value)."""

    def __init__(self, fn: Callable[[TridentTuple], Any]) -> None:
        self.fn = fn

    def execute(self, tuple: TridentTuple) -> Sequence[Any]:
        return self.fn(tuple)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return _callable_name(self.fn)


class CallableFlatMapFunction(FlatMapFunction):
    """A plain callable for ``flatMap``: returns an iterable of value lists."""

    def __init__(self, fn: Callable[[TridentTuple], Iterable[Sequence[Any]]]) -> None:
        self.fn = fn

    def execute(self, tuple: TridentTuple) -> Iterable[Sequence[Any]]:
        return self.fn(tuple)

    def __repr__(self) -> str:
        return _callable_name(self.fn)


# --- multiReduce: several streams into one reducer --------------------------------------------
class MultiReducer(Operation, Generic[S]):
    """Trident's MultiReducer for ``topology.multiReduce(streams, reducer, out)``.

    Per batch, the tuples of every input stream go to one reducer: ``init(collector)`` makes
    the state, ``execute(state, streamIndex, tuple, collector)`` sees each tuple with the index
    of the stream it came from (their order in ``multiReduce``), ``complete(state,
    collector)`` ends the batch. It may emit at any point; ``out`` names the emitted fields.

    Examples
    --------
    >>> class CountEach(MultiReducer):
    ...     def init(self, collector):
    ...         return [0, 0]
    ...     def execute(self, state, streamIndex, input, collector):
    ...         state[streamIndex] += 1
    ...     def complete(self, state, collector):
    ...         collector.emit(state)
    >>> c = TridentCollector(); r = CountEach(); s = r.init(c)
    >>> for i in [0, 1, 1]:
    ...     r.execute(s, i, TridentTuple(["x"], ["v"]), c)
    >>> r.complete(s, c); c.emitted
    [[1, 2]]
    """

    output_types: dict[str, str] = {}

    def init(self, collector: TridentCollector) -> S:
        raise NotImplementedError(f"{type(self).__name__}.init(collector)")

    def execute(self, state: S, streamIndex: int, input: TridentTuple, collector: TridentCollector) -> None:
        raise NotImplementedError(f"{type(self).__name__}.execute(state, streamIndex, input, collector)")

    def complete(self, state: S, collector: TridentCollector) -> None:
        raise NotImplementedError(f"{type(self).__name__}.complete(state, collector)")


class GroupedMultiReducer(Operation, Generic[S]):
    """Trident's GroupedMultiReducer: ``multiReduce`` over GroupedStreams, one state per group.

    ``init(collector, group)`` when a group is first seen in the batch, ``execute(state,
    streamIndex, group, input, collector)`` per tuple, ``complete(state, group, collector)`` per
    group at the end of the batch. ``group`` is a TridentTuple of the group values (named as
    the first stream's group fields). The output tuple is the group values followed by what the
    reducer emits (Trident's GroupCollector), so ``out`` names both.

    Examples
    --------
    >>> class Pairs(GroupedMultiReducer):
    ...     def init(self, collector, group):
    ...         return {0: [], 1: []}
    ...     def execute(self, state, streamIndex, group, input, collector):
    ...         state[streamIndex].append(input[-1])
    ...     def complete(self, state, group, collector):
    ...         collector.emit([len(state[0]) * len(state[1])])
    """

    output_types: dict[str, str] = {}

    def init(self, collector: TridentCollector, group: TridentTuple) -> S:
        raise NotImplementedError(f"{type(self).__name__}.init(collector, group)")

    def execute(self, state: S, streamIndex: int, group: TridentTuple, input: TridentTuple,
                collector: TridentCollector) -> None:
        raise NotImplementedError(
            f"{type(self).__name__}.execute(state, streamIndex, group, input, collector)")

    def complete(self, state: S, group: TridentTuple, collector: TridentCollector) -> None:
        raise NotImplementedError(f"{type(self).__name__}.complete(state, group, collector)")
