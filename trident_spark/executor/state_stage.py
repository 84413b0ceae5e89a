"""Executor side of state operations: one partition of a batch against its state.

``persist`` hands the partition's tuples to a StateUpdater (``partitionPersist``,
and ``persistentAggregate`` through Trident's map updaters) with the state's
txid bound to the batch; ``query`` calls a QueryFunction's ``batchRetrieve``
once for the partition, then ``execute`` per tuple.

States are opened where they are used and kept per process, with their LRU
cache, for the next batches. A persist into a state with a cache runs in the
partition's instance host (``planner.state_plan.keeps_cache``), so the process,
and its cache, stay the partition's from batch to batch; should a key's partition
still reach another process (a partition moved to another executor), every write
is conditional on the version read: a stale cache entry loses its write, is
re-read and recomputed (see ``trident_spark.state.cache``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard

import pyarrow as pa

from trident_spark.executor.instances import task_instances
from trident_spark.executor.kernel import STATE_PASSES, call, declared_rows, query_state, tuple_views
from trident_spark.executor.metrics import StageClock, StageName
from trident_spark.executor.python_stage import partition_index, to_arrow_column
from trident_spark.fields import Fields, TridentTuple
from trident_spark.object_values import decode_column
from trident_spark.operation import Operation, OperationContext, ReportedErrors, TridentCollector
from trident_spark.state import BatchState, MapState, StateSource
from trident_spark.state.keys import GLOBAL_KEY, encode_keys
from trident_spark.state.map import MAP_KINDS
from trident_spark.state.state_api import make_state
from trident_spark.worker_gc import gc_paused, settle_imports

#: States opened in this process, by their settings: the run and store generation each was
#: opened for, and the state.
_OPENED: dict[bytes, tuple[str, str | None, Any]] = {}


def opened_state(factory: Any, run_id: str = "", generation: str | None = None, *,
                 conf: dict[str, Any] | None = None, partition: int = 0, num_partitions: int = 1) -> Any:
    """The state ``factory`` opens, opened once per process (a Python worker, an instance host) and run.

    Its cache lives as long as the run (one ``topology.run``) and the store's generation: a new
    run opens the state afresh, and so does a write whose ``generation`` (the store's commit
    record epoch, and the accepted losses, as the driver checked them before the batch; see
    ``runtime.state_commits``) is not the one the cache was filled under. So nothing cached
    before a state was reset, emptied or rolled back is trusted, not even for a skip.
    ``generation=None`` (reads) takes the state as it is opened.

    A built-in store's factory opens one map state for every partition (``open()``); a user's own
    (Trident's ``StateFactory``) makes each partition's state with ``makeState(conf, metrics,
    partition, num_partitions)`` (Storm's) or ``makeState(conf, partition, num_partitions)``, a map
    state or a plain ``State``.

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> factory = MemoryState.opaque(name="doc-opened")
    >>> first = opened_state(factory, "run-1", "epoch-a")
    >>> opened_state(factory, "run-1", "epoch-a") is first, opened_state(factory, "run-1") is first
    (True, True)
    >>> opened_state(factory, "run-1", "epoch-b") is first    # the store was replaced: a fresh cache
    False
    """
    from pyspark import cloudpickle

    key: bytes = cloudpickle.dumps(factory)  # type: ignore[no-untyped-call]
    if not opens_one_state(factory):
        key += f"#partition={partition}".encode()
    found = _OPENED.get(key)
    if found is not None and found[0] == run_id and generation in (None, found[1]):
        return found[2]
    if found is not None:
        with contextlib.suppress(Exception):  # best effort: another run's or generation's connections
            found[2].close()
    state = factory.open() if opens_one_state(factory) else make_state(factory, dict(conf or {}), partition,
                                                                        num_partitions)
    _OPENED[key] = (run_id, generation, state)
    return state


def opens_one_state(factory: object) -> TypeGuard[StateSource]:
    """Whether ``factory`` is a built-in store's (``open()``: one map state for every partition)
    rather than a user's Trident ``StateFactory`` (``makeState`` per partition).

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> opens_one_state(MemoryState.opaque(name="wc"))
    True
    """
    return isinstance(factory, StateSource)


def is_plain_map(state: Any) -> bool:
    """Whether ``state`` is a map state of one of the three kinds itself, not a program's subclass
    of one (which its updaters and query functions get as it is, its own methods included).

    Examples
    --------
    >>> from trident_spark.state import MemoryState, MemoryMapState
    >>> is_plain_map(MemoryState.opaque(name="doc-plain").open()), is_plain_map(MemoryMapState("doc-plain"))
    (True, False)
    """
    return isinstance(state, MapState) and type(state) in MAP_KINDS.values()


def forget_opened_states() -> None:
    """Close and drop every state this process opened (tests; a worker ends with its process)."""
    for _, _, state in _OPENED.values():
        with contextlib.suppress(Exception):  # best effort: the process is done with it
            state.close()
    _OPENED.clear()


@dataclass(frozen=True)
class StateStep:
    """What a state task needs: picklable, no driver-side objects.

    ``operation`` is the StateUpdater (persist) or QueryFunction (query);
    ``output_fields`` with ``new_types`` (Arrow types of the fields the
    operation emits) describe the rows the task returns.
    """

    label: str
    factory: Any
    operation: Operation
    input_fields: Fields
    output_fields: list[str]
    new_types: dict[str, pa.DataType]
    reads_before_batch: bool = True
    stats: Any = None  # a pyspark Accumulator of StateStats counters, or None
    run_id: str = ""  # the topology run: opened states (and their caches) last one run
    generation: str | None = None  # the store's generation the driver checked (persists)
    untyped_in: frozenset[str] = frozenset()  # untyped input fields: decoded when read
    untyped_out: frozenset[str] = frozenset()  # untyped fields the operation emits: encoded


def _gather(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    parts = [b for b in batches if b.num_rows]
    return pa.Table.from_batches(parts) if parts else None


def _tuples(table: pa.Table, fields: Fields, untyped: frozenset[str] = frozenset()) -> list[TridentTuple]:
    columns = [decode_column(table.column(name)) if name in untyped else table.column(name).to_pylist()
               for name in fields]
    return tuple_views(fields, columns, table.num_rows)


def _count(step: StateStep, state: Any, before: dict[str, int], store_stages: bool) -> None:
    """Add what the state did for this partition to the batch's counters; with ``store_stages``,
    its store round trips also count as the stages ``<label> / multiGet`` and ``/ multiPut``."""
    if step.stats is None or not isinstance(state, MapState):
        return
    after = state.stats.snapshot()
    delta: dict[Any, float] = {name: after[name] - before.get(name, 0) for name in after}
    if store_stages:
        clock = StageClock()
        if delta["store_reads"]:
            clock.add("state_get", StageName(step.label, "multiGet"), ms=delta["store_read_us"] / 1000,
                      rows_in=int(delta["keys_read"]))
        if delta["store_writes"]:
            clock.add("state_put", StageName(step.label, "multiPut"), ms=delta["store_write_us"] / 1000,
                      rows_in=int(delta["keys_written"]))
        delta.update(clock.counters)
    step.stats.add(delta)


@contextlib.contextmanager
def _partition_state(step: StateStep, txid: int, conf: dict[str, Any], num_partitions: int,
                     errors: ReportedErrors, store_stages: bool = False) -> Iterator[tuple[Any, Any]]:
    """The batch's view of the state for one partition and the operation to run, prepared for
    this task (or the partition's kept instance, in an instance host); on the way out a task's
    own instance is cleaned up, and what the state did and the errors reported are counted.

    The view of a map state of one of the three kinds is a :class:`BatchState` (the batch's txid
    bound); a user's plain ``State`` or subclass of a map state (Java's ``extends
    NonTransactionalMap``, with methods of its own) is handed over as it is, as Trident hands it:
    a persist brackets the updater with its ``beginCommit`` and ``commit``."""
    index = partition_index()
    state = opened_state(step.factory, step.run_id, step.generation, conf=conf, partition=index,
                         num_partitions=num_partitions)
    before = state.stats.snapshot() if isinstance(state, MapState) else {}
    instances = task_instances()
    operation = instances.acquire(0, step.operation, dict(conf),
                                  OperationContext(index, num_partitions, txid, step.label))
    try:
        view = (BatchState(state, txid, reads_before_batch=step.reads_before_batch)
                if is_plain_map(state) else state)
        yield view, operation
    finally:
        instances.release()
        _count(step, state, before, store_stages)
        if step.stats is not None:
            clock = StageClock()
            clock.errors(step.label, errors)
            clock.send(step.stats)


def with_metrics(task: Any, step: StateStep, txid: int, conf: dict[str, Any], num_partitions: int,
                 metrics: Any, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``task`` (:func:`persist` or :func:`query`) counting into ``metrics`` (in an instance
    host: what it sends back to the task's accumulator)."""
    out: Iterator[pa.RecordBatch] = task(dataclasses.replace(step, stats=metrics), txid, conf, num_partitions,
                                         batches)
    return out


def persist(step: StateStep, txid: int, conf: dict[str, Any], num_partitions: int,
            batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Update the state with one partition's tuples; yield what the updater emitted.

    A partition without tuples does not touch the state (as in Trident).
    """
    settle_imports()
    table = _gather(batches)
    if table is None:
        return
    errors = ReportedErrors(step.label)
    collector = TridentCollector(errors)
    # The tuples, keys, values and records of a partition stay alive until the state is written:
    # paused, the collector does not walk them again and again (never across the yield below).
    with gc_paused(), _partition_state(step, txid, conf, num_partitions, errors,
                                       store_stages=True) as (view, updater):
        tuples = _tuples(table, step.input_fields, step.untyped_in)
        if isinstance(view, BatchState):
            call(step.label, updater.updateState, view, tuples, collector, where="in updateState",
                 passes=STATE_PASSES)
        else:  # a user's own state: the batch's updates between beginCommit and commit (Trident's order)
            call(step.label, view.beginCommit, txid, where=f"in {type(view).__name__}.beginCommit({txid})",
                 passes=STATE_PASSES)
            call(step.label, updater.updateState, view, tuples, collector, where="in updateState",
                 passes=STATE_PASSES)
            call(step.label, view.commit, txid, where=f"in {type(view).__name__}.commit({txid})",
                 passes=STATE_PASSES)
    if collector.emitted:
        with gc_paused():
            out = _emitted(step, collector.emitted)
        yield out


def _emitted(step: StateStep, emitted: list[list[Any]]) -> pa.RecordBatch:
    emitted = declared_rows(step.label, emitted, step.output_fields)
    arrays = [to_arrow_column(name, [values[j] for values in emitted], step.new_types[name],
                              untyped=name in step.untyped_out, operator=step.label)
              for j, name in enumerate(step.output_fields)]
    return pa.RecordBatch.from_arrays(arrays, names=step.output_fields)


def check_not_ahead(step: StateStep, txid: int, written_before: bool, batches: Iterator[pa.RecordBatch],
                    *, largest_txid: int | None = None, conf: dict[str, Any] | None = None,
                    num_partitions: int = 1) -> Iterator[pa.RecordBatch]:
    """Raise StateAheadError if a key of the partition is stored with a txid after ``txid``, or
    equal to it when this checkpoint never started writing batch ``txid`` (``written_before``
    False): then the key belongs to another history, not to an earlier attempt of the batch.

    Run once, before the first batch after a start writes anything, so a reset checkpoint is
    found before any task of the batch has written (a write-time check could only stop the
    task that found it). Reads through the worker's cache, which warms it. ``largest_txid``:
    the largest txid the state holds (its commit record), for the txid_offset the error asks for.
    """
    from trident_spark.state import StateAheadError, StateType

    settle_imports()
    table = _gather(batches)
    if table is None:
        return
    state = opened_state(step.factory, step.run_id, conf=conf, partition=partition_index(),
                         num_partitions=num_partitions)
    if not isinstance(state, MapState) or state.state_type is StateType.NON_TRANSACTIONAL:
        return
    group = list(step.input_fields)
    keys = ([list(t) for t in _tuples(table, step.input_fields, step.untyped_in)] if group
            else [list(GLOBAL_KEY)])
    by_encoding = dict(zip(encode_keys(keys), keys, strict=True))
    distinct = list(by_encoding.values())
    stored_txid = txid + state.txid_offset
    for key, stored in zip(distinct, state.backing.multiGetEncoded(distinct, list(by_encoding)), strict=True):
        found = getattr(None if stored is None else stored.value, "txid", None)
        if isinstance(found, int) and (found > stored_txid or (found == stored_txid and not written_before)):
            raise StateAheadError(state.address, key, stored_txid=found, batch_txid=stored_txid,
                                  txid_offset=state.txid_offset, largest_txid=largest_txid)
    yield pa.RecordBatch.from_pydict({"keys": [len(distinct)]})


def query(step: StateStep, txid: int, conf: dict[str, Any], num_partitions: int,
          batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Read the state once for the partition's tuples; yield each tuple with what ``execute`` appended."""
    settle_imports()
    table = _gather(batches)
    if table is None:
        return
    tuples = _tuples(table, step.input_fields, step.untyped_in)
    errors = ReportedErrors(step.label)
    new = [name for name in step.output_fields if name in step.new_types]
    with _partition_state(step, txid, conf, num_partitions, errors) as (view, function):
        rows, emitted = query_state(step.label, function, view, tuples, new, errors)
    if not rows:
        return
    take = pa.array(rows, pa.int64())
    arrays = []
    for name in step.output_fields:
        if name in step.new_types:
            j = new.index(name)
            arrays.append(to_arrow_column(name, [values[j] for values in emitted], step.new_types[name],
                                          untyped=name in step.untyped_out, operator=step.label))
        else:
            arrays.append(table.column(name).take(take).combine_chunks())
    yield pa.RecordBatch.from_arrays(arrays, names=step.output_fields)


__all__ = ["StateStep", "check_not_ahead", "forget_opened_states", "is_plain_map", "opened_state",
           "opens_one_state", "persist", "query", "with_metrics"]
