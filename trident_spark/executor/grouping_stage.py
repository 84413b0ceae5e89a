"""Executor side of ``stream.partition(grouping)``: a user grouping picks each tuple's partition.

A Python stage (``mapInArrow``) calls ``grouping(tuple, num_partitions)`` per tuple and adds the
index it returns as a column (a list of indices copies the tuple to each, as Storm's
``CustomStreamGrouping.chooseTasks`` may); ``repartitionById`` then moves every tuple to its
partition (the driver side: ``custom_partition`` in :mod:`trident_spark.planner.partitioning`).
An index outside ``[0, num_partitions)`` fails the batch naming the operator.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from trident_spark.errors import OperatorError, is_int
from trident_spark.executor.kernel import MAX_TUPLE_CHARS, grouping_choices, tuple_views
from trident_spark.fields import Fields, TridentTuple

#: The column of each row's chosen partition index.
TARGET = "__partition"


def choose_partitions(label: str, grouping: Any, fields: list[str], partitions: int,
                      batches: Iterator[pa.RecordBatch], untyped: frozenset[str] = frozenset(),
                      ) -> Iterator[pa.RecordBatch]:
    """Each row once per partition index ``grouping`` returns for it
    (``untyped``: the fields whose values are decoded for the tuple it sees)."""
    from trident_spark.object_values import decode_column
    from trident_spark.worker_gc import settle_imports

    settle_imports()
    names = Fields(*fields)
    for batch in batches:
        if batch.num_rows == 0:
            continue
        columns = [decode_column(batch.column(f)) if f in untyped else batch.column(f).to_pylist()
                   for f in fields]
        rows: list[int] = []
        targets: list[int] = []
        tuples = tuple_views(names, columns, batch.num_rows)
        for row, chosen in enumerate(grouping_choices(label, grouping, tuples, partitions)):
            for target in _targets(label, chosen, tuples[row], partitions):
                rows.append(row)
                targets.append(target)
        if not rows:
            continue
        taken = batch.take(pa.array(rows, pa.int64()))
        yield pa.RecordBatch.from_arrays([*taken.columns, pa.array(targets, pa.int32())],
                                         names=[*fields, TARGET])


def _targets(label: str, chosen: Any, t: TridentTuple, partitions: int) -> list[int]:
    many = chosen if isinstance(chosen, list | tuple) else [chosen]
    for target in many:
        if not is_int(target, 0, partitions - 1):
            raise OperatorError(
                f"{label}: the grouping returned {chosen!r} for tuple {repr(t)[:MAX_TUPLE_CHARS]}; a "
                f"partition index must be an int from 0 to {partitions - 1} (grouping(tuple, "
                f"num_partitions) is called with num_partitions={partitions})")
    return list(many)


__all__ = ["TARGET", "choose_partitions"]
