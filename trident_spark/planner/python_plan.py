"""Driver side of fused Python operators: which nodes they are, and their ``mapInArrow`` stage."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from trident_spark.executor.column_types import arrow_type
from trident_spark.executor.instances import has_lifecycle
from trident_spark.executor.object_columns import is_object, object_names, struct_field
from trident_spark.executor.python_stage import PythonStep, StageTail, run_stage
from trident_spark.fields import Fields
from trident_spark.graph import EachNode, FilterNode, MapNode, Node, PeekNode
from trident_spark.object_values import OBJECT
from trident_spark.operation import Consumer, overrides_prepare
from trident_spark.planner.context import BatchContext, arrow_stage
from trident_spark.planner.spout_read import SpoutPartitions, read_then

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


def python_stage(df: DataFrame, run: list[Node], ctx: BatchContext,
                 tail: FusedTail | None = None, read: SpoutPartitions | None = None) -> DataFrame:
    """The fused Python operators ``run`` (each reads the one before; ``df``: what the first
    reads) in one ``mapInArrow`` per partition, ending in ``tail``'s partial aggregation when
    there is one.

    Only what the operators read or pass on to readers is shipped to Python, and only that is
    emitted (``planner.pruning``); the output fields are otherwise the last operator's. In a run
    (``ctx.run_id``), a stage whose operations override ``prepare`` or ``cleanup`` runs in the
    partition's instance host, which keeps them from batch to batch (``executor.instances``).

    With a ``tail`` (built by ``tail.build(fields)`` from the stage's output fields and their
    Spark types), the stage's tuples go to the tail, a partial aggregation, and the stage
    outputs its rows (``tail.schema``) instead.

    With ``read`` (a spout read deferred), ``df`` is the batch's partitions: the stage reads
    them first, in the same task (``executor.fused_read``), and the operators take the spout's
    tuples (``read.fields`` of them) from there: no hop through the JVM between.
    """
    from trident_spark.planner.pruning import needed_fields
    from trident_spark.planner.query import stage_boundary

    last = run[-1]
    steps = [step for step in (python_step(n) for n in run) if step is not None]
    n = ctx.query.partitions_of(stage_boundary(run[0].inputs[0]))
    needed = tail.reads() if tail is not None else needed_fields(ctx.query, last)
    columns = read.fields if read is not None else list(df.columns)
    if needed is None or any(step.kind != "each" or isinstance(step.operation, Consumer) for step in steps):
        output: Node | list[str] = needed if tail is not None and needed is not None else last
        return _stage(df, columns, last, ctx, steps, output, n, tail, read)
    # Ship to Python only what the operators read or pass on to readers; emit only that.
    wanted = set(needed).union(*(step.input_fields for step in steps))
    # each(function, out) reads no field: still ship one column, so the stage sees every tuple
    columns = [f for f in columns if f in wanted] or columns[:1]
    if read is None:
        df = df.select(*columns)
    return _stage(df, columns, last, ctx, steps, needed, n, tail, read)


def _stage(df: DataFrame, columns: list[str], last: Node, ctx: BatchContext, steps: list[PythonStep],
           output: Node | list[str], partitions: int | None, tail: FusedTail | None,
           read: SpoutPartitions | None) -> DataFrame:
    """The ``mapInArrow`` of ``steps`` over ``columns`` of the input (read first from the
    spout's partitions with ``read``); output fields are ``output.fields`` (or the given list)."""
    from pyspark.sql.types import StructType

    schema_in = read.schema(columns) if read is not None else df.schema
    struct_fields, arrow_types = _output_fields(schema_in, steps, output)
    names = [f.name for f in struct_fields]
    untyped = (object_names(schema_in), frozenset(f.name for f in struct_fields
                                                  if f.name in arrow_types and is_object(f)))
    n = num_partitions(df, steps, partitions)
    combine = tail.build(struct_fields) if tail is not None else None
    schema = StructType(struct_fields) if tail is None else tail.schema
    assert schema is not None, "a tail knows its schema once built"
    entry: Any = partial(_stage_entry, steps, names, arrow_types, untyped, ctx.txid, ctx.conf, n, combine)
    if read is not None:
        entry = partial(read_then, read.task_reader(columns, schema_in), entry)
    kept = any(has_lifecycle(step.operation) for step in steps)
    operations = [(step.label, step.operation) for step in steps]
    if tail is not None:
        operations += tail.operations
    suffix = f"_with_spout_{read.stream}" if read is not None else ""
    return arrow_stage(df, schema, ctx, name="_".join(step.label for step in steps) + suffix,
                       task=partial(entry, ctx.metrics), operations=operations,
                       kept=entry if kept else None, scope=ctx.scope(last) if kept else None)


class FusedTail(Protocol):
    """A partial aggregation fused at the end of a Python stage (``planner.aggregate``)."""

    #: The aggregation's label (``explain()`` names it in a fused stage).
    label: str
    #: The stage's output: the group fields and one partial per aggregator (known once built).
    schema: StructType | None
    #: ``(label, operation)`` of each aggregator, for the pickling check.
    operations: list[tuple[str, Any]]

    def reads(self) -> list[str]:
        """The fields the partial aggregation reads."""

    def build(self, fields: list[StructField]) -> StageTail:
        """What the executor runs, given the fields the operators output (with their types)."""


def _output_fields(schema_in: StructType, steps: list[PythonStep],
                   last: Node | list[str]) -> tuple[list[StructField], dict[str, pa.DataType]]:
    """The stage's output fields with their Spark types, and the Arrow types of those the
    operators produce (the others are the input's columns, passed through)."""
    input_types = {f.name: f for f in schema_in.fields}
    produced: dict[str, str] = {}
    for step in steps:
        hinted = _function_types(step, input_types, produced)
        declared = step.function_fields.declared_types
        before = dict(produced)
        for i, name in enumerate(step.function_fields):
            if step.kind in ("map", "flatMap") and step.keeps_types and name in before:
                continue  # a map without output fields keeps the type the field had
            kind = step.function_fields.types[name]
            produced[name] = hinted[i] if hinted is not None and name not in declared else kind
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


def _function_types(step: PythonStep, input_types: dict[str, StructField],
                    produced: dict[str, str]) -> list[str] | None:
    """The types a built-in says it emits (``function_types``: Split's string), for fields not
    declared otherwise, when its inputs are typed: what its Spark SQL form would give them, so a
    built-in run in a Python stage changes no field's type. None otherwise."""
    hint = getattr(step.operation, "function_types", None)
    if hint is None or step.kind != "each":
        return None
    for name in step.input_fields:
        untyped = produced[name] == OBJECT if name in produced else is_object(input_types[name])
        if untyped:
            return None
    types = list(hint(len(step.function_fields)))
    return types if len(types) == len(step.function_fields) else None


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
