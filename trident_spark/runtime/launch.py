"""Start a topology's queries: one Spark streaming query per connected set of spouts."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trident_spark.graph import PersistNode, StateQueryNode
from trident_spark.planner.query import QueryPlan
from trident_spark.runtime.batch import BatchRunner
from trident_spark.runtime.progress import ProgressCallback

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from trident_spark.runtime.handle import TopologyHandle

SPOUT_TAG = "__spout"


def start_queries(queries: list[QueryPlan], checkpoint: Path, trigger: str | None,
                  spark: SparkSession | None, on_progress: ProgressCallback | None, conf: dict[str, Any],
                  max_batch_retries: int, retry_delay: float) -> TopologyHandle:
    """Check the spouts, then start every query; returns the handle over them."""
    from trident_spark.planner.state_plan import check_reachable, check_shared, state_factory
    from trident_spark.runtime.handle import TopologyHandle
    from trident_spark.runtime.session import local_session

    states = []
    for query in queries:
        for node in query.nodes:
            if isinstance(node, PersistNode | StateQueryNode):
                check_shared(node)  # before a session starts: a MemoryState cannot work on Spark
                states.append(state_factory(node))
    check_reachable(states)  # fail fast, naming the store's address
    spark = spark or local_session()
    for query in queries:
        for node in query.spouts:
            check = getattr(node.spout, "check", None)
            if check is not None:
                check()  # fail fast on the driver: unreachable broker, unknown topic
    handle = TopologyHandle(spark, checkpoint, on_progress)
    try:
        for query in queries:
            (checkpoint / query.name).mkdir(parents=True, exist_ok=True)
            runner = BatchRunner(query, conf, max_batch_retries, retry_delay,
                                 on_state_stats=partial(handle._record_state_stats, query.name),
                                 checkpoint=checkpoint / query.name)
            writer = (query_source(spark, query).writeStream.queryName(query.name)
                      .foreachBatch(runner)
                      .option("checkpointLocation", str(checkpoint / query.name)))
            handle._add(query.name, _with_trigger(writer, trigger).start())
    except BaseException:
        handle.stop()
        raise
    return handle


def spout_dataframe(spark: SparkSession, node: Any) -> DataFrame:
    """One spout's streaming DataFrame, records it could not decode counted and dropped."""
    return _without_malformed(node.stream_name, node.spout.to_dataframe(spark))


def query_source(spark: SparkSession, query: QueryPlan) -> DataFrame:
    """The streaming input of a query: one spout's DataFrame, or several tagged and unioned
    (so merged or joined streams read in one query and share its batch ids)."""
    from pyspark.sql import functions as F

    if len(query.spouts) == 1:
        return spout_dataframe(spark, query.spouts[0])
    parts = []
    for i, node in enumerate(query.spouts):
        df = spout_dataframe(spark, node)
        parts.append(df.select(F.lit(i).alias(SPOUT_TAG), F.struct(*df.columns).alias(f"__s{i}")))
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part, allowMissingColumns=True)
    return union


def split_sources(df: DataFrame, query: QueryPlan) -> dict[int, DataFrame]:
    """Each spout's tuples of one batch of ``query_source``."""
    from pyspark.sql import functions as F

    if len(query.spouts) == 1:
        return {id(query.spouts[0]): df}
    return {id(node): df.where(F.col(SPOUT_TAG) == i).select(f"__s{i}.*")
            for i, node in enumerate(query.spouts)}


def _without_malformed(stream: str, df: DataFrame) -> DataFrame:
    """Count records the spout could not decode (observed metrics), then drop them."""
    if "malformed" not in df.columns:
        return df
    from pyspark.sql import functions as F

    counted = df.observe(f"{stream}_spout", F.count(F.col("malformed")).alias("malformed_records"))
    return counted.where(F.col("malformed").isNull()).drop("malformed")


def _with_trigger(writer: Any, trigger: str | None) -> Any:
    if trigger is None:
        return writer
    if trigger in ("available_now", "availableNow"):
        return writer.trigger(availableNow=True)
    if trigger == "once":
        return writer.trigger(once=True)
    return writer.trigger(processingTime=trigger)
