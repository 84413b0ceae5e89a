"""Gets and puts go to the store in round trips of at most max_multi_*_batch_size keys."""

from __future__ import annotations

import pytest

from trident_spark.state import StateConfigError, StateType
from trident_spark.state.base import VersionedBackingMap


def add(n):
    return lambda old: (old or 0) + n


class Counting(VersionedBackingMap):
    """Counts the round trips that reach the store, independently of StateStats."""

    def __init__(self, delegate):
        self.delegate = delegate
        self.get_sizes = []
        self.put_sizes = []

    @property
    def address(self):
        return self.delegate.address

    def multiGetVersioned(self, keys):
        self.get_sizes.append(len(keys))
        return self.delegate.multiGetVersioned(keys)

    def multiPutIfVersion(self, keys, values, expected_versions):
        self.put_sizes.append(len(keys))
        return self.delegate.multiPutIfVersion(keys, values, expected_versions)


def counted(backend, monkeypatch, **settings):
    """An opened state of ``backend`` whose store round trips are counted."""
    spec = backend.spec(StateType.OPAQUE, **settings)
    original = type(spec).open_backing_map
    stores = []

    def open_counting(self):
        stores.append(Counting(original(self)))
        return stores[-1]

    monkeypatch.setattr(type(spec), "open_backing_map", open_counting)
    return spec.open(), stores[0]


KEYS = [[f"w{i}"] for i in range(10)]


def test_gets_and_puts_are_split_by_the_batch_sizes(backend, monkeypatch):
    state, store = counted(backend, monkeypatch, cache_size=0,
                           max_multi_get_batch_size=3, max_multi_put_batch_size=4)
    state.multiUpdate(0, KEYS, [add(1)] * 10)
    assert store.get_sizes == [3, 3, 3, 1]
    assert store.put_sizes == [4, 4, 2]
    assert (state.stats.store_reads, state.stats.store_writes) == (4, 3)
    assert (state.stats.keys_read, state.stats.keys_written) == (10, 10)
    assert state.multiGet(KEYS) == [1] * 10
    assert store.get_sizes[4:] == [3, 3, 3, 1]


def test_no_bound_sends_everything_in_one_round_trip(backend, monkeypatch):
    state, store = counted(backend, monkeypatch, cache_size=0,
                           max_multi_get_batch_size=None, max_multi_put_batch_size=None)
    state.multiUpdate(0, KEYS, [add(1)] * 10)
    assert (store.get_sizes, store.put_sizes) == ([10], [10])


def test_a_warm_cache_reads_almost_nothing_from_the_store(backend, monkeypatch):
    keys = [[f"w{i}"] for i in range(1000)]
    state, store = counted(backend, monkeypatch, cache_size=2000)
    for txid in range(10):
        state.multiUpdate(txid, keys, [add(1)] * len(keys))
    assert sum(store.get_sizes) == 1000                 # only the first batch's reads
    assert sum(store.get_sizes) <= 0.1 * 10 * len(keys)
    assert state.stats.cache_hit_rate == 0.9
    assert state.multiGet(keys[:3]) == [10, 10, 10]


def test_an_empty_update_makes_no_round_trip(backend, monkeypatch):
    state, store = counted(backend, monkeypatch)
    assert state.multiUpdate(0, [], []) == []
    assert (store.get_sizes, store.put_sizes) == ([], [])


@pytest.mark.parametrize("size", [0, -1, 2.5, "10", True])
def test_batch_sizes_must_be_positive_ints(backend, size):
    with pytest.raises(StateConfigError, match=r"max_multi_get_batch_size must be a positive int \(or None"):
        backend.spec(max_multi_get_batch_size=size)
    with pytest.raises(StateConfigError, match=r"max_multi_put_batch_size must be a positive int"):
        backend.spec(max_multi_put_batch_size=size)
