"""``stream.partition(grouping)``: a user grouping picks each tuple's partition.

A Python stage (``mapInArrow``) calls ``grouping(tuple, num_partitions)`` per tuple and adds the
index it returns as a column (a list of indices copies the tuple to each, as Storm's
``CustomStreamGrouping.chooseTasks`` may); ``repartitionById`` then moves every tuple to its
partition. An index outside ``[0, num_partitions)`` fails the batch naming the operator.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from trident_spark.errors import FailedException, is_int
from trident_spark.fields import Fields, TridentTuple
from trident_spark.graph import RepartitionNode
from trident_spark.planner.python_stage import MAX_TUPLE_CHARS, OperatorError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

TARGET = "__partition"


def custom_partition(df: DataFrame, node: RepartitionNode, partitions: int) -> DataFrame:
    """``df`` with each tuple in the partition(s) ``node.grouping`` chose, of ``partitions``."""
    from pyspark.sql.types import IntegerType, StructField, StructType

    from trident_spark.planner.object_columns import object_names
    from trident_spark.planner.python_plan import named
    from trident_spark.planner.shipping import shipped

    schema = StructType([*df.schema.fields, StructField(TARGET, IntegerType(), False)])
    fn = partial(choose_partitions, node.label, node.grouping, list(df.columns), partitions,
                 untyped=object_names(df.schema))
    indexed = shipped(lambda: df.mapInArrow(named(fn, node.label), schema), [(node.label, node.grouping)])
    return indexed.repartitionById(partitions, TARGET).drop(TARGET)


def choose_partitions(label: str, grouping: Any, fields: list[str], partitions: int,
                      batches: Iterator[pa.RecordBatch], untyped: frozenset[str] = frozenset(),
                      ) -> Iterator[pa.RecordBatch]:
    """Executor side: each row once per partition index ``grouping`` returns for it
    (``untyped``: the fields whose values are decoded for the tuple it sees)."""
    from trident_spark.object_values import decode_column

    names = Fields(*fields)
    index = {name: i for i, name in enumerate(fields)}
    for batch in batches:
        if batch.num_rows == 0:
            continue
        columns = [decode_column(batch.column(f)) if f in untyped else batch.column(f).to_pylist()
                   for f in fields]
        rows: list[int] = []
        targets: list[int] = []
        for row, values in enumerate(zip(*columns, strict=True)):
            t = TridentTuple(values, names, index)
            for target in _targets(label, grouping, t, partitions):
                rows.append(row)
                targets.append(target)
        if not rows:
            continue
        taken = batch.take(pa.array(rows, pa.int64()))
        yield pa.RecordBatch.from_arrays([*taken.columns, pa.array(targets, pa.int32())],
                                         names=[*fields, TARGET])


def _targets(label: str, grouping: Any, t: TridentTuple, partitions: int) -> list[int]:
    try:
        chosen = grouping(t, partitions)
    except FailedException:
        raise
    except Exception as exc:
        raise OperatorError(f"{label}: the grouping failed on tuple {repr(t)[:MAX_TUPLE_CHARS]}: "
                            f"{type(exc).__name__}: {exc}") from exc
    many = chosen if isinstance(chosen, list | tuple) else [chosen]
    for target in many:
        if not is_int(target, 0, partitions - 1):
            raise OperatorError(
                f"{label}: the grouping returned {chosen!r} for tuple {repr(t)[:MAX_TUPLE_CHARS]}; a "
                f"partition index must be an int from 0 to {partitions - 1} (grouping(tuple, "
                f"num_partitions) is called with num_partitions={partitions})")
    return list(many)


__all__ = ["choose_partitions", "custom_partition"]
