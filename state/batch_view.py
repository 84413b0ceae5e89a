"""A map state as one batch sees it: Trident's ``MapState`` with the batch's txid bound.

Trident hands a ``StateUpdater`` and a ``QueryFunction`` a state whose
``beginCommit(txid)`` was called: ``multiUpdate(keys, updaters)`` takes no
txid. :class:`BatchState` is that view over a :class:`~.map.MapState`, made by
the runtime for each partition of each batch (and by tests, to call an updater
without Spark).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .base import Key
from .map import MapState, Updater
from .stats import StateStats
from .values import StateType


class BatchState:
    """A :class:`~.map.MapState` with batch ``txid`` bound (Trident's state after ``beginCommit``).

    Parameters
    ----------
    state : MapState
        The opened state.
    txid : int
        The batch id.
    reads_before_batch : bool, default True
        Reads (``multiGet``/``get``) pass the txid, so an opaque state answers keys this
        batch already wrote with their value from before the batch (``prev``), as in a
        replay. False for a state another query writes: its txids are not this batch's.

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> counts = BatchState(MemoryState.opaque(name="doc-batch-view").open(), txid=0)
    >>> counts.multiUpdate([["cat"]], [lambda old: (old or 0) + 2])
    [2]
    >>> counts.multiGet([["cat"]])      # batch 0 wrote it: the value from before batch 0
    [None]
    >>> BatchState(counts.state, txid=1).multiGet([["cat"]])
    [2]
    """

    def __init__(self, state: MapState, txid: int, *, reads_before_batch: bool = True) -> None:
        self.state = state
        self.txid = txid
        self.reads_before_batch = reads_before_batch

    @property
    def address(self) -> str:
        """The state's URL, as errors name it."""
        return self.state.address

    @property
    def state_type(self) -> StateType:
        """The kind of map state."""
        return self.state.state_type

    @property
    def stats(self) -> StateStats:
        """The opened state's counters."""
        return self.state.stats

    def _read_txid(self) -> int | None:
        return self.txid if self.reads_before_batch else None

    def multiGet(self, keys: Sequence[Key]) -> list[Any]:
        """Values of ``keys`` (None for missing keys): ``MapState.multiGet``."""
        return self.state.multiGet(keys, self._read_txid())

    def getTuples(self) -> Iterator[list[Any]]:
        """Every stored key's group values followed by its value: ``MapState.getTuples``.

        What TupleCollectionGet reads (Trident's ``ITupleCollection``). With
        ``reads_before_batch`` the values are those :meth:`multiGet` answers: an
        opaque state gives keys this batch wrote their value from before the
        batch, and leaves out keys this batch created.

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> counts = MemoryState.opaque(name="doc-batch-tuples").open()
        >>> counts.multiUpdate(0, [["cat"]], [lambda old: 2])
        [2]
        >>> batch = BatchState(counts, txid=1)
        >>> batch.multiUpdate([["cat"], ["dog"]], [lambda old: old + 1, lambda old: 5])
        [3, 5]
        >>> list(batch.getTuples())                # before batch 1: cat was 2, dog did not exist
        [['cat', 2]]
        >>> sorted(BatchState(counts, txid=2).getTuples())
        [['cat', 3], ['dog', 5]]
        """
        return self.state.getTuples(self._read_txid())

    def multiUpdate(self, keys: Sequence[Key], updaters: Sequence[Updater]) -> list[Any]:
        """Apply one updater per key as this batch; returns the new values."""
        return self.state.multiUpdate(self.txid, keys, updaters)

    def multiPut(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        """Set ``keys`` to ``values`` as this batch."""
        self.state.multiPut(self.txid, keys, values)

    def get(self) -> Any:
        """The value under the global key (ungrouped state)."""
        return self.state.get(self._read_txid())

    def update(self, updater: Updater) -> Any:
        """Update the global key's value as this batch; returns the new value."""
        return self.state.update(self.txid, updater)

    def set(self, value: Any) -> None:
        """Set the global key's value as this batch."""
        self.state.set(self.txid, value)

    def beginCommit(self, txid: int | None) -> None:
        """Trident's ``State.beginCommit``: the runtime bound the txid already; nothing to do."""

    def commit(self, txid: int | None) -> None:
        """Trident's ``State.commit``: every write is already committed; nothing to do."""

    def __repr__(self) -> str:
        return f"BatchState({self.address}, txid={self.txid})"


__all__ = ["BatchState"]
