"""Untyped fields as Spark columns (driver side, beside the tasks' codec): which columns they are, how Spark
groups, partitions and joins them with Python equality.

An untyped field is a ``binary`` column marked with :data:`OBJECT_METADATA`; its values
are tagged by ``trident_spark.object_values``. Spark compares such columns by their *group
key* (:func:`key_column`: numbers without their type tag), so ``1``, ``1.0`` and ``True``
fall in one group, partition and join match. A group's value is the smallest tagged value
of the group (:func:`group_value`), so an int wins over an equal float or bool.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from trident_spark.object_values import BOOL, FLOAT, INT, OBJECT, OBJECT_METADATA

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType, StructField, StructType

_TO_END = 2**31 - 1  # a substring's length: to the end of the value

__all__ = ["OBJECT", "OBJECT_METADATA", "as_objects", "data_type", "from_objects", "group_value", "is_object",
           "key_column", "key_columns", "key_of", "marked", "number_rank", "object_field", "object_names",
           "objects_where_any", "struct_field"]


def object_field(name: str) -> StructField:
    """The Spark field of untyped field ``name``.

    Examples
    --------
    >>> object_field("n").dataType.simpleString()  # doctest: +SKIP
    'binary'
    """
    from pyspark.sql.types import BinaryType, StructField

    return StructField(name, BinaryType(), True, metadata=dict(OBJECT_METADATA))


def struct_field(name: str, type_name: str) -> StructField:
    """A field of type ``type_name``: a Spark SQL type, or :data:`OBJECT` for an untyped one."""
    from pyspark.sql.types import StructField

    from trident_spark.executor.column_types import spark_type

    if type_name == OBJECT:
        return object_field(name)
    return StructField(name, spark_type(type_name), True)


def data_type(type_name: str) -> DataType:
    """The Spark type of ``type_name`` (``binary`` for :data:`OBJECT`)."""
    return struct_field("_", type_name).dataType


def is_object(field: StructField) -> bool:
    """Whether ``field`` is an untyped field's column."""
    return bool(field.metadata and field.metadata.get("trident_spark") == OBJECT)


def object_names(schema: StructType, names: Iterable[str] | None = None) -> frozenset[str]:
    """The untyped columns of ``schema`` (among ``names``, if given)."""
    wanted = None if names is None else set(names)
    return frozenset(f.name for f in schema.fields if is_object(f) and (wanted is None or f.name in wanted))


def key_column(df: DataFrame, name: str) -> Column:
    """The column Spark groups, hashes and compares field ``name`` by.

    For an untyped field, the tagged value with a float's or bool's type tag made ``INT``'s, so
    the canonical text decides (``1``, ``1.0`` and ``True`` are one key); otherwise the column.
    """
    return _key(df[name], is_object(df.schema[name]))


def key_of(schema: StructType, name: str) -> Column:
    """:func:`key_column` unbound (``F.col(name)``): the same expression for every DataFrame
    of ``schema``, so a query builds it once for all its batches."""
    from pyspark.sql import functions as F

    return _key(F.col(name), is_object(schema[name]))


def _key(column: Column, untyped: bool) -> Column:
    from pyspark.sql import functions as F

    if not untyped:
        return column
    other_number = F.substring(column, 1, 1).isin(F.lit(FLOAT), F.lit(BOOL))
    return F.when(other_number, F.concat(F.lit(INT), F.substring(column, 2, _TO_END))).otherwise(column)


def key_columns(df: DataFrame, names: Iterable[str]) -> list[Column]:
    """:func:`key_column` of each of ``names``."""
    return [key_column(df, name) for name in names]


def number_rank(column: Column) -> Column:
    """An aggregate, for a group of an untyped field's ``column`` (grouped by :func:`key_column`),
    of which number type its value shows: 1 int, 2 float, 3 bool, the smallest present
    (an int before an equal float or bool); null for a group of non-numbers.

    An int, where ``min`` of the tagged values would be a binary: Spark hash-aggregates only
    fixed-width buffers, and sorts every row of the batch for a binary one.
    """
    from pyspark.sql import functions as F

    tag = F.substring(column, 1, 1)
    return F.min(F.when(tag.isin(F.lit(INT), F.lit(FLOAT), F.lit(BOOL)), tag.cast("string").cast("int")))


def group_value(key: Column, rank: Column, name: str) -> Column:
    """A group's value of untyped field ``name`` from its key and :func:`number_rank`: the key
    (the value itself, for a non-number), or for a number its text under the rank's tag."""
    from pyspark.sql import functions as F

    number = F.concat(rank.cast("string").cast("binary"), F.substring(key, 2, _TO_END))
    return marked(F.when(rank.isNotNull(), number).otherwise(key), name)


def marked(column: Column, name: str) -> Column:
    """``column`` named ``name`` and marked untyped (after an expression lost the mark)."""
    return column.alias(name, metadata=dict(OBJECT_METADATA))


def as_objects(df: DataFrame, names: Iterable[str]) -> DataFrame:
    """``df`` with the typed columns ``names`` made untyped (their values tagged), for a merge
    or join with a stream where the same field is untyped."""
    from pyspark.sql.types import StructType

    typed = [n for n in names if not is_object(df.schema[n])]
    if not typed:
        return df
    schema = StructType([object_field(f.name) if f.name in typed else f for f in df.schema.fields])
    return df.mapInArrow(_Tagger(frozenset(typed)), schema)


def objects_where_any(dfs: list[DataFrame], columns: list[list[str]]) -> list[DataFrame]:
    """``dfs`` with column ``columns[i][j]`` of every input made untyped where any input's is:
    fields that meet across streams (merge, join, multiReduce) then compare alike."""
    width = len(columns[0]) if columns else 0
    wanted = [j for j in range(width) if any(is_object(df.schema[names[j]]) for df, names in zip(dfs, columns,
                                                                                           strict=True))]
    return [as_objects(df, [names[j] for j in wanted]) for df, names in zip(dfs, columns, strict=True)]


def from_objects(df: DataFrame, types: dict[str, str], label: str) -> DataFrame:
    """``df`` with the untyped columns named in ``types`` made columns of those Spark SQL types
    (a declared type where untyped values meet it: ``merge(Fields("n:bigint"), ...)``). A value
    that does not fit fails the batch naming ``label``, the field and the value; a value for a
    string field that is not a str becomes ``str(value)``."""
    from pyspark.sql.types import StructType

    wanted = {n: t for n, t in types.items() if is_object(df.schema[n])}
    if not wanted:
        return df
    from trident_spark.executor.column_types import arrow_type

    fields = [struct_field(f.name, wanted[f.name]) if f.name in wanted else f for f in df.schema.fields]
    targets = {f.name: arrow_type(f.dataType) for f in fields if f.name in wanted}
    return df.mapInArrow(_Untagger(label, wanted, targets), StructType(fields))


class _Untagger:
    """The ``mapInArrow`` function of :func:`from_objects` (picklable)."""

    def __init__(self, label: str, types: dict[str, str], targets: dict[str, pa.DataType]) -> None:
        self.label = label
        self.types = types
        self.targets = targets

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from trident_spark.errors import FailedException
        from trident_spark.object_values import decode_column
        from trident_spark.worker_gc import settle_imports

        settle_imports()
        targets = self.targets
        for batch in batches:
            arrays = []
            for i, name in enumerate(batch.schema.names):
                if name not in targets:
                    arrays.append(batch.column(i))
                    continue
                values = decode_column(batch.column(i))
                if pa.types.is_string(targets[name]):
                    values = [v if v is None or isinstance(v, str) else str(v) for v in values]
                try:
                    arrays.append(pa.array(values, targets[name]))
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
                    raise FailedException(
                        f"{self.label}: field {name!r} is declared {self.types[name]}, and a value "
                        f"of an input where it is untyped does not fit ({exc}); declare the field "
                        f"without a type to carry any value") from None
            fields = [pa.field(n, targets[n]) if n in targets else batch.schema.field(n)
                      for n in batch.schema.names]
            yield pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


class _Tagger:
    """The ``mapInArrow`` function of :func:`as_objects` (picklable)."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from trident_spark.object_values import encode_column
        from trident_spark.worker_gc import settle_imports

        settle_imports()
        for batch in batches:
            arrays = [encode_column(batch.column(i).to_pylist()) if name in self.names else batch.column(i)
                      for i, name in enumerate(batch.schema.names)]
            fields = [pa.field(name, pa.binary()) if name in self.names else batch.schema.field(name)
                      for name in batch.schema.names]
            yield pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))
