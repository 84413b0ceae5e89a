"""A batch's emitted tuples as the Arrow rows of the stream's schema.

A field declared with a type (``"n:bigint"``) is a plain column, each value checked
against the type; a field without one carries any Python value (a tagged binary column,
:mod:`trident_spark.object_values`), as for :class:`FeederBatchSpout`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from trident_spark.errors import InvalidArgumentError, SpoutError
from trident_spark.fields import Fields
from trident_spark.object_values import UncarriableValueError, encode_column
from trident_spark.spout.field_types import ColumnType, parse_type, quote_name


class TupleRows:
    """The stream's fields and their declared types; turns tuples into Arrow record batches.

    Examples
    --------
    >>> rows = TupleRows(Fields("word", "n:bigint"))
    >>> rows.ddl()
    '`word` binary, `n` bigint'
    >>> table = rows.table([["cat", 1]], "spout S, batch 0")
    >>> table.column("n").to_pylist()
    [1]
    """

    def __init__(self, fields: Fields) -> None:
        self.names = list(fields)
        self.declared: dict[str, ColumnType] = {}
        for name, text in fields.declared_types.items():
            try:
                self.declared[name] = parse_type(text)
            except ValueError as exc:
                raise InvalidArgumentError(f"field {name!r} has type {text!r}: {exc}") from None

    def ddl(self) -> str:
        """The stream's schema as Spark DDL (an undeclared field's tagged values are binary)."""
        return ", ".join(f"{quote_name(n)} {self.declared[n].ddl if n in self.declared else 'binary'}"
                         for n in self.names)

    def table(self, tuples: Sequence[Sequence[Any]], where: str) -> pa.Table:
        """``tuples`` as an Arrow table, one column per field; a value that does not fit its field's
        declared type (or does not pickle, undeclared) fails naming ``where``, the tuple and the field."""
        arrays = [self._column(name, [t[i] for t in tuples], where) for i, name in enumerate(self.names)]
        return pa.Table.from_arrays(arrays, names=self.names)

    def _column(self, name: str, values: list[Any], where: str) -> pa.Array:
        column_type = self.declared.get(name)
        if column_type is None:
            try:
                return encode_column(values)
            except UncarriableValueError as exc:
                raise SpoutError(f"{where}: field {name!r}: {' '.join(str(exc).split())}") from None
        for i, value in enumerate(values):
            problem = column_type.problem(value)
            if problem is not None:
                raise SpoutError(f"{where}: tuple {i}, field {name!r} (declared {column_type.ddl}): "
                                 f"{problem}; emit a value of that type, or declare the field without a type")
        if column_type.has_struct:
            values = [column_type.normalized(v) for v in values]
        try:
            return pa.array(values, type=column_type.arrow)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SpoutError(f"{where}: field {name!r} (declared {column_type.ddl}): the values cannot be "
                             f"stored as {column_type.ddl}: {exc}") from None


__all__ = ["TupleRows"]
