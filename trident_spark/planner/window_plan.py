"""Driver side of the window operators: the window stage of one batch.

The window's input is cut to the fields it reads, given a deterministic order (so that a
replayed batch puts the same tuples in the same windows), spread over the stage's partitions
(``parallelismHint``, else one: Trident's default parallelism) and handed to
:func:`trident_spark.executor.window_stage.run_window` in the partition's instance host, with
the batch's txid and timestamp (from Spark's offset log: the same on a replay).

The order: where the window's input comes from its spouts without a repartitioning (the
spouts replay a batch's partitions as they were), the arrival order (each tuple's partition and
position, ``monotonically_increasing_id``); after a repartitioning, whose rows Spark may deliver
in another order on a replay, the order of a hash of the tuple's values.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from trident_spark.executor.aggregate_stage import AggStep
from trident_spark.executor.column_types import arrow_type
from trident_spark.executor.object_columns import object_names
from trident_spark.executor.window_stage import ORDER, WindowStep, run_hosted, run_window
from trident_spark.graph import MergeNode, SpoutNode, WindowNode, ancestors
from trident_spark.planner.aggregate import output_types
from trident_spark.planner.context import BatchContext, arrow_stage
from trident_spark.planner.query import QueryPlan, is_stage_boundary

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def arrival_order_is_stable(query: QueryPlan, node: WindowNode) -> bool:
    """Whether the window's input reaches it from its spouts with no repartitioning on the way."""
    for upstream in ancestors([node.inputs[0]]):
        if isinstance(upstream, SpoutNode):
            if query.partitions_of(upstream):
                return False
        elif is_stage_boundary(upstream) and (not isinstance(upstream, MergeNode)
                                              or query.partitions_of(upstream)):
            return False  # a merge without a hint is a union: its partitions are its inputs'
    return True


def window_dataframe(df: DataFrame, node: WindowNode, ctx: BatchContext) -> DataFrame:
    """The DataFrame of the aggregates of the windows batch ``ctx.txid`` closes (the stage's keys
    in the windows store are the node's place in the query, stable from run to run)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    assert node.spec is not None
    spec = node.spec
    txid, conf, batch_ms, partitions = ctx.txid, ctx.conf, ctx.timestamp_ms(), ctx.query.partitions_of(node)
    stable_order = arrival_order_is_stable(ctx.query, node)
    stamp = [node.timestamp_field] if node.timestamp_field else []
    read = list(dict.fromkeys([*spec.input_fields, *stamp]))
    order = (F.monotonically_increasing_id() if stable_order
             else F.xxhash64(*[F.col(c) for c in df.columns]) if df.columns else F.lit(0))
    shaped = df.select(*[F.col(c) for c in read], order.alias(ORDER))
    n = partitions or 1
    spread = shaped.repartition(n, F.col(ORDER)) if n > 1 else shaped.repartition(1)
    shaped = spread.sortWithinPartitions(ORDER)
    fields = output_types(spec, df.schema)
    schema = StructType(fields)
    step = WindowStep(node.label, ctx.place(node), node.config, node.store_factory,
                      AggStep(node.label, spec.aggregator, spec.input_fields, spec.function_fields),
                      node.timestamp_field, node.lateness_ms, [f.name for f in fields],
                      {f.name: arrow_type(f.dataType) for f in fields},
                      untyped_in=object_names(df.schema, read), untyped_out=object_names(schema))
    # in a run, the windows store stays open (an in-memory one alive) in the partition's host
    return arrow_stage(shaped, schema, ctx, name=node.label,
                       task=partial(run_window, step, txid, batch_ms, conf, n, ctx.metrics),
                       operations=[(node.label, spec.aggregator), (node.label, node.store_factory)],
                       kept=partial(run_hosted, step, txid, batch_ms, conf, n), scope=ctx.scope(node),
                       timed_as=("aggregate", node.label))


__all__ = ["arrival_order_is_stable", "window_dataframe"]
