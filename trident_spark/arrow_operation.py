"""Arrow-batch operations: a Function, Filter and CombinerAggregator that take a whole batch at once.

Beyond Trident. Trident calls an operation once per tuple; these are called once per Arrow
batch of a partition (pyarrow arrays in, pyarrow arrays out), so the work per tuple is Arrow's
(C++), not a Python call. Their output fields are declared as for any operation (``each``'s
output fields, ``output_types``), and what they return is checked against them.

Each class also answers Trident's per-tuple call (``execute``, ``isKeep``, ``init``): the tuple
as a one-row batch through its Arrow method. So every path that calls operations tuple by tuple
(the ``full`` and ``final`` aggregation stages, state, DRPC requests answered in the driver)
gives the same results, only without the batch's speed.

This module is part of the DSL: it imports pyarrow only when an operation runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from trident_spark.errors import OperatorError
from trident_spark.fields import Fields, TridentTuple
from trident_spark.operation import BaseFilter, BaseFunction, CombinerAggregator, TridentCollector

if TYPE_CHECKING:
    import pyarrow as pa

V = TypeVar("V")

#: What ``execute_arrow`` returns: (parents, columns).
ArrowResult = tuple["pa.Array | None", "Sequence[pa.Array] | pa.RecordBatch"]

#: Declared Spark SQL type names -> Arrow types, for a None value in a one-row batch (the
#: per-tuple forms): the batch's column then has the field's type, as in a whole batch.
_NULL_TYPES = {"string": "string", "bigint": "int64", "long": "int64", "int": "int32", "integer": "int32",
               "smallint": "int16", "short": "int16", "tinyint": "int8", "byte": "int8",
               "double": "float64", "float": "float32", "real": "float32", "boolean": "bool",
               "binary": "binary"}


class ArrowFunction(BaseFunction):
    """A Function over a whole Arrow batch: ``execute_arrow(batch) -> (parents, columns)``.

    ``batch`` holds the operation's input fields (column names are the field names, in the
    order given to ``each``). Return ``(parents, columns)``: ``parents`` an integer array
    giving, for each output row, the input row it came from (None: exactly one output row per
    input row, in order), and ``columns`` one array per declared function field (a list of
    arrays or a ``RecordBatch``). Each output tuple is its parent tuple with the new fields
    appended, as with ``collector.emit``.

    Untyped input fields (declared without a type) reach ``execute_arrow`` as Arrow arrays of
    the one type their values have (all strings: ``string``); a field whose values mix types
    cannot (a clear error names it: declare its type, or use a per-tuple Function). An emitted
    column is cast to its field's declared type when that loses nothing, else the error names
    the field and the value.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import pyarrow.compute as pc
    >>> class Split(ArrowFunction):
    ...     def execute_arrow(self, batch):
    ...         lists = pc.split_pattern(batch.column(0), " ")
    ...         return pc.list_parent_indices(lists), [pc.list_flatten(lists)]
    >>> parents, (words,) = Split().execute_arrow(pa.record_batch({"line": ["a b", "c"]}))
    >>> parents.to_pylist(), words.to_pylist()
    ([0, 0, 1], ['a', 'b', 'c'])

    Called per tuple (Trident's form), the tuple is a one-row batch:

    >>> out = TridentCollector()
    >>> Split().execute(TridentTuple(["the cat"], ["line"]), out)
    >>> out.emitted
    [['the'], ['cat']]
    """

    def execute_arrow(self, batch: pa.RecordBatch) -> ArrowResult:
        """The output of a whole batch: ``(parents, columns)`` (see the class)."""
        raise NotImplementedError(f"{type(self).__name__}.execute_arrow(batch)")

    def takes_arrow_batches(self) -> bool:
        """Whether the stage hands this operation whole batches (``execute_arrow``): True."""
        return True

    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        """Trident's per-tuple call: ``tuple`` as a one-row batch through :meth:`execute_arrow`."""
        who = type(self).__name__
        parents, columns = function_output(who, self.execute_arrow(tuple_batch(tuple)), 1, None)
        count = len(columns[0]) if columns else (1 if parents is None else len(parents))
        lists = [column.to_pylist() for column in columns]
        for i in range(count):
            collector.emit([values[i] for values in lists])


class ArrowFilter(BaseFilter):
    """A Filter over a whole Arrow batch: ``keep_arrow(batch) -> pa.BooleanArray``.

    One boolean per input tuple: true keeps it; false or null drops it.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import pyarrow.compute as pc
    >>> class Short(ArrowFilter):
    ...     def keep_arrow(self, batch):
    ...         return pc.less(pc.utf8_length(batch.column("word")), 4)
    >>> Short().keep_arrow(pa.record_batch({"word": ["cat", "tiger", None]})).to_pylist()
    [True, False, None]
    >>> Short().isKeep(TridentTuple(["tiger"], ["word"]))
    False
    """

    def keep_arrow(self, batch: pa.RecordBatch) -> pa.BooleanArray:
        """Which tuples of ``batch`` to keep: one boolean per tuple (null drops it)."""
        raise NotImplementedError(f"{type(self).__name__}.keep_arrow(batch)")

    def takes_arrow_batches(self) -> bool:
        """Whether the stage hands this filter whole batches (``keep_arrow``): True."""
        return True

    def isKeep(self, tuple: TridentTuple) -> bool:
        """Trident's per-tuple call: ``tuple`` as a one-row batch through :meth:`keep_arrow`."""
        mask = mask_output(type(self).__name__, self.keep_arrow(tuple_batch(tuple)), 1)
        return bool(mask[0].as_py())


class ArrowCombinerAggregator(CombinerAggregator[V]):
    """A CombinerAggregator whose ``init`` runs over a whole batch, combined by a pyarrow
    hash aggregation.

    Override ``init_arrow(batch) -> pa.Array`` (each tuple's init value) and set
    ``arrow_combine``, the name of the pyarrow hash aggregation that does what ``combine``
    does (``"sum"``, ``"min"``, ``"max"``, ...). ``combine`` and ``zero`` are Trident's,
    written as usual: the partial aggregation at the end of a Python stage groups each batch
    with ``Table.group_by(...).aggregate([(column, arrow_combine)])``, and everything else (the
    final combine, state, the driver path) calls ``combine``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import pyarrow.compute as pc
    >>> class Letters(ArrowCombinerAggregator):
    ...     arrow_combine = "sum"
    ...     def init_arrow(self, batch):
    ...         return pc.utf8_length(batch.column(0)).cast(pa.int64())
    ...     def combine(self, a, b):
    ...         return a + b
    ...     def zero(self):
    ...         return 0
    >>> Letters().init_arrow(pa.record_batch({"word": ["cat", "ox"]})).to_pylist()
    [3, 2]
    >>> Letters().init(TridentTuple(["tiger"], ["word"]))
    5
    """

    #: The pyarrow hash aggregation that combines init values as ``combine`` does.
    arrow_combine: ClassVar[str] = ""

    def init_arrow(self, batch: pa.RecordBatch) -> pa.Array:
        """Each tuple's init value: one per row of ``batch``."""
        raise NotImplementedError(f"{type(self).__name__}.init_arrow(batch)")

    def init(self, tuple: TridentTuple) -> V:
        """Trident's per-tuple call: ``tuple`` as a one-row batch through :meth:`init_arrow`."""
        values = init_output(type(self).__name__, self.init_arrow(tuple_batch(tuple)), 1)
        result: V = values[0].as_py()
        return result


# --- what the stages and the per-tuple forms share ---------------------------------------------
def tuple_batch(t: TridentTuple) -> pa.RecordBatch:
    """One tuple as a one-row Arrow batch (a None value gets its field's declared type, if any).

    Examples
    --------
    >>> from trident_spark.fields import Fields
    >>> tuple_batch(TridentTuple(["cat", None], Fields("word", "n:bigint"))).schema.types
    [DataType(string), DataType(int64)]
    """
    import pyarrow as pa

    fields = Fields.of(t.getFields())
    types = fields.types
    arrays = []
    for name, value in zip(fields, t.getValues(), strict=False):
        type_name = _NULL_TYPES.get(types.get(name, "").lower()) if value is None else None
        arrays.append(pa.array([value], type_name) if type_name else pa.array([value]))
    return pa.RecordBatch.from_arrays(arrays, names=list(fields)[:len(arrays)])


def function_output(label: str, result: Any, rows: int,
                    fields: Sequence[str] | None) -> tuple[pa.Array | None, list[pa.Array]]:
    """``execute_arrow``'s ``result`` for a batch of ``rows`` tuples, checked: (parents, columns).

    ``fields``: the declared function fields (None: any number of columns). An error
    (:class:`~trident_spark.errors.OperatorError`) names ``label`` and says what to return.

    Examples
    --------
    >>> import pyarrow as pa
    >>> function_output("each(Upper)", (None, [pa.array(["A"])]), 2, ["word"])
    Traceback (most recent call last):
      ...
    trident_spark.errors.OperatorError: each(Upper): execute_arrow gave a column of 1 rows for ...
    """
    import pyarrow as pa

    if not isinstance(result, tuple) or len(result) != 2:
        raise OperatorError(f"{label}: execute_arrow must return a pair (parents, columns), got "
                            f"{type(result).__name__}; return (None, [array, ...]) for one output row per "
                            f"input row")
    parents, given = result
    if isinstance(given, pa.RecordBatch):
        columns = list(given.columns)
    elif isinstance(given, Sequence) and not isinstance(given, str | bytes):
        columns = list(given)
    else:
        raise OperatorError(f"{label}: execute_arrow's columns must be a list of Arrow arrays or a "
                            f"RecordBatch, got {type(given).__name__}")
    for i, column in enumerate(columns):
        if isinstance(column, pa.ChunkedArray):
            columns[i] = column = column.combine_chunks()
        if not isinstance(column, pa.Array):
            raise OperatorError(f"{label}: execute_arrow's column {i} is {type(column).__name__}, not an "
                                f"Arrow array; return pyarrow arrays (pa.array(values) makes one)")
    if fields is not None and len(columns) != len(fields):
        raise OperatorError(f"{label}: execute_arrow gave {len(columns)} column(s) for the "
                            f"{len(fields)} declared field(s) {list(fields)}; return one array per "
                            f"declared field, in order")
    if parents is None:
        out_rows = rows
    else:
        if isinstance(parents, pa.ChunkedArray):
            parents = parents.combine_chunks()
        if not isinstance(parents, pa.Array) or not pa.types.is_integer(parents.type):
            shown = parents.type if isinstance(parents, pa.Array) else type(parents).__name__
            raise OperatorError(f"{label}: execute_arrow's parents must be an integer Arrow array (each "
                                f"output row's input row) or None, got {shown}")
        if parents.null_count:
            raise OperatorError(f"{label}: execute_arrow's parents hold {parents.null_count} null(s); "
                                f"give every output row the index of its input row")
        if len(parents):
            import pyarrow.compute as pc

            bounds = pc.min_max(parents).as_py()
            if bounds["min"] < 0 or bounds["max"] >= rows:
                raise OperatorError(f"{label}: execute_arrow's parents hold "
                                    f"{bounds['min']}..{bounds['max']}, outside the batch's rows "
                                    f"0..{rows - 1}; give each output row the index of its input row")
        out_rows = len(parents)
    for name, column in zip(fields or [str(i) for i in range(len(columns))], columns, strict=True):
        if len(column) != out_rows:
            what = "input row" if parents is None else "parent"
            raise OperatorError(f"{label}: execute_arrow gave a column of {len(column)} rows for field "
                                f"{name!r}, but {out_rows} output rows (one per {what}); give every "
                                f"column one value per output row")
    return parents, columns


def mask_output(label: str, result: Any, rows: int) -> pa.Array:
    """``keep_arrow``'s ``result`` for a batch of ``rows`` tuples, checked, nulls as false.

    Examples
    --------
    >>> import pyarrow as pa
    >>> mask_output("filter(Short)", pa.array([True, None]), 2).to_pylist()
    [True, False]
    >>> mask_output("filter(Short)", pa.array([True]), 2)
    Traceback (most recent call last):
      ...
    trident_spark.errors.OperatorError: filter(Short): keep_arrow gave a mask of 1 booleans for ...
    """
    import pyarrow as pa

    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    if not isinstance(result, pa.Array) or not pa.types.is_boolean(result.type):
        shown = result.type if isinstance(result, pa.Array) else type(result).__name__
        raise OperatorError(f"{label}: keep_arrow must return a pa.BooleanArray (one boolean per tuple), "
                            f"got {shown}")
    if len(result) != rows:
        raise OperatorError(f"{label}: keep_arrow gave a mask of {len(result)} booleans for a batch of "
                            f"{rows} tuples; return one boolean per tuple")
    return result.fill_null(False) if result.null_count else result


def init_output(label: str, result: Any, rows: int) -> pa.Array:
    """``init_arrow``'s ``result`` for a batch of ``rows`` tuples, checked.

    Examples
    --------
    >>> import pyarrow as pa
    >>> init_output("count", [1, 1], 2)
    Traceback (most recent call last):
      ...
    trident_spark.errors.OperatorError: count: init_arrow must return an Arrow array (one init ...
    """
    import pyarrow as pa

    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    if not isinstance(result, pa.Array):
        raise OperatorError(f"{label}: init_arrow must return an Arrow array (one init value per tuple), "
                            f"got {type(result).__name__}")
    if len(result) != rows:
        raise OperatorError(f"{label}: init_arrow gave {len(result)} init values for a batch of {rows} "
                            f"tuples; return one per tuple")
    return result


def takes_arrow_batches(operation: object) -> bool:
    """Whether a stage hands ``operation`` whole Arrow batches (an Arrow Function or Filter that
    says so: ``Negate`` does only when the filter it wraps does).

    Examples
    --------
    >>> takes_arrow_batches(ArrowFilter()), takes_arrow_batches(BaseFilter())
    (True, False)
    """
    check = getattr(operation, "takes_arrow_batches", None)
    return isinstance(operation, ArrowFunction | ArrowFilter) and check is not None and bool(check())


def combines_in_arrow(aggregator: object) -> bool:
    """Whether ``aggregator``'s init values can be combined a batch at a time by pyarrow: it has
    ``init_arrow`` and names the hash aggregation (``arrow_combine``).

    Examples
    --------
    >>> from trident_spark.builtin import Count
    >>> combines_in_arrow(Count()), combines_in_arrow(ArrowCombinerAggregator())
    (True, False)
    """
    named = bool(getattr(aggregator, "arrow_combine", ""))
    return named and callable(getattr(aggregator, "init_arrow", None))


__all__ = ["ArrowCombinerAggregator", "ArrowFilter", "ArrowFunction", "ArrowResult", "combines_in_arrow",
           "function_output", "init_output", "mask_output", "takes_arrow_batches", "tuple_batch"]
