"""Start a topology's queries: one Spark streaming query per connected set of spouts."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trident_spark.checkpoint_files import join, mkdirs
from trident_spark.drpc.client import topology_side
from trident_spark.drpc.spout import DRPCSpout, RunServer, resolve_run_server, run_token
from trident_spark.errors import TopologyError
from trident_spark.executor.sources import fusion_enabled, query_input
from trident_spark.graph import PersistNode, StateQueryNode
from trident_spark.planner.explain import planned_input
from trident_spark.planner.query import QueryPlan
from trident_spark.runtime.batch import BatchRunner
from trident_spark.runtime.drpc.answers import DRPCResults
from trident_spark.runtime.drpc.driver_path import DirectDRPC
from trident_spark.runtime.drpc.driver_stream import why_not_direct
from trident_spark.runtime.offsets_log import check_offsets_log
from trident_spark.sink import DRPCResultSink
from trident_spark.spout.base import Spout, SpoutRun

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from trident_spark.runner import RunSettings
    from trident_spark.runtime.handle import TopologyHandle

log = logging.getLogger(__name__)

#: Triggers a DRPC query keeps (it runs every other one as fast as requests come).
ONCE_TRIGGERS = ("available_now", "availableNow", "once")


def check_not_running(queries: list[QueryPlan], spark: SparkSession) -> None:
    """A second ``run()`` of a topology whose streams still run (a notebook cell run again) is
    refused with what to do, before Spark's "query with that name is already active"."""
    active = {q.name for q in spark.streams.active}
    running = [query.name for query in queries if query.name in active]
    if running:
        raise TopologyError(
            f"this topology is running: handle.stop() first (stream {', '.join(map(repr, running))} "
            "is active in this SparkSession; each stream runs once per session)")


def start_queries(queries: list[QueryPlan], settings: RunSettings) -> TopologyHandle:
    """Check the spouts, then start every query; returns the handle over them.

    A setting ``run()`` was not given is taken from the session's ``spark.trident.*`` conf once
    the session is known (``runtime.run_conf``); one that was given is checked before Spark starts.
    The operations' code reaches the executors: ``py_files`` are shipped (``addPyFile``), and in
    local mode the modules that define operations and are not installed ship by value
    (``planner.module_shipping``)."""
    from trident_spark.outage import check_outage_budget
    from trident_spark.planner.module_shipping import add_py_files, check_py_files, ship_by_value
    from trident_spark.planner.state_plan import check_reachable, check_shared, state_factory
    from trident_spark.runtime.handle import TopologyHandle, check_progress_history
    from trident_spark.runtime.notebook_progress import show_live_progress
    from trident_spark.runtime.run_conf import resolve
    from trident_spark.runtime.session import local_session, needs_kafka_connector, require_classic

    check_progress_history(settings.progress_history)  # before Spark starts
    for query in queries:
        for spout_node in query.spouts:
            if not isinstance(spout_node.spout, Spout):  # the runtime calls the interface's methods only
                raise TopologyError(
                    f"newStream({spout_node.stream_name!r}): {spout_node.spout!r} is not a Spout; a spout "
                    "implements trident_spark.spout.Spout (fields, to_dataframe(spark); see spout/base.py)")
    for query in queries:
        check_drpc_path(query, settings.drpc_path)  # a refusal of the topology's shape comes before its state
    files = check_py_files(settings.py_files)
    check_outage_budget(settings.outage_budget)
    states = []
    for query in queries:
        for node in query.nodes:
            if isinstance(node, PersistNode | StateQueryNode):
                check_shared(node)  # before a session starts: a MemoryState cannot work on Spark
                states.append(state_factory(node))
    check_reachable(states)  # fail fast, naming the store's address
    spark = settings.spark or local_session(kafka_connector=needs_kafka_connector(
        node.spout for query in queries for node in query.spouts))
    require_classic(spark)
    given_path = settings.drpc_path
    settings = resolve(settings, spark.conf)  # the spark.trident.* conf, where run() was given nothing
    if settings.drpc_path != given_path:
        for query in queries:
            check_drpc_path(query, settings.drpc_path)
    if settings.checkpoint is None:
        raise TopologyError("run(): no checkpoint location: give run(checkpoint_location=...) or set the "
                            "Spark conf spark.trident.checkpointLocation (--conf, spark-defaults.conf)")
    outage_budget = check_outage_budget(settings.outage_budget)
    check_not_running(queries, spark)
    add_py_files(spark, files)
    if str(spark.sparkContext.master).startswith("local"):
        ship_by_value(queries)  # a test module, a notebook, a script: run with no step by the user
    for query in queries:
        for node in query.spouts:
            node.spout.check()  # fail fast on the driver: unreachable broker, unknown topic
    checkpoint = checkpoint_at(settings.checkpoint, spark)  # where Spark puts it: ours go beside
    handle = TopologyHandle(spark, checkpoint, settings.on_progress, settings.progress_history)
    handle._write_run_info(settings.trigger, [query.name for query in queries])
    run_id = uuid.uuid4().hex  # one per run, for all its queries: their kept instances end with it
    handle._on_stop.append(partial(_stop_instances, spark, run_id))
    try:
        show_live_progress(handle)  # in Jupyter: a progress table under the cell, updated per batch
        # A run that stops by itself serves no caller: its server, if it needs one, takes a free port.
        stops = settings.drpc is None and settings.trigger in ONCE_TRIGGERS
        server = _drpc_server(queries, "127.0.0.1:0" if stops else settings.drpc, settings.drpc_token, handle)
        run = LaunchedRun(settings, spark, checkpoint, handle, run_id, outage_budget, server)
        for query in queries:
            _start_query(query, run)
    except BaseException:
        handle.stop()
        raise
    return handle


@dataclass(frozen=True)
class LaunchedRun:
    """One run as its queries start: the settings, resolved, and what starting the run made.

    Handed whole to what starts each query (nothing is unpacked into parameters).

    Parameters
    ----------
    settings : RunSettings
        What ``run()`` was asked, completed from the session's ``spark.trident.*`` conf.
    spark : SparkSession
        The session the queries run in.
    checkpoint : Path or str
        The run's checkpoint, as Spark resolves it: each query's directory is beside it.
    handle : TopologyHandle
        The handle over the run's queries.
    run_id : str
        This run: its kept operation instances end with it.
    outage_budget : float
        Seconds a store or broker outage is waited out (checked).
    server : RunServer or None
        The run's DRPC server, for DRPC streams given none.

    Examples
    --------
    >>> list(LaunchedRun.__dataclass_fields__)[:3]
    ['settings', 'spark', 'checkpoint']
    """

    settings: RunSettings
    spark: SparkSession
    checkpoint: Path | str
    handle: TopologyHandle
    run_id: str
    outage_budget: float
    server: RunServer | None = None

    def spout_run(self, stream_dir: Path | str) -> SpoutRun:
        """What the spouts of the query kept in ``stream_dir`` are told of the run."""
        server = self.server
        return SpoutRun(stream_dir, self.outage_budget, drpc=server.address if server else None,
                        run_id=self.run_id, drpc_token=server.token if server else None)

    def batch_runner(self, query: QueryPlan, stream_dir: Path | str) -> BatchRunner:
        """The ``foreachBatch`` function of ``query``, whose checkpoint directory is ``stream_dir``."""
        settings, handle = self.settings, self.handle
        return BatchRunner(query, settings.conf or {}, settings.max_batch_retries, settings.retry_delay,
                           on_metrics=partial(handle._record_metrics, query.name, stage_order(query)),
                           spark_reads=partial(handle._spark_reads, query.name),
                           checkpoint=stream_dir, accept_state_loss=settings.accept_state_loss,
                           outage_budget=self.outage_budget, run_id=self.run_id)


def _start_query(query: QueryPlan, run: LaunchedRun) -> None:
    """Start ``query``: its requests answered in the driver, or its Spark streaming query."""
    from trident_spark.outage import clear_wait

    settings, handle = run.settings, run.handle
    stream_dir = join(run.checkpoint, query.name)  # a URI keeps its "//" (checkpoint_files)
    mkdirs(stream_dir)
    clear_wait(stream_dir)  # left by a run stopped while it waited
    runner = run.batch_runner(query, stream_dir)
    spout_run = run.spout_run(stream_dir)
    direct = _answered_in_driver(query, spout_run, settings)
    if direct is not None:  # no Spark query: the driver's threads answer its requests
        direct.start()
        handle._add_service(query.name, direct)
        return
    runner.drpc = DRPCResults.of(query, spout_run)
    check_offsets_log(stream_dir)  # a malformed file named here, not as a bare JSONDecodeError
    source, _ = planned_input(run.spark, query, query_input(run.spark, query.spouts, spout_run,
                                                            fuse=fusion_enabled(settings.conf)))
    runner.deferred = source.deferred
    writer = (source.df.writeStream.queryName(query.name)
              .foreachBatch(runner)
              .option("checkpointLocation", str(stream_dir)))
    # A DRPC query asks for its next request as soon as a batch ends (its source waits
    # briefly for one): a request never waits for a trigger interval.
    trigger = settings.trigger
    query_trigger = trigger if runner.drpc is None or trigger in ONCE_TRIGGERS else None
    started = _with_trigger(writer, query_trigger).start()
    runner.query_active = partial(_is_active, started)
    handle._add(query.name, started)
    if runner.drpc is not None:
        runner.drpc.start_heartbeat(runner.query_active)
        handle._on_stop.insert(0, runner.drpc.stop)


def checkpoint_at(location: Path | str, spark: SparkSession) -> Path | str:
    """The checkpoint as Spark resolves it: a URI as given, a plain path made absolute, or on
    Spark's default filesystem when that is not local (``checkpoint_files.qualify``)."""
    from trident_spark.checkpoint_files import qualify
    from trident_spark.runtime.session import default_filesystem

    try:
        return qualify(location, default_filesystem(spark))
    except ValueError as exc:
        raise TopologyError(f"run(): {exc}") from None


def check_drpc_path(query: QueryPlan, drpc_path: str) -> str | None:
    """Why a DRPC query's requests cannot be answered in the driver (None: they can, or it is no
    DRPC query); ``drpc_path="driver"`` for such a query is refused here, before anything starts."""
    if drpc_path == "spark" or not any(isinstance(node.spout, DRPCSpout) for node in query.spouts):
        return None
    outputs = [output for output in query.outputs if output.sinks]
    why = why_not_direct(query.nodes)
    if why is None and len(query.spouts) > 1:
        why = "it reads more than one spout"
    if why is None and (len(query.outputs) != 1 or len(outputs) != 1
                        or not all(isinstance(sink, DRPCResultSink) for sink in outputs[0].sinks)):
        why = "it has outputs besides its answer (collect(), a sink, another branch)"
    if why is not None and drpc_path == "driver":
        raise TopologyError(f"run(drpc_path='driver'): stream {query.name!r} cannot be answered in the "
                            f"driver: {why}; use drpc_path='spark' or 'auto'")
    return why


def _answered_in_driver(query: QueryPlan, run: SpoutRun, settings: RunSettings) -> DirectDRPC | None:
    """The driver's answerer of a DRPC query's requests (``run(drpc_path="driver"|"auto")``), or
    None: the query runs on Spark. ``"driver"`` for a stream that needs Spark is an error."""
    drpc_path = settings.drpc_path
    drpc_spouts = [node for node in query.spouts if isinstance(node.spout, DRPCSpout)]
    if drpc_path == "spark" or not drpc_spouts:
        return None
    why = check_drpc_path(query, drpc_path)
    if why is not None:
        log.info("stream %s: DRPC requests run as Spark batches: %s", query.name, why)
        return None
    outputs = [output for output in query.outputs if output.sinks]
    client = drpc_spouts[0].spout.for_run(run).client()
    requests = topology_side(client.address, client.consumer, client.token)  # no HTTP in-process
    return DirectDRPC(drpc_spouts[0].spout.function, query.nodes, outputs[0].node, requests,
                      settings.conf or {}, max_batch_retries=settings.max_batch_retries,
                      retry_delay=settings.retry_delay, stream=query.name,
                      checkpoint=run.checkpoint, outage_budget=run.outage_budget)


def _drpc_server(queries: list[QueryPlan], drpc: Any, token: str | None,
                 handle: TopologyHandle) -> RunServer | None:
    """The run's DRPC server, for DRPC streams given none: ``run(drpc=)``'s, or one started here
    (stopped with the handle); never one it did not start unless ``drpc`` names it. Said in one
    log line and in ``handle.drpc_address``."""
    if not any(isinstance(n.spout, DRPCSpout) and n.spout.address is None for q in queries for n in q.spouts):
        return None
    server = resolve_run_server(drpc, run_token(token))
    if server.started is not None:
        handle._on_stop.append(server.started.shutdown)
    log.info("DRPC streams use the DRPC server at %s, %s%s (ask it: trident-spark drpc FUNCTION ARGS "
             "--port %s)", server.address, server.how, ", with a token" if server.token else "",
             server.address.rpartition(":")[2])
    handle.drpc_address = server.address
    return server


def _stop_instances(spark: SparkSession, run_id: str) -> None:
    """On ``handle.stop()``: ``cleanup()`` the run's kept operation instances on the executors
    (best effort, see ``trident_spark.executor.instances``)."""
    from trident_spark.executor.instances import stop_run

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
