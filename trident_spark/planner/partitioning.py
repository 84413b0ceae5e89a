"""Trident's repartitioning operations as Spark repartitions of the batch DataFrame.

| Trident             | Spark                                                          |
|---------------------|----------------------------------------------------------------|
| shuffle             | ``repartition(n)`` (round-robin)                               |
| partitionBy(f)      | ``repartition(n, f)`` (hash)                                   |
| global, batchGlobal | ``repartition(1)``; with a hint, n partitions, all rows in 0   |
| broadcast           | every tuple copied to each of ``n`` partitions (by id)         |
| localOrShuffle      | nothing (``repartition(n)`` if a parallelism hint asks)        |
| identityPartition   | nothing: partition i stays i (with a hint n: ``i mod n``)      |
| partition(grouping) | a Python stage computes each tuple's index, ``repartitionById``|

``n`` is the ``parallelismHint`` of the stage that follows, else Spark's default.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from trident_spark.errors import TopologyError
from trident_spark.graph import RepartitionKind, RepartitionNode
from trident_spark.planner.context import BatchContext, arrow_stage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def default_parallelism(df: DataFrame) -> int:
    return int(df.sparkSession.sparkContext.defaultParallelism)


def repartition(df: DataFrame, node: RepartitionNode, ctx: BatchContext) -> DataFrame:
    """``df`` repartitioned as ``node`` says, into its stage's ``parallelismHint`` when given."""
    partitions = ctx.query.partitions_of(node)
    kind = node.kind
    if kind == RepartitionKind.SHUFFLE:
        return df.repartition(partitions or default_parallelism(df))
    if kind == RepartitionKind.PARTITION_BY:
        from trident_spark.executor.object_columns import key_columns

        keys = key_columns(df, node.key_fields)  # untyped: 1, 1.0 and True to one partition
        return df.repartition(partitions, *keys) if partitions else df.repartition(*keys)
    if kind in (RepartitionKind.GLOBAL, RepartitionKind.BATCH_GLOBAL):
        if partitions and partitions > 1:
            # Trident's GlobalGrouping: the whole batch to one task of the stage; its other
            # tasks (partitions) still run, with no tuples.
            from pyspark.sql import functions as F

            return df.repartitionById(partitions, F.lit(0))
        return df.repartition(1)
    if kind == RepartitionKind.BROADCAST:
        return broadcast(df, partitions or default_parallelism(df))
    if kind == RepartitionKind.LOCAL_OR_SHUFFLE:
        return df.repartition(partitions) if partitions else df
    if kind == RepartitionKind.IDENTITY:
        if not partitions:
            return df
        from pyspark.sql import functions as F

        # Trident's IdentityGrouping: task i sends to task i (its groups get one parallelism)
        return df.repartitionById(partitions, F.pmod(F.spark_partition_id(), F.lit(partitions)))
    if kind == RepartitionKind.CUSTOM:
        return custom_partition(df, node, ctx, partitions or default_parallelism(df))
    raise TopologyError(f"{node.label}: unknown repartitioning {kind!r}")


def custom_partition(df: DataFrame, node: RepartitionNode, ctx: BatchContext, partitions: int) -> DataFrame:
    """``df`` with each tuple in the partition(s) ``node.grouping`` chose, of ``partitions``."""
    from pyspark.sql.types import IntegerType, StructField, StructType

    from trident_spark.executor.grouping_stage import TARGET, choose_partitions
    from trident_spark.executor.object_columns import object_names

    schema = StructType([*df.schema.fields, StructField(TARGET, IntegerType(), False)])
    fn = partial(choose_partitions, node.label, node.grouping, list(df.columns), partitions,
                 untyped=object_names(df.schema))
    indexed = arrow_stage(df, schema, ctx, name=node.label, task=fn, operations=[(node.label, node.grouping)])
    return indexed.repartitionById(partitions, TARGET).drop(TARGET)


def broadcast(df: DataFrame, partitions: int) -> DataFrame:
    """Every row in each of ``partitions`` partitions (one copy per partition)."""
    from pyspark.sql import functions as F

    replicas = df.sparkSession.range(partitions).select(F.col("id").cast("int").alias("__replica"))
    copied = df.crossJoin(replicas)
    # Copy i goes to partition i, and there are ``partitions`` partitions even for an empty batch
    # (range partitioning would sample the data: no rows, one partition).
    return copied.repartitionById(partitions, "__replica").drop("__replica")
