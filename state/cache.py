"""An LRU cache in front of a versioned store (Trident's ``CachedMap``), safe against staleness.

Trident's CachedMap caches values and writes through; if a key's partition runs
on another executor next batch, the old executor's entry goes stale and a
blind write would overwrite the newer value. Here the cache keeps each value
with the store's version of it, and writes stay conditional on that version:
a stale entry makes the write lose, the entry is dropped, and the map rules
re-read the key from the store and recompute. So the cache can only cost a
retry, never a wrong value.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

from .base import Key, Version, Versioned, VersionedBackingMap
from .checks import check_int
from .errors import StateConfigError
from .keys import encode_key, encode_keys
from .stats import StateStats

_NOT_CACHED = object()


class CachedMap(VersionedBackingMap):
    """Keeps the last ``cache_size`` keys read or written, with their versions.

    Keys that were read and found missing are cached as missing too (as in
    Trident); creating such a key stays conditional on it not existing.
    Values are cached as written (a tuple written stays a tuple in the cache,
    although JSON reads it back as a list).

    Parameters
    ----------
    delegate : VersionedBackingMap
        The store (usually behind a :class:`~.batching.BatchingMap`).
    cache_size : int
        Most keys kept; the least recently used is dropped first.
    stats : StateStats, optional
        Where hits and misses are counted.

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> stats = StateStats()
    >>> store = MemoryState.nonTransactional(name="doc-cache").open_backing_map()
    >>> cached = CachedMap(store, cache_size=100, stats=stats)
    >>> cached.multiPut([["cat"]], [3])
    >>> cached.multiGet([["cat"]]), cached.multiGet([["cat"]])
    ([3], [3])
    >>> stats.cache_hits >= 2
    True
    """

    def __init__(self, delegate: VersionedBackingMap, cache_size: int, *,
                 stats: StateStats | None = None) -> None:
        check_int(cache_size, "cache_size", error=StateConfigError,
                  message="cache_size must be a positive int here, got {value!r}")
        self.delegate = delegate
        self.cache_size = cache_size
        self.stats = stats if stats is not None else StateStats()
        self._entries: OrderedDict[str, Versioned | None] = OrderedDict()

    @property
    def address(self) -> str:
        return self.delegate.address

    def __len__(self) -> int:
        return len(self._entries)

    def _remember(self, encoded: str, entry: Versioned | None) -> None:
        self._entries[encoded] = entry
        self._entries.move_to_end(encoded)
        while len(self._entries) > self.cache_size:
            self._entries.popitem(last=False)

    def multiGetVersioned(self, keys: Sequence[Key]) -> list[Versioned | None]:
        return self.multiGetEncoded(keys, encode_keys(keys))

    def multiGetEncoded(self, keys: Sequence[Key], encoded: Sequence[str]) -> list[Versioned | None]:
        entries = self._entries
        found: list[Any] = []
        missing: list[int] = []
        for i, enc in enumerate(encoded):
            entry = entries.get(enc, _NOT_CACHED)
            if entry is _NOT_CACHED:
                missing.append(i)
            else:
                entries.move_to_end(enc)
            found.append(entry)
        self.stats.cache_hits += len(keys) - len(missing)
        self.stats.cache_misses += len(missing)
        if missing:
            fetched = self.delegate.multiGetEncoded([keys[i] for i in missing], [encoded[i] for i in missing])
            for i, stored in zip(missing, fetched, strict=True):
                found[i] = stored
                self._remember(encoded[i], stored)
        return found

    def multiPutIfVersion(self, keys: Sequence[Key], values: Sequence[Any],
                          expected_versions: Sequence[Version | None]) -> list[Version | None]:
        return self.multiPutEncoded(keys, encode_keys(keys), values, expected_versions)

    def multiPutEncoded(self, keys: Sequence[Key], encoded: Sequence[str], values: Sequence[Any],
                        expected_versions: Sequence[Version | None]) -> list[Version | None]:
        outcomes = self.delegate.multiPutEncoded(keys, encoded, values, expected_versions)
        entries = self._entries
        for enc, value, new_version in zip(encoded, values, outcomes, strict=True):
            if new_version is None:
                # Lost: the entry is stale (or the key changed under us); the next read goes to the store.
                entries.pop(enc, None)
            else:
                self._remember(enc, Versioned(value, new_version))
        return outcomes

    def scanVersioned(self, batch_size: int | None = None) -> Iterator[tuple[Key, Versioned]]:
        """The store's scan, bypassing the cache: another task may have written any key since.

        Scanned values are not cached either (a scan would evict the hot keys).

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> store = MemoryState.nonTransactional(name="doc-cache-scan").open_backing_map()
        >>> cached = CachedMap(store, cache_size=10)
        >>> cached.multiPut([["cat"]], [1])
        >>> store.multiPut([["cat"]], [2])                   # another task writes
        >>> [(key, s.value) for key, s in cached.scanVersioned()], len(cached)
        ([(['cat'], 2)], 1)
        """
        return self.delegate.scanVersioned(batch_size)

    def multiRemove(self, keys: Sequence[Key]) -> None:
        for key in keys:
            self._entries.pop(encode_key(key), None)
        self.delegate.multiRemove(keys)

    def invalidate(self, keys: Sequence[Key] | None = None) -> None:
        """Forget ``keys`` (all keys if None) so the next read goes to the store.

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> cached = CachedMap(MemoryState.nonTransactional(name="doc-inv").open_backing_map(), 10)
        >>> cached.multiGet([["cat"]]); len(cached)
        [None]
        1
        >>> cached.invalidate(); len(cached)
        0
        """
        if keys is None:
            self._entries.clear()
            return
        for key in keys:
            self._entries.pop(encode_key(key), None)

    def close(self) -> None:
        self._entries.clear()
        self.delegate.close()


__all__ = ["CachedMap"]
