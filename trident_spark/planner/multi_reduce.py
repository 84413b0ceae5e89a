"""Driver side of ``topology.multiReduce``: several streams' tuples of one batch through one reducer.

Each input is tagged with its stream index, its group values and its input fields (a
struct), the inputs are unioned, then brought together: all in one partition for a
MultiReducer, by hash of the group values for a GroupedMultiReducer. The executor side is
:mod:`trident_spark.executor.multi_reduce_stage`.
"""

from __future__ import annotations

from functools import partial, reduce
from typing import TYPE_CHECKING

from trident_spark.executor.instances import has_lifecycle
from trident_spark.executor.multi_reduce_stage import STREAM, MultiReduceStep, run_hosted, run_multi_reduce
from trident_spark.graph import MultiReduceNode
from trident_spark.operation import overrides_prepare
from trident_spark.planner.context import BatchContext, arrow_stage

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def multi_reduce(dfs: list[DataFrame], node: MultiReduceNode, ctx: BatchContext) -> DataFrame:
    """The DataFrame of what ``node``'s reducer emits for this batch (in a run, the run's instance
    hosts keep a reducer with a lifecycle from batch to batch, as Trident's task does)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    from trident_spark.executor.column_types import arrow_type
    from trident_spark.executor.object_columns import (
        is_object,
        key_columns,
        object_names,
        objects_where_any,
        struct_field,
    )

    txid, conf, partitions = ctx.txid, ctx.conf, ctx.query.partitions_of(node)
    width = len(node.group_fields[0])
    grouped = width > 0
    dfs = objects_where_any(dfs, [list(group) for group in node.group_fields])
    first = dfs[0].schema
    parts = []
    for i, (df, inputs, group) in enumerate(zip(dfs, node.input_fields, node.group_fields, strict=True)):
        columns = [F.lit(i).cast("int").alias(STREAM)]
        for j, name in enumerate(group):
            column = F.col(name)
            wanted = first[node.group_fields[0][j]].dataType
            if df.schema[name].dataType != wanted:  # group values meet across streams: one type
                column = column.cast(wanted)
            columns.append(column.alias(f"__g{j}"))  # an untyped one keeps its mark
        columns.append(F.struct(*(F.col(f) for f in inputs)).alias(f"__in{i}"))
        parts.append(df.select(*columns))
    union = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)
    keys = key_columns(union, [f"__g{j}" for j in range(width)])  # untyped: 1, 1.0 and True together
    if grouped:
        together = union.repartition(partitions, *keys) if partitions else union.repartition(*keys)
    else:
        together = union.repartition(1)  # one reducer sees the whole batch
    struct = []
    for j, name in enumerate(node.fields):
        if j < width and name not in node.fields.declared_types:
            group_field = first[node.group_fields[0][j]]
            struct.append(StructField(name, group_field.dataType, True, metadata=group_field.metadata))
        else:
            struct.append(struct_field(name, node.fields.types[name]))
    step = MultiReduceStep(node.label, node.reducer, grouped, [list(f) for f in node.input_fields],
                           list(node.group_fields[0]), list(node.fields),
                           {f.name: arrow_type(f.dataType) for f in struct},
                           untyped_inputs=[object_names(df.schema, inputs)
                                           for df, inputs in zip(dfs, node.input_fields, strict=True)],
                           untyped_out=frozenset(f.name for f in struct if is_object(f)),
                           untyped_groups=frozenset(j for j in range(width)
                                                    if is_object(first[node.group_fields[0][j]])))
    if grouped:
        n = partitions or (int(together.rdd.getNumPartitions()) if overrides_prepare(node.reducer) else -1)
    else:
        n = 1
    kept = has_lifecycle(node.reducer)
    return arrow_stage(together, StructType(struct), ctx, name=node.label,
                       task=partial(run_multi_reduce, step, len(dfs), txid, conf, n),
                       operations=[(node.label, node.reducer)],
                       kept=partial(run_hosted, step, len(dfs), txid, conf, n) if kept else None,
                       scope=ctx.scope(node) if kept else None, timed_as=("aggregate", node.label))


__all__ = ["multi_reduce"]
