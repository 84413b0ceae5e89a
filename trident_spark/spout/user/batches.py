"""How a spout of your own makes its batches, per kind, in plain Python (no Spark here).

The data source (:mod:`trident_spark.spout.user.source`) asks a :class:`BatchMaker` for the
next batch when Spark plans one (``latestOffset``), for a logged batch again after a restart
(``partitions`` with no batch kept in memory) and tells it when a batch is done (``commit``).
A batch's end offset is ``{"batch": txid + 1}`` for an :class:`IBatchSpout`,
``{"batch": txid + 1, "partitions": {partition id: metadata}}`` for the partitioned kinds and
``{"batch": txid + 1, "meta": coordinator metadata}`` for an ITridentSpout:
Spark logs it before the batch runs, so it is what a replay is made from. Counting batches
in the offset makes the txid the spout sees Spark's batch id, the txid the states see.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from trident_spark import checkpoint_files as files
from trident_spark.errors import SpoutError
from trident_spark.spout.user.collector import SpoutCollector
from trident_spark.spout.user.transaction import SpoutContext, TransactionAttempt

#: The kinds of spout of your own: IBatchSpout, IPartitionedTridentSpout, IOpaquePartitionedTridentSpout,
#: ITridentSpout, and an IRichSpout wrapped in a RichSpoutBatchExecutor (an ITridentSpout).
KINDS = ("batch", "transactional", "opaque", "trident", "rich")

#: The id of an IBatchSpout's single partition in :class:`PartitionBatch`.
BATCH_PARTITION = "batch"

_T = TypeVar("_T")


@dataclass
class PartitionBatch:
    """One partition's part of a batch: its tuples, or what emits them again in a Spark task."""

    pid: str
    tuples: list[list[Any]] | None  # None: a transactional batch, emitted again from ``meta`` in the task
    partition: Any = None
    meta: Any = None


@dataclass
class Batch:
    """A batch as the data source serves it: its txid, its end offset, its partitions' parts."""

    txid: int
    end: dict[str, Any]
    parts: list[PartitionBatch]

    @property
    def empty(self) -> bool:
        """No tuple in any partition (a batch re-emitted in the tasks counts as not empty)."""
        return all(part.tuples == [] for part in self.parts)


def spout_label(spout: object, stream: str) -> str:
    """How errors name a spout: ``spout DbPolling (stream 'orders')``."""
    name = getattr(spout, "spout_name", None)  # a wrapper names the spout it wraps
    return f"spout {name if isinstance(name, str) else type(spout).__name__} (stream {stream!r})"


def calling(where: str, method: str, function: Callable[..., _T], *args: Any) -> _T:
    """``function(*args)``; an exception from the user's code comes back as a :class:`SpoutError`
    naming the spout, partition and batch (``where``) and the method."""
    try:
        return function(*args)
    except SpoutError:
        raise
    except Exception as exc:
        text = " ".join(str(exc).split())
        raise SpoutError(f"{where}: {method} raised {type(exc).__name__}: {text}") from exc


def checked_meta(meta: Any, where: str, method: str) -> Any:
    """``meta`` as JSON gives it back (tuples become lists), or a :class:`SpoutError` if it is not JSON.

    Examples
    --------
    >>> checked_meta({"from_id": 1, "ids": (1, 2)}, "spout S, batch 0", "emitPartitionBatchNew")
    {'from_id': 1, 'ids': [1, 2]}
    """
    try:
        text = json.dumps(meta, allow_nan=False)
    except (TypeError, ValueError) as exc:
        shown = repr(meta)
        shown = shown if len(shown) <= 200 else shown[:200] + "...(truncated)"
        raise SpoutError(
            f"{where}: {method} returned metadata {shown} that is not JSON ({exc}); return dicts "
            "(str keys), lists, str, numbers, bools or None: the metadata is logged with the batch "
            "and given back to the emitter as JSON reads it") from None
    return json.loads(text)


def txid_of(offset: dict[str, Any]) -> int:
    """The batch count an offset holds: the txid of the batch that starts there."""
    return int(offset["batch"])


class ReplayedMetadata:
    """Metadata an opaque spout's replayed batch returned when it differs from the logged end offset.

    Spark's offset log is written once; when a batch emitted again after a restart ends
    elsewhere, the next batch must go on from where the replay ended (as Trident's opaque
    executor overrides the stored metadata at commit). Kept as one JSON file per txid in
    ``directory`` (the query's checkpoint, a local path or a URI: see
    :mod:`trident_spark.checkpoint_files`), or in memory without one.

    Examples
    --------
    >>> log = ReplayedMetadata(None)
    >>> log.put(3, {"p0": 12})
    >>> log.get(3), log.get(2)
    ({'p0': 12}, None)
    >>> log.forget_before(4)
    >>> log.get(3)
    """

    def __init__(self, directory: str | None) -> None:
        self.directory = directory
        self._memory: dict[int, dict[str, Any]] = {}

    def _path(self, txid: int) -> str:
        assert self.directory is not None
        return str(files.join(self.directory, f"replayed-{txid}.json"))

    def get(self, txid: int) -> dict[str, Any] | None:
        """The metadata batch ``txid``'s replay returned, if it differed from the log."""
        if self.directory is None:
            return self._memory.get(txid)
        try:
            found: dict[str, Any] = json.loads(files.read_text(self._path(txid)))
        except FileNotFoundError:
            return None
        return found

    def put(self, txid: int, metas: dict[str, Any]) -> None:
        """Keep the metadata batch ``txid``'s replay returned (atomically: a file is whole or absent)."""
        if self.directory is None:
            self._memory[txid] = metas
            return
        files.write_text(self._path(txid), json.dumps(metas), sync=True)

    def drop(self, txid: int) -> None:
        """Forget batch ``txid``'s entry (its replay ended where the log says)."""
        self._memory.pop(txid, None)
        if self.directory is not None:
            files.delete(self._path(txid))

    def forget_before(self, txid: int) -> None:
        """Forget entries of batches before ``txid``: no batch will start from them again."""
        for old in [t for t in self._memory if t < txid]:
            del self._memory[old]
        if self.directory is None:
            return
        for name in files.list_names(self.directory):
            if name.startswith("replayed-") and name.endswith(".json"):
                number = name[len("replayed-"):-len(".json")]
                if number.isdigit() and int(number) < txid:
                    self.drop(int(number))


class BatchMaker(ABC):
    """Makes a spout's batches on the driver, in the data source's process.

    Parameters
    ----------
    spout : IBatchSpout, IPartitionedTridentSpout or IOpaquePartitionedTridentSpout
        The user's spout.
    stream : str
        The stream's name (for the context and errors).
    fields : list of str
        The output fields (each emitted tuple is checked against them).
    """

    def __init__(self, spout: Any, stream: str, fields: Sequence[str]) -> None:
        self.spout = spout
        self.stream = stream
        self.fields = list(fields)
        self.label = spout_label(spout, stream)
        self.available_now = False
        conf = calling(self.label, "getComponentConfiguration", spout.getComponentConfiguration)
        if conf is not None and not isinstance(conf, dict):
            raise SpoutError(f"{self.label}: getComponentConfiguration returned {conf!r}; "
                             "return a dict or None")
        self.conf: dict[str, Any] = dict(conf or {})

    def initial_offset(self) -> dict[str, Any]:
        """Where a new query starts: no batch yet."""
        return {"batch": 0}

    @abstractmethod
    def next_batch(self, start: dict[str, Any]) -> Batch | None:
        """The batch after ``start`` (emitted now), or None when there is none to run now."""

    @abstractmethod
    def replay(self, start: dict[str, Any], end: dict[str, Any]) -> Batch:
        """The logged batch ``[start, end)`` again (after a restart: its tuples are not in memory)."""

    def committed(self, end: dict[str, Any]) -> None:
        """The batch ending at ``end`` is done (Spark's ``commit``). The default does nothing."""
        return None

    def close(self) -> None:
        """The query stops. The default does nothing."""
        return None

    def _one_batch(self, start: dict[str, Any], end: dict[str, Any]) -> int:
        txid = txid_of(start)
        if txid_of(end) != txid + 1:
            raise SpoutError(
                f"{self.label}: Spark asked for batches {txid} to {txid_of(end) - 1} at once; a spout of "
                "your own serves one batch per micro-batch. Was this checkpoint written by another spout?")
        return txid

    def _collector(self, where: str) -> SpoutCollector:
        return SpoutCollector(self.fields, where)


class BatchSpoutMaker(BatchMaker):
    """An IBatchSpout's batches: ``emitBatch(txid)`` on the driver, ``ack(txid)`` at commit."""

    def __init__(self, spout: Any, stream: str, fields: Sequence[str]) -> None:
        super().__init__(spout, stream, fields)
        self._opened = False
        self._last_empty = False

    def _open(self) -> None:
        if not self._opened:
            calling(self.label, "open", self.spout.open, self.conf, SpoutContext(self.stream))
            self._opened = True

    def _emit(self, txid: int) -> Batch:
        self._open()
        where = f"{self.label}, batch {txid}"
        collector = self._collector(where)
        calling(where, "emitBatch", self.spout.emitBatch, txid, collector)
        return Batch(txid, {"batch": txid + 1}, [PartitionBatch(BATCH_PARTITION, collector.tuples)])

    def next_batch(self, start: dict[str, Any]) -> Batch | None:
        """Every call is a batch, an empty one too; an ``available_now`` run ends after an empty one."""
        if self.available_now and self._last_empty:
            return None
        batch = self._emit(txid_of(start))
        self._last_empty = batch.empty
        return batch

    def replay(self, start: dict[str, Any], end: dict[str, Any]) -> Batch:
        """``emitBatch`` with the same id: the spout emits that batch's tuples again."""
        return self._emit(self._one_batch(start, end))

    def committed(self, end: dict[str, Any]) -> None:
        """``ack(txid)`` of the batch ending at ``end``."""
        txid = txid_of(end) - 1
        if txid >= 0:
            self._open()
            calling(f"{self.label}, batch {txid}", "ack", self.spout.ack, txid)

    def close(self) -> None:
        """``close()`` if the spout was opened."""
        if self._opened:
            self._opened = False
            calling(self.label, "close", self.spout.close)


class PartitionedMaker(BatchMaker):
    """What both partitioned kinds share: the coordinator, the emitter, the partitions of a batch."""

    def __init__(self, spout: Any, stream: str, fields: Sequence[str]) -> None:
        super().__init__(spout, stream, fields)
        self._coordinator: Any = None
        self._emitter: Any = None
        self._ids: list[str] | None = None

    def initial_offset(self) -> dict[str, Any]:
        return {"batch": 0, "partitions": {}}

    def _open(self) -> None:
        if self._coordinator is None:
            context = SpoutContext(self.stream)
            self._coordinator = calling(self.label, "getCoordinator", self.spout.getCoordinator,
                                        self.conf, context)
            self._emitter = calling(self.label, "getEmitter", self.spout.getEmitter, self.conf, context)

    def _ready(self, txid: int) -> bool:
        self._open()
        return bool(calling(f"{self.label}, batch {txid}", "isReady", self._coordinator.isReady, txid))

    def _partitions(self, txid: int) -> list[tuple[str, Any]]:
        """The batch's partitions, by id, in the emitter's order; ``refreshPartitions`` when they change."""
        self._open()
        where = f"{self.label}, batch {txid}"
        info = calling(where, "getPartitionsForBatch", self._coordinator.getPartitionsForBatch)
        ordered = calling(where, "getOrderedPartitions", self._emitter.getOrderedPartitions, info)
        if ordered is None or isinstance(ordered, str | bytes | dict):
            raise SpoutError(f"{where}: getOrderedPartitions returned {ordered!r}; "
                             "return a list of partitions")
        found: list[tuple[str, Any]] = []
        for partition in ordered:
            get_id = getattr(partition, "getId", None)
            if not callable(get_id):
                raise SpoutError(f"{where}: getOrderedPartitions gave {partition!r}, which has no getId(); a "
                                 "partition is any object with getId() returning its id (a str)")
            pid = calling(where, "getId", get_id)
            if not isinstance(pid, str) or not pid:
                raise SpoutError(f"{where}: partition {partition!r}: getId() returned {pid!r}; return a "
                                 "non-empty str, unique among the spout's partitions")
            if any(pid == seen for seen, _ in found):
                raise SpoutError(f"{where}: two partitions have the id {pid!r}; partition ids must be unique")
            found.append((pid, partition))
        ids = [pid for pid, _ in found]
        if ids != self._ids:
            calling(where, "refreshPartitions", self._emitter.refreshPartitions, [p for _, p in found])
            self._ids = ids
        return found

    def close(self) -> None:
        """Close the emitter and the coordinator (driver side)."""
        emitter, coordinator = self._emitter, self._coordinator
        self._emitter = self._coordinator = None
        if emitter is not None:
            calling(self.label, "Emitter.close", emitter.close)
        if coordinator is not None:
            calling(self.label, "Coordinator.close", coordinator.close)


class TransactionalMaker(PartitionedMaker):
    """IPartitionedTridentSpout: ``emitPartitionBatchNew`` on the driver; a replay is
    ``emitPartitionBatch`` with the logged metadata, in the tasks."""

    def next_batch(self, start: dict[str, Any]) -> Batch | None:
        txid = txid_of(start)
        if not self._ready(txid):
            return None
        last: dict[str, Any] = start.get("partitions", {})
        tx = TransactionAttempt(txid)
        parts = []
        for pid, partition in self._partitions(txid):
            where = f"{self.label}, partition {pid!r}, batch {txid}"
            collector = self._collector(where)
            meta = calling(where, "emitPartitionBatchNew", self._emitter.emitPartitionBatchNew,
                           tx, collector, partition, last.get(pid))
            parts.append(PartitionBatch(pid, collector.tuples, partition,
                                        checked_meta(meta, where, "emitPartitionBatchNew")))
        batch = Batch(txid, {"batch": txid + 1, "partitions": {p.pid: p.meta for p in parts}}, parts)
        return None if batch.empty else batch

    def replay(self, start: dict[str, Any], end: dict[str, Any]) -> Batch:
        """The logged partitions with their logged metadata, to emit again in the tasks."""
        txid = self._one_batch(start, end)
        logged: dict[str, Any] = end.get("partitions", {})
        current = dict(self._partitions(txid))
        missing = [pid for pid in logged if pid not in current]
        if missing:
            raise SpoutError(
                f"{self.label}, batch {txid}: the batch's partitions {missing} are no longer listed "
                f"(getOrderedPartitions gives {sorted(current)}); a transactional batch is emitted again "
                "from the partitions it was made of: list them again, or start a new checkpoint")
        parts = [PartitionBatch(pid, None, current[pid], meta) for pid, meta in logged.items()]
        return Batch(txid, end, parts)


def emit_again(spout: Any, stream: str, fields: Sequence[str], txid: int,
               part: PartitionBatch) -> list[list[Any]]:
    """In a Spark task: a transactional batch's partition emitted again from its logged metadata,
    by an emitter built here (``getEmitter``, ``refreshPartitions``, ``emitPartitionBatch``, ``close``)."""
    label = spout_label(spout, stream)
    where = f"{label}, partition {part.pid!r}, batch {txid}"
    conf = calling(label, "getComponentConfiguration", spout.getComponentConfiguration) or {}
    emitter = calling(where, "getEmitter", spout.getEmitter, dict(conf), SpoutContext(stream, "executor"))
    collector = SpoutCollector(fields, where)
    try:
        calling(where, "refreshPartitions", emitter.refreshPartitions, [part.partition])
        calling(where, "emitPartitionBatch", emitter.emitPartitionBatch,
                TransactionAttempt(txid, 1), collector, part.partition, part.meta)
    finally:
        calling(where, "Emitter.close", emitter.close)
    return collector.tuples


class OpaqueMaker(PartitionedMaker):
    """IOpaquePartitionedTridentSpout: ``emitPartitionBatch(last metadata)`` on the driver, for new
    batches and replays alike; a replay that ends elsewhere than the log is remembered."""

    def __init__(self, spout: Any, stream: str, fields: Sequence[str], replayed: ReplayedMetadata) -> None:
        super().__init__(spout, stream, fields)
        self.replayed = replayed

    def _last(self, start: dict[str, Any]) -> dict[str, Any]:
        """The metadata batch ``start`` goes on from: the previous batch's replay's, else the log's."""
        remembered = self.replayed.get(txid_of(start) - 1)
        logged: dict[str, Any] = start.get("partitions", {})
        return remembered if remembered is not None else logged

    def _emit_all(self, start: dict[str, Any], attempt: int) -> Batch:
        txid = txid_of(start)
        last = self._last(start)
        tx = TransactionAttempt(txid, attempt)
        parts = []
        for pid, partition in self._partitions(txid):
            where = f"{self.label}, partition {pid!r}, batch {txid}"
            collector = self._collector(where)
            meta = calling(where, "emitPartitionBatch", self._emitter.emitPartitionBatch,
                           tx, collector, partition, last.get(pid))
            parts.append(PartitionBatch(pid, collector.tuples, partition,
                                        checked_meta(meta, where, "emitPartitionBatch")))
        return Batch(txid, {"batch": txid + 1, "partitions": {p.pid: p.meta for p in parts}}, parts)

    def next_batch(self, start: dict[str, Any]) -> Batch | None:
        if not self._ready(txid_of(start)):
            return None
        batch = self._emit_all(start, 0)
        return None if batch.empty else batch

    def replay(self, start: dict[str, Any], end: dict[str, Any]) -> Batch:
        """Emit the batch again from the previous metadata; its tuples may differ. The end offset stays
        the logged one (Spark's), and where the replay really ended is remembered for the next batch."""
        txid = self._one_batch(start, end)
        batch = self._emit_all(start, 1)
        metas = batch.end["partitions"]
        if metas != end.get("partitions", {}):
            self.replayed.put(txid, metas)
        else:
            self.replayed.drop(txid)
        return Batch(txid, end, batch.parts)

    def committed(self, end: dict[str, Any]) -> None:
        """Forget what no batch will start from again (the next batch starts from this one's end)."""
        self.replayed.forget_before(txid_of(end) - 1)


class TridentSpoutMaker(BatchMaker):
    """ITridentSpout (and an IRichSpout in its RichSpoutBatchExecutor): the coordinator's metadata of
    each batch in its end offset; the emitter on the driver, for new batches and replays alike.

    A replay is initialized again with its logged metadata as ``currMetadata`` and emitted from
    what ``initializeTransaction`` returns; should that differ from the log (Spark's offset log
    is written once), it is remembered as the metadata the next batch goes on from (as
    Trident's coordinator overrides its stored state).
    """

    def __init__(self, spout: Any, stream: str, fields: Sequence[str], replayed: ReplayedMetadata) -> None:
        super().__init__(spout, stream, fields)
        self.replayed = replayed
        self._coordinator: Any = None
        self._emitter: Any = None
        self._last_empty = False

    def initial_offset(self) -> dict[str, Any]:
        return {"batch": 0, "meta": None}

    def _open(self) -> None:
        if self._coordinator is None:
            context = SpoutContext(self.stream)
            self._coordinator = calling(self.label, "getCoordinator", self.spout.getCoordinator,
                                        self.stream, self.conf, context)
            self._emitter = calling(self.label, "getEmitter", self.spout.getEmitter, self.stream, self.conf,
                                    context)

    def _previous(self, start: dict[str, Any]) -> Any:
        """The metadata of the batch before ``start``: its replay's, if it differed, else the log's."""
        remembered = self.replayed.get(txid_of(start) - 1)
        return remembered["meta"] if remembered is not None else start.get("meta")

    def _initialize(self, txid: int, previous: Any, current: Any) -> Any:
        where = f"{self.label}, batch {txid}"
        meta = calling(where, "initializeTransaction", self._coordinator.initializeTransaction, txid,
                       previous, current)
        return checked_meta(meta, where, "initializeTransaction")

    def _emit(self, txid: int, meta: Any, end: dict[str, Any], attempt: int) -> Batch:
        where = f"{self.label}, batch {txid}"
        collector = self._collector(where)
        calling(where, "emitBatch", self._emitter.emitBatch, TransactionAttempt(txid, attempt), meta,
                collector)
        return Batch(txid, end, [PartitionBatch(BATCH_PARTITION, collector.tuples)])

    def next_batch(self, start: dict[str, Any]) -> Batch | None:
        """Every ready txid is a batch, an empty one too; an ``available_now`` run ends after an empty one."""
        if self.available_now and self._last_empty:
            return None
        txid = txid_of(start)
        self._open()
        if not calling(f"{self.label}, batch {txid}", "isReady", self._coordinator.isReady, txid):
            return None
        meta = self._initialize(txid, self._previous(start), None)
        batch = self._emit(txid, meta, {"batch": txid + 1, "meta": meta}, 0)
        self._last_empty = batch.empty
        return batch

    def replay(self, start: dict[str, Any], end: dict[str, Any]) -> Batch:
        """The logged batch again: initialized with its logged metadata, emitted from the result."""
        txid = self._one_batch(start, end)
        self._open()
        logged = end.get("meta")
        meta = self._initialize(txid, self._previous(start), logged)
        if meta != logged:
            self.replayed.put(txid, {"meta": meta})
        else:
            self.replayed.drop(txid)
        return self._emit(txid, meta, end, 1)

    def committed(self, end: dict[str, Any]) -> None:
        """The emitter's ``success(tx)``, then the coordinator's ``success(txid)``."""
        txid = txid_of(end) - 1
        if txid < 0:
            return
        self._open()
        where = f"{self.label}, batch {txid}"
        calling(where, "Emitter.success", self._emitter.success, TransactionAttempt(txid))
        calling(where, "BatchCoordinator.success", self._coordinator.success, txid)
        self.replayed.forget_before(txid)

    def close(self) -> None:
        """Close the emitter and the coordinator."""
        emitter, coordinator = self._emitter, self._coordinator
        self._emitter = self._coordinator = None
        if emitter is not None:
            calling(self.label, "Emitter.close", emitter.close)
        if coordinator is not None:
            calling(self.label, "BatchCoordinator.close", coordinator.close)


def batch_maker(kind: str, spout: Any, stream: str, fields: Sequence[str],
                replayed: ReplayedMetadata) -> BatchMaker:
    """The :class:`BatchMaker` of a spout of ``kind`` (one of :data:`KINDS`).

    Examples
    --------
    >>> class Empty:
    ...     def getComponentConfiguration(self): return None
    >>> type(batch_maker("opaque", Empty(), "s", ["x"], ReplayedMetadata(None))).__name__
    'OpaqueMaker'
    """
    if kind == "batch":
        return BatchSpoutMaker(spout, stream, fields)
    if kind == "transactional":
        return TransactionalMaker(spout, stream, fields)
    if kind == "opaque":
        return OpaqueMaker(spout, stream, fields, replayed)
    if kind in ("trident", "rich"):
        return TridentSpoutMaker(spout, stream, fields, replayed)
    raise SpoutError(f"{spout_label(spout, stream)}: unknown spout kind {kind!r}; one of {list(KINDS)}")


__all__ = ["BATCH_PARTITION", "KINDS", "Batch", "BatchMaker", "PartitionBatch", "ReplayedMetadata",
           "TridentSpoutMaker", "batch_maker", "checked_meta", "emit_again", "spout_label"]
