"""MemoryState: a versioned in-process store for tests and examples, shared by name.

Values are stored serialized, exactly as a real store would hold them, so the
serializer, its errors and the type-mismatch checks behave as with SQLite or
Redis. Named stores live as long as the process: two ``open()`` of the same
name (two "executors" in one test) see the same data.

Not for Spark jobs that run Python workers in other processes: each process
has its own memory, so executors would not share the state. Use SqliteState
(one machine) or Redis / Elasticsearch there.
"""

from __future__ import annotations

import itertools
import threading
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .base import Key, Version, Versioned, VersionedBackingMap, check_scan_batch_size
from .errors import StateConfigError, StateError
from .factory import StateFactory
from .keys import decode_scanned_key, encode_key, is_reserved
from .serializers import Serializer, deserialize_stored


class MemoryStore:
    """One named in-memory store: encoded key -> (serialized value, version). Thread-safe.

    Versions come from one counter per store, so a removed and re-created key
    never gets back an old version.

    Examples
    --------
    >>> store = MemoryState.store("doc-store")
    >>> store.raw_put(["cat"], b"[0,1,null]")
    >>> store.raw_get(["cat"])
    b'[0,1,null]'
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.entries: dict[str, tuple[bytes, int]] = {}
        self._versions = itertools.count(1)

    def next_version(self) -> int:
        """A version this store never gave before (call with ``lock`` held)."""
        return next(self._versions)

    def raw_get(self, key: Key) -> bytes | None:
        """The stored bytes of ``key`` (for tests and debugging)."""
        with self.lock:
            entry = self.entries.get(encode_key(key))
        return None if entry is None else entry[0]

    def raw_put(self, key: Key, data: bytes) -> None:
        """Store ``data`` under ``key`` as is, bypassing serializers (for tests: corrupt values)."""
        with self.lock:
            self.entries[encode_key(key)] = (bytes(data), self.next_version())

    def __len__(self) -> int:
        with self.lock:
            return len(self.entries)


_STORES: dict[str, MemoryStore] = {}
_STORES_LOCK = threading.Lock()


def _named_store(name: str) -> MemoryStore:
    with _STORES_LOCK:
        store = _STORES.get(name)
        if store is None:
            store = _STORES[name] = MemoryStore(name)
        return store


class MemoryBackingMap(VersionedBackingMap):
    """The versioned backing map over one :class:`MemoryStore`.

    Parameters
    ----------
    store : MemoryStore
        The named store.
    serializer : Serializer
        Turns values into the stored bytes and back.

    Examples
    --------
    >>> backing = MemoryState.nonTransactional(name="doc-membacking").open_backing_map()
    >>> backing.multiPut([["cat"]], [{"n": 1}])
    >>> backing.multiGetVersioned([["cat"]])[0].value
    {'n': 1}
    """

    def __init__(self, store: MemoryStore, serializer: Serializer) -> None:
        self.store = store
        self.serializer = serializer
        self._closed = False

    @property
    def address(self) -> str:
        return f"memory://{self.store.name}"

    def _check_open(self) -> None:
        if self._closed:
            raise StateError(f"{self.address}: the state was closed; open it again")

    def multiGetVersioned(self, keys: Sequence[Key]) -> list[Versioned | None]:
        self._check_open()
        encoded = [encode_key(key) for key in keys]
        with self.store.lock:
            entries = [self.store.entries.get(enc) for enc in encoded]
        return [None if entry is None else Versioned(
                    deserialize_stored(self.serializer, entry[0], key=key, address=self.address), entry[1])
                for key, entry in zip(keys, entries, strict=True)]

    def multiPutIfVersion(self, keys: Sequence[Key], values: Sequence[Any],
                          expected_versions: Sequence[Version | None]) -> list[Version | None]:
        self._check_open()
        if not len(keys) == len(values) == len(expected_versions):
            raise StateError(f"{self.address}: multiPutIfVersion needs as many values and versions as keys")
        encoded = [encode_key(key) for key in keys]
        data = [self.serializer.serialize(value) for value in values]
        outcomes: list[Version | None] = []
        with self.store.lock:
            for enc, blob, expected in zip(encoded, data, expected_versions, strict=True):
                entry = self.store.entries.get(enc)
                current = None if entry is None else entry[1]
                if current != expected:
                    outcomes.append(None)
                    continue
                version = self.store.next_version()
                self.store.entries[enc] = (blob, version)
                outcomes.append(version)
        return outcomes

    def scanVersioned(self, batch_size: int | None = None) -> Iterator[tuple[Key, Versioned]]:
        """Every stored key in encoded-key order, from a snapshot taken when the scan starts.

        Examples
        --------
        >>> backing = MemoryState.nonTransactional(name="doc-memscan").open_backing_map()
        >>> backing.multiPut([["dog"], ["cat", 1]], [2, 5])
        >>> [(key, stored.value) for key, stored in backing.scanVersioned()]
        [(['cat', 1], 5), (['dog'], 2)]
        """
        self._check_open()
        check_scan_batch_size(batch_size)
        return self._scan()

    def _scan(self) -> Iterator[tuple[Key, Versioned]]:
        with self.store.lock:
            entries = sorted(self.store.entries.items())
        for encoded, (data, version) in entries:
            if is_reserved(encoded):
                continue
            key = decode_scanned_key(encoded, self.address)
            yield key, Versioned(deserialize_stored(self.serializer, data, key=key, address=self.address),
                                 version)

    def multiRemove(self, keys: Sequence[Key]) -> None:
        self._check_open()
        encoded = [encode_key(key) for key in keys]
        with self.store.lock:
            for enc in encoded:
                self.store.entries.pop(enc, None)

    def close(self) -> None:
        self._closed = True


@dataclass(frozen=True, kw_only=True)
class MemoryState(StateFactory):
    """Settings of an in-memory state, shared by ``name`` within a process (tests, examples).

    Parameters
    ----------
    name : str
        The store's name; states opened with the same name share data.
    **settings
        ``cache_size``, ``max_multi_get_batch_size``, ``max_multi_put_batch_size``,
        ``txid_offset``, ``max_conflict_retries``, ``serializer``: see
        :class:`~.factory.StateFactory`.

    Examples
    --------
    >>> spec = MemoryState.opaque(name="doc-memory", cache_size=100)
    >>> spec.url
    'memory://doc-memory?type=opaque&cache_size=100'
    >>> counts = spec.open()
    >>> counts.multiUpdate(0, [["cat"]], [lambda old: (old or 0) + 1])
    [1]
    >>> spec.open().multiGet([["cat"], ["dog"]])      # a second opening sees the same data
    [1, None]
    """

    name: str
    #: Its values live in one Python process: a topology running on Spark refuses it.
    process_local: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.name, str) or not self.name:
            raise StateConfigError(f"MemoryState needs a non-empty name, got {self.name!r}")

    def url_location(self) -> tuple[str, dict[str, str]]:
        return f"memory://{urllib.parse.quote(self.name, safe='')}", {}

    def open_backing_map(self) -> MemoryBackingMap:
        return MemoryBackingMap(_named_store(self.name), self.effective_serializer)

    @staticmethod
    def store(name: str) -> MemoryStore:
        """The named store itself (created empty if new), for tests that inspect or corrupt data."""
        return _named_store(name)

    @staticmethod
    def drop(name: str) -> None:
        """Forget the named store and its data (states already open keep the old store).

        Examples
        --------
        >>> MemoryState.drop("doc-memory")
        """
        with _STORES_LOCK:
            _STORES.pop(name, None)


__all__ = ["MemoryBackingMap", "MemoryState", "MemoryStore"]
