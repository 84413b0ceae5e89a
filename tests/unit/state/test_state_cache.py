"""The LRU cache (Trident's CachedMap): hits, eviction, and stale entries that never win a write."""

from __future__ import annotations

import pytest

from trident_spark.state import MemoryState, OpaqueMap, StateStats, TransactionalMap
from trident_spark.state.base import VersionedBackingMap
from trident_spark.state.cache import CachedMap
from trident_spark.state.errors import StateConfigError


def add(n):
    return lambda old: (old or 0) + n


class Recording(VersionedBackingMap):
    """Forwards to a store and records what each call sent and got back."""

    def __init__(self, delegate):
        self.delegate = delegate
        self.gets = []
        self.puts = []

    def multiGetVersioned(self, keys):
        self.gets.append([list(k) for k in keys])
        return self.delegate.multiGetVersioned(keys)

    def multiPutIfVersion(self, keys, values, expected_versions):
        outcomes = self.delegate.multiPutIfVersion(keys, values, expected_versions)
        self.puts.append((values, [o is not None for o in outcomes]))
        return outcomes


@pytest.fixture
def name():
    made = "test-cache"
    yield made
    MemoryState.drop(made)


def test_repeated_reads_are_answered_by_the_cache(name):
    state = MemoryState.opaque(name=name, cache_size=10).open()
    state.multiUpdate(0, [["cat"], ["dog"]], [add(1), add(1)])     # 2 misses, then cached by the write
    state.multiGet([["cat"], ["dog"]])
    state.multiUpdate(1, [["cat"]], [add(1)])
    stats = state.stats
    assert (stats.cache_misses, stats.cache_hits) == (2, 3)
    assert stats.store_reads == 1 and stats.keys_read == 2
    assert stats.cache_hit_rate == 0.6


def test_missing_keys_are_cached_as_missing(name):
    state = MemoryState.opaque(name=name, cache_size=10).open()
    state.multiGet([["eel"]])
    state.multiGet([["eel"]])
    assert state.stats.store_reads == 1 and state.stats.cache_hits == 1


def test_least_recently_used_key_is_evicted_first(name):
    store = MemoryState.nonTransactional(name=name).open_backing_map()
    stats = StateStats()
    cached = CachedMap(store, 2, stats=stats)
    cached.multiGet([["a"], ["b"]])          # misses: a, b
    cached.multiGet([["a"]])                 # hit: a is now the most recent
    cached.multiGet([["c"]])                 # miss: evicts b
    assert len(cached) == 2
    cached.multiGet([["a"]])                 # hit
    cached.multiGet([["b"]])                 # miss again
    assert (stats.cache_hits, stats.cache_misses) == (2, 4)


def test_cache_size_zero_reads_the_store_every_time(name):
    state = MemoryState.opaque(name=name, cache_size=0).open()
    state.multiGet([["cat"]])
    state.multiGet([["cat"]])
    assert state.stats.store_reads == 2 and state.stats.cache_hit_rate is None


def test_stale_entry_loses_its_write_is_reread_and_recomputed(name):
    """Two executors over one store: B updates the key A has cached; A's next write must not win."""
    spec = MemoryState.opaque(name=name, cache_size=100)
    recording = Recording(spec.open_backing_map())
    a = OpaqueMap(CachedMap(recording, 100))
    b = spec.open()
    a.multiUpdate(0, [["cat"]], [add(1)])          # A caches [0, 1, None]
    b.multiUpdate(1, [["cat"]], [add(5)])          # the store now holds [1, 6, 1]; A's entry is stale
    assert a.multiUpdate(2, [["cat"]], [add(1)]) == [7]
    # A first wrote from its stale entry (curr 1 -> 2) and lost; it re-read and wrote 6 -> 7.
    assert [outcome for _, outcome in recording.puts] == [[True], [False], [True]]
    assert recording.puts[1][0][0].curr == 2 and recording.puts[2][0][0].curr == 7
    assert recording.gets == [[["cat"]], [["cat"]]]      # first read, then the re-read after losing
    assert a.stats.write_conflicts == 1
    assert spec.open().multiGet([["cat"]]) == [7]


@pytest.mark.parametrize("map_kind", [OpaqueMap, TransactionalMap])
def test_stale_entry_and_a_duplicate_of_the_same_batch_end_exact(name, map_kind):
    """A speculative duplicate of batch 1 on an executor whose cache predates batch 1."""
    kind = "opaque" if map_kind is OpaqueMap else "transactional"
    spec = MemoryState(name=name, state_type=kind, cache_size=100)
    a = map_kind(CachedMap(spec.open_backing_map(), 100))
    b = spec.open()
    a.multiUpdate(0, [["cat"]], [add(1)])
    b.multiUpdate(1, [["cat"]], [add(5)])
    assert a.multiUpdate(1, [["cat"]], [add(5)]) == [6]
    assert spec.open().multiGet([["cat"]]) == [6]
    assert a.stats.write_conflicts == 1
    if map_kind is TransactionalMap:
        assert a.stats.keys_skipped == 1            # after the re-read it saw txid 1: already applied


def test_interleaved_writers_with_caches_count_exactly(name):
    spec = MemoryState.nonTransactional(name=name, cache_size=100)
    writers = [spec.open() for _ in range(3)]
    for round_ in range(20):
        for writer in writers:
            writer.multiUpdate(round_, [["cat"], ["dog"]], [add(1), add(2)])
    assert spec.open().multiGet([["cat"], ["dog"]]) == [60, 120]
    assert sum(w.stats.write_conflicts for w in writers) > 0


def test_invalidate_forgets_entries(name):
    cached = CachedMap(MemoryState.opaque(name=name).open_backing_map(), 10)
    cached.multiGet([["a"], ["b"]])
    cached.invalidate([["a"]])
    assert len(cached) == 1
    cached.invalidate()
    assert len(cached) == 0


def test_remove_drops_the_entry_and_the_key(name):
    state = MemoryState.nonTransactional(name=name, cache_size=10).open()
    state.multiPut(0, [["cat"]], [3])
    state.backing.multiRemove([["cat"]])
    assert state.multiGet([["cat"]]) == [None]
    assert MemoryState.nonTransactional(name=name).open().multiGet([["cat"]]) == [None]


def test_cache_size_must_be_positive_for_the_cache_itself(name):
    with pytest.raises(StateConfigError, match="cache_size must be a positive int here, got 0"):
        CachedMap(MemoryState.opaque(name=name).open_backing_map(), 0)
