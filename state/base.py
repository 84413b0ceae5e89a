"""The backing-map interfaces a store implements (Trident's ``IBackingMap``, plus versions).

A key is the list (or tuple) of a group's values, ``["cat"]`` or ``["us", 2024]``;
``()`` is the global key of ungrouped state. Values are what the state kind
stores per key: a plain value, a :class:`~.values.TransactionalValue` or an
:class:`~.values.OpaqueValue`; a store serializes them itself.

Two interfaces:

* :class:`BackingMap` -- Trident's ``IBackingMap``: ``multiGet`` and ``multiPut``
  (and an optional ``multiRemove``). Enough to read a state.
* :class:`VersionedBackingMap` -- what a store implements so that writes are
  conditional on what was read: ``multiGetVersioned`` returns each value with
  the store's version of it, and ``multiPutIfVersion`` writes a key only if its
  version is still the one that was read. The map rules (``map.py``) read,
  compute and write through it, and on a lost race re-read that key and
  recompute, so two writers, a speculative task or a stale cache never write
  over a newer value. Elasticsearch maps the version to ``_seq_no``/``_primary_term``,
  Redis to a compare-and-set script, SQLite to a version column. Optionally,
  ``scanVersioned`` lists every stored key with its value and version: what
  ``MapState.getTuples`` and TupleCollectionGet (Trident's ``ITupleCollection``) need.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, TypeAlias

from .checks import check_int
from .errors import ScanUnsupportedError, StateConfigError, StateConflictError, StateError

#: One key: the group values, in group-field order.
Key: TypeAlias = Sequence[Any]

#: A store's version of a key's value: opaque to everyone but the store, compared with ``==``.
Version: TypeAlias = Hashable

_UNCONDITIONAL_PUT_ATTEMPTS = 100

#: Keys per store round trip of a scan when the caller gives no page size.
DEFAULT_SCAN_BATCH_SIZE = 1000


def check_scan_batch_size(batch_size: int | None) -> int:
    """The page size of a scan: ``batch_size``, or :data:`DEFAULT_SCAN_BATCH_SIZE` for None.

    Examples
    --------
    >>> check_scan_batch_size(None), check_scan_batch_size(50)
    (1000, 50)
    """
    if batch_size is None:
        return DEFAULT_SCAN_BATCH_SIZE
    return check_int(batch_size, "batch_size", error=StateConfigError,
                     message="a scan's batch_size must be a positive int (or None), got {value!r}")


@dataclass(frozen=True)
class Versioned:
    """A stored value and the store's version of it.

    Attributes
    ----------
    value : Any
        The deserialized value.
    version : Hashable
        The store's token for this exact write of the key (a counter, a
        ``(seq_no, primary_term)`` pair, ...; never None). Pass it back to
        :meth:`VersionedBackingMap.multiPutIfVersion` to write only if nobody
        wrote the key since.

    Examples
    --------
    >>> Versioned(value=3, version=7)
    Versioned(value=3, version=7)
    """

    value: Any
    version: Version


class BackingMap(ABC):
    """Trident's ``IBackingMap``: batched reads and writes of keys' values.

    Implementations are used by one task at a time unless they say otherwise;
    they are created on the executor (by a state factory's ``open()``), never
    pickled.

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> backing = MemoryState.nonTransactional(name="doc-base").open_backing_map()
    >>> backing.multiPut([["cat"]], [3])
    >>> backing.multiGet([["cat"], ["dog"]])
    [3, None]
    """

    @property
    def address(self) -> str:
        """Where the data lives, for messages (a URL such as ``memory://wc``)."""
        return type(self).__name__

    @abstractmethod
    def multiGet(self, keys: Sequence[Key]) -> list[Any]:
        """The values of ``keys``, in order; None for a key that is not stored."""

    @abstractmethod
    def multiPut(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        """Write ``values[i]`` under ``keys[i]``, whatever is stored."""

    def multiRemove(self, keys: Sequence[Key]) -> None:
        """Delete ``keys`` (missing keys are ignored). Optional: not every store supports it."""
        raise StateError(f"{self.address}: this store does not support multiRemove")

    def close(self) -> None:  # noqa: B027 (optional hook: most stores have something to close)
        """Release connections. The map is unusable afterwards. Idempotent."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class VersionedBackingMap(BackingMap):
    """A backing map whose writes can be made conditional on the version that was read.

    Stores implement :meth:`multiGetVersioned` and :meth:`multiPutIfVersion`;
    ``multiGet`` and ``multiPut`` come for free (a store may override them with
    faster native calls). Guarantees an implementation must give:

    * each key's conditional write is atomic: it happens only if the key's
      version equals the expected one at the moment of writing (or, for an
      expected ``None``, if the key does not exist), and then gives the key a
      version it never had before (no ABA: a removed and re-created key must
      not get back an old version). A store whose version is the stored
      content itself (Redis: the bytes or their hash) meets this in the way
      that matters: a version comes back only with the very same content, and
      the rules compute a key's update from its content alone;
    * keys are independent: one key's lost race does not stop the others.

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> backing = MemoryState.nonTransactional(name="doc-versioned").open_backing_map()
    >>> [won] = backing.multiPutIfVersion([["cat"]], [1], [None])   # create: must not exist
    >>> [stored] = backing.multiGetVersioned([["cat"]])
    >>> stored.value, stored.version == won
    (1, True)
    >>> backing.multiPutIfVersion([["cat"]], [5], [None])          # exists now: the write loses
    [None]
    >>> backing.multiPutIfVersion([["cat"]], [2], [stored.version]) != [None]
    True
    """

    @abstractmethod
    def multiGetVersioned(self, keys: Sequence[Key]) -> list[Versioned | None]:
        """Each key's value and version, in order; None for a key that is not stored.

        One call is one store round trip (callers batch by ``max_multi_get_batch_size``).
        """

    @abstractmethod
    def multiPutIfVersion(self, keys: Sequence[Key], values: Sequence[Any],
                          expected_versions: Sequence[Version | None]) -> list[Version | None]:
        """Write each key only if its stored version is still ``expected_versions[i]``.

        Parameters
        ----------
        keys : sequence of Key
            Distinct keys.
        values : sequence
            The new value of each key.
        expected_versions : sequence of Version or None
            The version read for each key; None means "the key must not exist yet".

        Returns
        -------
        list of Version or None
            Per key: the key's new version if the write won, None if the key's
            version was not the expected one (nothing was written for that key).
            One call is one store round trip (callers batch by
            ``max_multi_put_batch_size``).
        """

    def multiGetEncoded(self, keys: Sequence[Key], encoded: Sequence[str]) -> list[Versioned | None]:
        """:meth:`multiGetVersioned` with each key's encoding (``keys.encode_keys``) already made.

        The map rules encode a call's keys once and read through this, so the cache, the
        batching layer and the built-in stores do not encode them again. This default
        ignores ``encoded``: a store of a program's own needs nothing more than
        :meth:`multiGetVersioned`.

        Parameters
        ----------
        keys : sequence of Key
            The keys.
        encoded : sequence of str
            ``encoded[i]`` is ``keys.encode_key(keys[i])``.

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> backing = MemoryState.nonTransactional(name="doc-get-encoded").open_backing_map()
        >>> backing.multiPut([["cat"]], [3])
        >>> [stored.value for stored in backing.multiGetEncoded([["cat"]], ["cat"])]
        [3]
        """
        return self.multiGetVersioned(keys)

    def multiPutEncoded(self, keys: Sequence[Key], encoded: Sequence[str], values: Sequence[Any],
                        expected_versions: Sequence[Version | None]) -> list[Version | None]:
        """:meth:`multiPutIfVersion` with each key's encoding already made (see :meth:`multiGetEncoded`).

        This default ignores ``encoded``.

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> backing = MemoryState.nonTransactional(name="doc-put-encoded").open_backing_map()
        >>> backing.multiPutEncoded([["cat"]], ["cat"], [3], [None]) != [None]
        True
        >>> backing.multiGet([["cat"]])
        [3]
        """
        return self.multiPutIfVersion(keys, values, expected_versions)

    def scanVersioned(self, batch_size: int | None = None) -> Iterator[tuple[Key, Versioned]]:
        """Every stored key, as its group values, with its value and version. Optional.

        What Trident's ``ITupleCollection.getTuples`` needs: ``MapState.getTuples``
        and TupleCollectionGet read the whole state through it. It reads the
        store itself (never a cache), in round trips of about ``batch_size``
        keys, lazily: the first page is read when the iterator is first
        advanced (an unsupported scan raises at once).

        Parameters
        ----------
        batch_size : int, optional
            Keys per store round trip; None: :data:`DEFAULT_SCAN_BATCH_SIZE`.

        Returns
        -------
        iterator of (list, Versioned)
            ``(group values, stored value and version)`` per key, in an order the
            store chooses; the global key comes back as ``[]``. A key stored
            during the whole scan comes back exactly once; a key written or
            removed while the scan runs may or may not. Keys too long to keep
            readable (``keys.is_hashed``) cannot be listed by stores that keep
            only the encoded key: they raise :class:`~.errors.StateError`.

        Raises
        ------
        ScanUnsupportedError
            The store does not implement a scan (this default).

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> backing = MemoryState.nonTransactional(name="doc-scan").open_backing_map()
        >>> backing.multiPut([["cat"], ["us", 2024], []], [3, 5, 8])
        >>> sorted((key, stored.value) for key, stored in backing.scanVersioned(batch_size=2))
        [([], 8), (['cat'], 3), (['us', 2024], 5)]
        """
        raise ScanUnsupportedError(self.address, type(self).__name__)

    def multiGet(self, keys: Sequence[Key]) -> list[Any]:
        return [None if stored is None else stored.value for stored in self.multiGetVersioned(keys)]

    def multiPut(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        """Write regardless of what is stored: read each version, then write conditionally until it wins."""
        pending = list(range(len(keys)))
        for _ in range(_UNCONDITIONAL_PUT_ATTEMPTS):
            stored = self.multiGetVersioned([keys[i] for i in pending])
            outcomes = self.multiPutIfVersion(
                [keys[i] for i in pending], [values[i] for i in pending],
                [None if s is None else s.version for s in stored])
            pending = [i for i, won in zip(pending, outcomes, strict=True) if won is None]
            if not pending:
                return
        raise StateConflictError(self.address, keys[pending[0]], attempts=_UNCONDITIONAL_PUT_ATTEMPTS)


#: Trident's name for :class:`BackingMap`: what a user's own store implements (``multiGet``/``multiPut``).
IBackingMap = BackingMap


class UnversionedMap(VersionedBackingMap):
    """A plain :class:`BackingMap` (a user's ``IBackingMap``) seen as a versioned one, so the map
    rules run over it: its writes are unconditional, as in Trident.

    Each read gives every key a fresh version and every write wins, so two writers of one key
    (a stale cache in another process, a speculative task) are not caught here: the engine keeps
    a user's state in its partition's process, and a store that can write conditionally should
    implement :class:`VersionedBackingMap` itself.

    Examples
    --------
    >>> class Dict(BackingMap):
    ...     def __init__(self): self.data = {}
    ...     def multiGet(self, keys): return [self.data.get(tuple(k)) for k in keys]
    ...     def multiPut(self, keys, values): self.data.update(zip(map(tuple, keys), values))
    >>> backing = UnversionedMap(Dict())
    >>> won = backing.multiPutIfVersion([["cat"]], [3], [None])
    >>> won != [None], backing.multiGet([["cat"]])
    (True, [3])
    """

    def __init__(self, backing: BackingMap) -> None:
        self.plain = backing
        self._versions = itertools.count(1)

    @property
    def address(self) -> str:
        return str(getattr(self.plain, "address", type(self.plain).__name__))

    def multiGet(self, keys: Sequence[Key]) -> list[Any]:
        return list(self.plain.multiGet(keys))

    def multiPut(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        self.plain.multiPut(keys, values)

    def multiRemove(self, keys: Sequence[Key]) -> None:
        remove = getattr(self.plain, "multiRemove", None)
        if remove is None:
            raise StateError(f"{self.address}: this store does not support multiRemove")
        remove(keys)

    def multiGetVersioned(self, keys: Sequence[Key]) -> list[Versioned | None]:
        values = list(self.plain.multiGet(keys))
        if len(values) != len(keys):
            raise StateError(f"{self.address}: multiGet returned {len(values)} values for {len(keys)} keys; "
                             "return one value (None for a missing key) per key, in order")
        return [None if value is None else Versioned(value, next(self._versions)) for value in values]

    def multiPutIfVersion(self, keys: Sequence[Key], values: Sequence[Any],
                          expected_versions: Sequence[Version | None]) -> list[Version | None]:
        if keys:
            self.plain.multiPut(keys, values)
        return [next(self._versions) for _ in keys]

    def close(self) -> None:
        close = getattr(self.plain, "close", None)
        if callable(close):
            close()


def as_versioned(backing: BackingMap) -> VersionedBackingMap:
    """``backing`` if it writes conditionally, else the :class:`UnversionedMap` over it.

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> store = MemoryState.opaque(name="doc-as-versioned").open_backing_map()
    >>> as_versioned(store) is store
    True
    """
    if isinstance(backing, VersionedBackingMap):
        return backing
    if not isinstance(backing, BackingMap) and not (callable(getattr(backing, "multiGet", None))
                                                    and callable(getattr(backing, "multiPut", None))):
        raise StateConfigError(f"expected an IBackingMap (multiGet(keys) and multiPut(keys, values)), "
                               f"got {type(backing).__name__}")
    return UnversionedMap(backing)


__all__ = ["DEFAULT_SCAN_BATCH_SIZE", "BackingMap", "IBackingMap", "Key", "UnversionedMap", "Version",
           "Versioned", "VersionedBackingMap", "as_versioned", "check_scan_batch_size"]
