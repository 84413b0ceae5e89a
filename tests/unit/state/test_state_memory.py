"""MemoryState: named stores shared in a process, picklable settings-only factories, thread safety."""

from __future__ import annotations

import pickle
import threading

import pytest

from trident_spark.state import (
    MemoryState,
    NonTransactionalMap,
    OpaqueMap,
    StateConfigError,
    StateType,
    TransactionalMap,
)


def add(n):
    return lambda old: (old or 0) + n


@pytest.fixture
def name():
    made = "test-memory"
    yield made
    MemoryState.drop(made)
    MemoryState.drop(made + "-other")


def test_factories_make_the_three_kinds(name):
    assert type(MemoryState.opaque(name=name).open()) is OpaqueMap
    assert type(MemoryState.transactional(name=name).open()) is TransactionalMap
    assert type(MemoryState.nonTransactional(name=name).makeState(partition_index=0)) is NonTransactionalMap
    assert MemoryState.transactional(name=name).state_type is StateType.TRANSACTIONAL


def test_the_same_name_is_the_same_state_and_another_name_is_not(name):
    MemoryState.opaque(name=name).open().multiUpdate(0, [["cat"]], [add(2)])
    assert MemoryState.opaque(name=name).open().multiGet([["cat"]]) == [2]
    assert MemoryState.opaque(name=name + "-other").open().multiGet([["cat"]]) == [None]
    MemoryState.drop(name)
    assert MemoryState.opaque(name=name).open().multiGet([["cat"]]) == [None]


def test_the_factory_pickles_as_settings_only(name):
    spec = MemoryState.opaque(name=name, cache_size=5, max_multi_get_batch_size=7, txid_offset=3)
    spec.open().multiUpdate(0, [["cat"]], [add(1)])
    shipped = pickle.loads(pickle.dumps(spec))
    assert shipped == spec
    assert b"cat" not in pickle.dumps(spec)                  # no data, no connection travels
    assert shipped.open().multiGet([["cat"]]) == [1]         # opened "on the executor": same process store


def test_urls_and_settings(name):
    spec = MemoryState.transactional(name=name)
    assert spec.url == f"memory://{name}?type=transactional"
    assert spec.max_multi_get_batch_size == spec.max_multi_put_batch_size == 1000
    assert spec.cache_size == 100_000
    assert spec.with_settings(cache_size=0).cache_size == 0
    assert MemoryState(name=name, state_type="non_transactional").state_type is StateType.NON_TRANSACTIONAL


@pytest.mark.parametrize(("settings", "message"), [
    ({"name": ""}, "MemoryState needs a non-empty name, got ''"),
    ({"name": "x", "state_type": "exact"}, "unknown state type 'exact'; one of 'non_transactional', "
                                           "'transactional', 'opaque'"),
    ({"name": "x", "cache_size": -1}, "cache_size must be an int >= 0, got -1"),
    ({"name": "x", "txid_offset": -5}, "txid_offset must be an int >= 0, got -5"),
    ({"name": "x", "max_conflict_retries": "3"}, "max_conflict_retries must be an int >= 0, got '3'"),
    ({"name": "x", "serializer": "json"}, "serializer must have serialize() and deserialize(), got 'json'"),
])
def test_bad_settings_are_named(settings, message):
    with pytest.raises(StateConfigError) as caught:
        MemoryState(**settings)
    assert str(caught.value) == message


def test_an_empty_name_is_refused_and_no_name_is_a_fresh_id():
    # Issue 29: a factory without a name gets a fresh id, as Storm's MemoryMapState.Factory() does.
    with pytest.raises(StateConfigError, match="non-empty name"):
        MemoryState.opaque(name="")
    assert MemoryState.opaque().name != MemoryState.opaque().name


def test_threads_incrementing_one_key_through_their_own_caches_end_exact(name):
    spec = MemoryState.nonTransactional(name=name, cache_size=100, max_conflict_retries=10_000)
    per_thread = 300

    def work():
        state = spec.open()
        for txid in range(per_thread):
            state.multiUpdate(txid, [["cat"]], [add(1)])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert spec.open().multiGet([["cat"]]) == [4 * per_thread]


def test_raw_access_for_tests(name):
    MemoryState.opaque(name=name).open().multiUpdate(3, [["cat"]], [add(2)])
    store = MemoryState.store(name)
    assert store.raw_get(["cat"]) == b"[3,2,null]"
    assert store.raw_get(["dog"]) is None
    assert len(store) == 1
