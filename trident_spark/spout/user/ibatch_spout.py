"""IBatchSpout: Trident's simplest spout interface. Asked for batch ``batch_id``, it emits its tuples.

A batch id asked again (a replay after a driver restart) must emit the same tuples for the
states to be exact under a transactional guarantee: keep each batch's tuples, or a way to
read them again, until ``ack(batch_id)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trident_spark.fields import Fields
    from trident_spark.spout.base import Spout
    from trident_spark.spout.user.collector import SpoutCollector
    from trident_spark.spout.user.transaction import SpoutContext


class IBatchSpout(ABC):
    """A spout that emits whole batches by id: Trident's ``IBatchSpout``.

    Every method runs on the driver, in the Python process Spark starts for the stream's data
    source: ``open`` once when the query starts, ``emitBatch`` once per batch, ``ack`` once
    the batch is done (its state written, Spark's commit log written), ``close`` when the query
    stops. The batch id is the txid the states see (Spark's batch id).

    Every ``emitBatch`` call is a batch, even an empty one (Trident's batches go on while the
    spout has nothing); with ``trigger="available_now"`` the run ends after the first empty
    batch. A replayed batch id (after a driver restart) is asked again with the same id.

    The instance is pickled to that process (with ``cloudpickle``): build connections in
    ``open``, not in ``__init__``.

    Examples
    --------
    >>> class Numbers(IBatchSpout):
    ...     def open(self, conf, context): pass
    ...     def emitBatch(self, batch_id, collector):
    ...         if batch_id < 2:
    ...             collector.emit([batch_id * 10])
    ...     def ack(self, batch_id): pass
    ...     def getOutputFields(self): return ["n"]
    >>> list(Numbers().__trident_spout__("numbers").fields)
    ['n']
    """

    @abstractmethod
    def open(self, conf: dict[str, Any], context: SpoutContext) -> None:
        """Open connections; ``conf`` is :meth:`getComponentConfiguration` (or ``{}``)."""

    @abstractmethod
    def emitBatch(self, batch_id: int, collector: SpoutCollector) -> None:
        """Emit batch ``batch_id``'s tuples with ``collector.emit([...])``; the same tuples when
        the same id is asked again."""

    @abstractmethod
    def ack(self, batch_id: int) -> None:
        """Batch ``batch_id`` is done and will not be asked again: forget it."""

    @abstractmethod
    def getOutputFields(self) -> Fields | Sequence[str]:
        """The fields of the emitted tuples (a name may declare a type, ``"n:bigint"``)."""

    def close(self) -> None:
        """Release what ``open`` took. The default does nothing."""
        return None

    def getComponentConfiguration(self) -> dict[str, Any] | None:
        """The ``conf`` given to :meth:`open`. The default is ``None`` (an empty ``conf``)."""
        return None

    def __trident_spout__(self, stream: str) -> Spout:
        """The spout as the runtime reads it (``newStream`` calls this)."""
        from trident_spark.spout.user.spout import UserSpout

        return UserSpout(self, "batch", stream)


__all__ = ["IBatchSpout"]
