"""The call shapes of Trident's operators: the types their overloads name, and the one parser
that binds positional arguments to a shape.

Trident's Java API has one overload per shape (``aggregate(Aggregator, Fields)``,
``aggregate(Fields, Aggregator, Fields)`` ...). The builders declare the same shapes with
``typing.overload``, so mypy checks a user's calls; at run time each operator hands its
arguments to :meth:`Signature.bind`, which picks the shape by argument count (and, where two
shapes have as many arguments, by what the first ones are) and returns the named parts. The
builders then check the parts and raise ``TopologyError`` naming the operator. An ordering
argument (``minBy``, ``maxBy``, ``min``, ``max``, ``partition``) is told apart the same way,
by what it is: a comparator ``compare(a, b)`` or a key function ``key(value)``
(:func:`bind_order`, :func:`arity`).

Examples
--------
>>> from trident_spark.builtin import Count
>>> bound = AGGREGATE.bind("aggregate", (Count(), ["count"]))
>>> bound.get("inputs"), type(bound["operation"]).__name__, bound["outputs"]
(None, 'Count', ['count'])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from trident_spark.errors import TopologyError
from trident_spark.fields import Fields, TridentTuple
from trident_spark.joins import JoinOutFieldsMode, JoinType
from trident_spark.operation import (
    Aggregator,
    BaseFilter,
    BaseFunction,
    CombinerAggregator,
    ReducerAggregator,
    StateUpdater,
)
from trident_spark.validation import FieldsLike, describe

# --- what the overloads name ------------------------------------------------------------------
#: Any of Trident's three aggregator kinds: what aggregate() and partitionAggregate() take.
AnyAggregator = Aggregator[Any] | CombinerAggregator[Any] | ReducerAggregator[Any]

#: What a map state can fold per key: what persistentAggregate() takes.
MapAggregator = CombinerAggregator[Any] | ReducerAggregator[Any]

#: A plain predicate over the tuple, for filter().
Predicate = Callable[[TridentTuple], object]


class StateFactoryLike(Protocol):
    """What persisting takes: Trident's ``StateFactory``, whose ``makeState`` is called on the
    executors: a built-in store's settings (``SqliteState.opaque(path=...)``,
    ``parse_state_url(url)``) or a user's own ``trident_spark.state.StateFactory``.

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> factory: StateFactoryLike = MemoryState.opaque(name="wc")
    """

    def makeState(self, conf: dict[str, Any], partition_index: int, num_partitions: int) -> object:
        """Build one partition's working state (called where the state is used)."""
        ...


class ComparatorObject(Protocol):
    """Java's ``Comparator``: an object whose ``compare(a, b)`` is negative, zero or positive.

    Examples
    --------
    >>> class BySpeed:
    ...     def compare(self, a: object, b: object) -> int:
    ...         return 0
    >>> comparator: ComparatorObject = BySpeed()
    """

    def compare(self, a: Any, b: Any, /) -> int:
        """Negative when ``a`` orders first, zero when equal, positive when ``b`` does."""
        ...


#: ``compare(a, b) -> int`` as a function.
Comparison = Callable[[Any, Any], int]

#: ``compare(a, b) -> int`` as a function or an object with that method (min, max, minBy, maxBy).
Comparator = Comparison | ComparatorObject

#: ``key(value)``: what minBy/maxBy compare instead of the value.
KeyFunction = Callable[[Any], Any]

#: A join's kind: one JoinType for every stream, one per stream, or one of the strings join took
#: before JoinType ("left" and "right" for two streams).
#: Case does not matter.
JoinKind = Literal["inner", "outer", "full", "left", "right", "INNER", "OUTER", "FULL", "LEFT", "RIGHT"]
JoinHow = JoinType | JoinKind | Sequence[JoinType | Literal["inner", "outer", "INNER", "OUTER"]]

#: The layout of a join's output, as the enum or its value (case does not matter).
JoinMode = JoinOutFieldsMode | Literal["compact", "preserve", "COMPACT", "PRESERVE"]


# --- the one parser ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    """One call shape: the names of its positional arguments, in order; ``when`` (given the
    arguments) tells it from another shape with as many arguments.

    Examples
    --------
    >>> Shape(("inputs", "operation", "outputs")).matches((["a"], object(), ["b"]))
    True
    """

    slots: tuple[str, ...]
    when: Callable[[Sequence[Any]], bool] | None = None

    def matches(self, args: Sequence[Any]) -> bool:
        return len(args) == len(self.slots) and (self.when is None or self.when(args))


@dataclass(frozen=True)
class Signature:
    """An operator's shapes, tried in order, and the message for a call that fits none.

    ``usage`` may hold ``{operator}`` (the operator's name) and ``{prefix}`` (where it was
    called, e.g. ``chainedAgg().``).

    Examples
    --------
    >>> FILTER.bind("filter", (["word"], bool))["inputs"]
    ['word']
    """

    shapes: tuple[Shape, ...]
    usage: str

    def bind(self, operator: str, args: Sequence[Any], prefix: str = "") -> dict[str, Any]:
        """The arguments by slot name for the first shape ``args`` fit; slots a shape lacks are
        absent (``bound.get(name)`` is None). Raises ``TopologyError`` with ``usage`` otherwise."""
        for shape in self.shapes:
            if shape.matches(args):
                return dict(zip(shape.slots, args, strict=True))
        raise TopologyError(self.usage.format(operator=operator, prefix=prefix))


def _first_is(*kinds: type) -> Callable[[Sequence[Any]], bool]:
    return lambda args: isinstance(args[0], kinds)


def _last_is_mode(args: Sequence[Any]) -> bool:
    return isinstance(args[-1], JoinOutFieldsMode)


_OPERATION_OUTPUTS = ("operation", "outputs")
_INPUTS_OPERATION_OUTPUTS = ("inputs", "operation", "outputs")

#: each([in], Function, out) and each(in, Filter); each(Function), each(Filter) and
#: each(Function, out, extra) bind too, so that the builder can say what is wrong with them.
EACH = Signature((
    Shape(("operation",)),
    Shape(_OPERATION_OUTPUTS, _first_is(BaseFunction, BaseFilter)),
    Shape((*_OPERATION_OUTPUTS, "extra"), _first_is(BaseFunction, BaseFilter)),
    Shape(("inputs", "operation")),
    Shape(_INPUTS_OPERATION_OUTPUTS),
), "each: use each([input_fields], Function, output_fields) or each(input_fields, Filter)")

#: filter(Filter or predicate) and filter(in, Filter or predicate).
FILTER = Signature((Shape(("operation",)), Shape(("inputs", "operation"))),
                   "filter: use filter(Filter) or filter(input_fields, Filter)")

#: aggregate / partitionAggregate (Stream, GroupedStream, chainedAgg): ([in], aggregator, out).
AGGREGATE = Signature((Shape(_OPERATION_OUTPUTS), Shape(_INPUTS_OPERATION_OUTPUTS)),
                      "{prefix}{operator}: use {operator}([input_fields], aggregator, output_fields)")

#: stateQuery(state, [in], QueryFunction, out), the state already taken.
STATE_QUERY = Signature(
    (Shape(_OPERATION_OUTPUTS), Shape(_INPUTS_OPERATION_OUTPUTS)),
    "stateQuery: use stateQuery(state, [input_fields], QueryFunction, output_fields)")

#: persistentAggregate(state, [in], aggregator, out), the state already taken.
PERSISTENT_AGGREGATE = Signature(
    (Shape(_OPERATION_OUTPUTS), Shape(_INPUTS_OPERATION_OUTPUTS)),
    "persistentAggregate: use persistentAggregate(state, [input_fields], aggregator, output_fields)")

#: partitionPersist(state, [in], StateUpdater[, out]), the state already taken.
PARTITION_PERSIST = Signature((
    Shape(("operation",)),
    Shape(_OPERATION_OUTPUTS, _first_is(StateUpdater)),
    Shape(("inputs", "operation")),
    Shape(_INPUTS_OPERATION_OUTPUTS),
), "partitionPersist: use partitionPersist(state, [input_fields], StateUpdater[, output_fields])")

#: multiReduce([s1, s2], reducer, out), (s1, s2, reducer, out), ([f1, f2], [s1, s2], reducer, out)
#: and (f1, s1, f2, s2, reducer, out).
MULTI_REDUCE = Signature((
    Shape(("streams", "operation", "outputs")),
    Shape(("inputs", "streams", "operation", "outputs"),
          lambda args: isinstance(args[0], list | tuple) and isinstance(args[1], list | tuple)
          and not isinstance(args[0], Fields)),
    Shape(("stream1", "stream2", "operation", "outputs")),
    Shape(("inputs1", "stream1", "inputs2", "stream2", "operation", "outputs")),
), "multiReduce: use multiReduce([s1, s2], reducer, out_fields) or multiReduce([fields1, fields2], "
   "[s1, s2], reducer, out_fields)")

def _join_shapes(head: tuple[str, ...]) -> tuple[Shape, ...]:
    """A join's head, then optionally a JoinType (or a list) and a JoinOutFieldsMode; a mode alone
    is told by its type. Two options not ending with a mode bind as "extra" (the builder says why)."""
    return (Shape(head), Shape((*head, "mode"), _last_is_mode), Shape((*head, "how")),
            Shape((*head, "how", "mode"), _last_is_mode), Shape((*head, "how", "extra")))


#: join([s1, s2], [f1, f2], out[, how][, mode]).
JOIN_LISTS = Signature(_join_shapes(("streams", "inputs", "outputs")),
                       "join: use join([s1, s2], [fields1, fields2], out_fields[, how][, mode])")

#: join(s1, f1, s2, f2, out[, how][, mode]).
JOIN_PAIRS = Signature(_join_shapes(("stream1", "inputs1", "stream2", "inputs2", "outputs")),
                       "join: use join(s1, fields1, s2, fields2, out_fields[, how][, mode])")

# --- the order of minBy/maxBy/min/max: a comparator or a key function ---------------------------
def arity(fn: Any) -> int | None:
    """How many positional arguments ``fn`` requires (an object's ``compare`` method counts as
    2); -1 for a class or a non-callable; None when Python cannot tell (some builtins).

    Examples
    --------
    >>> arity(lambda a, b: a - b), arity(len), arity(int), arity(lambda *args: 0)
    (2, 1, -1, 2)
    """
    import inspect

    if callable(getattr(fn, "compare", None)) and not inspect.isroutine(fn):
        fn = fn.compare
    if isinstance(fn, type) or not callable(fn):
        return -1
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = signature.parameters.values()
    required = len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                    and p.default is p.empty])
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return max(required, 2)
    return required


def callable_name(fn: Any) -> str:
    """A callable's name for labels: ``by_speed``, ``<lambda>``, or its class name.

    Examples
    --------
    >>> callable_name(len), callable_name(lambda a, b: 0)
    ('len', '<lambda>')
    """
    name = getattr(fn, "__name__", None)
    return str(name) if name else type(fn).__name__


def check_tuple_comparator(kind: str, comparator: Any) -> None:
    """``min``/``max``'s argument must compare two TridentTuples: ``compare(a, b) -> int``.

    Examples
    --------
    >>> check_tuple_comparator("min", len)
    Traceback (most recent call last):
      ...
    trident_spark.errors.TopologyError: min: expected a comparator, compare(a, b) -> int over two \
TridentTuples (or an object with such a compare method), got len (a plain function); for one field \
use minBy(field, ...)
    """
    if arity(comparator) != 2:
        raise TopologyError(
            f"{kind}: expected a comparator, compare(a, b) -> int over two TridentTuples (or an object "
            f"with such a compare method), got {describe(comparator)}; for one field use "
            f"{kind}By(field, ...)")


def bind_order(kind: str, field: Any, order: Any, key: Any,
               comparator: Any) -> tuple[str, KeyFunction | None, Comparator | None]:
    """``minBy``/``maxBy``'s arguments bound: (label, key, comparator), at most one of them set.

    The order comes once: as the second argument (a comparator ``compare(a, b) -> int`` or a
    key function ``key(value)``, told apart by how many arguments it takes), or as ``key=``
    or ``comparator=``.

    Examples
    --------
    >>> bind_order("minBy", "n", len, None, None)
    ("minBy('n')", <built-in function len>, None)
    """
    if not isinstance(field, str):
        raise TopologyError(f"{kind}: give one field name, e.g. {kind}('n'); got {field!r}")
    label = f"{kind}({field!r})"
    if order is not None:
        if key is not None or comparator is not None:
            raise TopologyError(f"{label}: give the order once: a comparator or key as the second "
                                "argument, or key= / comparator=")
        taken = arity(order)
        if taken == 2:
            comparator = order
        elif taken == 1:
            key = order
        else:
            raise TopologyError(
                f"{label}: the second argument must be a comparator compare(a, b) -> int or a key "
                f"function key(value), got {describe(order)}; say which with comparator= or key=")
    if key is not None and not callable(key):
        raise TopologyError(f"{label}: key must be a callable that orders values, got {describe(key)}")
    if key is not None and comparator is not None:
        raise TopologyError(f"{label}: give key= or comparator=, not both")
    if comparator is not None and arity(comparator) != 2:
        raise TopologyError(f"{label}: comparator must be compare(a, b) -> int (or an object with such "
                            f"a compare method), got {describe(comparator)}")
    return label, key, comparator


__all__ = [
    "AGGREGATE",
    "EACH",
    "FILTER",
    "JOIN_LISTS",
    "JOIN_PAIRS",
    "MULTI_REDUCE",
    "PARTITION_PERSIST",
    "PERSISTENT_AGGREGATE",
    "STATE_QUERY",
    "AnyAggregator",
    "Comparator",
    "ComparatorObject",
    "Comparison",
    "FieldsLike",
    "JoinHow",
    "JoinKind",
    "JoinMode",
    "KeyFunction",
    "MapAggregator",
    "Predicate",
    "Shape",
    "Signature",
    "StateFactoryLike",
    "arity",
    "bind_order",
    "callable_name",
    "check_tuple_comparator",
]
