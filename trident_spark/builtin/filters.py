"""Built-in filters: Debug, Equals, FilterNull and Negate (Trident's builtins).

Equals, FilterNull and Negate (of a filter that has one) also offer a Spark SQL
form (``spark_condition``) that keeps exactly the tuples the Python form keeps, and
are Arrow-batch filters (``keep_arrow``) for where the SQL form cannot run.
Nothing here imports pyspark until a ``spark_*`` method is called.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from functools import reduce
from typing import TYPE_CHECKING, Any

from trident_spark.arrow_operation import ArrowFilter, mask_output, takes_arrow_batches
from trident_spark.errors import WrongTypeError
from trident_spark.fields import TridentTuple
from trident_spark.operation import BaseFilter, CallableFilter, OperationContext

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column


class Debug(BaseFilter):
    """Print every tuple as ``"<prefix>: <tuple>"`` and keep it: Trident's ``Debug``.

    The tuple prints as Trident's does, its value list as Java's ``List.toString`` writes it
    (``[cat, 3]``: strings unquoted, ``null``, ``true``).

    The print happens where the stream runs: on Spark executors, in their
    stdout (the driver's console in local mode). Python only (no SQL form).

    Parameters
    ----------
    prefix : str, default "DEBUG"
        Starts each printed line; name the stream being printed.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> Debug("words").isKeep(TridentTuple(["cat", 3], ["word", "count"]))
    words: [cat, 3]
    True
    """

    def __init__(self, prefix: str = "DEBUG") -> None:
        self.prefix = prefix

    def isKeep(self, tuple: TridentTuple) -> bool:
        print(f"{self.prefix}: {tuple}", flush=True)
        return True

    def __repr__(self) -> str:
        return "Debug()" if self.prefix == "DEBUG" else f"Debug({self.prefix!r})"


def _same(value1: Any, value2: Any) -> bool:
    if value1 is None or value2 is None:
        return value1 is value2
    if isinstance(value1, float) and isinstance(value2, float) and math.isnan(value1) and math.isnan(value2):
        return True
    return bool(value1 == value2)


class Equals(ArrowFilter):
    """Keep the tuples whose input fields all hold equal values: Trident's ``Equals``.

    None equals only None (SQL ``<=>``): a None next to a value is unequal, as
    in Storm, and two Nones are equal (where Storm's code fails with a
    NullPointerException). NaN equals NaN, as Java's ``Double.equals`` and
    Spark SQL have it. Values compare with Python's ``==`` (so ``1 == 1.0``;
    Spark compares columns of different types after widening them alike).
    With fewer than two input fields every tuple is kept.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> keep = Equals().isKeep
    >>> keep(TridentTuple(["cat", "cat"], ["a", "b"])), keep(TridentTuple(["cat", None], ["a", "b"]))
    (True, False)
    """

    #: On untyped fields the planner gives the SQL form their group keys, equal for Python-equal
    #: values (1, 1.0 and True; NaN and NaN), so it keeps what ``isKeep`` keeps.
    spark_reads_untyped = True

    def isKeep(self, tuple: TridentTuple) -> bool:
        values = tuple.getValues()
        return all(_same(values[i], values[i + 1]) for i in range(len(values) - 1))

    def keep_arrow(self, batch: pa.RecordBatch) -> pa.BooleanArray:
        """Each column equal to the next, null-safe, NaN equal to NaN, with Arrow compute when
        all the columns have one type; value by value (as :meth:`isKeep`) when they do not.

        Examples
        --------
        >>> import pyarrow as pa
        >>> nan = float("nan")
        >>> batch = pa.record_batch({"a": [1.0, None, nan, 2.0], "b": [1.0, None, nan, None]})
        >>> Equals().keep_arrow(batch).to_pylist()
        [True, True, True, False]
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        columns = batch.columns
        if len(columns) < 2:
            return pa.repeat(pa.scalar(True), batch.num_rows)
        if any(c.type != columns[0].type for c in columns[1:]):
            rows = zip(*(c.to_pylist() for c in columns), strict=True)
            return pa.array([all(_same(v[i], v[i + 1]) for i in range(len(v) - 1)) for v in rows], pa.bool_())
        try:
            mask = None
            for a, b in itertools.pairwise(columns):
                same = pc.fill_null(pc.equal(a, b), False)
                same = pc.or_(same, pc.and_(a.is_null(), b.is_null()))
                if pa.types.is_floating(a.type):
                    same = pc.or_(same, pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False))
                mask = same if mask is None else pc.and_(mask, same)
        except pa.ArrowNotImplementedError:  # no Arrow equality for the type (lists, structs...)
            rows = zip(*(c.to_pylist() for c in columns), strict=True)
            return pa.array([all(_same(v[i], v[i + 1]) for i in range(len(v) - 1)) for v in rows], pa.bool_())
        return mask

    def spark_condition(self, columns: list[Column]) -> Column | None:
        """Each column ``<=>`` the next (null-safe equality); true for fewer than two columns."""
        from pyspark.sql import functions as F

        if len(columns) < 2:
            return F.lit(True)
        return reduce(lambda a, b: a & b,
                      [columns[i].eqNullSafe(columns[i + 1]) for i in range(len(columns) - 1)])

    def __repr__(self) -> str:
        return "Equals()"


class FilterNull(ArrowFilter):
    """Keep the tuples with no None among their input fields: Trident's ``FilterNull``.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> keep = FilterNull().isKeep
    >>> keep(TridentTuple(["cat", 3], ["word", "n"])), keep(TridentTuple(["cat", None], ["word", "n"]))
    (True, False)
    """

    #: An untyped field's None is SQL null, so the SQL form is right on untyped fields too.
    spark_reads_untyped = True

    def isKeep(self, tuple: TridentTuple) -> bool:
        return all(value is not None for value in tuple.getValues())

    def keep_arrow(self, batch: pa.RecordBatch) -> pa.BooleanArray:
        """Every column valid (not null; NaN is not null).

        Examples
        --------
        >>> import pyarrow as pa
        >>> FilterNull().keep_arrow(pa.record_batch({"w": ["a", "b", None], "n": [1, None, 3]})).to_pylist()
        [True, False, False]
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        mask = pa.repeat(pa.scalar(True), batch.num_rows)
        for column in batch.columns:
            mask = pc.and_(mask, column.is_valid())
        return mask

    def spark_condition(self, columns: list[Column]) -> Column | None:
        """Every column ``IS NOT NULL`` (NaN is not null); true for no columns."""
        from pyspark.sql import functions as F

        if not columns:
            return F.lit(True)
        return reduce(lambda a, b: a & b, [column.isNotNull() for column in columns])

    def __repr__(self) -> str:
        return "FilterNull()"


class Negate(ArrowFilter):
    """Keep exactly the tuples another filter drops: Trident's ``Negate``.

    ``prepare`` and ``cleanup`` are passed on to the inner filter. Splitting a
    stream in two with a filter and its negation puts every tuple in exactly one.

    Parameters
    ----------
    filter : BaseFilter or callable
        The filter to invert; a plain predicate ``fn(tuple) -> bool`` is accepted.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> has_null = Negate(FilterNull())
    >>> has_null.isKeep(TridentTuple(["cat", None], ["word", "n"]))
    True
    >>> Negate(lambda t: t["n"] > 2).isKeep(TridentTuple(["cat", 3], ["word", "n"]))
    False
    """

    def __init__(self, filter: BaseFilter | Callable[[TridentTuple], Any]) -> None:
        if isinstance(filter, BaseFilter):
            self.filter: BaseFilter = filter
        elif callable(filter):
            self.filter = CallableFilter(filter)
        else:
            raise WrongTypeError(f"Negate needs a filter (a BaseFilter or a function of the tuple), "
                                 f"got {filter!r}")

    def wrapped_operations(self) -> list[Any]:
        """What ``prepare`` and ``cleanup`` are passed on to (its lifecycle is the inner filter's)."""
        return [self.filter]

    def prepare(self, conf: dict[str, Any], context: OperationContext) -> None:
        self.filter.prepare(conf, context)

    def cleanup(self) -> None:
        self.filter.cleanup()

    @property
    def spark_reads_untyped(self) -> bool:
        """The inner filter's: whether its SQL form is right on untyped fields."""
        return bool(getattr(self.filter, "spark_reads_untyped", False))

    def isKeep(self, tuple: TridentTuple) -> bool:
        return not self.filter.isKeep(tuple)

    def takes_arrow_batches(self) -> bool:
        """Whether the filter it wraps takes whole Arrow batches (then so does Negate)."""
        return takes_arrow_batches(self.filter)

    def keep_arrow(self, batch: pa.RecordBatch) -> pa.BooleanArray:
        """The tuples the inner filter's ``keep_arrow`` drops (false or null).

        Examples
        --------
        >>> import pyarrow as pa
        >>> Negate(FilterNull()).keep_arrow(pa.record_batch({"w": ["a", None]})).to_pylist()
        [False, True]
        """
        import pyarrow.compute as pc

        inner = self.filter
        if not isinstance(inner, ArrowFilter):
            raise WrongTypeError(f"{self!r}: the filter it wraps has no keep_arrow; call isKeep per tuple")
        return pc.invert(mask_output(repr(inner), inner.keep_arrow(batch), batch.num_rows))

    def spark_condition(self, columns: list[Column]) -> Column | None:
        """``NOT coalesce(inner, false)`` if the inner filter has a SQL form, else None.

        A row where the inner condition is NULL is one the inner filter drops
        (SQL ``WHERE`` keeps only true), so its negation keeps it.
        """
        inner = self.filter.spark_condition(columns)
        if inner is None:
            return None
        from pyspark.sql import functions as F

        return ~F.coalesce(inner, F.lit(False))

    def __repr__(self) -> str:
        return f"Negate({self.filter!r})"


__all__ = ["Debug", "Equals", "FilterNull", "Negate"]
