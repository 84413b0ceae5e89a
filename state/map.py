"""Trident's map state rules: non-transactional, transactional and opaque, applied once per txid.

For each key of a batch with txid ``t`` (TRIDENT.md, "Map state"):

* non-transactional, stored ``val``: write ``update(val)``. At-least-once: a
  replayed batch is applied again.
* transactional, stored ``[txid, val]``: missing -> ``[t, update(None)]``;
  ``txid == t`` -> skip, the batch was applied already; otherwise
  ``[t, update(val)]``. Exact only if a replayed batch has exactly the same
  tuples (a transactional spout; Spark's Kafka offsets log gives that).
* opaque, stored ``[txid, curr, prev]``: ``base = prev`` if ``txid == t`` else
  ``curr``; write ``[t, update(base), prev']`` with ``prev' = prev`` if
  ``txid == t`` else ``curr``. Exact even if a replay's tuples differ for a
  key, though a key that a failed attempt wrote and its replay no longer
  touches keeps that attempt's value (as in Trident).
* a stored txid greater than ``t`` raises :class:`StateAheadError`: the
  checkpoint was reset or two queries write the state.

Every write is conditional on the version read (see ``base.py``): a key whose
write loses to another writer or to a stale cache entry is re-read and its
update recomputed, at most ``max_conflict_retries`` times. So updaters must be
pure functions of their argument: they may run more than once per key.

Why there is no ``on_state_ahead="adopt"`` switch: after a checkpoint reset the
new run's batch ids restart at 0, and a key stored by the old run with a txid
*equal* to a new batch id is indistinguishable from a replay (transactional
would skip the batch, opaque would recompute from a stale ``prev``). Only
moving the new run's txids past every stored txid is safe, which is what
``txid_offset`` does: stored txid = batch id + ``txid_offset``.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, NamedTuple, Self, overload

from .base import BackingMap, Key, Versioned, VersionedBackingMap, as_versioned
from .checks import check_int, is_int
from .errors import StateAheadError, StateConfigError, StateConflictError, StateError, StateTypeMismatchError
from .keys import GLOBAL_KEY, check_key, encode_key, encode_keys
from .stats import StateStats
from .value_updaters import Updater, ValueUpdater, as_updater
from .values import OpaqueValue, StateType, TransactionalValue

_IMMUTABLE = frozenset({int, float, str, bool, type(None)})


def _fresh(value: Any) -> Any:
    # An updater that mutates its argument in place would also mutate the cached
    # entry and, for opaque state, the value kept as prev'. Scalars need no copy.
    if type(value) in _IMMUTABLE:
        return value
    return copy.deepcopy(value) if isinstance(value, list | dict | set | bytearray) else value


_MISSING: Any = object()


@dataclass
class _CurrentBatch:
    """The batch :meth:`MapState.beginCommit` set, and the keys written through the state in it."""

    txid: int
    written: set[str] = field(default_factory=set)


def _encoded(key: Key) -> str | None:
    try:
        return encode_key(check_key(key))
    except Exception:  # an invalid key: the call that uses it names what is wrong
        return None


class _Decision(NamedTuple):
    """What one key's rule decided: write ``stored`` (or skip) and answer ``result``.

    A named tuple rather than a frozen dataclass: one is made per key per call, and a
    tuple is made in a quarter of the time.
    """

    write: bool
    stored: Any
    result: Any


_Decide = Callable[[Key, "Versioned | None", int, int], _Decision]


class MapState(ABC):
    """A map state of one kind over a versioned store: Trident's ``MapState`` plus ``Snapshottable``.

    Built by a state factory's ``open()`` (``MemoryState.opaque(name="wc").open()``).
    One task uses one opened state at a time.

    Java's shapes are accepted as written: ``NonTransactionalMap(backing)`` (and a subclass's
    ``super().__init__(backing)``) over a plain ``IBackingMap``; ``multiPut(keys, values)``,
    ``multiUpdate(keys, updaters)``, ``multiGet(keys)``, ``update(updater)``, ``set(value)`` with
    no txid, as batch ``txid`` once :meth:`beginCommit` was called (the engine calls it for a
    state a ``StateFactory.makeState`` made); Storm's ``ValueUpdater`` objects (``update(old)``)
    as well as plain callables. Outside a batch (no ``beginCommit``), a txid-less write works on
    a non-transactional map (it stores no txid) and is refused by the transactional and opaque
    kinds, which store one: pass it, ``multiPut(txid, keys, values)``, or call
    ``beginCommit(txid)`` first.

    Parameters
    ----------
    backing : BackingMap
        The store, usually behind a cache and a batching layer; a plain ``IBackingMap``
        (``multiGet``/``multiPut``) is written unconditionally, as in Trident.
    txid_offset : int, default 0
        Added to every txid before it is stored or compared; the safe way to
        adopt a state that is ahead of a reset checkpoint (see the module doc).
    max_conflict_retries : int, default 10
        How many times a key whose conditional write lost is re-read and recomputed.
    stats : StateStats, optional
        Shared counters (the factory passes the ones the cache and batching layer count into).

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> counts = MemoryState.opaque(name="doc-map").open()
    >>> counts.multiUpdate(0, [["cat"], ["dog"]], [lambda old: (old or 0) + 2, lambda old: (old or 0) + 1])
    [2, 1]
    >>> counts.multiGet([["cat"], ["dog"], ["eel"]])
    [2, 1, None]
    """

    state_type: ClassVar[StateType]

    def __init__(self, backing: BackingMap, *, txid_offset: int = 0,
                 max_conflict_retries: int = 10, stats: StateStats | None = None) -> None:
        check_int(txid_offset, "txid_offset", minimum=0, error=StateConfigError)
        check_int(max_conflict_retries, "max_conflict_retries", minimum=0, error=StateConfigError)
        # Java's ``new NonTransactionalMap(backing)`` / ``super(backing)``: a plain IBackingMap is
        # read and written through the versioned interface the rules use (unconditional writes).
        self.backing = as_versioned(backing)
        self.txid_offset = txid_offset
        self.max_conflict_retries = max_conflict_retries
        self.stats = stats if stats is not None else StateStats()
        self._batch: _CurrentBatch | None = None

    @classmethod
    def build(cls, backing: BackingMap, *, cache_size: int = 0, max_multi_get_batch_size: int | None = None,
              max_multi_put_batch_size: int | None = None, txid_offset: int = 0,
              max_conflict_retries: int = 10) -> Self:
        """Trident's ``OpaqueMap.build(backing)`` (and ``TransactionalMap``'s, ``NonTransactionalMap``'s):
        this kind's rules over a user's own store.

        What a :class:`~.state_api.StateFactory`'s ``makeState`` returns for
        ``persistentAggregate`` and ``stateQuery``. The store gets and stores this kind's values
        (a plain value, a :class:`~.values.TransactionalValue`, an :class:`~.values.OpaqueValue`)
        as they are: serialize them as the store needs (the JSON serializers of
        ``trident_spark.state`` write Storm's formats). A store that implements
        :class:`~.base.VersionedBackingMap` gets conditional writes; a plain ``IBackingMap``
        writes unconditionally, as in Trident.

        Parameters
        ----------
        backing : BackingMap
            The store: an ``IBackingMap`` (``multiGet``/``multiPut``) or a ``VersionedBackingMap``.
        cache_size : int, default 0
            Keys kept in an LRU cache in front of the store (Trident's ``CachedMap``); 0: none.
        max_multi_get_batch_size, max_multi_put_batch_size : int or None, default None
            Most keys per store read / write; None: a batch's keys in one call.
        txid_offset, max_conflict_retries : int
            As for the built-in states (:class:`~.factory.StoreStateFactory`).

        Examples
        --------
        >>> from trident_spark.state import IBackingMap, OpaqueMap
        >>> class DictMap(IBackingMap):
        ...     def __init__(self): self.data = {}
        ...     def multiGet(self, keys): return [self.data.get(tuple(k)) for k in keys]
        ...     def multiPut(self, keys, values): self.data.update(zip(map(tuple, keys), values))
        >>> store = DictMap()
        >>> counts = OpaqueMap.build(store)
        >>> counts.multiUpdate(0, [["cat"]], [lambda old: (old or 0) + 2])
        [2]
        >>> counts.multiUpdate(0, [["cat"]], [lambda old: (old or 0) + 5])   # txid 0 replayed
        [5]
        >>> store.data
        {('cat',): OpaqueValue(txid=0, curr=5, prev=None)}
        """
        from .batching import BatchingMap
        from .cache import CachedMap

        stats = StateStats()
        layered: VersionedBackingMap = BatchingMap(
            as_versioned(backing), max_multi_get_batch_size=max_multi_get_batch_size,
            max_multi_put_batch_size=max_multi_put_batch_size, stats=stats)
        check_int(cache_size, "cache_size", minimum=0, error=StateConfigError)
        if cache_size > 0:
            layered = CachedMap(layered, cache_size, stats=stats)
        if cls not in MAP_KINDS.values() and txid_offset == 0 and max_conflict_retries == 10:
            # A program's subclass, ``MyMap.build(backing)``: its __init__ may take the backing
            # map alone (Java's ``super(backing)``); its counters are its own.
            return cls(layered)
        return cls(layered, txid_offset=txid_offset, max_conflict_retries=max_conflict_retries, stats=stats)

    @property
    def address(self) -> str:
        """The state's address (a URL such as ``memory://wc``), as named in errors."""
        return self.backing.address

    # -- the batch a program's state is in (Trident's beginCommit / commit) --------------------

    def beginCommit(self, txid: int) -> None:
        """Trident's ``State.beginCommit``: batch ``txid``'s updates begin; txid-less calls use it.

        The engine calls it (and :meth:`commit`) around the updater for a map state a
        ``StateFactory.makeState`` made, so a program's subclass may call ``self.multiPut(keys,
        values)`` as its Java did. Within the batch a key written through this state reads back
        what was written (Trident's ``CachedBatchReadsMap``); other keys read as the batch sees
        them (an opaque key the batch wrote before, in an earlier attempt, reads ``prev``).

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> counts = MemoryState.opaque(name="doc-begin-commit").open()
        >>> counts.beginCommit(0)
        >>> counts.multiPut([["cat"]], [3])                 # no txid: batch 0's
        >>> counts.multiUpdate([["cat"]], [lambda old: old + 1])
        [4]
        >>> counts.commit(0)
        >>> counts.multiGet([["cat"]])
        [4]
        """
        self._stored_txid(txid)  # an int >= 0, or a clear error
        self._batch = _CurrentBatch(txid)

    def commit(self, txid: int) -> None:
        """Trident's ``State.commit``: the batch's writes are already made; txid-less calls end."""
        self._batch = None

    @property
    def current_txid(self) -> int | None:
        """The txid :meth:`beginCommit` set (None outside a batch)."""
        return None if self._batch is None else self._batch.txid

    def _txid_for(self, method: str) -> int:
        """The txid of a call made without one: the current batch's, else (outside a batch) 0 for
        a non-transactional map, which stores none; the other kinds store it: a clear error."""
        if self._batch is not None:
            return self._batch.txid
        if self.state_type is StateType.NON_TRANSACTIONAL:
            return 0
        kind = self.state_type.value.replace("_", "-")
        raise StateError(
            f"{self.address}: {method} without a txid outside a batch; a {kind} "
            f"state stores the txid of each write. Pass it ({method}(txid, ...)), or call "
            f"beginCommit(txid) first (inside a topology the engine does, as Trident does)")

    def _split(self, method: str, names: tuple[str, ...], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> tuple[int, list[Any]]:
        """``(txid, [the named arguments])`` of a call made as Trident's ``MapState`` does (no txid)
        or with the txid first."""
        kwargs = dict(kwargs)
        if "vals" in kwargs and "values" in names:  # Java's parameter name
            kwargs["values"] = kwargs.pop("vals")
        txid: Any = kwargs.pop("txid", _MISSING)
        if txid is _MISSING and len(args) + len(kwargs) == len(names) + 1:
            txid, args = args[0], args[1:]
        rest = list(args) + [kwargs.pop(name) for name in names[len(args):] if name in kwargs]
        if len(rest) != len(names) or kwargs:
            shown = ", ".join(names)
            raise TypeError(f"{type(self).__name__}.{method}() takes ({shown}) as Trident's MapState does "
                            f"(the txid set by beginCommit), or (txid, {shown}); got {len(args)} positional "
                            f"argument(s) and {sorted(kwargs) or 'no'} keywords")
        return (self._txid_for(method) if txid is _MISSING else txid), rest

    def _written_in_batch(self, txid: int, encoded: Sequence[str]) -> set[int]:
        """Positions of keys this state already wrote in batch ``txid`` (since beginCommit)."""
        if self._batch is None or self._batch.txid != txid or not self._batch.written:
            return set()
        written = self._batch.written
        return {i for i, enc in enumerate(encoded) if enc in written}

    def _wrote(self, txid: int, encoded: Sequence[str]) -> None:
        if self._batch is not None and self._batch.txid == txid:
            self._batch.written.update(encoded)

    # -- the public operations ------------------------------------------------------------

    def multiGet(self, keys: Sequence[Key], txid: int | None = None) -> list[Any]:
        """Current values of ``keys`` for queries: ``curr`` (opaque), ``val`` (others); None if missing.

        Parameters
        ----------
        keys : sequence of Key
            Lists of group values: ``[["cat"], ["dog"]]``.
        txid : int, optional
            The batch reading (a ``stateQuery`` inside a batch). An opaque
            state then answers ``prev`` for keys that batch already wrote, so a
            replayed batch sees the values from before itself (Trident's
            ``OpaqueMap.multiGet``). Omitted: the batch :meth:`beginCommit` set
            (keys it wrote read back what it wrote), else the current values.
        """
        if txid is None and self._batch is not None:
            return self._batch_get(list(keys), self._batch)
        return self._get(keys, txid)

    def _get(self, keys: Sequence[Key], txid: int | None) -> list[Any]:
        keys = [check_key(key) for key in keys]
        stored = self.backing.multiGetVersioned(keys)
        batch_txid = None if txid is None else self._stored_txid(txid)
        return [None if s is None else self._read(key, s.value, batch_txid)
                for key, s in zip(keys, stored, strict=True)]

    def _batch_get(self, keys: list[Key], batch: _CurrentBatch) -> list[Any]:
        values = self._get(keys, batch.txid)
        mine = [i for i, key in enumerate(keys) if _encoded(key) in batch.written]
        if mine:
            for i, value in zip(mine, self._get([keys[i] for i in mine], None), strict=True):
                values[i] = value
        return values

    def getTuples(self, txid: int | None = None) -> Iterator[list[Any]]:
        """Every stored key with its current value: Trident's ``ITupleCollection.getTuples``.

        One list per stored key: the key's group values followed by the value a
        query reads (``curr`` of an opaque state, ``val`` of the others, as
        :meth:`multiGet` answers), so ``["cat", 3]`` for a state grouped by one
        field. The global key of an ungrouped state has no group values and
        yields just ``[value]`` (Trident's MemoryMapState would put its
        ``$MAGIC_GLOBAL_KEY...`` string first; here no key value is invented).

        The store is read itself, never the cache, page by page
        (``max_multi_get_batch_size`` keys per round trip, lazily), in an order
        the store chooses. A key written or removed while the iterator runs may
        or may not be seen.

        Parameters
        ----------
        txid : int, optional
            The batch reading, as for :meth:`multiGet`: an opaque state then
            answers ``prev`` for keys that batch already wrote, and leaves out
            keys the batch created (they did not exist before it). Omitted: the
            batch :meth:`beginCommit` set, if any.

        Raises
        ------
        ScanUnsupportedError
            The store cannot list its keys (a custom backing map without ``scanVersioned``).
        StateError
            A stored key is too long to be read back (``keys.is_hashed``; memory, SQLite and Redis).

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> counts = MemoryState.opaque(name="doc-gettuples").open()
        >>> counts.multiUpdate(0, [["cat", "uk"], ["dog", "us"]], [lambda old: 3, lambda old: 1])
        [3, 1]
        >>> sorted(counts.getTuples())
        [['cat', 'uk', 3], ['dog', 'us', 1]]
        >>> counts.update(1, lambda old: 42)          # the global key: no group values
        42
        >>> sorted(counts.getTuples(), key=len)[0]
        [42]
        """
        if txid is None and self._batch is not None:
            txid = self._batch.txid
        batch_txid = None if txid is None else self._stored_txid(txid)
        return self._tuples(self.backing.scanVersioned(), batch_txid)

    def _tuples(self, entries: Iterator[tuple[Key, Versioned]],
                batch_txid: int | None) -> Iterator[list[Any]]:
        for key, stored in entries:
            value = self._read(key, stored.value, batch_txid)
            if batch_txid is not None and self._created_by(stored.value, batch_txid):
                continue
            yield [*key, value]

    @overload
    def multiUpdate(self, keys: Sequence[Key], updaters: Sequence[Updater | ValueUpdater],
                    /) -> list[Any]: ...
    @overload
    def multiUpdate(self, txid: int, keys: Sequence[Key], updaters: Sequence[Updater | ValueUpdater],
                    /) -> list[Any]: ...
    def multiUpdate(self, *args: Any, **kwargs: Any) -> list[Any]:
        """Apply batch ``txid``'s update of each key by the state kind's rule; return the new values.

        Called as Trident's ``MapState.multiUpdate(keys, updaters)`` (the txid :meth:`beginCommit`
        set) or with the txid first: ``multiUpdate(txid, keys, updaters)``.

        Parameters
        ----------
        txid : int, optional
            The batch's txid (Spark's ``batchId``).
        keys : sequence of Key
            Distinct keys.
        updaters : sequence of callables or ValueUpdater
            ``updaters[i](old)`` (or Storm's ``updaters[i].update(old)``) gives key ``i``'s new
            value from its old one (None for a new key); may run more than once, so must be pure.

        Returns
        -------
        list
            Each key's value after the batch (for a transactional key that was
            skipped, the stored value), for ``newValuesStream``.

        Raises
        ------
        StateAheadError
            A stored txid is greater than ``txid``. Found on the first read, nothing
            of the call is written; found when re-reading after a lost race (another
            writer moved the key ahead meanwhile), the keys that already won stay.
        StateConflictError
            A key kept losing its conditional write.
        StateError
            No txid, outside a batch, on a transactional or opaque state.
        """
        txid, (keys, updaters) = self._split("multiUpdate", ("keys", "updaters"), args, kwargs)
        return self._multi_update(txid, keys, updaters)[0]

    def _multi_update(self, txid: int, keys: Sequence[Key],
                      updaters: Sequence[Updater | ValueUpdater]) -> tuple[list[Any], list[str]]:
        """``multiUpdate(txid, keys, updaters)``: the new values, and the keys' encodings (made once
        here, for the caller's bookkeeping too: ``BatchState``)."""
        keys, updates = list(keys), [as_updater(u) for u in updaters]
        if len(updates) != len(keys):
            raise StateError(f"{self.address}: multiUpdate got {len(keys)} keys but {len(updates)} updaters")
        stored_txid, keys, encoded = self._checked(txid, keys)
        again = self._written_in_batch(txid, encoded)
        update, update_again = self._update, self._update_again
        if again:
            results = self._apply(stored_txid, keys, encoded, lambda key, stored, t, i: (
                update_again if i in again else update)(key, stored, t, updates[i]))
        else:
            results = self._apply(stored_txid, keys, encoded,
                                  lambda key, stored, t, i: update(key, stored, t, updates[i]))
        self._wrote(txid, encoded)
        return results, encoded

    @overload
    def multiPut(self, keys: Sequence[Key], values: Sequence[Any], /) -> None: ...
    @overload
    def multiPut(self, txid: int, keys: Sequence[Key], values: Sequence[Any], /) -> None: ...
    def multiPut(self, *args: Any, **kwargs: Any) -> None:
        """Set keys to ``values`` (Trident's ``MapState.multiPut(keys, vals)``, the txid
        :meth:`beginCommit` set), or as batch ``txid``: ``multiPut(txid, keys, values)``."""
        txid, (keys, values) = self._split("multiPut", ("keys", "values"), args, kwargs)
        self._multi_put(txid, keys, values)

    def _multi_put(self, txid: int, keys: Sequence[Key], values: Sequence[Any]) -> list[str]:
        """``multiPut(txid, keys, values)``; returns the keys' encodings (see :meth:`_multi_update`)."""
        keys, values = list(keys), list(values)
        if len(values) != len(keys):
            raise StateError(f"{self.address}: multiPut got {len(keys)} keys but {len(values)} values")
        stored_txid, keys, encoded = self._checked(txid, keys)
        set_ = self._set
        self._apply(stored_txid, keys, encoded, lambda key, stored, t, i: set_(key, stored, t, values[i]))
        self._wrote(txid, encoded)
        return encoded

    def get(self, txid: int | None = None) -> Any:
        """The value under the global key (ungrouped state, Trident's ``Snapshottable.get``).

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> total = MemoryState.transactional(name="doc-global").open()
        >>> total.update(0, lambda old: (old or 0) + 5)
        5
        >>> total.get()
        5
        """
        return self.multiGet([GLOBAL_KEY], txid)[0]

    @overload
    def update(self, updater: Updater | ValueUpdater, /) -> Any: ...
    @overload
    def update(self, txid: int, updater: Updater | ValueUpdater, /) -> Any: ...
    def update(self, *args: Any, **kwargs: Any) -> Any:
        """Update the global key's value (Trident's ``Snapshottable.update(updater)``, or as batch
        ``txid``: ``update(txid, updater)``); returns the new value."""
        txid, (updater,) = self._split("update", ("updater",), args, kwargs)
        return self.multiUpdate(txid, [GLOBAL_KEY], [updater])[0]

    @overload
    def set(self, value: Any, /) -> None: ...
    @overload
    def set(self, txid: int, value: Any, /) -> None: ...
    def set(self, *args: Any, **kwargs: Any) -> None:
        """Set the global key's value (Trident's ``Snapshottable.set(value)``, or as batch ``txid``:
        ``set(txid, value)``)."""
        txid, (value,) = self._split("set", ("value",), args, kwargs)
        self.multiPut(txid, [GLOBAL_KEY], [value])

    def close(self) -> None:
        """Close the store's connections."""
        self.backing.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.address})"

    # -- the rules, per kind ----------------------------------------------------------------

    @abstractmethod
    def _read(self, key: Key, stored: Any, batch_txid: int | None) -> Any:
        """What a query sees of a stored value."""

    def _created_by(self, stored: Any, batch_txid: int) -> bool:
        """Whether batch ``batch_txid`` created the key, as far as this kind can tell (only opaque can)."""
        return False

    @abstractmethod
    def _update(self, key: Key, stored: Versioned | None, txid: int, updater: Updater) -> _Decision:
        """The rule of ``multiUpdate`` for one key."""

    @abstractmethod
    def _set(self, key: Key, stored: Versioned | None, txid: int, value: Any) -> _Decision:
        """The rule of ``multiPut`` for one key."""

    def _update_again(self, key: Key, stored: Versioned | None, txid: int, updater: Updater) -> _Decision:
        """``multiUpdate`` of a key this state already wrote in the batch: on top of what it wrote
        (Trident's maps read it from their ``CachedBatchReadsMap``)."""
        return self._update(key, stored, txid, updater)

    # -- shared machinery -------------------------------------------------------------------

    def _stored_txid(self, txid: int) -> int:
        if not is_int(txid, 0):
            raise StateError(f"{self.address}: txid must be an int >= 0 (the batch id), got {txid!r}")
        return txid + self.txid_offset

    def _check_ahead(self, key: Key, stored_txid: int, txid: int) -> None:
        if stored_txid > txid:
            raise StateAheadError(self.address, key, stored_txid=stored_txid, batch_txid=txid,
                                  txid_offset=self.txid_offset)

    def _expect(self, key: Key, value: Any, kind: type) -> None:
        # The default serializers already refuse other kinds; this catches custom ones.
        if not isinstance(value, kind):
            raise StateTypeMismatchError(self.address, key, expected=self.state_type.value.replace("_", "-"),
                                         found=f"{value!r}")

    def _checked(self, txid: int, keys: Sequence[Key]) -> tuple[int, list[Key], list[str]]:
        """The stored txid, the checked keys and their encodings (each key encoded once per call),
        or a clear error: a bad txid, a bad key, a key twice."""
        stored_txid = self._stored_txid(txid)
        keys = [check_key(key) for key in keys]
        encoded = encode_keys(keys)
        if len(set(encoded)) != len(encoded):
            seen: set[str] = set()
            for key, enc in zip(keys, encoded, strict=True):
                if enc in seen:
                    raise StateError(f"{self.address}: key {list(key)!r} appears twice in one update; "
                                     f"combine its updates first (one updater per key per batch)")
                seen.add(enc)
        return stored_txid, keys, encoded

    def _apply(self, stored_txid: int, keys: list[Key], encoded: list[str], decide: _Decide) -> list[Any]:
        """Read, decide and conditionally write every key (``_checked``'s), re-reading and deciding
        again the keys whose write lost."""
        results: list[Any] = [None] * len(keys)
        pending = list(range(len(keys)))
        attempts = 0
        while pending:
            if attempts > self.max_conflict_retries:
                raise StateConflictError(self.address, keys[pending[0]], attempts=attempts)
            attempts += 1
            if len(pending) == len(keys):
                stored = self.backing.multiGetEncoded(keys, encoded)
            else:
                stored = self.backing.multiGetEncoded([keys[i] for i in pending],
                                                      [encoded[i] for i in pending])
            # Decide every key before writing any: an ahead key stops the whole call unwritten.
            decisions = [decide(keys[i], s, stored_txid, i) for i, s in zip(pending, stored, strict=True)]
            writes = [(i, s, d) for i, s, d in zip(pending, stored, decisions, strict=True) if d.write]
            self.stats.keys_skipped += len(decisions) - len(writes)
            for i, d in zip(pending, decisions, strict=True):
                results[i] = d.result
            outcomes = self.backing.multiPutEncoded(
                [keys[i] for i, _, _ in writes], [encoded[i] for i, _, _ in writes],
                [d.stored for _, _, d in writes], [None if s is None else s.version for _, s, _ in writes])
            pending = [i for (i, _, _), won in zip(writes, outcomes, strict=True) if won is None]
            self.stats.write_conflicts += len(pending)
        return results


class NonTransactionalMap(MapState):
    """Stores plain values: read, apply, write. At-least-once: a replay applies again.

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> counts = MemoryState.nonTransactional(name="doc-nontx").open()
    >>> counts.multiUpdate(0, [["cat"]], [lambda old: (old or 0) + 1])
    [1]
    >>> counts.multiUpdate(0, [["cat"]], [lambda old: (old or 0) + 1])   # a replay counts again
    [2]
    """

    state_type = StateType.NON_TRANSACTIONAL

    def _read(self, key: Key, stored: Any, batch_txid: int | None) -> Any:
        return stored

    def _update(self, key: Key, stored: Versioned | None, txid: int, updater: Updater) -> _Decision:
        new = updater(None if stored is None else _fresh(stored.value))
        return _Decision(True, new, new)

    def _set(self, key: Key, stored: Versioned | None, txid: int, value: Any) -> _Decision:
        return _Decision(True, value, value)


class TransactionalMap(MapState):
    """Stores ``[txid, val]``; skips a key whose stored txid is the batch's (already applied).

    Exact when a replayed batch has the same tuples (transactional spout).

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> counts = MemoryState.transactional(name="doc-tx").open()
    >>> counts.multiUpdate(0, [["cat"]], [lambda old: (old or 0) + 1])
    [1]
    >>> counts.multiUpdate(0, [["cat"]], [lambda old: (old or 0) + 1])   # replay of txid 0: skipped
    [1]
    """

    state_type = StateType.TRANSACTIONAL

    def _read(self, key: Key, stored: Any, batch_txid: int | None) -> Any:
        self._expect(key, stored, TransactionalValue)
        return stored.val

    def _update(self, key: Key, stored: Versioned | None, txid: int, updater: Updater) -> _Decision:
        if stored is None:
            new = TransactionalValue(txid, updater(None))
            return _Decision(True, new, new.val)
        old = stored.value
        self._expect(key, old, TransactionalValue)
        self._check_ahead(key, old.txid, txid)
        if old.txid == txid:
            return _Decision(False, old, old.val)
        new = TransactionalValue(txid, updater(_fresh(old.val)))
        return _Decision(True, new, new.val)

    def _update_again(self, key: Key, stored: Versioned | None, txid: int, updater: Updater) -> _Decision:
        if stored is None or stored.value.txid != txid:
            return self._update(key, stored, txid, updater)
        new = TransactionalValue(txid, updater(_fresh(stored.value.val)))
        return _Decision(True, new, new.val)

    def _set(self, key: Key, stored: Versioned | None, txid: int, value: Any) -> _Decision:
        if stored is not None:
            self._expect(key, stored.value, TransactionalValue)
            self._check_ahead(key, stored.value.txid, txid)
        return _Decision(True, TransactionalValue(txid, value), value)


class OpaqueMap(MapState):
    """Stores ``[txid, curr, prev]``; a replay recomputes from ``prev``. Exact with any spout.

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> counts = MemoryState.opaque(name="doc-opaque").open()
    >>> counts.multiUpdate(0, [["cat"]], [lambda old: (old or 0) + 1])
    [1]
    >>> counts.multiUpdate(1, [["cat"]], [lambda old: (old or 0) + 5])
    [6]
    >>> counts.multiUpdate(1, [["cat"]], [lambda old: (old or 0) + 2])   # txid 1 replayed, other tuples
    [3]
    """

    state_type = StateType.OPAQUE

    def _read(self, key: Key, stored: Any, batch_txid: int | None) -> Any:
        self._expect(key, stored, OpaqueValue)
        return stored.prev if batch_txid is not None and stored.txid == batch_txid else stored.curr

    def _created_by(self, stored: Any, batch_txid: int) -> bool:
        # Written by the batch with nothing before it: the key did not exist before the batch.
        return isinstance(stored, OpaqueValue) and stored.txid == batch_txid and stored.prev is None

    def _update(self, key: Key, stored: Versioned | None, txid: int, updater: Updater) -> _Decision:
        if stored is None:
            new = OpaqueValue(txid, updater(None), None)
            return _Decision(True, new, new.curr)
        old = stored.value
        self._expect(key, old, OpaqueValue)
        self._check_ahead(key, old.txid, txid)
        base = old.prev if old.txid == txid else old.curr
        new = OpaqueValue(txid, updater(_fresh(base)), base)
        return _Decision(True, new, new.curr)

    def _update_again(self, key: Key, stored: Versioned | None, txid: int, updater: Updater) -> _Decision:
        if stored is None or stored.value.txid != txid:
            return self._update(key, stored, txid, updater)
        old = stored.value
        new = OpaqueValue(txid, updater(_fresh(old.curr)), old.prev)
        return _Decision(True, new, new.curr)

    def _set(self, key: Key, stored: Versioned | None, txid: int, value: Any) -> _Decision:
        # Trident's OpaqueMap.multiPut is a multiUpdate whose updaters return the value.
        return self._update(key, stored, txid, lambda _old: value)


MAP_KINDS: dict[StateType, type[MapState]] = {
    StateType.NON_TRANSACTIONAL: NonTransactionalMap,
    StateType.TRANSACTIONAL: TransactionalMap,
    StateType.OPAQUE: OpaqueMap,
}

__all__ = [
    "MAP_KINDS",
    "MapState",
    "NonTransactionalMap",
    "OpaqueMap",
    "TransactionalMap",
]
