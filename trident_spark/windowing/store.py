"""Windows stores: where a window task keeps the tuples of its open windows between batches.

Trident's ``WindowsStore`` (``get``, ``getAllKeys``, ``put``, ``putAll``, ``remove``,
``removeAll``, ``shutdown``) and ``WindowsStoreFactory.create(conf)``. Keys are strings; values
any Python value the store can hold. The in-memory store lives in the partition's instance
host and is lost when that process ends (as Trident's); the durable ones keep their data in a
store of ``trident_spark.state`` (SQLite, Redis, Elasticsearch/OpenSearch, PostgreSQL), opened
through the same settings, connection code and redaction as a map state.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, overload

from trident_spark.errors import TopologyError
from trident_spark.state import (
    BackingMap,
    ElasticsearchState,
    PostgresState,
    RedisState,
    SqliteState,
    StoreStateFactory,
)


class WindowsStore(ABC):
    """Trident's ``WindowsStore``: a small key-value store for a window task.

    A store is used by one task (one partition of one window stage) at a time; its keys start
    with the task's namespace, so several tasks and window stages may share one store.

    Examples
    --------
    >>> store = InMemoryWindowsStoreFactory().create({})
    >>> store.putAll([("a", 1), ("b", [2, 3])])
    >>> store.get("a"), store.get(["b", "c"]), sorted(store.getAllKeys())
    (1, [[2, 3], None], ['a', 'b'])
    >>> store.removeAll(["a", "b"]); list(store.getAllKeys())
    []
    """

    @overload
    def get(self, key: str) -> Any: ...
    @overload
    def get(self, key: list[str]) -> list[Any]: ...
    def get(self, key: str | list[str]) -> Any:
        """The value of ``key`` (None if missing), or the values of a list of keys, in order."""
        if isinstance(key, str):
            return self.getMany([key])[0]
        return self.getMany(list(key))

    @abstractmethod
    def getMany(self, keys: Sequence[str]) -> list[Any]:
        """The values of ``keys``, in order (None for a missing key): one round trip."""

    @abstractmethod
    def getAllKeys(self) -> Iterable[str]:
        """Every key stored (a scan: for tools and tests, not for the batch path)."""

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``."""
        self.putAll([(key, value)])

    @abstractmethod
    def putAll(self, entries: Iterable[tuple[str, Any]]) -> None:
        """Store each ``(key, value)``: one round trip where the store allows."""

    def remove(self, key: str) -> None:
        """Delete ``key`` (a missing key is ignored)."""
        self.removeAll([key])

    @abstractmethod
    def removeAll(self, keys: Iterable[str]) -> None:
        """Delete ``keys`` (missing keys are ignored)."""

    def shutdown(self) -> None:  # noqa: B027 (optional hook)
        """Release connections; the store is unusable afterwards."""

    @property
    def address(self) -> str:
        """Where the data lives, for messages (never with a password)."""
        return type(self).__name__


class WindowsStoreFactory(ABC):
    """Trident's ``WindowsStoreFactory``: picklable settings; ``create`` opens a store where it runs."""

    @abstractmethod
    def create(self, conf: dict[str, Any]) -> WindowsStore:
        """Open the store (on the executor, once per window task)."""

    #: Whether the store keeps its data when the process that opened it ends.
    durable: bool = True


# --- in memory -----------------------------------------------------------------------------
class InMemoryWindowsStore(WindowsStore):
    """A dict in the process of the window task (its partition's instance host).

    Examples
    --------
    >>> store = InMemoryWindowsStore()
    >>> store.put("k", {"x": 1}); store.get("k")
    {'x': 1}
    """

    def __init__(self) -> None:
        self._entries: dict[str, Any] = {}
        self._lock = threading.Lock()

    def getMany(self, keys: Sequence[str]) -> list[Any]:
        with self._lock:
            return [self._entries.get(k) for k in keys]

    def getAllKeys(self) -> list[str]:
        with self._lock:
            return list(self._entries)

    def putAll(self, entries: Iterable[tuple[str, Any]]) -> None:
        with self._lock:
            self._entries.update(entries)

    def removeAll(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._entries.pop(key, None)

    def shutdown(self) -> None:
        with self._lock:
            self._entries.clear()

    @property
    def address(self) -> str:
        return "memory (the window task's process)"


class InMemoryWindowsStoreFactory(WindowsStoreFactory):
    """Trident's default: a window task's tuples in its own process's memory.

    The windows live as long as the partition's instance host: a replayed batch
    (``FailedException``, a task retry) gives the same windows, but a host that ends (the
    executor lost, the driver killed and restarted) loses them, as a Trident worker does.
    Use a durable store (:class:`SqliteWindowsStoreFactory`, ...) to keep windows through that.

    Examples
    --------
    >>> InMemoryWindowsStoreFactory().create({}).getMany(["nothing"])
    [None]
    """

    durable = False

    def create(self, conf: dict[str, Any]) -> WindowsStore:
        return InMemoryWindowsStore()

    def __repr__(self) -> str:
        return "InMemoryWindowsStoreFactory()"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


# --- on a state store ----------------------------------------------------------------------
class BackingMapWindowsStore(WindowsStore):
    """A windows store over a state backend's backing map: key ``k`` is the map's key ``[k]``.

    Values are written with the map's non-transactional serializer (JSON, with any Python value
    JSON lacks tagged), so a store holds what Python values a map state holds.

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> store = BackingMapWindowsStore(MemoryState.nonTransactional(name="doc-windows").open_backing_map())
    >>> store.putAll([("w/0/s/3", {"txid": 3})]); store.get("w/0/s/3")
    {'txid': 3}
    """

    def __init__(self, backing: BackingMap) -> None:
        self.backing = backing

    def getMany(self, keys: Sequence[str]) -> list[Any]:
        return list(self.backing.multiGet([[k] for k in keys])) if keys else []

    def getAllKeys(self) -> list[str]:
        scan = getattr(self.backing, "scanVersioned", None)
        if scan is None:
            raise TopologyError(f"{self.address}: this store cannot list its keys")
        return [str(key[0]) for key, _ in scan() if len(key) == 1]

    def putAll(self, entries: Iterable[tuple[str, Any]]) -> None:
        pairs = list(entries)
        if pairs:
            self.backing.multiPut([[k] for k, _ in pairs], [v for _, v in pairs])

    def removeAll(self, keys: Iterable[str]) -> None:
        names = [[k] for k in keys]
        if names:
            self.backing.multiRemove(names)

    def shutdown(self) -> None:
        self.backing.close()

    @property
    def address(self) -> str:
        return str(self.backing.address)


class StateWindowsStoreFactory(WindowsStoreFactory):
    """Windows kept in the store a state factory names (any built-in one, as a non-transactional map).

    Parameters
    ----------
    state : StoreStateFactory
        Where: e.g. ``SqliteState.nonTransactional(path=..., table="windows")``. Its kind,
        cache and txid offset are not used: a windows store versions its own entries by txid.

    Examples
    --------
    >>> import os, tempfile
    >>> from trident_spark.state import SqliteState
    >>> path = os.path.join(tempfile.mkdtemp(), "w.db")
    >>> store = StateWindowsStoreFactory(SqliteState.nonTransactional(path=path, table="w")).create({})
    >>> store.put("k", [1, "a"]); store.get("k")
    [1, 'a']
    >>> store.shutdown()
    """

    def __init__(self, state: StoreStateFactory) -> None:
        if not isinstance(state, StoreStateFactory):
            raise TopologyError(f"{type(self).__name__}: expected a built-in state's settings "
                                "(SqliteState, RedisState, ElasticsearchState, PostgresState), "
                                f"got {state!r}")
        self.state = state

    def create(self, conf: dict[str, Any]) -> WindowsStore:
        return BackingMapWindowsStore(self.state.open_backing_map())

    @property
    def address(self) -> str:
        """The store's URL without secrets."""
        return str(self.state.redacted_url)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.address!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateWindowsStoreFactory) and other.state == self.state

    def __hash__(self) -> int:
        return hash(self.state)


class SqliteWindowsStoreFactory(StateWindowsStoreFactory):
    """Windows in a SQLite file (one machine; durable through a killed driver).

    Parameters
    ----------
    path : str
        The database file (made absolute on the driver).
    table : str, default "trident_windows"
        The table; several window stages may share one (their keys differ).
    **settings
        More of :class:`~trident_spark.state.SqliteState`'s settings (``busy_timeout``,
        ``synchronous``).

    Examples
    --------
    >>> import os, tempfile
    >>> factory = SqliteWindowsStoreFactory(path=os.path.join(tempfile.mkdtemp(), "w.db"))
    >>> factory.address.endswith("w.db?table=trident_windows&type=non_transactional&cache_size=0")
    True
    """

    def __init__(self, path: str, table: str = "trident_windows", **settings: Any) -> None:
        super().__init__(SqliteState.nonTransactional(path=path, table=table, cache_size=0, **settings))


class RedisWindowsStoreFactory(StateWindowsStoreFactory):
    """Windows in Redis, one Redis key per entry, under ``key_prefix``.

    Parameters
    ----------
    url : str
        ``redis://[:password@]host:port/db`` (or ``rediss://``).
    key_prefix : str, default "trident-windows"
        Prefix of every key.
    **settings
        More of :class:`~trident_spark.state.RedisState`'s settings.

    Examples
    --------
    >>> RedisWindowsStoreFactory(url="redis://:s3cret@127.0.0.1:6379/0").address
    'redis://:***@127.0.0.1:6379/0?prefix=trident-windows&type=non_transactional&cache_size=0'
    """

    def __init__(self, url: str, key_prefix: str = "trident-windows", **settings: Any) -> None:
        super().__init__(RedisState.nonTransactional(url=url, key_prefix=key_prefix, cache_size=0,
                                                     **settings))


class ElasticsearchWindowsStoreFactory(StateWindowsStoreFactory):
    """Windows in an Elasticsearch/OpenSearch index, one document per entry.

    Parameters
    ----------
    hosts : list of str
        The cluster's nodes, as :class:`~trident_spark.state.ElasticsearchState`'s.
    index : str, default "trident_windows"
        The index (created on first use).
    **settings
        Authentication and the other settings of ``ElasticsearchState`` (``username``,
        ``password``, ``api_key``, ``ca_certs``, ``verify_certs``, timeouts), and on a cluster
        ``shards``, ``replicas`` (applied when the index is created) and
        ``wait_for_active_shards`` (sent with every write).

    Examples
    --------
    >>> ElasticsearchWindowsStoreFactory(hosts=["http://127.0.0.1:9200"], index="w").address
    'es://127.0.0.1:9200/w?type=non_transactional&cache_size=0'
    >>> ElasticsearchWindowsStoreFactory(hosts=["http://127.0.0.1:9200"], index="w", shards=3,
    ...                                  replicas=1).state.url
    'es://127.0.0.1:9200/w?shards=3&replicas=1&type=non_transactional&cache_size=0'
    """

    def __init__(self, hosts: list[str] | None = None, index: str = "trident_windows",
                 **settings: Any) -> None:
        if hosts is not None:
            settings["hosts"] = hosts
        super().__init__(ElasticsearchState.nonTransactional(index=index, cache_size=0, **settings))


class PostgresWindowsStoreFactory(StateWindowsStoreFactory):
    """Windows in a PostgreSQL table, one row per entry.

    Parameters
    ----------
    dsn : str
        ``postgresql://user[:password]@host:port/db``.
    table : str, default "trident_windows"
        The table (created on first use).
    **settings
        More of :class:`~trident_spark.state.PostgresState`'s settings.

    Examples
    --------
    >>> PostgresWindowsStoreFactory(dsn="postgresql://me:pw@127.0.0.1:5432/db").address
    'postgresql://me:***@127.0.0.1:5432/db?table=trident_windows&type=non_transactional&cache_size=0'
    """

    def __init__(self, dsn: str, table: str = "trident_windows", **settings: Any) -> None:
        super().__init__(PostgresState.nonTransactional(dsn=dsn, table=table, cache_size=0, **settings))


def check_store_factory(operator: str, factory: object) -> WindowsStoreFactory:
    """``factory`` if it is a windows store factory, else a TopologyError naming ``operator``."""
    if isinstance(factory, WindowsStoreFactory):
        return factory
    if callable(getattr(factory, "create", None)):
        return factory  # type: ignore[return-value]  # duck-typed: Trident's interface
    raise TopologyError(f"{operator}: expected a windows store factory (e.g. InMemoryWindowsStoreFactory() "
                        f"or SqliteWindowsStoreFactory(path=...)), got {factory!r}")


__all__ = ["BackingMapWindowsStore", "ElasticsearchWindowsStoreFactory", "InMemoryWindowsStore",
           "InMemoryWindowsStoreFactory", "PostgresWindowsStoreFactory", "RedisWindowsStoreFactory",
           "SqliteWindowsStoreFactory", "StateWindowsStoreFactory", "WindowsStore", "WindowsStoreFactory",
           "check_store_factory"]
