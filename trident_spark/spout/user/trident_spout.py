"""ITridentSpout: Trident's general spout, a batch coordinator and an emitter, as Storm declares it.

The coordinator decides each batch's metadata (``initializeTransaction(txid, prevMetadata,
currMetadata)``); the emitter emits the batch from it (``emitBatch(tx, coordinatorMeta,
collector)``). The metadata is logged with the batch (in Spark's offset log, before the batch
runs), so a batch replayed after a driver restart is initialized again with its logged metadata
as ``currMetadata`` and emitted from what the coordinator returns: the same metadata, for a
coordinator that returns ``currMetadata`` as it is (Storm's contract), so a spout whose emitter
emits the same tuples for the same metadata is transactional.
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


class ITridentSpout(ABC):
    """Trident's ``ITridentSpout<T>``: a :class:`BatchCoordinator` and an :class:`Emitter`.

    Where each call runs: on the driver, in the Python process Spark starts for the stream's
    data source. Per batch ``txid``: ``isReady(txid)`` (False: no batch this trigger, asked
    again at the next), ``initializeTransaction(txid, prevMetadata, currMetadata)`` (its
    result is logged with the batch), ``emitBatch(tx, coordinatorMeta, collector)``; when the
    batch is done (its states written, Spark's commit log written) the emitter's
    ``success(tx)`` and the coordinator's ``success(txid)``; ``close()`` of both when the query
    stops. ``txStateId`` is the stream's name (Trident's transactional state id).

    The metadata must be JSON (dicts with str keys, lists, str, numbers, bools, None): it is
    logged with the batch and handed back as JSON reads it. Every ready txid is a batch, an
    empty one too; with ``trigger="available_now"`` the run ends after the first empty batch.
    The instance is pickled to the data source's process: open connections in
    ``getCoordinator``/``getEmitter``, not in ``__init__``.

    Examples
    --------
    >>> class Coordinator(ITridentSpout.BatchCoordinator):
    ...     def initializeTransaction(self, txid, prevMetadata, currMetadata):
    ...         if currMetadata is not None:
    ...             return currMetadata                       # a replay: as it was
    ...         start = 0 if prevMetadata is None else prevMetadata["end"]
    ...         return {"start": start, "end": start + 3}
    ...     def isReady(self, txid): return txid < 2
    >>> class Emitter(ITridentSpout.Emitter):
    ...     def emitBatch(self, tx, coordinatorMeta, collector):
    ...         for n in range(coordinatorMeta["start"], coordinatorMeta["end"]):
    ...             collector.emit([n])
    >>> class Numbers(ITridentSpout):
    ...     def getCoordinator(self, txStateId, conf, context): return Coordinator()
    ...     def getEmitter(self, txStateId, conf, context): return Emitter()
    ...     def getOutputFields(self): return ["n"]
    >>> list(Numbers().__trident_spout__("numbers").fields)
    ['n']
    """

    class BatchCoordinator(ABC):
        """Decides each batch's metadata (Trident's ``ITridentSpout.BatchCoordinator``)."""

        @abstractmethod
        def initializeTransaction(self, txid: int, prevMetadata: Any, currMetadata: Any) -> Any:
            """The metadata of batch ``txid``: ``prevMetadata`` is the previous batch's (None for
            the first), ``currMetadata`` this batch's as logged when it is replayed (else None),
            to be returned as it is."""

        def success(self, txid: int) -> None:
            """Batch ``txid`` is done. The default does nothing."""
            return None

        def isReady(self, txid: int) -> bool:
            """Whether batch ``txid`` may start now. The default is True."""
            return True

        def close(self) -> None:
            """Release what the coordinator holds. The default does nothing."""
            return None

    class Emitter(ABC):
        """Emits a batch from its metadata (Trident's ``ITridentSpout.Emitter``)."""

        @abstractmethod
        def emitBatch(self, tx: TransactionAttempt, coordinatorMeta: Any,
                      collector: SpoutCollector) -> None:
            """Emit batch ``tx``'s tuples from ``coordinatorMeta``, the coordinator's metadata."""

        def success(self, tx: TransactionAttempt) -> None:
            """Batch ``tx`` is done. The default does nothing."""
            return None

        def close(self) -> None:
            """Release what the emitter holds. The default does nothing."""
            return None

    @abstractmethod
    def getCoordinator(self, txStateId: str, conf: dict[str, Any],
                       context: SpoutContext) -> ITridentSpout.BatchCoordinator:
        """A new coordinator (driver, once per query start)."""

    @abstractmethod
    def getEmitter(self, txStateId: str, conf: dict[str, Any],
                   context: SpoutContext) -> ITridentSpout.Emitter:
        """A new emitter (driver, once per query start)."""

    @abstractmethod
    def getOutputFields(self) -> Fields | Sequence[str]:
        """The fields of the emitted tuples (a name may declare a type, ``"n:bigint"``)."""

    def getComponentConfiguration(self) -> dict[str, Any] | None:
        """The ``conf`` given to the coordinator and the emitter. The default is ``None`` (``{}``)."""
        return None

    def __trident_spout__(self, stream: str) -> Spout:
        """The spout as the runtime reads it (``newStream`` calls this)."""
        from trident_spark.spout.user.spout import UserSpout

        return UserSpout(self, "trident", stream)


__all__ = ["ITridentSpout"]
