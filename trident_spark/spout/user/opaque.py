"""IOpaquePartitionedTridentSpout: Trident's opaque spout over partitions.

The emitter emits a partition's next batch from the previous batch's metadata and returns
the new metadata; a batch emitted again (after a driver restart) may hold other tuples
than the first time. With an opaque state each tuple still counts once: the replayed
batch replaces what its first emission wrote, and the batches after it go on from the
metadata the replay returned.
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


class IOpaquePartitionedTridentSpout(ABC):
    """An opaque partitioned spout: Trident's ``IOpaquePartitionedTridentSpout``.

    Every call runs on the driver, in the Python process Spark starts for the stream's data
    source: the coordinator (``isReady``, ``getPartitionsForBatch``) and the emitter
    (``getOrderedPartitions``, ``emitPartitionBatch``), for new batches and for a batch
    replayed after a restart alike. The metadata each call returns is logged with the batch
    (Spark's offset log); when a replay returns other metadata than was logged, it is kept in
    the query's checkpoint directory and the next batch goes on from it.

    A poll that emits no tuple in any partition is not a batch (its metadata is dropped; the
    next trigger asks again from the same metadata). Metadata must be JSON.

    Examples
    --------
    >>> class Part:
    ...     def getId(self): return "only"
    >>> class Coordinator(IOpaquePartitionedTridentSpout.Coordinator):
    ...     def getPartitionsForBatch(self): return None
    >>> class Emitter(IOpaquePartitionedTridentSpout.Emitter):
    ...     def getOrderedPartitions(self, all_partition_info): return [Part()]
    ...     def emitPartitionBatch(self, tx, collector, partition, last_partition_meta):
    ...         start = last_partition_meta or 0
    ...         collector.emit([start])
    ...         return start + 1
    >>> class Counter(IOpaquePartitionedTridentSpout):
    ...     def getCoordinator(self, conf, context): return Coordinator()
    ...     def getEmitter(self, conf, context): return Emitter()
    ...     def getOutputFields(self): return ["n"]
    >>> list(Counter().__trident_spout__("counter").fields)
    ['n']
    """

    class Coordinator(ABC):
        """Lists the source's partitions (driver, once per batch)."""

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
        """Emits a partition's next batch from the previous one's metadata."""

        @abstractmethod
        def getOrderedPartitions(self, all_partition_info: Any) -> Sequence[Any]:
            """The partitions (objects with ``getId()``) of ``all_partition_info``, in order."""

        @abstractmethod
        def emitPartitionBatch(self, tx: TransactionAttempt, collector: SpoutCollector, partition: Any,
                               last_partition_meta: Any) -> Any:
            """Emit ``partition``'s batch after the one ``last_partition_meta`` describes (``None``
            for its first); return this batch's metadata, the next call's ``last_partition_meta``."""

        def refreshPartitions(self, partition_responsibilities: Sequence[Any]) -> None:
            """The partitions this emitter now emits (when they change). The default does nothing."""
            return None

        def close(self) -> None:
            """Release what the emitter holds. The default does nothing."""
            return None

    @abstractmethod
    def getCoordinator(self, conf: dict[str, Any],
                       context: SpoutContext) -> IOpaquePartitionedTridentSpout.Coordinator:
        """A new coordinator (driver)."""

    @abstractmethod
    def getEmitter(self, conf: dict[str, Any],
                   context: SpoutContext) -> IOpaquePartitionedTridentSpout.Emitter:
        """A new emitter (driver)."""

    @abstractmethod
    def getOutputFields(self) -> Fields | Sequence[str]:
        """The fields of the emitted tuples (a name may declare a type, ``"n:bigint"``)."""

    def getComponentConfiguration(self) -> dict[str, Any] | None:
        """The ``conf`` given to the coordinator and the emitter. The default is ``None`` (``{}``)."""
        return None

    def __trident_spout__(self, stream: str) -> Spout:
        """The spout as the runtime reads it (``newStream`` calls this)."""
        from trident_spark.spout.user.spout import UserSpout

        return UserSpout(self, "opaque", stream)


__all__ = ["IOpaquePartitionedTridentSpout"]
