"""State factories: picklable settings that open a working map state where they are used.

A factory (``MemoryState.opaque(name="wc")``, ``SqliteState.transactional(path=...)``)
holds only settings, so it can be pickled to Spark executors with the job; its
``open()`` runs on the executor, connects to the store and stacks the layers:

    map rules (MapState)  ->  LRU cache (CachedMap, if cache_size > 0)
                          ->  batching (BatchingMap)  ->  the store

Each backend subclasses :class:`StoreStateFactory` with its own settings (a name, a
path, an index, ...) and implements :meth:`StateFactory.open_backing_map`.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Self, TypedDict

from .base import VersionedBackingMap
from .batching import BatchingMap, check_batch_size
from .cache import CachedMap
from .checks import check_int
from .commit_record import CommitLog, CommitRecordSerializer
from .errors import StateConfigError
from .map import MAP_KINDS, MapState
from .redaction import redact_state_url
from .serializers import Serializer, default_serializer
from .state_api import StateFactory
from .stats import StateStats
from .values import StateType

#: Keys an opened state caches: enough for the keys a partition's state task writes batch
#: after batch (Storm's Redis state keeps 1,000, ``Options.localCacheSize``, which a word count
#: over a few thousand words per partition already overflows: an LRU cache smaller than the
#: keys written in order misses every key). About 30 MB for 100,000 small keys.
DEFAULT_CACHE_SIZE = 100_000
DEFAULT_BATCH_SIZE = 1000


class StoreSettings(TypedDict, total=False):
    """The settings every backend has (:class:`StoreStateFactory`'s), as keywords: what a type
    checker knows of ``**settings`` in a backend's ``opaque()``, ``transactional()`` and
    ``nonTransactional()``.

    Examples
    --------
    >>> settings: StoreSettings = {"cache_size": 0}
    """

    cache_size: int
    max_multi_get_batch_size: int | None
    max_multi_put_batch_size: int | None
    txid_offset: int
    max_conflict_retries: int
    serializer: Serializer | None


@dataclass(frozen=True, kw_only=True)
class StoreStateFactory(StateFactory, ABC):
    """A built-in store's state factory: settings common to every backend; ``open()`` builds the
    working state on the executor; a URL (``open_state``) and a commit record on top of
    Trident's :class:`~.state_api.StateFactory`.

    Create one with a backend's ``opaque()``, ``transactional()`` or
    ``nonTransactional()`` class method rather than directly.

    Parameters
    ----------
    state_type : StateType, default StateType.OPAQUE
        The kind of map state (a ``StateType`` or its value, ``"opaque"``).
    cache_size : int, default 100000
        Keys kept in the LRU cache of the opened state; 0 disables the cache.
    max_multi_get_batch_size, max_multi_put_batch_size : int or None, default 1000
        Most keys per store read / write round trip; None: no bound.
    txid_offset : int, default 0
        Added to every batch id to make the stored txid; the documented way to
        adopt a state that is ahead of a reset checkpoint (see ``StateAheadError``).
    max_conflict_retries : int, default 10
        Re-reads of a key whose conditional write lost, before giving up.
    serializer : Serializer, optional
        Turns stored values into bytes; default: JSON in Storm's format for the kind.
    """

    state_type: StateType = StateType.OPAQUE
    cache_size: int = DEFAULT_CACHE_SIZE
    max_multi_get_batch_size: int | None = DEFAULT_BATCH_SIZE
    max_multi_put_batch_size: int | None = DEFAULT_BATCH_SIZE
    txid_offset: int = 0
    max_conflict_retries: int = 10
    serializer: Serializer | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "state_type", StateType(self.state_type))
        except ValueError:
            kinds = ", ".join(repr(kind.value) for kind in StateType)
            raise StateConfigError(f"unknown state type {self.state_type!r}; one of {kinds}") from None
        check_int(self.cache_size, "cache_size", minimum=0, error=StateConfigError)
        check_int(self.txid_offset, "txid_offset", minimum=0, error=StateConfigError)
        check_int(self.max_conflict_retries, "max_conflict_retries", minimum=0, error=StateConfigError)
        check_batch_size("max_multi_get_batch_size", self.max_multi_get_batch_size)
        check_batch_size("max_multi_put_batch_size", self.max_multi_put_batch_size)
        if self.serializer is not None and not isinstance(self.serializer, Serializer):
            raise StateConfigError(
                f"serializer must have serialize() and deserialize(), got {self.serializer!r}")

    # -- the three kinds ---------------------------------------------------------------------

    @classmethod
    def opaque(cls, **settings: Any) -> Self:
        """Settings for an opaque state (exact with any spout); see the class for ``settings``."""
        return cls(state_type=StateType.OPAQUE, **settings)

    @classmethod
    def transactional(cls, **settings: Any) -> Self:
        """Settings for a transactional state (exact with a transactional spout)."""
        return cls(state_type=StateType.TRANSACTIONAL, **settings)

    @classmethod
    def nonTransactional(cls, **settings: Any) -> Self:
        """Settings for a non-transactional state (at-least-once)."""
        return cls(state_type=StateType.NON_TRANSACTIONAL, **settings)

    # -- what a backend provides --------------------------------------------------------------

    @abstractmethod
    def url_location(self) -> tuple[str, dict[str, str]]:
        """The URL without query (``memory://wc``) and the backend's own URL parameters."""

    @abstractmethod
    def open_backing_map(self) -> VersionedBackingMap:
        """Connect to the store (on the executor) and return it, without cache or rules."""

    # -- opening ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The state as an ``open_state`` URL: the type and every setting that differs from its default.

        The serializer cannot be written in a URL; a custom one is left out. The URL
        carries the state's password or API key, if any: show :attr:`redacted_url` instead.

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> MemoryState.transactional(name="wc", cache_size=0).url
        'memory://wc?type=transactional&cache_size=0'
        """
        location, params = self.url_location()
        params = {**params, "type": self.state_type.value}
        for field in dataclasses.fields(StoreStateFactory):
            value = getattr(self, field.name)
            if field.name in ("state_type", "serializer") or value == field.default:
                continue
            params[field.name] = "none" if value is None else str(value)
        return f"{location}?{urllib.parse.urlencode(params, safe='/')}"

    @property
    def redacted_url(self) -> str:
        """:attr:`url` as people see it: passwords, API keys and tokens shown as ``***``.

        ``url`` keeps every secret, so that it opens the same state; every message,
        repr, log line and status output shows this instead (``state/redaction.py``).

        Examples
        --------
        >>> from trident_spark.state import RedisState
        >>> RedisState.opaque(url="redis://:s3cret@cache:6379/0", key_prefix="wc").redacted_url
        'redis://:***@cache:6379/0?prefix=wc&type=opaque'
        """
        return redact_state_url(self.url)

    @property
    def effective_serializer(self) -> Serializer:
        """The serializer the store uses: the configured one or the kind's JSON default."""
        return self.serializer if self.serializer is not None else default_serializer(self.state_type)

    def with_settings(self, **settings: Any) -> Self:
        """A copy with some settings changed.

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> MemoryState.opaque(name="wc").with_settings(cache_size=0).cache_size
        0
        """
        return dataclasses.replace(self, **settings)

    def open(self) -> MapState:
        """Connect and return the working map state (call it where the state is used).

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> with MemoryState.transactional(name="doc-open").open() as counts:
        ...     counts.multiGet([["cat"]])
        [None]
        """
        stats = StateStats()
        layered: VersionedBackingMap = BatchingMap(
            self.open_backing_map(), max_multi_get_batch_size=self.max_multi_get_batch_size,
            max_multi_put_batch_size=self.max_multi_put_batch_size, stats=stats)
        if self.cache_size > 0:
            layered = CachedMap(layered, self.cache_size, stats=stats)
        return MAP_KINDS[self.state_type](layered, txid_offset=self.txid_offset,
                                          max_conflict_retries=self.max_conflict_retries, stats=stats)

    def check_exists(self) -> None:
        """Raise :class:`~.errors.StateUnavailableError` if the store the state lives in is not
        there, creating nothing (``open_state`` without ``create=True`` calls it).

        Stores that create something on first use (a SQLite file or table, an Elasticsearch
        index) check for it; the others (a Redis key prefix, a memory state) have nothing to
        check: this default passes.

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> MemoryState.opaque(name="doc-exists").check_exists()
        """

    def open_commit_log(self) -> CommitLog:
        """The state's commit record (``commit_record.py``), read and written straight to the store.

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> MemoryState.opaque(name="doc-commit").open_commit_log().read() is None
        True
        """
        backing = dataclasses.replace(self, serializer=CommitRecordSerializer()).open_backing_map()
        return CommitLog(backing, backing.address)

    def committed_offsets(self) -> dict[str, dict[str, int]]:
        """Where a spout resumes to continue exactly after the state's last committed batch.

        ``{topic: {partition: offset}}``, ready for ``KafkaSpout(starting_offsets=...)`` when a
        new checkpoint adopts this state (see docs/state.md, "Adopting a state"); ``{}`` when
        the state holds no commit record.
        """
        log = self.open_commit_log()
        try:
            record = log.read()
        finally:
            log.close()
        return {} if record is None else record.starting_offsets()

    def makeState(self, conf: dict[str, Any] | None = None, *args: Any, **kwargs: Any) -> MapState:
        """Trident's ``StateFactory.makeState``: the same as :meth:`open`.

        Takes Storm's arguments ``(conf, metrics, partitionIndex, numPartitions)`` or ours
        ``(conf, partition_index, num_partitions)``, accepted and unused: a map state is the same
        for every partition.
        """
        return self.open()


#: How a missing store's error ends: who creates a state, and how a program may.
CREATED_BY = ("the topology that writes a state creates it with its first batch (a program that "
              "writes one itself opens it with open_state(url, create=True))")

__all__ = ["CREATED_BY", "DEFAULT_BATCH_SIZE", "DEFAULT_CACHE_SIZE", "StoreStateFactory"]
