"""IPartitionedTridentSpout: Trident's transactional spout over partitions.

A coordinator lists the source's partitions; an emitter emits a new batch of a partition
from the previous batch's metadata (``emitPartitionBatchNew``, returning the batch's own
metadata) and emits a batch again, exactly, from its metadata (``emitPartitionBatch``).
Each batch's metadata is logged with it in Spark's offset log, so a batch replayed after a
restart is the same batch: exact with a transactional (or opaque) state.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trident_spark.fields import Fields
    from trident_spark.spout.base import Spout
    from trident_spark.spout.user.collector import SpoutCollector
    from trident_spark.spout.user.transaction import SpoutContext, TransactionAttempt


class ISpoutPartition(ABC):
    """A partition of a spout's source: Trident's ``ISpoutPartition``, anything with ``getId()``.

    Any object with a ``getId()`` method returning a str will do; it must pickle (a replayed
    batch's partitions are sent to Spark's tasks).

    Examples
    --------
    >>> class Shard(ISpoutPartition):
    ...     def __init__(self, name): self.name = name
    ...     def getId(self): return self.name
    >>> Shard("orders_1").getId()
    'orders_1'
    """

    @abstractmethod
    def getId(self) -> str:
        """The partition's id: names the partition in the batch's metadata; unique per spout."""


class IPartitionedTridentSpout(ABC):
    """A transactional partitioned spout: Trident's ``IPartitionedTridentSpout``.

    Implement :meth:`getCoordinator`, :meth:`getEmitter` and :meth:`getOutputFields`; the
    coordinator and emitter implement :class:`IPartitionedTridentSpout.Coordinator` and
    :class:`IPartitionedTridentSpout.Emitter`.

    Where each call runs: a new batch is made on the driver, in the Python process Spark
    starts for the stream's data source (``isReady``, ``getPartitionsForBatch``,
    ``getOrderedPartitions``, ``emitPartitionBatchNew``), before Spark logs the batch's end
    offsets: the metadata the emitter returns per partition. A batch replayed after a driver
    restart is emitted again in Spark's tasks, one per partition, by an emitter built there
    (``getEmitter``, ``emitPartitionBatch`` with the logged metadata). The spout instance is
    pickled to both places: build connections in ``getEmitter``/``getCoordinator``.

    A poll that emits no tuple in any partition is not a batch: its metadata is dropped and
    the next trigger asks again from the same metadata (``trigger="available_now"`` ends
    there). Metadata must be JSON (dicts, lists, str, numbers, bools, None): it is logged
    with the batch, and the emitter is given it back as JSON reads it.

    Examples
    --------
    >>> rows = {"a": ["x", "y", "z"]}
    >>> class Part(ISpoutPartition):
    ...     def __init__(self, key): self.key = key
    ...     def getId(self): return self.key
    >>> class Coordinator(IPartitionedTridentSpout.Coordinator):
    ...     def getPartitionsForBatch(self): return sorted(rows)
    >>> class Emitter(IPartitionedTridentSpout.Emitter):
    ...     def getOrderedPartitions(self, all_partition_info): return [Part(k) for k in all_partition_info]
    ...     def emitPartitionBatchNew(self, tx, collector, partition, last_partition_meta):
    ...         start = last_partition_meta["end"] if last_partition_meta else 0
    ...         meta = {"start": start, "end": min(start + 2, len(rows[partition.getId()]))}
    ...         self.emitPartitionBatch(tx, collector, partition, meta)
    ...         return meta
    ...     def emitPartitionBatch(self, tx, collector, partition, meta):
    ...         for value in rows[partition.getId()][meta["start"]:meta["end"]]:
    ...             collector.emit([value])
    >>> class Letters(IPartitionedTridentSpout):
    ...     def getCoordinator(self, conf, context): return Coordinator()
    ...     def getEmitter(self, conf, context): return Emitter()
    ...     def getOutputFields(self): return ["letter"]
    >>> list(Letters().__trident_spout__("letters").fields)
    ['letter']
    """

    class Coordinator(ABC):
        """Lists the source's partitions (driver, once per new batch)."""

        @abstractmethod
        def getPartitionsForBatch(self) -> Any:
            """The source's partitions now, in any form :meth:`Emitter.getOrderedPartitions` takes."""

        def isReady(self, txid: int) -> bool:
            """Whether batch ``txid`` may be emitted now; ``False`` skips this trigger. Default ``True``."""
            return True

        def close(self) -> None:
            """Release what the coordinator holds. The default does nothing."""
            return None

    class Emitter(ABC):
        """Emits a partition's batches: new ones from the previous metadata, old ones again."""

        @abstractmethod
        def getOrderedPartitions(self, all_partition_info: Any) -> Sequence[Any]:
            """The partitions (objects with ``getId()``) of ``all_partition_info``, in order."""

        @abstractmethod
        def emitPartitionBatchNew(self, tx: TransactionAttempt, collector: SpoutCollector, partition: Any,
                                  last_partition_meta: Any) -> Any:
            """Emit ``partition``'s next batch after the one ``last_partition_meta`` describes
            (``None`` for its first batch); return the metadata that describes this batch."""

        @abstractmethod
        def emitPartitionBatch(self, tx: TransactionAttempt, collector: SpoutCollector, partition: Any,
                               partition_meta: Any) -> None:
            """Emit again, exactly, the batch of ``partition`` that ``partition_meta`` describes."""

        def refreshPartitions(self, partition_responsibilities: Sequence[Any]) -> None:
            """The partitions this emitter now emits (when they change). The default does nothing."""
            return None

        def close(self) -> None:
            """Release what the emitter holds. The default does nothing."""
            return None

    @abstractmethod
    def getCoordinator(self, conf: dict[str, Any],
                       context: SpoutContext) -> IPartitionedTridentSpout.Coordinator:
        """A new coordinator (driver)."""

    @abstractmethod
    def getEmitter(self, conf: dict[str, Any],
                   context: SpoutContext) -> IPartitionedTridentSpout.Emitter:
        """A new emitter (driver for new batches; a Spark task for a replayed batch)."""

    @abstractmethod
    def getOutputFields(self) -> Fields | Sequence[str]:
        """The fields of the emitted tuples (a name may declare a type, ``"n:bigint"``)."""

    def getComponentConfiguration(self) -> dict[str, Any] | None:
        """The ``conf`` given to the coordinator and the emitters. The default is ``None`` (``{}``)."""
        return None

    def __trident_spout__(self, stream: str) -> Spout:
        """The spout as the runtime reads it (``newStream`` calls this)."""
        from trident_spark.spout.user.spout import UserSpout

        return UserSpout(self, "transactional", stream)


__all__ = ["IPartitionedTridentSpout", "ISpoutPartition"]
