"""``topology.explain()``: each query's Trident operations, the Spark plan of one batch, and
how each spout is read: in one task with the stream's first operations (fused), or alone and why."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trident_spark.errors import TopologyError
from trident_spark.executor.sources import QueryInput, query_input, split_sources
from trident_spark.planner.compile import BatchFrames, describe_node
from trident_spark.planner.query import QueryPlan
from trident_spark.spout.base import SpoutRun

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: explain() has no run: a DRPC stream that names no server is planned against the address run()
#: starts its server on by default (reading plans no request: nothing is contacted).
EXPLAIN_RUN = SpoutRun(None, drpc="127.0.0.1:3772")


def spark_plan(df: DataFrame, mode: str) -> str:
    """What ``df.explain(mode)`` prints, as a string."""
    jvm = df.sparkSession._jvm
    assert jvm is not None
    return str(jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), mode))


def spout_reads(spark: SparkSession, query: QueryPlan, source: QueryInput) -> dict[int, str]:
    """How the batches of ``query`` read each spout (``BatchFrames.read_plan``, from the graph:
    nothing planned), ``{id(spout node): how}``: ``"read in one task with ..."`` for a spout
    read with its first operations, else ``"read alone: why"``."""
    empty = spark.createDataFrame([], source.df.schema)
    frames = BatchFrames(query, split_sources(empty, query.spouts, source.deferred), txid=0)
    reads = {}
    for node in query.spouts:
        why = source.not_deferred.get(id(node))
        reads[id(node)] = f"read alone: {why}" if why else frames.read_plan(node)
    return reads


def fused(reads: dict[int, str]) -> bool:
    """Whether :func:`spout_reads` found every spout read with its first operations.

    Examples
    --------
    >>> fused({1: "read in one task with each(Split)"}), fused({1: "read alone: fusion is off"})
    (True, False)
    """
    return bool(reads) and all(how.startswith("read in one task") for how in reads.values())


def planned_input(spark: SparkSession, query: QueryPlan,
                  source: QueryInput) -> tuple[QueryInput, dict[int, str]]:
    """The input ``query`` runs on, and how it reads each spout: ``source`` when its spout is
    read with its first operations; else the spout read by its own source, as without fusion
    (a stage reading the partitions alone would only add a hop)."""
    if not source.deferred:
        reads = {id(n): "read alone" + (f": {w}" if (w := source.not_deferred.get(id(n))) else "")
                 for n in query.spouts}
        return source, reads
    reads = spout_reads(spark, query, source)
    if fused(reads):
        return source, reads
    return source.read_alone({k: v.removeprefix("read alone: ") for k, v in reads.items()}), reads


def explain(queries: list[QueryPlan], spark: SparkSession, mode: str) -> str:
    """Text for every query: its operations, then each output's Spark plan on an empty batch."""
    lines: list[str] = []
    for query in queries:
        lines.append(f"== query {query.name!r}: spouts {[s.stream_name for s in query.spouts]} ==")
        for node in query.nodes:
            inputs = ", ".join(str(query.nodes.index(i)) for i in node.inputs)
            lines.append(f"  [{query.nodes.index(node)}] {describe_node(node)}"
                         + (f"  <- [{inputs}]" if inputs else ""))
        source, reads = planned_input(spark, query, query_input(spark, query.spouts, EXPLAIN_RUN))
        empty = spark.createDataFrame([], source.df.schema)
        frames = BatchFrames(query, split_sources(empty, query.spouts, source.deferred), txid=0)
        for output in query.outputs:
            sink = " (collected)" if output.sinks else ""
            lines.append(f"-- Spark plan of [{query.nodes.index(output.node)}] "
                         f"{output.node.label}{sink} --")
            try:
                lines.append(spark_plan(frames.dataframe(output.node), mode).rstrip())
            except TopologyError as exc:
                lines.append(f"(no Spark plan: {exc})")
        lines.append("-- spouts and their first operations --")
        for node in query.spouts:  # as planned (with the operations it fuses), else as decided
            how = frames.fusion.get(node.stream_name) or reads[id(node)]
            lines.append(f"  spout {node.stream_name!r}: {how}")
        lines.append("")
    return "\n".join(lines)
