"""MemoryState: a versioned in-process store for tests and examples, shared by name.

Values are stored serialized, exactly as a real store would hold them, so the
serializer, its errors and the type-mismatch checks behave as with SQLite or
Redis. Named stores live as long as the process: two ``open()`` of the same
name (two "executors" in one test) see the same data.

In Spark's local mode the Python workers are other processes of this machine:
``MemoryState.serve()`` (which ``run()`` calls) serves this process's stores over a
local socket (:mod:`.memory_server`), and a factory pickled here carries the
address, so workers read and write the driver's stores, with the same
conditional writes. On a cluster the workers cannot reach the driver's
memory: use SqliteState (one machine) or Redis / Elasticsearch there.
"""

from __future__ import annotations

import itertools
import os
import threading
import urllib.parse
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from .base import Key, Version, Versioned, VersionedBackingMap, check_scan_batch_size
from .errors import StateConfigError, StateError
from .factory import StoreStateFactory
from .keys import decode_scanned_key, encode_key, encode_keys, is_reserved
from .map import OpaqueMap
from .memory_server import Address, MemoryServer, RemoteStore
from .serializers import Serializer, deserialize_stored, serialize_stored

if TYPE_CHECKING:
    from typing import Self, Unpack

    from .factory import StoreSettings


def fresh_id() -> str:
    """A store name no other factory uses: ``memory-`` and a random UUID (Storm's
    ``MemoryMapState.Factory`` takes ``UUID.randomUUID()``).

    Examples
    --------
    >>> fresh_id().startswith("memory-"), fresh_id() != fresh_id()
    (True, True)
    """
    return f"memory-{uuid.uuid4()}"


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

    # -- what the backing map calls (also served to other processes, see .memory_server) ---------

    def get_entries(self, encoded: list[str]) -> list[tuple[bytes, int] | None]:
        """The stored (bytes, version) of each encoded key, None where missing."""
        with self.lock:
            return [self.entries.get(enc) for enc in encoded]

    def put_if_version(self, encoded: list[str], data: list[bytes],
                       expected: list[Version | None]) -> list[int | None]:
        """Write each key whose version is still ``expected``; its new version, or None (lost)."""
        outcomes: list[int | None] = []
        with self.lock:
            for enc, blob, wanted in zip(encoded, data, expected, strict=True):
                entry = self.entries.get(enc)
                if (None if entry is None else entry[1]) != wanted:
                    outcomes.append(None)
                    continue
                version = self.next_version()
                self.entries[enc] = (blob, version)
                outcomes.append(version)
        return outcomes

    def snapshot(self) -> list[tuple[str, tuple[bytes, int]]]:
        """Every entry, in encoded-key order."""
        with self.lock:
            return sorted(self.entries.items())

    def remove(self, encoded: list[str]) -> None:
        with self.lock:
            for enc in encoded:
                self.entries.pop(enc, None)


class _Store(Protocol):
    name: str

    def get_entries(self, encoded: list[str]) -> list[tuple[bytes, int] | None]: ...
    def put_if_version(self, encoded: list[str], data: list[bytes],
                       expected: list[Version | None]) -> list[int | None]: ...
    def snapshot(self) -> list[tuple[str, tuple[bytes, int]]]: ...
    def remove(self, encoded: list[str]) -> None: ...


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

    def __init__(self, store: MemoryStore | _Store, serializer: Serializer) -> None:
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
        return self.multiGetEncoded(keys, encode_keys(keys))

    def multiGetEncoded(self, keys: Sequence[Key], encoded: Sequence[str]) -> list[Versioned | None]:
        self._check_open()
        entries = self.store.get_entries(list(encoded))
        serializer, address = self.serializer, self.address
        return [None if entry is None else Versioned(
                    deserialize_stored(serializer, entry[0], key=key, address=address), entry[1])
                for key, entry in zip(keys, entries, strict=True)]

    def multiPutIfVersion(self, keys: Sequence[Key], values: Sequence[Any],
                          expected_versions: Sequence[Version | None]) -> list[Version | None]:
        return self.multiPutEncoded(keys, encode_keys(keys), values, expected_versions)

    def multiPutEncoded(self, keys: Sequence[Key], encoded: Sequence[str], values: Sequence[Any],
                        expected_versions: Sequence[Version | None]) -> list[Version | None]:
        self._check_open()
        if not len(keys) == len(encoded) == len(values) == len(expected_versions):
            raise StateError(f"{self.address}: multiPutIfVersion needs as many values and versions as keys")
        serializer, address = self.serializer, self.address
        data = [serialize_stored(serializer, value, key=key, address=address)
                for key, value in zip(keys, values, strict=True)]
        return list(self.store.put_if_version(list(encoded), data, list(expected_versions)))

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
        entries = self.store.snapshot()
        for encoded, (data, version) in entries:
            if is_reserved(encoded):
                continue
            key = decode_scanned_key(encoded, self.address)
            yield key, Versioned(deserialize_stored(self.serializer, data, key=key, address=self.address),
                                 version)

    def multiRemove(self, keys: Sequence[Key]) -> None:
        self._check_open()
        self.store.remove([encode_key(key) for key in keys])

    def close(self) -> None:
        self._closed = True


@dataclass(frozen=True, kw_only=True)
class MemoryState(StoreStateFactory):
    """Settings of an in-memory state, shared by ``name`` within a process (tests, examples).

    Parameters
    ----------
    name : str, optional
        The store's name; states opened with the same name share data. Omitted: a fresh id
        (``memory-<uuid>``), as Storm's ``new MemoryMapState.Factory()`` makes one: a state
        no other factory shares (copies and pickles of this factory keep the id).
    **settings
        ``cache_size``, ``max_multi_get_batch_size``, ``max_multi_put_batch_size``,
        ``txid_offset``, ``max_conflict_retries``, ``serializer``: see
        :class:`~.factory.StoreStateFactory`.

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
    >>> MemoryState.opaque().name != MemoryState.opaque().name    # no name: a fresh id each
    True
    """

    if TYPE_CHECKING:  # the kinds' keywords for type checkers; at run time, StoreStateFactory's
        @classmethod
        def opaque(cls, *, name: str = ...,  # type: ignore[override]
                   **settings: Unpack[StoreSettings]) -> Self: ...
        @classmethod
        def transactional(cls, *, name: str = ...,  # type: ignore[override]
                          **settings: Unpack[StoreSettings]) -> Self: ...
        @classmethod
        def nonTransactional(cls, *, name: str = ...,  # type: ignore[override]
                             **settings: Unpack[StoreSettings]) -> Self: ...

    name: str = field(default_factory=fresh_id)
    #: Its values live in one Python process: served to Spark's local workers by ``serve()``;
    #: a topology on a cluster refuses it.
    process_local: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.name, str) or not self.name:
            raise StateConfigError(f"MemoryState needs a non-empty name, got {self.name!r}")

    def url_location(self) -> tuple[str, dict[str, str]]:
        return f"memory://{urllib.parse.quote(self.name, safe='')}", {}

    def open_backing_map(self) -> MemoryBackingMap:
        address = self.__dict__.get("_served_at") or _SERVED_ELSEWHERE.get(self.name)
        if address is not None and address[2] != os.getpid():
            return MemoryBackingMap(RemoteStore(self.name, address), self.effective_serializer)
        return MemoryBackingMap(_named_store(self.name), self.effective_serializer)

    @staticmethod
    def serve() -> Address:
        """Serve this process's stores to other processes of this machine (Spark's local-mode
        Python workers); idempotent. A MemoryState pickled afterwards in this process carries
        the address, so where it is unpickled it reads and writes the stores here.

        Examples
        --------
        >>> import pickle
        >>> address = MemoryState.serve()
        >>> pickle.loads(pickle.dumps(MemoryState.opaque(name="doc-serve"))).__dict__["_served_at"] == address
        True
        """
        global _SERVER
        with _STORES_LOCK:
            if _SERVER is None:
                _SERVER = MemoryServer(_named_store)
            return _SERVER.address

    def __reduce_ex__(self, protocol: Any) -> Any:
        state = dict(self.__dict__)
        served = state.get("_served_at") or (_SERVER.address if _SERVER is not None else None)
        if served is not None:
            state["_served_at"] = served
        return _restore, (type(self), state)

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


class MemoryMapState(OpaqueMap):
    """Storm's ``MemoryMapState``: an opaque map state in memory, by id (``new MemoryMapState<T>(id)``).

    The store is :class:`MemoryState`'s named store ``id``: states made with the same id share
    its data in this process (and, in Spark's local mode, are served to the workers as a
    MemoryState's are). Storm's ``new MemoryMapState.Factory()`` is :meth:`Factory`: a state
    factory with a fresh id, for ``persistentAggregate``.

    Parameters
    ----------
    id : str
        The store's name.

    Examples
    --------
    >>> counts = MemoryMapState("doc-memory-map")
    >>> counts.beginCommit(1)
    >>> counts.multiPut([["cat"]], [3])
    >>> counts.commit(1)
    >>> MemoryMapState("doc-memory-map").multiGet([["cat"]])
    [3]
    """

    def __init__(self, id: str) -> None:
        factory = MemoryState.opaque(name=id, cache_size=0)
        super().__init__(factory.open_backing_map())
        self.id = id

    @staticmethod
    def Factory() -> MemoryState:
        """Storm's ``new MemoryMapState.Factory()``: an opaque in-memory state with a fresh id.

        Storm's factory makes one store per partition (``id + partitionIndex``); this one is a
        :class:`MemoryState`, one store that every partition shares, keyed by group.

        Examples
        --------
        >>> factory = MemoryMapState.Factory()
        >>> factory.state_type.value, factory.name.startswith("memory-")
        ('opaque', True)
        """
        return MemoryState.opaque()


_SERVER: MemoryServer | None = None
#: In a process that unpickled a served MemoryState: store name -> the serving address (so a
#: copy made here with ``dataclasses.replace`` still opens the served store).
_SERVED_ELSEWHERE: dict[str, Address] = {}


def _restore(cls: type[MemoryState], state: dict[str, Any]) -> MemoryState:
    """Unpickle a MemoryState: its settings, and the address of the process serving its store."""
    restored = object.__new__(cls)
    for name, value in state.items():
        object.__setattr__(restored, name, value)
    served = state.get("_served_at")
    if served is not None and served[2] != os.getpid():
        _SERVED_ELSEWHERE[restored.name] = served
    return restored


__all__ = ["MemoryBackingMap", "MemoryMapState", "MemoryState", "MemoryStore", "fresh_id"]
