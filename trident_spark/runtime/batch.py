"""The per-batch driver: what ``foreachBatch`` does with each Trident batch (txid = batch id)."""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trident_spark import checkpoint_files as files
from trident_spark.errors import (
    FailedException,
    StateUnavailableError,
    TridentSparkError,
)
from trident_spark.executor.sources import split_sources
from trident_spark.graph import PersistNode, StateQueryNode, ancestors
from trident_spark.outage import Kind, Outage
from trident_spark.planner.compile import BatchFrames
from trident_spark.planner.query import Output, QueryPlan
from trident_spark.runtime.metrics import batch_description
from trident_spark.runtime.replayed_rows import SparkReads, with_attempts
from trident_spark.runtime.retry import RetryPolicy
from trident_spark.runtime.state_commits import (
    StateCommits,
    batch_offsets,
    check_adopted_offsets,
    first_offsets,
)
from trident_spark.runtime.stop_quiet import BatchStoppedError, quiet_py4j
from trident_spark.sink import CollectSink, DataFrameSink
from trident_spark.spout.base import BatchFeedback
from trident_spark.task_errors import mark

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark import Accumulator
    from pyspark.sql import DataFrame

    from trident_spark.runtime.drpc.answers import DRPCResults
    from trident_spark.spout.deferred_read import DeferredRead

log = logging.getLogger(__name__)

#: In a query's checkpoint directory: the id of the last batch whose state writes began. After a
#: restart, a stored txid equal to the first batch's is a replay's only if that batch is named here.
WRITES_MARKER = "trident-state-writes"

#: Outputs of one batch computed at the same time (each is a Spark job).
MAX_CONCURRENT_OUTPUTS = 4


@dataclass
class BatchRunner:
    """Runs every output of one query on a batch, replayed and waited as :class:`RetryPolicy` says.

    Called by Spark on the driver once per micro-batch, possibly again for the
    same batch id after a failure (replay): everything it does for a txid must
    leave the same result when repeated.
    """

    query: QueryPlan
    conf: dict[str, Any] = field(default_factory=dict)
    max_retries: int = 3
    retry_delay: float = 0.5
    #: Called after a batch with (batch id, the counters its tasks added: state counters and
    #: per-stage time and rows, see ``runtime.metrics``).
    on_metrics: Callable[[int, dict[Any, float]], None] | None = None
    #: The query's checkpoint directory: where the batch whose state writes began is recorded.
    checkpoint: Path | str | None = None  # the query's directory: a local path or a URI (checkpoint_files)
    #: What Spark has counted of the running batch's reads (``runtime.replayed_rows``): taken before
    #: each replay, so the batch's progress counts its rows once.
    spark_reads: Callable[[], SparkReads | None] | None = None
    #: This run of the topology: executors keep opened states (and their caches) for one run.
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    #: Seconds a batch keeps retrying a broker or store that does not answer (``run(outage_budget=)``).
    outage_budget: float = 180.0
    #: Whether the query still runs (set once it started): a wait for a broker or store ends when
    #: it was stopped. Asked of the query itself: the session foreachBatch gets is a clone.
    query_active: Callable[[], bool] | None = None
    _stats: Accumulator[dict[Any, float]] | None = field(default=None, init=False, repr=False)
    phases: list[list[Output]] = field(default_factory=list, init=False, repr=False)
    has_state: bool = field(default=False, init=False, repr=False)
    _checked_states: bool = field(default=False, init=False, repr=False)
    #: The query's Spark SQL expressions, built at its first batch and kept for the next ones.
    _expressions: dict[Any, Any] = field(default_factory=dict, init=False, repr=False)
    #: Re-base a state that lost data on the checkpoint instead of failing (``run(accept_state_loss=)``).
    accept_state_loss: bool = False
    #: The query's DRPC streams (``runtime.drpc_results``): each batch is a request, answered when
    #: it ends; a batch that fails for good fails its request and the query goes on.
    drpc: DRPCResults | None = None
    #: The query's spouts read deferred (``executor.sources.query_input``): a batch's DataFrame
    #: holds their partitions, read by the stream's first operations.
    deferred: dict[int, DeferredRead] = field(default_factory=dict)
    commits: StateCommits | None = field(default=None, init=False, repr=False)
    _first_attempt_ms: tuple[int, int] = field(default=(-1, 0), init=False, repr=False)
    #: Whether a batch of this run has finished (the first one is the spouts' warm-up).
    _warm: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        # Trident's two phases of a batch: everything that reads (stateQuery included) first,
        # then the outputs that write state, so a query never sees its own batch half written.
        writes = [any(isinstance(n, PersistNode) for n in ancestors([o.node])) for o in self.query.outputs]
        self.phases = [[o for o, w in zip(self.query.outputs, writes, strict=True) if not w],
                       [o for o, w in zip(self.query.outputs, writes, strict=True) if w]]
        self.has_state = any(isinstance(n, PersistNode | StateQueryNode) for n in self.query.nodes)
        written = [n.state for n in self.query.nodes if isinstance(n, PersistNode)]
        self.commits = StateCommits(written, self.query.name, self.checkpoint, self.accept_state_loss)

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        try:
            self._call(df, batch_id)
        except TridentSparkError as exc:  # our own errors (an outage's cause, ...) go up as they are,
            mark(exc)  # as data in the text Spark gives the handle (task_errors)
            raise
        except Exception as exc:
            if not self._stopped():
                raise
            # stop() interrupted the batch (its jobs were cancelled): not an error. Say so in one
            # short exception that py4j's logger drops; the batch has no commit and is replayed.
            log.debug("stream %s: batch %d interrupted by stop(): %s", self.query.name, batch_id, exc)
            quiet_py4j()
            raise BatchStoppedError(self.query.name, batch_id) from None

    def _call(self, df: DataFrame, batch_id: int) -> None:
        if self.drpc is None:
            self._run_batch(df, batch_id)
            return
        try:
            self._run_batch(df, batch_id)
        except Exception as exc:
            if self._stopped():
                raise
            from trident_spark.runtime.failures import translate

            # The caller gets our error's one line (the operation, its tuple, the cause), not Spark's text.
            cause = exc if isinstance(exc, TridentSparkError) else translate(self.query.name, exc)
            log.warning("stream %s: batch %d failed; its DRPC request fails: %s", self.query.name, batch_id,
                        cause)
            self.drpc.failed(batch_id, cause)
            return
        self.drpc.answered(batch_id)

    def _run_batch(self, df: DataFrame, batch_id: int) -> None:
        from trident_spark.runtime.failures import translate

        tries, reads, started = 0, None, 0.0

        def attempt() -> dict[Any, float]:
            nonlocal tries, reads, started
            if tries and self.spark_reads is not None:
                reads = self.spark_reads()  # Spark adds every attempt's reads to the batch's
            tries += 1
            started = time.monotonic()
            return self.run_once(df, batch_id)

        policy = RetryPolicy(self.query.name, self.max_retries, self.retry_delay)
        counters = policy.run(attempt, batch_id, self._outage(batch_id), unavailable=self._unavailable,
                              translate=lambda exc: translate(self.query.name, exc))
        self._after_batch(batch_id, started)
        if self.on_metrics is not None:
            try:
                self.on_metrics(batch_id, with_attempts(counters, tries, reads))
            except Exception as exc:  # metrics never fail a batch that succeeded
                log.warning("stream %s: batch %d metrics not recorded: %s", self.query.name, batch_id, exc)

    def _after_batch(self, batch_id: int, started: float) -> None:
        """Tell each spout the batch finished (``Spout.after_batch``: an adaptive spout learns its
        duration); ``started`` is ``time.monotonic()`` when its last attempt began."""
        feedback = BatchFeedback(batch_id, (time.monotonic() - started) * 1000, self.checkpoint,
                                 warmup=not self._warm)
        self._warm = True
        for node in self.query.spouts:
            node.spout.after_batch(feedback)

    def run_once(self, df: DataFrame, batch_id: int) -> dict[Any, float]:
        """One attempt at the batch: every output computed, sinks filled; returns what its
        tasks counted (``runtime.metrics``)."""
        df.sparkSession.sparkContext.setJobDescription(batch_description(self.query.name, batch_id))
        shared = len(self.query.spouts) > 1
        if shared:
            df = df.persist()  # read the spouts once for all of them
        stats = self._counters(df)
        sources = split_sources(df, self.query.spouts, self.deferred)
        frames = BatchFrames(self.query, sources, batch_id, self.conf, stats, self.run_id, self._expressions)
        frames.batch_timestamp_ms = self._batch_timestamp(batch_id)
        try:
            if self.has_state:
                replaying = self._began_writing() == batch_id
                if not self._checked_states:
                    # Keys of the batch stored ahead of it, named with the largest txid the store holds.
                    largest = self.commits.largest_txids() if self.commits else {}
                    frames.check_states_not_ahead(replaying, largest)
                    self._checked_states = True
                if self.commits:
                    # The store against the checkpoint: lost, rolled back or ahead stops the batch here.
                    self.commits.check(batch_id, replaying)
                    self._check_adoption(frames, batch_id)
                # The checkpoint's marker first, then the records: a driver killed between the two
                # replays a batch whose records never said "writing" (fine), never the other way
                # round (a record naming a batch the marker does not, taken for another history).
                self._begin_writing(batch_id)
                if self.commits:
                    self.commits.begin(batch_id)
                    frames.state_generations = self.commits.generations()
            for outputs in self.phases:
                self._run_outputs(frames, outputs, batch_id)
            if self.has_state and self.commits:
                self.commits.after_writes(batch_id, self._offsets(batch_id))
        finally:
            frames.release()
            if shared:
                df.unpersist()
        return dict(stats.value)

    def _batch_timestamp(self, batch_id: int) -> int:
        """The batch's timestamp (ms): Spark's, from its offset log, the same when the batch is
        replayed after a restart; without a checkpoint, the time of the batch's first attempt."""
        logged = batch_timestamp_ms(self.checkpoint, batch_id)
        if logged is not None:
            return logged
        if self._first_attempt_ms[0] != batch_id:
            self._first_attempt_ms = (batch_id, int(time.time() * 1000))
        return self._first_attempt_ms[1]

    def _offsets(self, batch_id: int) -> dict[str, Any]:
        return batch_offsets(self.checkpoint, batch_id, [node.stream_name for node in self.query.spouts])

    def _check_adoption(self, frames: BatchFrames, batch_id: int) -> None:
        """A state this checkpoint adopts (its record is older than the batch): refuse a batch that
        re-reads what the state already counted (one Spark job, on the first batch only)."""
        assert self.commits is not None
        adopted = self.commits.adopted_records()
        if not adopted:
            return
        first: dict[tuple[str, str], int] = {}
        for node in self.query.spouts:
            for where, offset in first_offsets(frames.spout_records(node)).items():
                first[where] = min(offset, first.get(where, offset))
        for address, record, txid_offset in adopted:
            check_adopted_offsets(address, record, self._offsets(batch_id), first, txid_offset)

    def _outage(self, batch_id: int) -> Outage:
        """The batch's outage tracker: its wait is recorded in the query's checkpoint directory,
        and ends when the query is stopped."""
        return Outage(self.outage_budget, self.query.name, f"batch {batch_id}", self.checkpoint,
                      stopped=self._stopped)

    def _stopped(self) -> bool:
        """Whether the query was stopped while the batch waits for a broker or store."""
        try:
            return self.query_active is not None and not self.query_active()
        except Exception:  # cannot tell: wait on
            return False

    def _unavailable(self, cause: BaseException) -> tuple[Kind, str]:
        """What did not answer: ``("store", its address)`` or ``("broker", the spout's address)``."""
        if isinstance(cause, StateUnavailableError):
            return "store", str(getattr(cause, "address", None) or "?")
        addresses = [node.spout.address for node in self.query.spouts if node.spout.address is not None]
        named = [a for a in addresses if a in str(cause)]
        return "broker", ", ".join(dict.fromkeys(named or addresses)) or "?"

    def _marker(self) -> Path | str | None:
        return None if self.checkpoint is None else files.join(self.checkpoint, WRITES_MARKER)

    def _began_writing(self) -> int | None:
        """The last batch whose state writes this checkpoint began (None: none, or unknown)."""
        marker = self._marker()
        try:
            return int(files.read_text(marker)) if marker is not None else None
        except (OSError, ValueError):
            return None

    def _begin_writing(self, batch_id: int) -> None:
        """Record, before any write of the batch, that its writes begin (atomically)."""
        marker = self._marker()
        if marker is None:
            return
        files.write_text(marker, str(batch_id))  # atomic: temporary file and rename, or one put

    def _counters(self, df: DataFrame) -> Accumulator[dict[Any, float]]:
        """The accumulator the batch's tasks count into, emptied for this attempt."""
        if self._stats is None:
            from trident_spark.executor.metrics import CountersParam

            self._stats = df.sparkSession.sparkContext.accumulator({}, CountersParam())
        self._stats.value = {}
        return self._stats

    def _run_outputs(self, frames: BatchFrames, outputs: list[Output], batch_id: int) -> None:
        results = [(output, frames.dataframe(output.node)) for output in outputs]
        if len(results) == 1:
            _finish(*results[0], batch_id, self.query.name)
        elif results:
            # Independent Spark jobs, run side by side; a node they share is persisted, and
            # Spark computes each cached partition once (the others wait for it).
            description = batch_description(self.query.name, batch_id)
            workers = min(MAX_CONCURRENT_OUTPUTS, len(results))
            with ThreadPoolExecutor(workers, thread_name_prefix=f"trident-{self.query.name}") as pool:
                futures = [pool.submit(_finish_described, output, result, batch_id, description,
                                       self.query.name)
                           for output, result in results]
                errors = [f.exception() for f in futures if f.exception() is not None]
            if errors:
                first = errors[0]
                assert first is not None
                raise first


def batch_timestamp_ms(checkpoint: Path | str | None, batch_id: int) -> int | None:
    """``batchTimestampMs`` of batch ``batch_id`` in Spark's offset log (``offsets/<id>``, its second
    line: the batch's metadata), logged before the batch ran; None if there is none."""
    import json

    if checkpoint is None:
        return None
    try:
        lines = files.read_text(files.join(checkpoint, "offsets", str(batch_id))).splitlines()
        value = json.loads(lines[1]).get("batchTimestampMs")
    except (OSError, IndexError, ValueError, AttributeError):
        return None
    return int(value) if isinstance(value, int | float) else None


def _finish(output: Output, result: DataFrame, batch_id: int, stream: str = "") -> None:
    """Run one output's Spark job: gather it into its sinks, or run it for its side effects."""
    with job_call_site(result, name_jobs(result, stream, batch_id, output.node.label)):
        _finish_named(output, result, batch_id)


@contextlib.contextmanager
def job_call_site(result: DataFrame, name: str) -> Iterator[None]:
    """Spark's UI names a job after its call site: within the block, ``name``.

    A PySpark action takes the first Python frame outside pyspark as its call site; inside
    ``foreachBatch``, called back from the JVM, that frame is py4j's (``call at
    .../py4j/clientserver.py:644``) for every job. PySpark's own actions leave the call site to
    the outermost one (``SCCallSiteSync``): this block is that one, and sets ours.
    """
    from pyspark.traceback_utils import SCCallSiteSync

    sc = result.sparkSession.sparkContext
    with SCCallSiteSync(sc):  # type: ignore[no-untyped-call]
        sc._jsc.setCallSite(name)  # type: ignore[union-attr]
        yield


def _finish_named(output: Output, result: DataFrame, batch_id: int) -> None:
    if not output.sinks:
        result.write.format("noop").mode("overwrite").save()
        return
    handed = [sink for sink in output.sinks if isinstance(sink, DataFrameSink)]
    if handed:
        # The user's function may run several Spark actions on it: the batch's operations (and
        # the state writes before them) run once, whatever it does.
        result = result.persist()
    try:
        collects = [sink for sink in output.sinks if isinstance(sink, CollectSink)]
        if collects:
            tuples = python_rows(result)
            for collect in collects:
                collect.record(batch_id, tuples)
        for sink in handed:
            _hand_over(sink, result, batch_id)
    finally:
        if handed:
            result.unpersist()


def _hand_over(sink: DataFrameSink, result: DataFrame, batch_id: int) -> None:
    """``stream.foreachBatch``: the batch's DataFrame, untyped fields as Spark columns, to the function."""
    from trident_spark.executor.kernel import user_failure
    from trident_spark.executor.object_columns import from_objects, object_names

    untyped = object_names(result.schema)
    df = from_objects(result.select(*sink.fields), {name: sink.types.get(name, "string") for name in untyped},
                      sink.label)
    try:
        sink.function(df, batch_id)
    except (FailedException, TridentSparkError):
        raise
    except Exception as exc:
        raise user_failure(sink.label, exc, f"for batch {batch_id}") from exc


def python_rows(df: DataFrame) -> list[dict[str, Any]]:
    """``df``'s rows as dicts of Python values, untyped fields decoded (``trident_spark.object_values``)."""
    from trident_spark.executor.object_columns import object_names
    from trident_spark.object_values import decode_column

    table = df.toArrow()
    if not table.column_names:
        return [{} for _ in range(table.num_rows)]
    untyped = object_names(df.schema)
    columns = {name: decode_column(table.column(name)) if name in untyped else table.column(name).to_pylist()
               for name in table.column_names}
    return [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def _finish_described(output: Output, result: DataFrame, batch_id: int, description: str,
                      stream: str) -> None:
    result.sparkSession.sparkContext.setJobDescription(description)  # per thread
    _finish(output, result, batch_id, stream)


def name_jobs(result: DataFrame, stream: str, batch_id: int, operator: str) -> str:
    """Name the Spark jobs and stages this thread runs next after the stream, the batch and the
    output's operator: the description ``stream: batch N: operator`` (Spark's UI shows it for
    each job and stage; :func:`~trident_spark.runtime.metrics.batch_spark_metrics` finds a
    batch's jobs by its ``stream: batch N`` start), and the call site, which Spark's UI showed
    as ``call at .../py4j/clientserver.py`` (PySpark's own actions name theirs after our line)."""
    name = f"{batch_description(stream, batch_id)}: {operator}"
    sc = result.sparkSession.sparkContext
    sc.setJobDescription(name)  # per thread
    sc.setLocalProperty("callSite.short", name)
    sc.setLocalProperty("callSite.long", name)
    return name
