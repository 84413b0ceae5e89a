"""Bounded store round trips: gets and puts split by ``max_multi_*_batch_size``.

Storm's Redis and Cassandra states bound how many keys one ``MGET`` or one
write carries; here that is one layer in front of any versioned store, which
also counts the round trips it makes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from .base import DEFAULT_SCAN_BATCH_SIZE, Key, Version, Versioned, VersionedBackingMap, check_scan_batch_size
from .checks import check_int
from .errors import StateConfigError
from .stats import StateStats


def check_batch_size(name: str, size: int | None) -> int | None:
    """Validate a ``max_multi_*_batch_size`` setting: a positive int, or None for no bound.

    Examples
    --------
    >>> check_batch_size("max_multi_get_batch_size", 500)
    500
    """
    if size is None:
        return None
    return check_int(size, name, error=StateConfigError,
                     message="{name} must be a positive int (or None for no bound), got {value!r}")


def _chunks(count: int, size: int | None) -> Iterator[range]:
    step = count if size is None else size
    for start in range(0, count, max(step, 1)):
        yield range(start, min(start + step, count))


class BatchingMap(VersionedBackingMap):
    """Forwards to a store in round trips of at most the configured number of keys.

    Parameters
    ----------
    delegate : VersionedBackingMap
        The store.
    max_multi_get_batch_size, max_multi_put_batch_size : int or None
        Most keys per read / write round trip; None: all keys in one.
    stats : StateStats, optional
        Where round trips and keys are counted.

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> stats = StateStats()
    >>> store = MemoryState.nonTransactional(name="doc-batching").open_backing_map()
    >>> batching = BatchingMap(store, max_multi_get_batch_size=2, stats=stats)
    >>> batching.multiGet([["a"], ["b"], ["c"]])
    [None, None, None]
    >>> stats.store_reads, stats.keys_read
    (2, 3)
    """

    def __init__(self, delegate: VersionedBackingMap, *, max_multi_get_batch_size: int | None = None,
                 max_multi_put_batch_size: int | None = None, stats: StateStats | None = None) -> None:
        self.delegate = delegate
        self.max_multi_get_batch_size = check_batch_size("max_multi_get_batch_size", max_multi_get_batch_size)
        self.max_multi_put_batch_size = check_batch_size("max_multi_put_batch_size", max_multi_put_batch_size)
        self.stats = stats if stats is not None else StateStats()

    @property
    def address(self) -> str:
        return self.delegate.address

    def multiGetVersioned(self, keys: Sequence[Key]) -> list[Versioned | None]:
        return self._get(keys, None)

    def multiGetEncoded(self, keys: Sequence[Key], encoded: Sequence[str]) -> list[Versioned | None]:
        return self._get(keys, encoded)

    def _get(self, keys: Sequence[Key], encoded: Sequence[str] | None) -> list[Versioned | None]:
        found: list[Versioned | None] = []
        for part in _chunks(len(keys), self.max_multi_get_batch_size):
            started = time.perf_counter_ns()
            at = slice(part.start, part.stop)
            found.extend(self.delegate.multiGetVersioned(list(keys[at])) if encoded is None
                         else self.delegate.multiGetEncoded(list(keys[at]), list(encoded[at])))
            self.stats.store_read_us += (time.perf_counter_ns() - started) // 1000
            self.stats.store_reads += 1
            self.stats.keys_read += len(part)
        return found

    def multiPutIfVersion(self, keys: Sequence[Key], values: Sequence[Any],
                          expected_versions: Sequence[Version | None]) -> list[Version | None]:
        return self._put(keys, None, values, expected_versions)

    def multiPutEncoded(self, keys: Sequence[Key], encoded: Sequence[str], values: Sequence[Any],
                        expected_versions: Sequence[Version | None]) -> list[Version | None]:
        return self._put(keys, encoded, values, expected_versions)

    def _put(self, keys: Sequence[Key], encoded: Sequence[str] | None, values: Sequence[Any],
             expected_versions: Sequence[Version | None]) -> list[Version | None]:
        outcomes: list[Version | None] = []
        for part in _chunks(len(keys), self.max_multi_put_batch_size):
            started = time.perf_counter_ns()
            at = slice(part.start, part.stop)
            keys_at, values_at, expected_at = list(keys[at]), list(values[at]), list(expected_versions[at])
            if encoded is None:
                outcomes.extend(self.delegate.multiPutIfVersion(keys_at, values_at, expected_at))
            else:
                outcomes.extend(self.delegate.multiPutEncoded(keys_at, list(encoded[at]), values_at,
                                                              expected_at))
            self.stats.store_write_us += (time.perf_counter_ns() - started) // 1000
            self.stats.store_writes += 1
            self.stats.keys_written += len(part)
        return outcomes

    def scanVersioned(self, batch_size: int | None = None) -> Iterator[tuple[Key, Versioned]]:
        """The store's scan in pages of ``batch_size`` keys (default: ``max_multi_get_batch_size``).

        Counts one store read per page of keys (about: a Redis ``SCAN`` page
        varies) and every key scanned in ``keys_read``.

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> stats = StateStats()
        >>> store = MemoryState.nonTransactional(name="doc-batching-scan").open_backing_map()
        >>> store.multiPut([["a"], ["b"], ["c"]], [1, 2, 3])
        >>> batching = BatchingMap(store, max_multi_get_batch_size=2, stats=stats)
        >>> [key for key, _ in batching.scanVersioned()]
        [['a'], ['b'], ['c']]
        >>> stats.store_reads, stats.keys_read
        (2, 3)
        """
        if batch_size is None:
            batch_size = self.max_multi_get_batch_size or DEFAULT_SCAN_BATCH_SIZE
        size = check_scan_batch_size(batch_size)
        return self._counted(self.delegate.scanVersioned(size), size)

    def _counted(self, entries: Iterator[tuple[Key, Versioned]],
                 size: int) -> Iterator[tuple[Key, Versioned]]:
        self.stats.store_reads += 1
        for count, entry in enumerate(entries):
            if count and count % size == 0:
                self.stats.store_reads += 1
            self.stats.keys_read += 1
            yield entry

    def multiRemove(self, keys: Sequence[Key]) -> None:
        for part in _chunks(len(keys), self.max_multi_put_batch_size):
            self.delegate.multiRemove([keys[i] for i in part])
            self.stats.store_writes += 1

    def close(self) -> None:
        self.delegate.close()


__all__ = ["BatchingMap", "check_batch_size"]
