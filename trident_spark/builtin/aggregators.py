"""Built-in aggregators: Count and Sum (combiners), Max and Min (Storm's ComparisonAggregator).

Each runs in Python (``init``/``combine`` or ``init``/``aggregate``/``complete``)
and also offers a Spark SQL form (``spark_aggregates``) that gives the same
result, so the planner can aggregate without Python workers. Count and Sum are
also Arrow-batch combiners (``init_arrow``, ``arrow_combine``): where their SQL form
cannot run (a Python stage's partial aggregation) they combine a batch at a time. Nothing here
imports pyspark until a ``spark_*`` method is called.
"""

from __future__ import annotations

import builtins
import decimal
import numbers
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from trident_spark.arrow_operation import ArrowCombinerAggregator
from trident_spark.errors import TopologyError, WrongTypeError
from trident_spark.fields import TridentTuple
from trident_spark.operation import Aggregator, TridentCollector

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column

_INTEGRAL_TYPES = frozenset({"tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long"})
_FLOATING_TYPES = frozenset({"float", "real", "double"})
_DECIMAL_TYPE = re.compile(r"^(?:decimal|dec|numeric)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?$")
_MAX_DECIMAL_PRECISION = 38
_BIGINT_MAX = 2**63 - 1

#: Java's Comparator: ``compare(a, b) -> int``, as a function or an object with that method.
Comparator = Callable[[Any, Any], int] | Any


class Count(ArrowCombinerAggregator[int]):
    """Count the tuples: Trident's ``Count`` (``init`` 1, ``combine`` a + b, ``zero`` 0).

    Every tuple counts, whatever its values (SQL ``count(1)``).

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> count = Count()
    >>> ones = [count.init(TridentTuple([w], ["word"])) for w in ["a", "b", None]]
    >>> total = count.zero()
    >>> for one in ones:
    ...     total = count.combine(total, one)
    >>> total
    3
    """

    output_types = {}
    reads_fields = False  # counts tuples, whatever their fields: the planner need not keep any
    counts_tuples = True  # init is 1 and combine adds: n tuples' partial is n (a fused stage counts)
    arrow_combine = "sum"  # a batch's init values (ones) summed per group

    def init(self, tuple: TridentTuple) -> int:
        return 1

    def init_arrow(self, batch: pa.RecordBatch) -> pa.Array:
        """A 1 (int64) per tuple of ``batch``."""
        import pyarrow as pa

        return pa.repeat(pa.scalar(1, pa.int64()), batch.num_rows)

    def combine(self, val1: int, val2: int) -> int:
        return val1 + val2

    def zero(self) -> int:
        return 0

    #: The Spark SQL form reads no values, so it also runs on untyped fields (tagged bytes).
    spark_reads_untyped = True

    def spark_aggregates(self, columns: list[Column]) -> list[Column] | None:
        """``[count(1)]``: the number of rows of the group."""
        from pyspark.sql import functions as F

        return [F.count(F.lit(1))]

    def spark_merge(self, partials: list[Column]) -> list[Column]:
        """``[sum(partial)]``: partial counts (one per partition) combined into the group's count."""
        from pyspark.sql import functions as F

        return [F.sum(partials[0])]

    def spark_types(self, input_types: list[str]) -> list[str] | None:
        """``["bigint"]``, whatever the input."""
        return ["bigint"]

    def arrow_reduce(self, arrays: list[Any], num_rows: int) -> int | None:
        """The count of an Arrow batch is its number of rows."""
        return num_rows

    def __repr__(self) -> str:
        return "Count()"


def _add(val1: Any, val2: Any) -> Any:
    # Storm's Sum turns the other operand into a BigDecimal when one is a BigDecimal;
    # Python refuses Decimal + float, so convert the float exactly (as new BigDecimal(double) does).
    if isinstance(val1, decimal.Decimal) and isinstance(val2, float):
        return val1 + decimal.Decimal(val2)
    if isinstance(val2, decimal.Decimal) and isinstance(val1, float):
        return decimal.Decimal(val1) + val2
    return val1 + val2


def sum_type(input_type: str) -> str | None:
    """The Spark SQL type of ``sum`` over a column of ``input_type``, or None if not numeric.

    Integral types sum to ``bigint``, floating types to ``double``, and
    ``decimal(p, s)`` to ``decimal(min(38, p + 10), s)`` (Spark's rule).

    Examples
    --------
    >>> sum_type("int"), sum_type("double"), sum_type("decimal(10,2)"), sum_type("string")
    ('bigint', 'double', 'decimal(20,2)', None)
    """
    name = input_type.strip().lower()
    if name in _INTEGRAL_TYPES:
        return "bigint"
    if name in _FLOATING_TYPES:
        return "double"
    match = _DECIMAL_TYPE.match(name)
    if match:
        precision = int(match.group(1) or 10)
        scale = int(match.group(2) or 0)
        return f"decimal({min(_MAX_DECIMAL_PRECISION, precision + 10)},{scale})"
    return None


class Sum(ArrowCombinerAggregator[Any]):
    """Sum the first input field: Trident's ``Sum``, with SQL's handling of None.

    Integers stay Python ints (no overflow in Python; the Spark column is
    ``bigint``), a float makes the sum a float, a ``Decimal`` keeps it a
    ``Decimal`` (a float added to a Decimal is converted exactly, as Storm
    does). None values are skipped, as SQL ``sum`` skips nulls: ``combine`` of only
    None values is None, and ``zero()`` is 0. An aggregation starts from ``zero()``
    (Trident's rule), so a group whose values are all None sums to 0 on every path.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> total = Sum()
    >>> values = [total.init(TridentTuple([n], ["n"])) for n in [3, None, 4]]
    >>> result = total.zero()
    >>> for value in values:
    ...     result = total.combine(result, value)
    >>> result
    7
    """

    output_types = {}
    arrow_combine = "sum"  # SQL's sum skips nulls, as combine does

    def init_arrow(self, batch: pa.RecordBatch) -> pa.Array | None:
        """The first column as it is, when Arrow sums it as ``combine`` would: integers (whose
        sum cannot overflow 64 bits), floating point numbers, decimals. None otherwise (a
        column of booleans, of text, or of no type): the tuples then go through ``init``."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if batch.num_columns == 0:
            return None
        array = batch.column(0)
        type_ = array.type
        if pa.types.is_integer(type_):
            bounds = pc.min_max(array).as_py()
            if bounds["min"] is not None:
                largest = max(abs(bounds["min"]), abs(bounds["max"]))
                if largest * (len(array) - array.null_count) > _BIGINT_MAX:
                    return None
            return array
        if pa.types.is_floating(type_) or pa.types.is_decimal(type_):
            return array
        return None

    def init(self, tuple: TridentTuple) -> Any:
        value = tuple.getValue(0)
        if value is not None and not isinstance(value, numbers.Number):
            field = tuple.getFields()[0] if len(tuple.getFields()) else "?"
            raise WrongTypeError(f"Sum() adds numbers, but field {field!r} holds {type(value).__name__} "
                                 f"{value!r}; convert it first (e.g. map it to int)")
        return value

    def combine(self, val1: Any, val2: Any) -> Any:
        if val1 is None:
            return val2
        if val2 is None:
            return val1
        return _add(val1, val2)

    def zero(self) -> Any:
        return 0

    def spark_aggregates(self, columns: list[Column]) -> list[Column] | None:
        """``[sum(first column)]`` (null when the group has no non-null value)."""
        from pyspark.sql import functions as F

        return [F.sum(columns[0])]

    def spark_merge(self, partials: list[Column]) -> list[Column]:
        """``[sum(partial)]``: partial sums (one per partition) combined into the group's sum."""
        from pyspark.sql import functions as F

        return [F.sum(partials[0])]

    def spark_types(self, input_types: list[str]) -> list[str] | None:
        """The type of the sum (see :func:`sum_type`), or None for a non-numeric input."""
        if not input_types:
            return None
        result = sum_type(input_types[0])
        return None if result is None else [result]

    def arrow_reduce(self, arrays: list[Any], num_rows: int) -> Any:
        """The sum of an Arrow batch's first column as a Python value.

        An empty or all-null column gives ``zero()``. Returns None (sum tuple by
        tuple instead) for a non-numeric column, or an integer column whose sum
        could overflow 64 bits in Arrow.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        array = arrays[0]
        type_ = array.type
        if not (pa.types.is_integer(type_) or pa.types.is_floating(type_) or pa.types.is_decimal(type_)):
            return None
        if pa.types.is_integer(type_):
            bounds = pc.min_max(array).as_py()
            if bounds["min"] is not None:
                largest = max(abs(bounds["min"]), abs(bounds["max"]))
                if largest * (len(array) - array.null_count) > _BIGINT_MAX:
                    return None
        total = pc.sum(array).as_py()
        return self.zero() if total is None else total

    def __repr__(self) -> str:
        return "Sum()"


class _Best:
    """What a comparison aggregator keeps: the best key so far and its tuple's values."""

    __slots__ = ("key", "values")

    def __init__(self) -> None:
        self.key: Any = None
        self.values: list[Any] | None = None


def _none_lowest(values: Sequence[Any]) -> tuple[tuple[bool, Any], ...]:
    # Orders tuples as Spark orders structs: field by field, None below every value.
    return tuple((value is not None, value) for value in values)


class _ComparisonAggregator(Aggregator[_Best]):
    """Storm's ComparisonAggregator: keep the input tuple with the best value, emit it whole."""

    output_types = {}

    def __init__(self, field: str | None = None, *, key: Callable[[Any], Any] | None = None,
                 comparator: Comparator | None = None) -> None:
        if field is not None and not isinstance(field, str):
            raise WrongTypeError(f"{type(self).__name__}: field must be a field name or None, got {field!r}")
        if key is not None and not callable(key):
            raise WrongTypeError(f"{type(self).__name__}: key must be a callable, got {key!r}")
        if comparator is not None and not callable(comparator) and not callable(
                getattr(comparator, "compare", None)):
            raise WrongTypeError(
                f"{type(self).__name__}: comparator must be compare(a, b) -> int or an object "
                f"with such a compare method, got {comparator!r}")
        if key is not None and comparator is not None:
            raise WrongTypeError(f"{type(self).__name__}: give key or comparator, not both")
        self.field = field
        self.key = key
        self.comparator = comparator
        self.input_fields: list[str] | None = None

    # -- comparison -----------------------------------------------------------------------------

    def _better(self, new: Any, best: Any) -> bool:
        raise NotImplementedError

    def _keeps_best(self, order: int) -> bool:
        """Storm's MaxWithComparator/MinWithComparator: ``compare(best, new)``'s sign keeps the best."""
        raise NotImplementedError

    def _compare(self, best: Any, new: Any) -> int:
        compare = getattr(self.comparator, "compare", self.comparator)
        assert compare is not None
        order = compare(best, new)
        if isinstance(order, bool) or not isinstance(order, int | float):
            raise WrongTypeError(
                f"{self!r}: the comparator returned {order!r}; it must return a negative "
                "number, zero or a positive number (a < b, a == b, a > b), as Java's compare")
        return 0 if order == 0 else (1 if order > 0 else -1)

    def _spark_best(self) -> Callable[..., Column]:
        raise NotImplementedError

    def _spark_best_by(self) -> Callable[..., Column]:
        raise NotImplementedError

    def _compared(self, tuple: TridentTuple) -> Any:
        if self.field is not None:
            return tuple.getValueByField(self.field)
        if len(tuple) == 1:
            return tuple.getValue(0)
        return builtins.tuple(tuple.getValues())

    # -- the Aggregator ---------------------------------------------------------------------------

    def init(self, batch_id: int, collector: TridentCollector) -> _Best:
        return _Best()

    def aggregate(self, state: _Best, tuple: TridentTuple, collector: TridentCollector) -> None:
        if self.comparator is not None:
            # Storm's ComparisonAggregator: the field's value, or the whole tuple without a field;
            # a None value is skipped; the new tuple wins unless compare(best, new) keeps the best.
            compared = tuple if self.field is None else tuple.getValueByField(self.field)
            if compared is None:
                return
            if state.values is None or not self._keeps_best(self._compare(state.key, compared)):
                state.key = compared
                state.values = tuple.getValues()
            return
        value = self._compared(tuple)
        if value is None:
            return
        if self.key is not None:
            key = self.key(value)
        elif self.field is None and len(tuple) > 1:
            key = _none_lowest(value)
        else:
            key = value
        if state.values is None or self._better(key, state.key):
            state.key = key
            state.values = tuple.getValues()

    def complete(self, state: _Best, collector: TridentCollector) -> None:
        if state.values is not None:
            collector.emit(state.values)

    # -- the Spark SQL form ---------------------------------------------------------------------

    def bind(self, input_fields: Sequence[str]) -> None:
        """Tell the aggregator its input field names, in order (the planner calls this first).

        ``spark_aggregates`` and ``spark_having`` receive the input columns in
        this order and find ``field`` among them by name.

        Raises
        ------
        TopologyError
            ``field`` is not one of ``input_fields``.
        """
        names = list(input_fields)
        if self.field is not None and self.field not in names:
            raise TopologyError(f"{self!r}: field {self.field!r} is not among its input fields {names}; "
                                f"add it to the input fields of the aggregation")
        self.input_fields = names

    def _field_index(self, n_columns: int) -> int:
        assert self.field is not None, "only called when a field is named"
        if self.input_fields is None:
            raise RuntimeError(f"{self!r}: call bind(input_fields) before the Spark SQL form "
                               f"so that field {self.field!r} can be found among the columns")
        if len(self.input_fields) != n_columns:
            raise RuntimeError(f"{self!r}: bound to {len(self.input_fields)} input fields "
                               f"{self.input_fields} but given {n_columns} columns")
        return self.input_fields.index(self.field)

    def spark_aggregates(self, columns: list[Column]) -> list[Column] | None:
        """One aggregate per input column, all taken from the same best row.

        With ``field``: ``max_by(struct(columns), field column)`` (``min_by`` for
        Min), one field of it per column; needs :meth:`bind` first. Without: the
        ``max`` of the single column, or of ``struct(columns)`` for several.
        None (run in Python) when a ``key`` or ``comparator`` is given.
        """
        if self.key is not None or self.comparator is not None:
            return None
        from pyspark.sql import functions as F

        if self.field is None and len(columns) == 1:
            return [self._spark_best()(columns[0])]
        row = F.struct(*[column.alias(f"c{i}") for i, column in enumerate(columns)])
        if self.field is None:
            best = self._spark_best()(row)
        else:
            best = self._spark_best_by()(row, columns[self._field_index(len(columns))])
        return [best.getField(f"c{i}") for i in range(len(columns))]

    def spark_having(self, columns: list[Column]) -> Column | None:
        """A boolean aggregate over the input columns: false for a group that emits nothing.

        The Python form emits nothing for a group in which no tuple has a
        value to compare (``count(compared column) > 0``); the SQL aggregate
        would give a row of nulls there, which the planner drops with this
        condition (SQL ``HAVING``). Needs :meth:`bind` first when ``field`` is set.
        """
        if self.key is not None or self.comparator is not None:
            return None
        from pyspark.sql import functions as F

        if self.field is not None:
            return F.count(columns[self._field_index(len(columns))]) > 0
        if len(columns) == 1:
            return F.count(columns[0]) > 0
        return F.count(F.lit(1)) > 0

    def spark_types(self, input_types: list[str]) -> list[str] | None:
        """The input fields' types: the aggregator emits a whole input tuple."""
        return list(input_types)

    def __repr__(self) -> str:
        args = [] if self.field is None else [repr(self.field)]
        if self.key is not None:
            args.append(f"key={getattr(self.key, '__name__', None) or repr(self.key)}")
        if self.comparator is not None:
            shown = getattr(self.comparator, "__name__", None) or type(self.comparator).__name__
            args.append(f"comparator={shown}")
        return f"{type(self).__name__}({', '.join(args)})"



class Max(_ComparisonAggregator):
    """Emit the input tuple with the largest value of ``field``: Storm's ``Max``.

    Per batch and partition (per group after ``groupBy``) the aggregator keeps
    the tuple with the largest value and emits all its input fields; tuples
    whose value is None are skipped, and a group without any value emits
    nothing. On ties the later tuple wins (as in Storm) in Python; Spark SQL
    picks any one of the tied tuples.

    Parameters
    ----------
    field : str, optional
        The field to compare. None: the single input field, or with several
        input fields the whole tuple (Python tuple order, None lowest, as Spark
        orders structs).
    key : callable, optional
        Compare ``key(value)`` instead of the value (Python only: no SQL form).
    comparator : callable, optional
        A Java-style ``compare(a, b) -> int`` (negative, zero, positive), or an object with
        such a ``compare`` method (a ``Comparator``), as Storm's ``MaxWithComparator``: it
        compares the field's values, or whole TridentTuples when ``field`` is None. The new
        tuple replaces the best unless ``compare(best, new) > 0`` (``< 0`` for Min), so ties
        go to the later tuple. Python only. Give ``key`` or ``comparator``, not both.

    Notes
    -----
    The planner calls ``bind(input_fields)`` before ``spark_aggregates(columns)``
    and ``spark_having(columns)`` (see those methods): the columns come in
    input-field order and ``field`` is found among them by name.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> from trident_spark.operation import TridentCollector
    >>> agg, out = Max("n"), TridentCollector()
    >>> state = agg.init(0, out)
    >>> for word, n in [("cat", 3), ("dog", None), ("eel", 5), ("fox", 1)]:
    ...     agg.aggregate(state, TridentTuple([word, n], ["word", "n"]), out)
    >>> agg.complete(state, out); out.emitted
    [['eel', 5]]
    """

    def _better(self, new: Any, best: Any) -> bool:
        return bool(new >= best)

    def _keeps_best(self, order: int) -> bool:
        return order > 0

    def _spark_best(self) -> Callable[..., Column]:
        from pyspark.sql import functions as F

        return F.max

    def _spark_best_by(self) -> Callable[..., Column]:
        from pyspark.sql import functions as F

        return F.max_by


class Min(_ComparisonAggregator):
    """Emit the input tuple with the smallest value of ``field``: Storm's ``Min``.

    The mirror of :class:`Max` (same parameters, None handling, ``bind`` and
    SQL form with ``min``/``min_by``); on ties the later tuple wins in Python.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> from trident_spark.operation import TridentCollector
    >>> agg, out = Min(key=len), TridentCollector()
    >>> state = agg.init(0, out)
    >>> for word in ["tiger", "ox", "cat"]:
    ...     agg.aggregate(state, TridentTuple([word], ["word"]), out)
    >>> agg.complete(state, out); out.emitted
    [['ox']]

    With a Java-style comparator over whole tuples (``stream.min(comparator)``):

    >>> agg, out = Min(comparator=lambda a, b: a.getInteger(1) - b.getInteger(1)), TridentCollector()
    >>> state = agg.init(0, out)
    >>> for word, n in [("cat", 3), ("eel", 1), ("fox", 1)]:
    ...     agg.aggregate(state, TridentTuple([word, n], ["word", "n"]), out)
    >>> agg.complete(state, out); out.emitted
    [['fox', 1]]
    """

    def _better(self, new: Any, best: Any) -> bool:
        return bool(new <= best)

    def _keeps_best(self, order: int) -> bool:
        return order < 0

    def _spark_best(self) -> Callable[..., Column]:
        from pyspark.sql import functions as F

        return F.min

    def _spark_best_by(self) -> Callable[..., Column]:
        from pyspark.sql import functions as F

        return F.min_by


__all__ = ["Count", "Max", "Min", "Sum", "sum_type"]
