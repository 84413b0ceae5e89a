"""What a spout of your own is told about a batch: its ``TransactionAttempt`` and its ``SpoutContext``.

Trident hands an emitter the batch's ``TransactionAttempt`` (txid and attempt) and opens
spouts with a ``TopologyContext``. Here the txid is Spark's micro-batch id, the same txid the
states see; the attempt is 0 when a batch is first emitted and 1 when it is emitted again
after a driver restart (a replay read from Spark's offset log).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TransactionAttempt:
    """A batch being emitted: Trident's ``TransactionAttempt``.

    Parameters
    ----------
    txid : int
        The batch's transaction id: Spark's batch id, the txid the states see.
    attempt : int, default 0
        0 for the first emission of the batch, 1 for an emission again after a restart.

    Examples
    --------
    >>> tx = TransactionAttempt(7)
    >>> tx.getTransactionId(), tx.getAttemptId()
    (7, 0)
    """

    txid: int
    attempt: int = 0

    def getTransactionId(self) -> int:
        """The txid (Trident's name)."""
        return self.txid

    def getAttemptId(self) -> int:
        """0 for a first emission, 1 for a replay after a restart (Trident's name)."""
        return self.attempt


@dataclass(frozen=True)
class SpoutContext:
    """What ``open``, ``getCoordinator`` and ``getEmitter`` are given in place of Storm's
    ``TopologyContext``.

    Parameters
    ----------
    stream : str
        The stream's name (``newStream(name, spout)``).
    where : str
        ``"driver"`` (the data source's process on the driver, where batches are planned) or
        ``"executor"`` (a Spark task re-emitting a transactional batch after a restart).

    Examples
    --------
    >>> context = SpoutContext("orders", "driver")
    >>> context.getThisTaskIndex(), context.stream
    (0, 'orders')
    """

    stream: str
    where: str = "driver"

    def getThisTaskIndex(self) -> int:
        """Always 0: one process emits every partition of a new batch."""
        return 0

    def getThisComponentId(self) -> str:
        """The stream's name."""
        return self.stream


__all__ = ["SpoutContext", "TransactionAttempt"]
