"""Graph to Spark: turn a chain of nodes into transformations of one batch's DataFrame.

Runs on the driver inside ``foreachBatch``; what it builds runs on executors.
Consecutive Python operators are fused into one ``mapInArrow`` stage.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING

from trident_spark.errors import TopologyError
from trident_spark.graph import EachNode, FilterNode, Node, PeekNode, ProjectNode, SpoutNode
from trident_spark.planner.python_stage import PythonStep, run_stage

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame


def python_step(node: Node) -> PythonStep | None:
    """The executor-side description of ``node``, if it is a Python operator."""
    from trident_spark.fields import Fields

    if isinstance(node, EachNode):
        assert node.function is not None
        return PythonStep(node.label, node.function, node.input_fields, node.function_fields)
    if isinstance(node, FilterNode):
        assert node.filter is not None
        return PythonStep(node.label, node.filter, node.input_fields, Fields())
    if isinstance(node, PeekNode):
        assert node.consumer is not None
        return PythonStep(node.label, node.consumer, node.fields, Fields())
    return None


def compile_chain(chain: Sequence[Node], df: DataFrame, txid: int) -> DataFrame:
    """Apply ``chain`` (spout first) to the batch DataFrame ``df``."""
    if not chain or not isinstance(chain[0], SpoutNode):
        raise TopologyError("a stream must start at topology.newStream(name, spout)")
    steps: list[PythonStep] = []
    last: Node = chain[0]
    for node in chain[1:]:
        step = python_step(node)
        if step is not None:
            steps.append(step)
        elif isinstance(node, ProjectNode):
            if steps:
                df, steps = python_stage(df, steps, last, txid), []
            df = df.select(*node.fields)
        else:
            raise TopologyError(f"{node.label}: not supported by this runner yet")
        last = node
    if steps:
        df = python_stage(df, steps, last, txid)
    return df.select(*last.fields)


def python_stage(df: DataFrame, steps: list[PythonStep], last: Node, txid: int) -> DataFrame:
    """One ``mapInArrow`` running ``steps`` per partition; output fields are ``last.fields``."""
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    input_types = {f.name: f for f in df.schema.fields}
    new_fields = {name for step in steps for name in step.function_fields}
    struct_fields = []
    arrow_types: dict[str, pa.DataType] = {}
    for name in last.fields:
        if name in new_fields:
            spark_type = _parse_datatype_string(last.fields.types[name])
            struct_fields.append(StructField(name, spark_type, True))
            arrow_types[name] = to_arrow_type(spark_type, timezone="UTC")
        else:
            struct_fields.append(input_types[name])
    fn = partial(_stage_entry, steps, list(last.fields), arrow_types, txid)
    return df.mapInArrow(fn, StructType(struct_fields))


def _stage_entry(steps: list[PythonStep], fields: list[str], types: dict[str, pa.DataType], txid: int,
                 batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    return run_stage(steps, fields, types, txid, batches)
