"""Driver side of fused Python operators: which nodes they are, and the ``mapInArrow`` call."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from trident_spark.executor.column_types import arrow_type
from trident_spark.executor.instances import InstanceScope, has_lifecycle, hosted
from trident_spark.executor.object_columns import is_object, object_names, struct_field
from trident_spark.executor.python_stage import PythonStep, StageTail, run_stage
from trident_spark.fields import Fields
from trident_spark.graph import EachNode, FilterNode, MapNode, Node, PeekNode
from trident_spark.operation import overrides_prepare
from trident_spark.planner.shipping import shipped

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructField, StructType


def python_step(node: Node) -> PythonStep | None:
    """The executor-side description of ``node``, if it is a per-tuple Python operator."""
    if isinstance(node, EachNode):
        return PythonStep(node.label, node.function, node.input_fields, node.function_fields)
    if isinstance(node, FilterNode):
        return PythonStep(node.label, node.filter, node.input_fields, Fields())
    if isinstance(node, PeekNode):
        return PythonStep(node.label, node.consumer, node.fields, Fields())
    if isinstance(node, MapNode):
        parent = node.inputs[0]
        return PythonStep(node.label, node.function, parent.fields, node.fields,
                          kind="flatMap" if node.flat else "map", keeps_types=node.keeps_fields)
    return None


def num_partitions(df: DataFrame, steps: list[PythonStep], known: int | None) -> int:
    """The stage's partition count for ``prepare``: the hint, else asked of Spark when an
    operation's ``prepare`` may use it (-1 when nothing needs it)."""
    if known is not None:
        return known
    if any(overrides_prepare(step.operation) for step in steps):
        return int(df.rdd.getNumPartitions())
    return -1


def python_stage(df: DataFrame, steps: list[PythonStep], last: Node | list[str], txid: int,
                 conf: dict[str, Any], partitions: int | None, metrics: Any = None,
                 scope: InstanceScope | None = None, tail: FusedTail | None = None) -> DataFrame:
    """One ``mapInArrow`` running ``steps`` per partition; output fields are ``last.fields``
    (or the given list of them: those read downstream).

    With ``scope`` (a run), a stage whose operations override ``prepare`` or ``cleanup`` runs
    in the partition's instance host, which keeps them from batch to batch (``executor.instances``).

    With a ``tail`` (built by ``tail.build(fields)`` from the stage's output fields and their
    Spark types), the stage's tuples go to the tail, a partial aggregation, and the stage
    outputs its rows (``tail.schema``) instead.
    """
    from pyspark.sql.types import StructType

    struct_fields, arrow_types = _output_fields(df, steps, last)
    output = [f.name for f in struct_fields]
    untyped = (object_names(df.schema), frozenset(f.name for f in struct_fields
                                                  if f.name in arrow_types and is_object(f)))
    n = num_partitions(df, steps, partitions)
    combine = tail.build(struct_fields) if tail is not None else None
    schema = StructType(struct_fields) if tail is None else tail.schema
    assert schema is not None, "a tail knows its schema once built"
    entry = partial(_stage_entry, steps, output, arrow_types, untyped, txid, conf, n, combine)
    if scope is not None and any(has_lifecycle(step.operation) for step in steps):
        fn = hosted(scope, entry, metrics)
    else:
        fn = partial(entry, metrics)
    stage = named(fn, "_".join(step.label for step in steps))
    operations = [(step.label, step.operation) for step in steps]
    if tail is not None:
        operations += tail.operations
    return shipped(lambda: df.mapInArrow(stage, schema), operations)


class FusedTail(Protocol):
    """A partial aggregation fused at the end of a Python stage (``planner.aggregate``)."""

    #: The stage's output: the group fields and one partial per aggregator (known once built).
    schema: StructType | None
    #: ``(label, operation)`` of each aggregator, for the pickling check.
    operations: list[tuple[str, Any]]

    def build(self, fields: list[StructField]) -> StageTail:
        """What the executor runs, given the fields the operators output (with their types)."""


def _output_fields(df: DataFrame, steps: list[PythonStep],
                   last: Node | list[str]) -> tuple[list[StructField], dict[str, pa.DataType]]:
    """The stage's output fields with their Spark types, and the Arrow types of those the
    operators produce (the others are the input's columns, passed through)."""
    input_types = {f.name: f for f in df.schema.fields}
    produced: dict[str, str] = {}
    for step in steps:
        for name in step.function_fields:
            produced[name] = step.function_fields.types[name]
    keep_types = _kept_types(steps, input_types)
    struct_fields = []
    arrow_types: dict[str, pa.DataType] = {}
    output = list(last) if isinstance(last, list) else list(last.fields)
    for name in output:
        if name in keep_types:
            field = keep_types[name]
        elif name in produced:
            field = struct_field(name, produced[name])
        else:
            struct_fields.append(input_types[name])
            continue
        struct_fields.append(field)
        arrow_types[name] = arrow_type(field.dataType)
    return struct_fields, arrow_types


def named(fn: Any, label: str) -> Any:
    """Give a stage function the operators' names: Spark shows it in plans and its UI; our errors
    leave it as data (``task_errors.reporting``)."""
    import re

    from trident_spark.task_errors import reporting

    fn = reporting(fn)
    fn.__name__ = re.sub(r"\W+", "_", label).strip("_")[:80] or "trident_stage"
    return fn


def _kept_types(steps: list[PythonStep], input_types: dict[str, Any]) -> dict[str, Any]:
    """Fields a ``map``/``flatMap`` without output fields rewrites keep their input type."""
    kept: dict[str, Any] = {}
    for step in steps:
        if step.kind in ("map", "flatMap") and step.keeps_types:
            for name in step.function_fields:
                if name in input_types:
                    kept[name] = input_types[name]
    return kept


def _stage_entry(steps: list[PythonStep], fields: list[str], types: dict[str, pa.DataType],
                 untyped: tuple[frozenset[str], frozenset[str]], txid: int, conf: dict[str, Any],
                 partitions: int, tail: StageTail | None, metrics: Any,
                 batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    return run_stage(steps, fields, types, txid, batches, conf=conf, num_partitions=partitions,
                     metrics=metrics, untyped=untyped, tail=tail)
