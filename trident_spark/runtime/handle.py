"""The handle ``topology.run()`` returns: wait for, watch and stop the running streams."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trident_spark import checkpoint_files as files
from trident_spark.errors import TopologyError, check_int
from trident_spark.runtime.failures import translate
from trident_spark.runtime.metrics import batch_description, batch_spark_metrics
from trident_spark.runtime.progress import PROGRESS_FILE, RUN_FILE, BatchProgress, ProgressCallback
from trident_spark.runtime.progress_log import PROGRESS_FILE_BYTES, PROGRESS_FILES_KEPT, ProgressLog
from trident_spark.runtime.replayed_rows import SparkReads, count_once, spark_reads_so_far, take_attempts
from trident_spark.runtime.stop_quiet import quiet_job_group_warning

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)

#: Batches of progress ``handle.progress`` keeps by default: as Spark's
#: ``spark.sql.streaming.numRecentProgressUpdates``.
PROGRESS_HISTORY = 100
#: Batches whose task counters wait for their progress event; more means the events stopped
#: coming (the oldest are dropped).
PENDING_METRICS = 64

__all__ = ["PROGRESS_FILE", "PROGRESS_HISTORY", "TopologyHandle", "check_progress_history"]


def check_progress_history(value: object) -> int:
    """``run(progress_history=)``: an int >= 1, or a ``TopologyError`` saying what to give.

    Examples
    --------
    >>> check_progress_history(100)
    100
    >>> check_progress_history(0)
    Traceback (most recent call last):
    ...
    trident_spark.errors.TopologyError: run(): progress_history must be an int >= 1 (the batches of \
progress handle.progress keeps in memory, 100 by default), got 0
    """
    return check_int(value, "progress_history", where="run()", error=TopologyError,
                     note=f" (the batches of progress handle.progress keeps in memory, {PROGRESS_HISTORY} "
                          f"by default)")


def _now() -> str:
    from datetime import datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def _cores(spark: Any) -> int | None:
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # a session without a context (tests)
        return None


class TopologyHandle:
    """Running streams of one topology: one Spark streaming query per spout stream.

    Memory stays flat however long it runs: ``progress`` keeps the last ``progress_history``
    batches (Spark keeps 100 of its own), and each stream's progress file in the checkpoint
    is rotated by size (``runtime.progress_log``); nothing else is kept per batch.

    Examples
    --------
    >>> handle = topology.run(checkpoint_location="/tmp/wc")   # doctest: +SKIP
    >>> handle.processAllAvailable(); handle.stop()              # doctest: +SKIP
    """

    def __init__(self, spark: SparkSession, checkpoint: Path | str,
                 on_progress: ProgressCallback | None = None,
                 progress_history: int = PROGRESS_HISTORY, *, progress_file_bytes: int = PROGRESS_FILE_BYTES,
                 progress_files_kept: int = PROGRESS_FILES_KEPT) -> None:
        self.spark = spark
        #: The checkpoint location: a ``Path`` for a plain path, the URI string as given for a URI
        #: (``file://``, ``hdfs://``, ``s3a://`` ...; see ``trident_spark.checkpoint_files``).
        self.checkpoint: Path | str = files.checkpoint_location(checkpoint)
        self._queries: dict[str, StreamingQuery] = {}
        self._names: dict[str, str] = {}
        self._progress: deque[BatchProgress] = deque(maxlen=check_progress_history(progress_history))
        self._last_txid: dict[str, int] = {}  # each stream's last finished batch in this process
        self._delivered: dict[str, int] = {}  # each stream's last batch its callbacks have seen
        self._logs: dict[str, ProgressLog] = {}
        self._log_size = (progress_file_bytes, progress_files_kept)
        self._run_info: dict[str, Any] | None = None  # trident-run.json, once the run starts
        self._callbacks = [on_progress] if on_progress else []
        self._on_stop: list[Callable[[], None]] = []  # after the queries stop (kept instances' cleanup)
        #: The DRPC server of the run's DRPC streams given none (``host:port``), if it has any.
        self.drpc_address: str | None = None
        #: DRPC streams answered in the driver, by stream name (``run(drpc_path=)``): no Spark
        #: query; their ``stats`` count the requests answered and failed, and each one's time.
        self.drpc_direct: dict[str, Any] = {}
        self._lock = threading.Lock()
        # What a batch's tasks counted, until its progress event comes (then taken, with any older).
        self._metrics: dict[tuple[str, int], tuple[list[str], dict[Any, float]]] = {}
        self._cores = _cores(spark)
        self._listener = _ProgressListener(self)
        spark.streams.addListener(self._listener)

    # --- wiring (used by TridentTopology.run) -------------------------------------------
    def _add_service(self, stream: str, service: Any) -> None:
        """A stream served without a Spark query (a DRPC stream answered in the driver): it runs
        until :meth:`stop`."""
        self.drpc_direct[stream] = service
        self._on_stop.insert(0, service.stop)

    def _add(self, stream: str, query: StreamingQuery) -> None:
        self._queries[stream] = query
        self._names[str(query.id)] = stream

    def _record_metrics(self, stream: str, order: list[str], txid: int, counters: dict[Any, float]) -> None:
        """What a batch's tasks counted; joins the batch's progress when Spark reports it
        (``runtime.metrics``)."""
        with self._lock:
            self._metrics[(stream, txid)] = (order, counters)
            while len(self._metrics) > PENDING_METRICS:
                dropped = next(iter(self._metrics))
                del self._metrics[dropped]
                log.debug("stream %s: batch %d's progress never came; its metrics are dropped", *dropped)

    def _spark_reads(self, stream: str) -> SparkReads | None:
        """What Spark has counted so far of the batch ``stream`` is running (``runtime.replayed_rows``)."""
        query = self._queries.get(stream)
        return None if query is None else spark_reads_so_far(query)

    def _write_run_info(self, trigger: str | None, streams: list[str]) -> None:
        """``trident-run.json`` in the checkpoint: what ``trident-spark status`` tells the run by."""
        import os
        import socket

        from trident_spark.durations import trigger_millis

        self._run_info = {
            "started": _now(), "stopped": None, "pid": os.getpid(), "host": socket.gethostname(),
            "trigger": trigger, "trigger_ms": trigger_millis(trigger),
            "master": self.spark.sparkContext.master, "cores": self._cores, "streams": streams,
        }
        self._save_run_info()

    def _save_run_info(self) -> None:
        info = self._run_info
        if info is None:
            return
        target = files.join(self.checkpoint, RUN_FILE)
        try:
            files.write_text(target, json.dumps(info, indent=1))  # atomic
        except OSError as exc:
            log.warning("cannot write %s: %s", files.describe(target), exc)

    def _on_progress(self, query_id: str, progress: dict[str, Any]) -> None:
        stream = self._names.get(query_id)
        if stream is None or "addBatch" not in (progress.get("durationMs") or {}):
            return  # another query's, or an idle trigger
        txid = int(progress.get("batchId", -1))
        with self._lock:
            order, counters = self._metrics.pop((stream, txid), ([], {}))
            # Events come in order: an older batch still waiting will never get its progress.
            for key in [k for k in self._metrics if k[0] == stream and k[1] < txid]:
                del self._metrics[key]
        attempts, before = take_attempts(counters)
        if before is not None:  # replayed in this run: Spark counted every attempt's reads
            progress = count_once(progress, before)
        batch = BatchProgress.from_spark(stream, progress)
        batch.attempts = attempts
        spark = batch_spark_metrics(self.spark.sparkContext, str(progress.get("runId")),
                                    batch_description(stream, batch.txid))
        batch.add_task_metrics(counters, spark, order)
        batch.cores = self._cores
        with self._lock:
            batch.warmup = stream not in self._last_txid
            self._last_txid[stream] = max(batch.txid, self._last_txid.get(stream, batch.txid))
            self._progress.append(batch)
        try:
            self._log(stream).append(batch.to_json())
        except OSError as exc:
            log.warning("cannot append progress to %s: %s",
                        files.describe(files.join(self.checkpoint, stream, PROGRESS_FILE)), exc)
        try:
            for callback in self._callbacks:
                callback(batch)
        finally:
            with self._lock:  # delivered: what awaitTermination waits for (_wait_for_progress_events)
                self._delivered[stream] = max(batch.txid, self._delivered.get(stream, batch.txid))

    def _log(self, stream: str) -> ProgressLog:
        found = self._logs.get(stream)
        if found is None:
            found = self._logs[stream] = ProgressLog(files.join(self.checkpoint, stream), *self._log_size)
        return found

    # --- public ------------------------------------------------------------------------
    @property
    def queries(self) -> dict[str, StreamingQuery]:
        """The Spark queries, by stream name."""
        return dict(self._queries)

    @property
    def progress(self) -> list[BatchProgress]:
        """The last finished batches of every stream, in completion order: at most
        ``run(progress_history=)`` of them (100 by default); ``on_progress`` sees every batch,
        and ``CHECKPOINT/<stream>/trident-progress.jsonl`` (rotated) keeps a longer history."""
        with self._lock:
            return list(self._progress)

    def on_progress(self, callback: ProgressCallback) -> None:
        """Call ``callback(BatchProgress)`` on the driver after every batch."""
        self._callbacks.append(callback)

    def processAllAvailable(self) -> None:
        """Block until every stream has processed all data available now (tests, demos)."""
        for stream, query in self._queries.items():
            try:
                query.processAllAvailable()
            except Exception as exc:
                raise translate(stream, exc) from exc
        self._wait_for_progress_events()

    def awaitTermination(self, timeout: float | None = None) -> bool:
        """Wait until every stream stops; True if they all did within ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for stream, query in self._queries.items():
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                # awaitTermination takes seconds as a float, whatever its stub says
                done = query.awaitTermination(left)  # type: ignore[arg-type]
            except Exception as exc:
                raise translate(stream, exc) from exc
            if left is not None and not done:
                return False
        if not self._queries:  # only streams answered in the driver: they end with stop()
            for service in self.drpc_direct.values():
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not service.wait(left):
                    return False
        self._wait_for_progress_events()
        return True

    def exception(self) -> BaseException | None:
        """The first stream failure, as a trident-spark error; None while all are healthy."""
        for stream, query in self._queries.items():
            failure = query.exception()
            if failure is not None:
                return translate(stream, failure)
        return None

    @property
    def isActive(self) -> bool:
        return (any(q.isActive for q in self._queries.values())
                or any(not service.wait(0) for service in self.drpc_direct.values()))

    def stop(self) -> None:
        """Stop every stream (a running batch is interrupted and will be replayed on restart)."""
        if self._run_info is not None and self._run_info["stopped"] is None:
            self._run_info["stopped"] = _now()
            self._save_run_info()
        if self._queries:
            try:  # stopping a query warns of a job group with no job: not a problem (stop_quiet)
                quiet_job_group_warning(self.spark)
            except Exception as exc:  # the session is gone: nothing will log
                log.debug("job group warning not quieted: %s", exc)
        for query in self._queries.values():
            try:
                query.stop()
            except Exception as exc:  # a failed query cannot be stopped twice
                log.debug("stopping %s: %s", query.name, exc)
        hooks, self._on_stop = self._on_stop, []
        for hook in hooks:
            hook()
        try:
            self.spark.streams.removeListener(self._listener)
        except Exception as exc:
            log.debug("removing progress listener: %s", exc)

    def __repr__(self) -> str:
        streams = [*self._queries, *self.drpc_direct]
        with self._lock:
            batches = len(self._progress)
        plural = "" if batches == 1 else "es"
        return (f"TopologyHandle(streams={streams!r}, {self._status()}, {batches} batch{plural}, "
                f"checkpoint={str(self.checkpoint)!r})")

    def _status(self) -> str:
        try:
            return "running" if self.isActive else "stopped"
        except Exception:  # the session is gone
            return "stopped"

    def _repr_html_(self) -> str:
        """One row per stream in Jupyter: running or not, its last batch, rows, time, input rate."""
        from html import escape

        with self._lock:
            last: dict[str, BatchProgress] = {p.stream: p for p in self._progress}
        head = "".join(f"<th>{h}</th>" for h in ("stream", "status", "last batch", "rows", "duration",
                                                  "input rows/s"))
        rows = []
        for stream in [*self._queries, *self.drpc_direct]:
            query = self._queries.get(stream)
            try:
                status = "running" if (query.isActive if query else self.isActive) else "stopped"
            except Exception:  # the session is gone
                status = "stopped"
            batch = last.get(stream)
            cells = [stream, status, "-", "-", "-", "-"] if batch is None else [
                stream, status, str(batch.txid), f"{batch.rows:,}", f"{batch.duration_ms:,} ms",
                "-" if batch.input_rows_per_second is None else f"{batch.input_rows_per_second:,.0f}"]
            rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
        caption = f"<caption>checkpoint {escape(str(self.checkpoint))}</caption>"
        return f"<table>{caption}<tr>{head}</tr>{''.join(rows)}</table>"

    def __enter__(self) -> TopologyHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait_for_progress_events(self, idle_timeout: float = 20.0) -> None:
        # Progress events reach the listener asynchronously, and on a busy driver it can lag
        # several batches behind: wait for the last batch's, for as long as events keep coming
        # (each one seen gives another ``idle_timeout`` seconds). On a loaded 2-core machine one
        # event took over 5 s: `--available-now` then ended before printing its last batch.
        for stream, query in self._queries.items():
            # The last batch that ran: the very last progress may be one with no batch (no data)
            recent = [*(query.recentProgress or []), query.lastProgress]
            ran = [p for p in recent if p and "addBatch" in (p.get("durationMs") or {})]
            if not ran:
                continue
            txid = max(p["batchId"] for p in ran)
            deadline = time.monotonic() + idle_timeout
            seen = -2
            while time.monotonic() < deadline:
                with self._lock:
                    reached = self._delivered.get(stream, -1)
                if reached >= txid:
                    break
                if reached != seen:
                    seen, deadline = reached, time.monotonic() + idle_timeout
                time.sleep(0.02)


def _listener_base() -> type:
    from pyspark.sql.streaming.listener import StreamingQueryListener

    return StreamingQueryListener


class _ProgressListener(_listener_base()):  # type: ignore[misc]
    """The handle's listener: each batch's progress, as the JSON Spark writes of it.

    PySpark's own bridge turns every event into Python objects field by field, one py4j round
    trip each: about 450 per batch's progress event (its sources, sinks, durations and
    metrics), on the driver, for every batch. This one asks the JVM for the progress's JSON
    (two round trips) and ignores the other events, which the handle does not use.
    """

    def __init__(self, handle: TopologyHandle) -> None:
        self.handle = handle

    @property
    def _jlistener(self) -> Any:
        """What ``spark.streams.addListener`` registers (and ``removeListener`` removes)."""
        from pyspark import SparkContext

        if not hasattr(self, "_jlistenerobj"):
            jvm = SparkContext._jvm
            assert jvm is not None
            wrapper = jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper
            self._jlistenerobj = wrapper(_JsonProgressBridge(self.handle))
        return self._jlistenerobj

    # The listener interface (not called: the bridge above calls the handle).
    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        import json

        self.handle._on_progress(str(event.progress.id), json.loads(event.progress.json))

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass


class _JsonProgressBridge:
    """The Java listener interface, implemented over py4j: a progress event's JSON to the handle."""

    def __init__(self, handle: TopologyHandle) -> None:
        self.handle = handle

    def onQueryStarted(self, jevent: Any) -> None:
        pass

    def onQueryProgress(self, jevent: Any) -> None:
        import json

        progress = json.loads(jevent.progress().json())
        self.handle._on_progress(str(progress.get("id")), progress)

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        pass

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]
