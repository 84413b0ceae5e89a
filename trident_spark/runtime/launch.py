"""Start a topology's queries: one Spark streaming query per connected set of spouts."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Sequence
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

log = logging.getLogger(__name__)


def start_queries(queries: list[QueryPlan], checkpoint: Path, trigger: str | None,
                  spark: SparkSession | None, on_progress: ProgressCallback | None, conf: dict[str, Any],
                  max_batch_retries: int, retry_delay: float, *, outage_budget: float = 180.0,
                  progress_history: int = 100, accept_state_loss: bool = False,
                  py_files: Sequence[str | os.PathLike[str]] | None = None) -> TopologyHandle:
    """Check the spouts, then start every query; returns the handle over them.

    The operations' code reaches the executors: ``py_files`` are shipped (``addPyFile``), and in
    local mode the modules that define operations and are not installed ship by value
    (``planner.user_code``)."""
    from trident_spark.outage import check_outage_budget, clear_wait
    from trident_spark.planner.state_plan import check_reachable, check_shared, state_factory
    from trident_spark.planner.user_code import add_py_files, check_py_files, ship_by_value
    from trident_spark.runtime.handle import TopologyHandle, check_progress_history
    from trident_spark.runtime.session import local_session

    check_progress_history(progress_history)  # before Spark starts
    files = check_py_files(py_files)
    outage_budget = check_outage_budget(outage_budget)
    states = []
    for query in queries:
        for node in query.nodes:
            if isinstance(node, PersistNode | StateQueryNode):
                check_shared(node)  # before a session starts: a MemoryState cannot work on Spark
                states.append(state_factory(node))
    check_reachable(states)  # fail fast, naming the store's address
    spark = spark or local_session()
    add_py_files(spark, files)
    if str(spark.sparkContext.master).startswith("local"):
        ship_by_value(queries)  # a test module, a notebook, a script: run with no step by the user
    for query in queries:
        for node in query.spouts:
            check = getattr(node.spout, "check", None)
            if check is not None:
                check()  # fail fast on the driver: unreachable broker, unknown topic
    handle = TopologyHandle(spark, checkpoint, on_progress, progress_history)
    handle._write_run_info(trigger, [query.name for query in queries])
    run_id = uuid.uuid4().hex  # one per run, for all its queries: their kept instances end with it
    handle._on_stop.append(partial(_stop_instances, spark, run_id))
    try:
        for query in queries:
            (checkpoint / query.name).mkdir(parents=True, exist_ok=True)
            clear_wait(checkpoint / query.name)  # left by a run stopped while it waited
            runner = BatchRunner(query, conf, max_batch_retries, retry_delay,
                                 on_metrics=partial(handle._record_metrics, query.name, stage_order(query)),
                                 spark_reads=partial(handle._spark_reads, query.name),
                                 checkpoint=checkpoint / query.name, accept_state_loss=accept_state_loss,
                                 outage_budget=outage_budget, run_id=run_id)
            source = query_source(spark, query, checkpoint / query.name, outage_budget)
            writer = (source.writeStream.queryName(query.name)
                      .foreachBatch(runner)
                      .option("checkpointLocation", str(checkpoint / query.name)))
            started = _with_trigger(writer, trigger).start()
            runner.query_active = partial(_is_active, started)
            handle._add(query.name, started)
    except BaseException:
        handle.stop()
        raise
    return handle


def _stop_instances(spark: SparkSession, run_id: str) -> None:
    """On ``handle.stop()``: ``cleanup()`` the run's kept operation instances on the executors
    (best effort, see ``trident_spark.planner.instances``)."""
    from trident_spark.planner.instances import stop_run

    try:
        hosts, cleaned = stop_run(spark, run_id)
    except Exception as exc:  # the session may be gone; hosts also end on their own
        log.warning("run %s: kept operation instances not cleaned up on stop: %s", run_id, exc)
        return
    if hosts:
        log.info("run %s: %d operation instances cleaned up in %d instance hosts", run_id, cleaned, hosts)


def stage_order(query: QueryPlan) -> list[str]:
    """The labels of a query's operations in the order a batch meets them (stages are listed so)."""
    return [node.label for node in query.nodes]


def spout_dataframe(spark: SparkSession, node: Any, feedback_dir: Path | None = None,
                    outage_budget: float = 0.0) -> DataFrame:
    """One spout's streaming DataFrame, records it could not decode counted and dropped.

    ``feedback_dir`` is the query's checkpoint directory: an adaptive Kafka spout reads the
    driver's batch durations there (see :mod:`trident_spark.tuning.adaptive`)."""
    spout = runtime_spout(node.spout, feedback_dir, outage_budget)
    return _observed(node.stream_name, spout.to_dataframe(spark))


def runtime_spout(spout: Any, feedback_dir: Path | None = None, outage_budget: float = 0.0) -> Any:
    """The spout as the runtime runs it: a Kafka spout read by our Python source also reports
    its read time per batch (the ``source`` stage of the batch's metrics), an adaptive one
    learns where the driver leaves batch durations, and planning waits through a broker outage
    within ``outage_budget`` seconds, recording the wait in the query's checkpoint directory."""
    import copy
    import dataclasses

    from trident_spark.spout.kafka_config import KafkaSpoutConfig

    config = getattr(spout, "config", None)
    if not isinstance(config, KafkaSpoutConfig) or getattr(spout, "engine", "python") != "python":
        return spout
    spout = copy.copy(spout)
    feedback = str(feedback_dir) if feedback_dir is not None and config.adaptive else config.feedback_dir
    spout.config = dataclasses.replace(
        config, read_metrics=True, feedback_dir=feedback, outage_budget_s=outage_budget,
        outage_dir=str(feedback_dir) if feedback_dir is not None else config.outage_dir)
    return spout


def query_source(spark: SparkSession, query: QueryPlan, feedback_dir: Path | None = None,
                 outage_budget: float = 0.0) -> DataFrame:
    """The streaming input of a query: one spout's DataFrame, or several tagged and unioned
    (so merged or joined streams read in one query and share its batch ids)."""
    from pyspark.sql import functions as F

    if len(query.spouts) == 1:
        return spout_dataframe(spark, query.spouts[0], feedback_dir, outage_budget)
    parts = []
    for i, node in enumerate(query.spouts):
        df = spout_dataframe(spark, node, feedback_dir, outage_budget)
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
    return {id(node): _untyped_marked(df.where(F.col(SPOUT_TAG) == i).select(f"__s{i}.*"), node)
            for i, node in enumerate(query.spouts)}


def _untyped_marked(df: DataFrame, node: Any) -> DataFrame:
    """A spout's columns out of the union's struct with their untyped marks again (a struct
    keeps no column metadata): the spout's fields of type ``"object"``."""
    from trident_spark.object_values import OBJECT
    from trident_spark.planner.object_columns import marked

    fields = getattr(node.spout, "fields", None)
    types = fields.types if fields is not None else {}
    untyped = [name for name in df.columns if types.get(name) == OBJECT]
    if not untyped:
        return df
    return df.select(*(marked(df[name], name) if name in untyped else df[name] for name in df.columns))


def _observed(stream: str, df: DataFrame) -> DataFrame:
    """Count what the spout reports per batch (observed metrics): records it could not decode
    (then dropped) and its read time; the columns that carried them are dropped."""
    from pyspark.sql import functions as F

    from trident_spark.spout.kafka_config import READ_MS_COLUMN

    metrics = []
    if "malformed" in df.columns:
        metrics.append(F.count(F.col("malformed")).alias("malformed_records"))
    if READ_MS_COLUMN in df.columns:
        metrics.append(F.coalesce(F.sum(F.col(READ_MS_COLUMN)), F.lit(0.0)).alias("read_ms"))
    if not metrics:
        return df
    df = df.observe(f"{stream}_spout", *metrics)
    if "malformed" in df.columns:
        df = df.where(F.col("malformed").isNull()).drop("malformed")
    return df.drop(READ_MS_COLUMN)


def _is_active(query: Any) -> bool:
    return bool(query.isActive)


def _with_trigger(writer: Any, trigger: str | None) -> Any:
    if trigger is None:
        return writer
    if trigger in ("available_now", "availableNow"):
        return writer.trigger(availableNow=True)
    if trigger == "once":
        return writer.trigger(once=True)
    return writer.trigger(processingTime=trigger)
