"""``merge`` and ``join`` of streams within one batch."""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

from trident_spark.executor.object_columns import (
    from_objects,
    is_object,
    key_column,
    marked,
    objects_where_any,
)
from trident_spark.graph import JoinNode, MergeNode
from trident_spark.joins import JoinOutFieldsMode, JoinType
from trident_spark.planner.context import BatchContext

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def merge(dfs: list[DataFrame], node: MergeNode, ctx: BatchContext) -> DataFrame:
    """The union of the inputs, by position; fields, and their types, are the first input's.

    An undeclared field untyped in any input is untyped in all (its values keep their types:
    Trident's test-split-merge merges words with their lengths). A declared field (declared
    by the merge, or by the first input) has its type in every input: untyped values are
    converted, typed columns of another type cast to it; left to Spark, the union would
    widen the types instead, e.g. string and bigint to bigint, and fail on the words.
    """
    from pyspark.sql import functions as F

    partitions = ctx.query.partitions_of(node)
    names = list(node.fields)
    declared = node.fields.declared_types  # merge(Fields("n:bigint"), ...) declares the output's types
    undeclared = [n for n in names if n not in declared]
    inputs = objects_where_any([df.toDF(*names) for df in dfs], [undeclared] * len(dfs))
    inputs = [from_objects(df, declared, node.label) for df in inputs]
    first = inputs[0]
    renamed = [first]
    for df in inputs[1:]:
        renamed.append(df.select(*(F.col(n) if df.schema[n].dataType == first.schema[n].dataType
                                   else F.col(n).cast(first.schema[n].dataType).alias(n) for n in names)))
    union = reduce(lambda a, b: a.union(b), renamed)
    if declared:
        union = union.select(*(F.col(n).cast(declared[n]).alias(n) if n in declared else F.col(n)
                               for n in names))
    return union.repartition(partitions) if partitions else union


def _how(left_required: bool, right_required: bool) -> str:
    if left_required and right_required:
        return "inner"
    if left_required:
        return "left_outer"
    if right_required:
        return "right_outer"
    return "full_outer"


def join(dfs: list[DataFrame], node: JoinNode, ctx: BatchContext) -> DataFrame:
    """Trident's join within a batch: the join fields, then each input's other fields (with
    ``mode="preserve"``: each input's fields, all of them, in its order).

    Keys compare null-safe (a null key joins a null key, as in Trident). For an
    outer input with no match, its fields are null.
    """
    from pyspark.sql import functions as F

    partitions = ctx.query.partitions_of(node)
    width = len(node.join_fields[0])
    # a join field untyped in one input is untyped in all; untyped keys match by Python
    # equality (1, 1.0 and True: executor.object_columns)
    dfs = objects_where_any(dfs, [list(on) for on in node.join_fields])
    parts: list[DataFrame] = []
    rest_columns: list[list[str]] = []
    for i, (df, on) in enumerate(zip(dfs, node.join_fields, strict=True)):
        # PRESERVE (Trident's PreservingFieldsOrderJoinerMultiReducer): every field of the input
        # in its order, join fields too, all None for an outer input without a match
        preserve = node.mode == JoinOutFieldsMode.PRESERVE
        others = list(df.columns) if preserve else [f for f in df.columns if f not in on]
        columns = [key_column(df, k).alias(f"__k{j}_{i}") for j, k in enumerate(on)]
        columns += [F.col(k).alias(f"__v{j}_{i}") for j, k in enumerate(on) if is_object(df.schema[k])]
        columns += [F.col(f).alias(f"__s{i}_{f}") for f in others]
        part = df.select(*columns)
        if partitions:
            part = part.repartition(partitions, *(f"__k{j}_{i}" for j in range(width)))
        parts.append(part)
        rest_columns.append([f"__s{i}_{f}" for f in others])
    untyped = [is_object(dfs[0].schema[k]) for k in node.join_fields[0]]

    def value(j: int, i: int) -> Column:  # a join field's value: its key, or an untyped one's value
        return F.col(f"__v{j}_{i}" if untyped[j] else f"__k{j}_{i}")

    result = parts[0]
    keys: list[Column] = [F.col(f"__k{j}_0") for j in range(width)]
    values: list[Column] = [value(j, 0) for j in range(width)]
    required = node.join_types[0] == JoinType.INNER
    for i in range(1, len(parts)):
        right = parts[i]
        condition = reduce(lambda a, b: a & b,
                           [keys[j].eqNullSafe(F.col(f"__k{j}_{i}")) for j in range(width)])
        right_required = node.join_types[i] == JoinType.INNER
        how = _how(required, right_required)
        result = result.join(right, condition, how)
        keys = [F.coalesce(keys[j], F.col(f"__k{j}_{i}")) for j in range(width)]
        values = [F.coalesce(values[j], value(j, i)) for j in range(width)]
        required = required or right_required
    out = list(node.fields)
    selected = [marked(v, out[j]) if untyped[j] else v.alias(out[j]) for j, v in enumerate(values)]
    position = width
    for names in rest_columns:
        for name in names:
            selected.append(F.col(name).alias(out[position]))
            position += 1
    return result.select(*selected)
