"""Driver side of a spout read deferred (``spout.deferred_read``): its partitions read in a
stage, alone or fused with the stream's first Python operations."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from trident_spark.executor.fused_read import SpoutReader, read_only
from trident_spark.executor.fused_read import read_then as read_then
from trident_spark.planner.context import BatchContext, arrow_stage
from trident_spark.spout.deferred_read import DeferredRead

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType


@dataclass(frozen=True)
class SpoutPartitions:
    """One batch of a spout read deferred, as the planner reads it.

    Parameters
    ----------
    partitions : DataFrame
        The batch's partitions (one row each, ``spout.deferred_read``).
    read : DeferredRead
        How to read them.
    fields : list of str
        The fields the first stage takes: the spout's, or those of the projection that follows it.

    Examples
    --------
    >>> SpoutPartitions.__dataclass_fields__.keys() == {"partitions", "read", "fields"}
    True
    """

    partitions: DataFrame
    read: DeferredRead
    fields: list[str]

    @property
    def stream(self) -> str:
        return self.read.stream

    def schema(self, columns: list[str]) -> StructType:
        """The spout DataFrame's schema of ``columns`` (their types and untyped marks), in order."""
        from pyspark.sql.types import StructType

        spout = self.read.schema()
        return StructType([spout[name] for name in columns])

    def task_reader(self, columns: list[str], schema: StructType) -> SpoutReader:
        """What a task reads the partitions with, keeping ``columns`` (of ``schema``)."""
        from pyspark.sql.pandas.types import to_arrow_schema

        arrow_schema = to_arrow_schema(schema, timezone="UTC")
        return SpoutReader(self.read.reader(), self.stream, list(columns), arrow_schema)


def read_stage(batch: SpoutPartitions, ctx: BatchContext) -> DataFrame:
    """The spout's records of the batch, read in a stage of their own (their first operation
    runs in Spark, or several read them): ``batch.fields`` as the spout's DataFrame has them."""
    schema = batch.schema(batch.fields)
    reader = batch.task_reader(batch.fields, schema)
    return arrow_stage(batch.partitions, schema, ctx, name=f"read_{batch.stream}",
                       task=partial(read_only, reader, ctx.metrics),
                       operations=[(f"the spout of stream {batch.stream!r}", reader)])


__all__ = ["SpoutPartitions", "read_stage", "read_then"]
