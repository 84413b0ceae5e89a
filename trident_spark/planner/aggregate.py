"""Driver side of aggregations: Spark SQL for built-ins, Arrow stages for Python aggregators.

* Every aggregator has a Spark SQL form (Count, Sum, Min, Max): ``groupBy().agg()`` or a
  global ``agg()``; Spark does the partial aggregation.
* All CombinerAggregators: a ``partial`` stage per partition, a shuffle by the group
  fields (one partition when ungrouped), a ``final`` stage. Trident's plan. When Python
  operators feed them, the partial aggregation runs at the end of the operators' own stage
  (:class:`FusedPartial`), and Combiners with a Spark SQL merge (Count, Sum) are combined by
  Spark SQL after the shuffle; the others by the ``final`` stage.
* Otherwise: shuffle by the group fields (or to one partition), then ``full``.
* ``partitionAggregate``: ``full`` in each partition, no shuffle.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from trident_spark.errors import TopologyError
from trident_spark.executor.aggregate_stage import AggLayout, AggStep, StageMode, run_aggregate
from trident_spark.executor.column_types import arrow_type
from trident_spark.executor.instances import has_lifecycle
from trident_spark.executor.metrics import StageName
from trident_spark.executor.object_columns import (
    OBJECT,
    group_value,
    is_object,
    key_columns,
    key_of,
    number_rank,
    object_names,
    struct_field,
)
from trident_spark.executor.partial_combine import PartialCombine
from trident_spark.graph import AggregateNode, AggregationScope, AggSpec
from trident_spark.operation import Aggregator, CombinerAggregator, overrides_prepare
from trident_spark.planner.context import BatchContext, arrow_stage

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructField, StructType


def aggregate(df: DataFrame, node: AggregateNode, ctx: BatchContext) -> DataFrame:
    """The DataFrame of ``node``'s output for one batch (``ctx.metrics``: where its Python stages
    count their time; ``ctx.scope``: the run, whose instance hosts keep aggregators with a
    lifecycle; ``ctx.expressions``: the query's Spark SQL expressions, kept from batch to batch)."""
    partitions = ctx.query.partitions_of(node)
    result = _aggregate(df, node, ctx, partitions)
    if node.scope == AggregationScope.BATCH and not node.group_fields and partitions and partitions > 1:
        # A global aggregation emits in one task; with a hint, the stage still has n tasks
        # (the others empty), as Trident's global grouping does.
        from pyspark.sql import functions as F

        return result.repartitionById(partitions, F.lit(0))
    return result


def _aggregate(df: DataFrame, node: AggregateNode, ctx: BatchContext, partitions: int | None) -> DataFrame:
    group = list(node.group_fields)
    if node.scope == AggregationScope.BATCH:
        sql = _sql_aggregate(df, node, partitions, expressions=ctx.expressions)
        if sql is not None:
            return sql
        if all(isinstance(s.aggregator, CombinerAggregator) for s in node.specs):
            # the partial stage runs in the input's partitions: prepare sees their count
            partial_df = _stage(df, node, ctx, StageMode.PARTIAL, _asked_count(df, node))
            shuffled = _shuffle(partial_df, group, partitions)
            return _stage(shuffled, node, ctx, StageMode.FINAL, _count(shuffled, node, partitions, group),
                          source_schema=df.schema)
        shuffled = _shuffle(df, group, partitions)
        return _stage(shuffled, node, ctx, StageMode.FULL, _count(shuffled, node, partitions, group))
    return _stage(df, node, ctx, StageMode.FULL, _count(df, node, None, group))


def _shuffle(df: DataFrame, group: list[str], partitions: int | None) -> DataFrame:
    """Tuples of a group together: by hash of the group fields (their keys, for untyped
    ones: ``executor.object_columns``), or all in one partition."""
    if not group:
        return df.repartition(1)
    keys = key_columns(df, group)
    return df.repartition(partitions, *keys) if partitions else df.repartition(*keys)


def _count(df: DataFrame, node: AggregateNode, partitions: int | None, group: list[str]) -> int:
    """The partition count ``prepare`` sees: known, or asked of Spark if an aggregator needs it."""
    if node.scope == AggregationScope.BATCH and not group:
        return 1
    if partitions is not None:
        return partitions
    return _asked_count(df, node)


def _asked_count(df: DataFrame, node: AggregateNode) -> int:
    """``df``'s partition count if an aggregator's ``prepare`` may use it, else -1 (not asked)."""
    from trident_spark.operation import overrides_prepare

    if any(overrides_prepare(s.aggregator) for s in node.specs):
        return int(df.rdd.getNumPartitions())
    return -1


# --- Spark SQL ---------------------------------------------------------------------------
def _sql_columns(spec: AggSpec, untyped: frozenset[str]) -> list[Column] | None:
    """The aggregator's Spark SQL form, or None: it has none, or it would read the values of
    an untyped input field (tagged bytes to Spark SQL) and does not say it may
    (``spark_reads_untyped``, Count's)."""
    from pyspark.sql import functions as F

    agg = spec.aggregator
    form = getattr(agg, "spark_aggregates", None)
    if form is None:
        return None
    if untyped.intersection(spec.input_fields) and not getattr(agg, "spark_reads_untyped", False):
        return None
    bind = getattr(agg, "bind", None)
    if bind is not None:
        bind(list(spec.input_fields))
    columns: list[Column] | None = form([F.col(f) for f in spec.input_fields])
    if columns is not None and len(columns) != len(spec.function_fields):
        raise TopologyError(f"{spec.label}: gives {len(columns)} values for {len(spec.function_fields)} "
                            f"output fields {list(spec.function_fields)}")
    return columns


@dataclass(frozen=True)
class SqlAggregation:
    """An aggregation's Spark SQL expressions, unbound (``F.col``): built at a query's first
    batch and reused by the next ones (:func:`_sql_aggregate`'s ``expressions``)."""

    aliased: list[Column]  # the aggregates, named (and each ``having`` condition)
    having: list[Column]  # conditions on the aggregated rows
    outputs: list[Column]  # the output fields from the aggregated rows
    keys: list[Column]  # the group fields' keys (untyped ones: executor.object_columns)
    ranks: list[Column]  # untyped group fields: which number type each group shows
    values: list[Column]  # the group fields' values, from their keys and ranks


#: The cache of a query's aggregations, ``{(id(node), merge, schema): SqlAggregation | None}``.
Expressions = dict[tuple[int, bool, str], "SqlAggregation | None"]


def _sql_expressions(schema: StructType, node: AggregateNode, merge: bool) -> SqlAggregation | None:
    """``node``'s Spark SQL expressions over input ``schema`` (None: an aggregator has no Spark
    SQL form for these inputs)."""
    from pyspark.sql import functions as F

    if merge:
        merges = [getattr(spec.aggregator, "spark_merge", None) for spec in node.specs]
        forms: list[list[Column] | None] = [None if form is None else form([F.col(f"__partial{i}")])
                                            for i, form in enumerate(merges)]
    else:
        forms = [_sql_columns(spec, object_names(schema)) for spec in node.specs]
    if any(form is None for form in forms):
        return None
    aliased: list[Column] = []
    outputs: list[Column] = []
    having: list[Column] = []
    for i, (spec, form) in enumerate(zip(node.specs, forms, strict=True)):
        assert form is not None
        declared = spec.function_fields.declared_types
        condition = None if merge else getattr(spec.aggregator, "spark_having", None)
        condition = condition([F.col(f) for f in spec.input_fields]) if condition else None
        if condition is not None:  # a group for which the aggregator emits nothing
            aliased.append(condition.alias(f"__having{i}"))
            having.append(F.col(f"__having{i}"))
        for column, name in zip(form, spec.function_fields, strict=True):
            aliased.append(column.alias(name))
            out = F.col(name)
            if isinstance(spec.aggregator, CombinerAggregator):
                # Trident combines from zero(): a group of nulls is zero, not null
                out = F.coalesce(out, F.lit(spec.aggregator.zero()))
            if name in declared:
                out = out.cast(declared[name])
            elif merge:  # the type the aggregator gives, which its partials have (sum widens decimals)
                out = out.cast(schema[f"__partial{i}"].dataType)
            outputs.append(out.alias(name))
    group = list(node.group_fields)
    untyped = object_names(schema, group)
    keys = [key_of(schema, g) for g in group] if untyped else []
    ranks = [number_rank(F.col(g)).alias(f"__rank{i}") for i, g in enumerate(group) if g in untyped]
    values = [group_value(F.col(f"__key{i}"), F.col(f"__rank{i}"), g) if g in untyped
              else F.col(f"__key{i}").alias(g) for i, g in enumerate(group)] if untyped else []
    return SqlAggregation(aliased, having, outputs, keys, ranks, values)


def _sql_aggregate(df: DataFrame, node: AggregateNode, partitions: int | None,
                   merge: bool = False, expressions: Expressions | None = None) -> DataFrame | None:
    """``node`` as Spark SQL, or None when an aggregator has no Spark SQL form for these inputs.
    With ``merge``, ``df`` holds partial values (``__partial<i>``, from a fused partial stage),
    combined by each aggregator's ``spark_merge`` into its output type. ``expressions``: the
    query's cache of them (a batch builds only the DataFrames; the expressions are the same)."""
    from pyspark.sql import functions as F

    schema = df.schema
    key = (id(node), merge, schema.json())
    if expressions is not None and key in expressions:
        sql = expressions[key]
    else:
        sql = _sql_expressions(schema, node, merge)
        if expressions is not None:
            expressions[key] = sql
    if sql is None:
        return None
    group = list(node.group_fields)
    if sql.keys:
        # untyped group fields: grouped by their keys (1, 1.0 and True one group), each group
        # showing one of its values (executor.object_columns)
        source = df.repartition(partitions, *sql.keys) if partitions else df
        grouped = source.groupBy(*(k.alias(f"__key{i}") for i, k in enumerate(sql.keys))).agg(
            *sql.ranks, *sql.aliased)
        for condition in sql.having:
            grouped = grouped.where(condition)
        return grouped.select(*sql.values, *sql.outputs)
    if group:
        source = df.repartition(partitions, *group) if partitions else df
        result = source.groupBy(*group).agg(*sql.aliased)
    else:
        result = df.agg(*sql.aliased, F.count(F.lit(1)).alias("__rows"))
        if any(isinstance(s.aggregator, Aggregator) for s in node.specs):
            result = result.where(F.col("__rows") > 0)  # an empty batch: nothing to emit
    for condition in sql.having:
        result = result.where(condition)
    return result.select(*group, *sql.outputs)


# --- Python stages -----------------------------------------------------------------------
def _stage(df: DataFrame, node: AggregateNode, ctx: BatchContext, mode: StageMode, num_partitions: int,
           source_schema: StructType | None = None) -> DataFrame:
    """One Python stage of ``node`` (``mode``: full, partial or final); ``source_schema``: the
    aggregation's input, when ``df`` is not (a final stage reads partials)."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    source_schema = source_schema if source_schema is not None else df.schema
    group = list(node.group_fields)
    steps = _agg_steps(node)
    group_struct = [source_schema[f] for f in group]
    if mode is StageMode.PARTIAL:
        value_struct = [StructField(f"__partial{i}", BinaryType(), False) for i in range(len(steps))]
    else:
        value_struct = [field for spec in node.specs for field in output_types(spec, source_schema)]
    schema = StructType([*group_struct, *value_struct])
    types: dict[str, pa.DataType] = {f.name: arrow_type(f.dataType) for f in schema.fields}
    layout = AggLayout(mode, group, [f.name for f in schema.fields], types,
                       single_emit=not group and mode is not StageMode.PARTIAL,
                       untyped_in=object_names(df.schema),
                       untyped_out=object_names(schema))
    entry = partial(_entry, steps, layout, ctx.txid, ctx.conf, num_partitions)
    # Kept aggregators: the stage runs in the partition's instance host (executor.instances).
    kept = any(has_lifecycle(step.aggregator) for step in steps)
    name = StageName(node.label, "" if mode is StageMode.FULL else mode.value)
    return arrow_stage(df, schema, ctx, name=f"{mode}_{node.label}", task=partial(entry, ctx.metrics),
                       operations=[(step.label, step.aggregator) for step in steps],
                       kept=entry if kept else None, scope=ctx.scope(node, str(mode)) if kept else None,
                       timed_as=("aggregate", name))


def _agg_steps(node: AggregateNode) -> list[AggStep]:
    return [AggStep(node.label if len(node.specs) == 1 else f"{node.label}: {spec.label}", spec.aggregator,
                    spec.input_fields, spec.function_fields) for spec in node.specs]


def output_types(spec: AggSpec, schema: StructType) -> list[StructField]:
    """An aggregator's output fields with their types: declared (``"n:bigint"``), the
    aggregator's ``output_types``, its ``spark_types`` for these inputs (an untyped input's type
    is ``"object"``), an input field of the same name, else untyped (any Python value)."""
    agg = spec.aggregator
    input_types = [OBJECT if is_object(schema[f]) else schema[f].dataType.simpleString()
                   for f in spec.input_fields]
    declared = spec.function_fields.declared_types
    own = getattr(agg, "output_types", {}) or {}
    suggested = None
    spark_types = getattr(agg, "spark_types", None)
    if spark_types is not None:
        bind = getattr(agg, "bind", None)
        if bind is not None:
            bind(list(spec.input_fields))
        suggested = spark_types(input_types)
    fields: list[StructField] = []
    for i, name in enumerate(spec.function_fields):
        if name in declared:
            fields.append(struct_field(name, declared[name]))
        elif name in own:
            fields.append(struct_field(name, own[name]))
        elif suggested is not None and i < len(suggested) and suggested[i]:
            fields.append(struct_field(name, suggested[i]))
        elif name in schema.fieldNames():
            fields.append(schema[name])
        else:
            fields.append(struct_field(name, OBJECT))
    return fields


# --- a partial aggregation fused into the Python stage before it ----------------------------
def fusable(node: AggregateNode) -> bool:
    """Whether ``node``'s partial aggregation may run at the end of the Python stage feeding it:
    a batch aggregation of CombinerAggregators only (Trident combines those before the
    shuffle), none with a lifecycle (``prepare``/``cleanup``: those run in their own stage)."""
    return (node.scope == AggregationScope.BATCH and bool(node.specs)
            and all(isinstance(spec.aggregator, CombinerAggregator) and not has_lifecycle(spec.aggregator)
                    and not overrides_prepare(spec.aggregator) for spec in node.specs))


class FusedPartial:
    """``node``'s partial aggregation as the tail of the Python stage before it.

    The planner hands it to ``python_stage``, which calls :meth:`build` with the stage's output
    fields; then :func:`combine_partials` shuffles and combines what the stage emitted.

    Examples
    --------
    >>> from trident_spark import TridentTopology
    >>> from trident_spark.builtin import Count
    >>> from trident_spark.spout import FeederBatchSpout
    >>> stream = TridentTopology().newStream("s", FeederBatchSpout(["word"]))
    >>> node = stream.groupBy(["word"]).aggregate(Count(), ["count"]).node
    >>> fusable(node), FusedPartial(node).reads()
    (True, ['word'])
    """

    def __init__(self, node: AggregateNode) -> None:
        self.node = node
        self.label = node.label
        self.operations: list[tuple[str, Any]] = [(spec.label, spec.aggregator) for spec in node.specs]
        self.schema: StructType | None = None  # what the stage emits: set by build()
        self.source_schema: StructType | None = None  # the fields it aggregates, with their types
        self.typed = False  # partials in their own type, merged by Spark SQL; else pickled

    def reads(self) -> list[str]:
        """The fields the partial aggregation reads: the group fields, then the aggregators'
        inputs (none for one that reads no field, such as Count)."""
        names = list(self.node.group_fields)
        for spec in self.node.specs:
            if getattr(spec.aggregator, "reads_fields", True):
                names.extend(f for f in spec.input_fields if f not in names)
        return names

    def build(self, fields: list[StructField]) -> PartialCombine:
        """The executor's tail, given the stage's output fields: typed partials when every
        aggregator has a Spark SQL merge for these input types, pickled ones otherwise."""
        from pyspark.sql.types import BinaryType, StructField, StructType

        node = self.node
        self.source_schema = StructType(fields)
        types = [_partial_type(spec, self.source_schema) for spec in node.specs]
        self.typed = all(t is not None for t in types)
        values = ([struct_field(f"__partial{i}", str(t)) for i, t in enumerate(types)] if self.typed
                  else [StructField(f"__partial{i}", BinaryType(), True) for i in range(len(types))])
        self.schema = StructType([*(self.source_schema[f] for f in node.group_fields), *values])
        return PartialCombine(StageName(node.label, StageMode.PARTIAL.value), _agg_steps(node),
                              list(node.group_fields),
                              self.schema.fieldNames(),
                              {f.name: arrow_type(f.dataType) for f in self.schema.fields}, self.typed,
                              untyped_out=object_names(self.schema, node.group_fields))


def _partial_type(spec: AggSpec, schema: StructType) -> str | None:
    """The Spark type of ``spec``'s partial values when Spark SQL can merge them (the
    aggregator has ``spark_merge`` and a Spark SQL form for these inputs), else None."""
    agg = spec.aggregator
    if getattr(agg, "spark_merge", None) is None:
        return None
    present = [f for f in spec.input_fields if f in schema.fieldNames()]
    if _sql_columns(spec, object_names(schema, present)) is None:
        return None
    spark_types = getattr(agg, "spark_types", None)
    if spark_types is None:
        return None
    reads = getattr(agg, "reads_fields", True)
    suggested = spark_types([OBJECT if is_object(schema[f]) else schema[f].dataType.simpleString()
                             for f in present] if reads else [])
    return suggested[0] if suggested and suggested[0] else None


def combine_partials(df: DataFrame, fused: FusedPartial, ctx: BatchContext) -> DataFrame:
    """The aggregation's output from the partial rows a fused stage emitted (``df``): Spark SQL
    merges typed partials; pickled ones are shuffled by group to the ``final`` stage."""
    node, group = fused.node, list(fused.node.group_fields)
    partitions = ctx.query.partitions_of(node)
    result = (_sql_aggregate(df, node, partitions, merge=True, expressions=ctx.expressions) if fused.typed
              else None)
    if result is None:
        shuffled = _shuffle(df, group, partitions)
        count = _count(shuffled, node, partitions, group)
        result = _stage(shuffled, node, ctx, StageMode.FINAL, count, source_schema=fused.source_schema)
    if not group and partitions and partitions > 1:
        from pyspark.sql import functions as F

        return result.repartitionById(partitions, F.lit(0))  # as aggregate() does
    return result


def _entry(steps: list[AggStep], layout: AggLayout, txid: int, conf: dict[str, Any], num_partitions: int,
           metrics: Any, batches: Any) -> Any:
    return run_aggregate(steps, layout, txid, conf, num_partitions, batches, metrics)
