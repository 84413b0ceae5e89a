"""Spark SQL type names to Spark and Arrow types: the driver declares a stage's output, tasks build it."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import DataType


def spark_type(name: str) -> DataType:
    """``"bigint"`` -> LongType(); raises a clear error for a type Spark does not know.

    Spark's parser runs in the JVM (a py4j call and a parse); each name is parsed once per
    driver, and a new DataType built from its JSON in Python for each call.
    """
    from pyspark.sql.types import _parse_datatype_json_string

    return _parse_datatype_json_string(_type_json(name))


@functools.lru_cache(maxsize=1024)
def _type_json(name: str) -> str:
    from pyspark.sql.types import _parse_datatype_string

    from trident_spark.errors import TopologyError

    try:
        return _parse_datatype_string(name).json()
    except Exception as exc:
        raise TopologyError(f"unknown field type {name!r}: use a Spark SQL type such as string, bigint, "
                            f"double, boolean, binary, array<string> ({exc})") from None


def arrow_type(dtype: DataType) -> pa.DataType:
    """The Arrow type Spark expects for ``dtype`` in ``mapInArrow`` output."""
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(dtype, timezone="UTC")
