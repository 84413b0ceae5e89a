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
from .keys import GLOBAL_KEY, check_key, encode_key
from .map import MapState
from .stats import StateStats
from .value_updaters import Updater
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
        batch already wrote elsewhere (an earlier attempt, another task) with their value
        from before the batch (``prev``), as in a replay; keys written through this view
        read back what it wrote. False for a state another query writes: its txids are
        not this batch's.

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> counts = MemoryState.opaque(name="doc-batch-view").open()
    >>> BatchState(counts, txid=0).multiUpdate([["cat"]], [lambda old: (old or 0) + 2])
    [2]
    >>> BatchState(counts, txid=0).multiGet([["cat"]])   # batch 0 replayed: the value before it
    [None]
    >>> BatchState(counts, txid=1).multiGet([["cat"]])
    [2]
    """

    def __init__(self, state: MapState, txid: int, *, reads_before_batch: bool = True) -> None:
        self.state = state
        self.txid = txid
        self.reads_before_batch = reads_before_batch
        self._written: set[str] = set()  # encoded keys written through this view

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
        """Values of ``keys`` (None for missing keys): ``MapState.multiGet``.

        A key written through this view reads back what was written (Trident's
        ``CachedBatchReadsMap``); other keys read as the batch sees them.

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> counts = BatchState(MemoryState.opaque(name="doc-batch-reads").open(), txid=0)
        >>> counts.multiPut([["cat"]], [4])
        >>> counts.multiGet([["cat"], ["dog"]])
        [4, None]
        """
        txid = self._read_txid()
        keys = list(keys)
        if txid is None or not self._written:
            return self.state.multiGet(keys, txid)
        mine = [i for i, key in enumerate(keys) if self._encoded(key) in self._written]
        values = self.state.multiGet(keys, txid)
        if mine:
            for i, value in zip(mine, self.state.multiGet([keys[i] for i in mine]), strict=True):
                values[i] = value
        return values

    @staticmethod
    def _encoded(key: Key) -> str | None:
        try:
            return encode_key(check_key(key))
        except Exception:  # an invalid key: multiGet names what is wrong with it
            return None

    def _wrote(self, keys: Sequence[Key]) -> None:
        self._written.update(e for e in (self._encoded(key) for key in keys) if e is not None)

    def _rules_own(self, method: str) -> bool:
        """Whether the state's ``method`` is the map rules' own (not a subclass's): then this view
        calls the rules directly and keeps the keys' encodings they made (each key encoded once)."""
        return getattr(type(self.state), method) is getattr(MapState, method)

    def getTuples(self) -> Iterator[list[Any]]:
        """Every stored key's group values followed by its value: ``MapState.getTuples``.

        What TupleCollectionGet reads (Trident's ``ITupleCollection``). With
        ``reads_before_batch`` the values are the batch's view of the store: an
        opaque state gives keys this batch wrote their value from before the
        batch, and leaves out keys this batch created (this view's own writes
        included: a query function reads, it does not write).

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
        if self._rules_own("multiUpdate"):
            values, encoded = self.state._multi_update(self.txid, keys, updaters)
            self._written.update(encoded)
            return values
        values = self.state.multiUpdate(self.txid, keys, updaters)
        self._wrote(keys)
        return values

    def multiPut(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        """Set ``keys`` to ``values`` as this batch."""
        if self._rules_own("multiPut"):
            self._written.update(self.state._multi_put(self.txid, keys, values))
            return
        self.state.multiPut(self.txid, keys, values)
        self._wrote(keys)

    def get(self) -> Any:
        """The value under the global key (ungrouped state)."""
        return self.multiGet([GLOBAL_KEY])[0]

    def update(self, updater: Updater) -> Any:
        """Update the global key's value as this batch; returns the new value."""
        return self.multiUpdate([GLOBAL_KEY], [updater])[0]

    def set(self, value: Any) -> None:
        """Set the global key's value as this batch."""
        self.multiPut([GLOBAL_KEY], [value])

    def beginCommit(self, txid: int | None) -> None:
        """Trident's ``State.beginCommit``: the runtime bound the txid already; nothing to do."""

    def commit(self, txid: int | None) -> None:
        """Trident's ``State.commit``: every write is already committed; nothing to do."""

    def __repr__(self) -> str:
        return f"BatchState({self.address}, txid={self.txid})"


__all__ = ["BatchState"]
