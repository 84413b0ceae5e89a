"""Listing a whole state: scanVersioned on the store, getTuples on the map state (Trident's ITupleCollection).

The tests taking ``backend`` run on MemoryState and SqliteState here, and on
Redis and Elasticsearch in tests/integration/state (``RULE_MODULES``).
"""

from __future__ import annotations

import datetime
import decimal
import sqlite3

import pytest

from trident_spark.state import (
    BatchState,
    MemoryState,
    OpaqueMap,
    OpaqueValue,
    ScanUnsupportedError,
    SqliteState,
    StateConfigError,
    StateError,
    StateStats,
    StateType,
    StateTypeMismatchError,
    UnreadableValueError,
)
from trident_spark.state.base import DEFAULT_SCAN_BATCH_SIZE, VersionedBackingMap
from trident_spark.state.batching import BatchingMap
from trident_spark.state.cache import CachedMap
from trident_spark.state.keys import encode_key, is_hashed

TX, OPAQUE, NON_TX = StateType.TRANSACTIONAL, StateType.OPAQUE, StateType.NON_TRANSACTIONAL


def add(n):
    return lambda old: (old or 0) + n


def listed(state, txid=None):
    """getTuples as a sorted list (stores choose their order); the global key's [value] first."""
    tuples = state.getTuples() if txid is None else state.getTuples(txid)
    return sorted(tuples, key=lambda values: (len(values), repr(values)))


# -- every backend: what getTuples lists -----------------------------------------------------------

@pytest.mark.parametrize("kind", [NON_TX, TX, OPAQUE])
def test_get_tuples_lists_each_key_values_then_the_current_value(backend, kind):
    state = backend.spec(kind).open()
    state.multiUpdate(0, [["cat", "uk"], ["cat", "us"], ["dog", "us"]], [add(3), add(1), add(7)])
    state.multiUpdate(1, [["cat", "uk"]], [add(2)])
    assert listed(state) == [["cat", "uk", 5], ["cat", "us", 1], ["dog", "us", 7]]
    assert listed(backend.spec(kind).open()) == listed(state)      # another opening: the store's data


def test_the_global_key_lists_as_the_value_alone(backend):
    state = backend.spec(OPAQUE).open()
    state.update(0, add(42))
    assert list(state.getTuples()) == [[42]]
    state.multiUpdate(1, [["cat"]], [add(1)])                   # grouped and global keys in one state
    assert listed(state) == [[42], ["cat", 1]]


def test_an_empty_state_lists_nothing(backend):
    assert list(backend.spec(OPAQUE).open().getTuples()) == []


def test_more_keys_than_a_page_are_each_listed_once(backend):
    state = backend.spec(NON_TX, max_multi_get_batch_size=3, max_multi_put_batch_size=50).open()
    keys = [[f"w{i:02d}", i % 3] for i in range(23)]
    state.multiPut(0, keys, list(range(23)))
    state.stats.reset()
    assert listed(state) == sorted(([*key, i] for i, key in enumerate(keys)), key=repr)
    assert state.stats.keys_read == 23 and state.stats.store_reads >= 8     # pages of about 3
    assert state.stats.cache_hits == 0                                      # the cache is bypassed


def test_group_values_of_every_type_come_back_equal(backend):
    keys = [[None, True, False], [1, 1.5, -2], ["", "a|b", "~x", "50%", "tab\there"],
            [b"\x00\xff", decimal.Decimal("1.50"), decimal.Decimal("0.1")],
            [datetime.date(2024, 5, 1), datetime.datetime(2024, 5, 1, 10, 0, 30)], ["1"], [1],
            [[1, "a|b"], (2.5, None), {"n": [1]}, {3: "c"}, frozenset({"x"})]]
    state = backend.spec(TX).open()
    state.multiPut(0, keys, list(range(len(keys))))
    found = {encode_key(values[:-1]): values for values in state.getTuples()}
    assert found == {encode_key(key): [*key, i] for i, key in enumerate(keys)}
    # Equal numbers are one key, read back as its representative: an int if integral, else a float.
    representatives = {0: [None, 1, 0], 3: [b"\x00\xff", 1.5, decimal.Decimal("0.1")]}
    for values in found.values():
        expected = representatives.get(values[-1], keys[values[-1]])
        assert [type(v) for v in values[:-1]] == [type(v) for v in expected]
        assert values[:-1] == expected


def test_scanned_versions_are_the_stores_versions(backend):
    with backend.spec(NON_TX).open_backing_map() as store:
        store.multiPut([["cat"], ["dog"]], [1, 2])
        scanned = {tuple(key): stored for key, stored in store.scanVersioned(batch_size=1)}
        assert scanned == {("cat",): store.multiGetVersioned([["cat"]])[0],
                           ("dog",): store.multiGetVersioned([["dog"]])[0]}
        # A write conditional on a scanned version wins; on a stale one it loses.
        assert store.multiPutIfVersion([["cat"]], [5], [scanned[("cat",)].version]) != [None]
        assert store.multiPutIfVersion([["cat"]], [6], [scanned[("cat",)].version]) == [None]


def test_the_scan_reads_the_store_not_a_stale_cache(backend):
    reader = backend.spec(OPAQUE, cache_size=100).open()
    writer = backend.spec(OPAQUE, cache_size=100).open()
    writer.multiUpdate(0, [["cat"]], [add(1)])
    assert reader.multiGet([["cat"]]) == [1]                     # now cached in the reader
    writer.multiUpdate(1, [["cat"], ["dog"]], [add(1), add(4)])   # another task writes
    assert reader.multiGet([["cat"]]) == [1]                     # the cache is stale ...
    assert listed(reader) == [["cat", 2], ["dog", 4]]            # ... the scan is not


def test_a_removed_key_is_no_longer_listed(backend):
    with backend.spec(NON_TX).open_backing_map() as store:
        store.multiPut([["cat"], ["dog"]], [1, 2])
        store.multiRemove([["cat"]])
        assert [(key, s.value) for key, s in store.scanVersioned()] == [(["dog"], 2)]


def test_reads_of_a_batch_list_what_multi_get_answers(backend):
    state = backend.spec(OPAQUE).open()
    state.multiUpdate(0, [["cat"], ["eel"]], [add(2), add(9)])
    state.multiUpdate(1, [["cat"], ["dog"]], [add(1), add(5)])
    # Batch 1 wrote cat (from 2) and created dog: as batch 1 reads, cat is 2 and dog did not exist.
    assert listed(state, txid=1) == [["cat", 2], ["eel", 9]]
    assert state.multiGet([["cat"], ["dog"], ["eel"]], txid=1) == [2, None, 9]
    assert listed(state, txid=2) == listed(state) == [["cat", 3], ["dog", 5], ["eel", 9]]
    assert listed(BatchState(state, txid=1)) == [["cat", 2], ["eel", 9]]
    assert listed(BatchState(state, txid=1, reads_before_batch=False)) == listed(state)


def test_a_transactional_batch_lists_its_own_writes(backend):
    state = backend.spec(TX).open()
    state.multiUpdate(0, [["cat"]], [add(2)])
    state.multiUpdate(1, [["cat"], ["dog"]], [add(1), add(5)])
    assert listed(state, txid=1) == [["cat", 3], ["dog", 5]]    # val, as multiGet answers


def test_get_tuples_checks_the_txid_before_reading(backend):
    with pytest.raises(StateError, match=r"txid must be an int >= 0"):
        backend.spec(OPAQUE).open().getTuples(-1)


def test_the_txid_offset_applies_to_reads_of_a_batch(backend):
    state = backend.spec(OPAQUE, txid_offset=100).open()
    state.multiUpdate(0, [["cat"]], [add(2)])
    state.multiUpdate(1, [["cat"]], [add(1)])
    assert backend.stored(OPAQUE, ["cat"]) == OpaqueValue(101, 3, 2)
    assert listed(state, txid=1) == [["cat", 2]]


def test_a_value_of_another_kind_is_refused_while_listing(backend):
    backend.spec(TX).open().multiUpdate(0, [["cat"]], [add(1)])
    with pytest.raises(StateTypeMismatchError, match=r"key \['cat'\]: expected an opaque value"):
        list(backend.spec(OPAQUE).open().getTuples())


def test_an_unreadable_value_is_named_while_listing(backend):
    backend.raw_put(["cat"], b"\xff not json")
    with pytest.raises(UnreadableValueError, match=r"key \['cat'\]"):
        list(backend.spec(OPAQUE).open().getTuples())


def test_values_written_by_storm_are_listed(backend):
    backend.raw_put(["dog"], b'[12,{"n":4},{"n":3}]')
    backend.raw_put(["cat"], b"[12,7,null]")
    assert listed(backend.spec(OPAQUE).open()) == [["cat", 7], ["dog", {"n": 4}]]
    assert listed(backend.spec(OPAQUE).open(), txid=12) == [["dog", {"n": 3}]]


# -- the layers ------------------------------------------------------------------------------------

class NoScan(VersionedBackingMap):
    """A custom store that implements only what the rules need."""

    @property
    def address(self):
        return "custom://wc"

    def multiGetVersioned(self, keys):
        return [None] * len(keys)

    def multiPutIfVersion(self, keys, values, expected_versions):
        return [1] * len(keys)


def test_a_store_without_scan_says_which_and_what_to_do():
    with pytest.raises(ScanUnsupportedError) as caught:
        OpaqueMap(NoScan()).getTuples()                  # at once, not on the first next()
    assert isinstance(caught.value, NotImplementedError) and isinstance(caught.value, StateError)
    assert str(caught.value).startswith("custom://wc: NoScan cannot list its keys (it does not implement "
                                        "scanVersioned); getTuples() and TupleCollectionGet need")
    assert caught.value.backend == "NoScan"
    with pytest.raises(ScanUnsupportedError, match="NoScan"):
        CachedMap(BatchingMap(NoScan()), cache_size=10).scanVersioned()


@pytest.mark.parametrize("size", [0, -1, 1.5, True, "10"])
def test_a_scan_page_size_must_be_a_positive_int(size):
    store = MemoryState.nonTransactional(name="test-scan-size").open_backing_map()
    with pytest.raises(StateConfigError, match=r"batch_size must be a positive int"):
        store.scanVersioned(size)


class Recording(VersionedBackingMap):
    def __init__(self, delegate):
        self.delegate = delegate
        self.sizes = []

    @property
    def address(self):
        return self.delegate.address

    def multiGetVersioned(self, keys):
        return self.delegate.multiGetVersioned(keys)

    def multiPutIfVersion(self, keys, values, expected_versions):
        return self.delegate.multiPutIfVersion(keys, values, expected_versions)

    def scanVersioned(self, batch_size=None):
        self.sizes.append(batch_size)
        return self.delegate.scanVersioned(batch_size)


@pytest.mark.parametrize(("get_size", "asked", "expected"), [
    (7, None, 7), (None, None, DEFAULT_SCAN_BATCH_SIZE), (7, 2, 2)])
def test_batching_pages_by_max_multi_get_batch_size(get_size, asked, expected):
    MemoryState.drop("test-scan-pages")
    store = Recording(MemoryState.nonTransactional(name="test-scan-pages").open_backing_map())
    stats = StateStats()
    batching = BatchingMap(store, max_multi_get_batch_size=get_size, stats=stats)
    batching.multiPut([[i] for i in range(15)], list(range(15)))
    stats.reset()
    assert sorted(key[0] for key, _ in batching.scanVersioned(asked)) == list(range(15))
    assert store.sizes == [expected]
    assert stats.keys_read == 15 and stats.store_reads == -(-15 // expected)


def test_the_cache_passes_the_scan_through_and_keeps_its_entries():
    MemoryState.drop("test-scan-cache")
    store = Recording(MemoryState.nonTransactional(name="test-scan-cache").open_backing_map())
    cached = CachedMap(store, cache_size=10)
    cached.multiPut([["cat"]], [1])
    assert [key for key, _ in cached.scanVersioned(4)] == [["cat"]]
    assert store.sizes == [4] and len(cached) == 1


def test_the_default_state_lists_through_cache_and_batching(tmp_path):
    spec = SqliteState.opaque(path=str(tmp_path / "s.db"), cache_size=10, max_multi_get_batch_size=2)
    with spec.open() as state:
        assert isinstance(state.backing, CachedMap) and isinstance(state.backing.delegate, BatchingMap)
        state.multiUpdate(0, [["a"], ["b"], ["c"]], [add(1), add(2), add(3)])
        state.stats.reset()
        assert list(state.getTuples()) == [["a", 1], ["b", 2], ["c", 3]]     # SQLite: in key order
        assert state.stats.store_reads == 2 and state.stats.keys_read == 3


# -- stores that keep only the encoded key ---------------------------------------------------------

@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_hashed_long_key_cannot_be_listed_and_says_why(tmp_path, kind):
    spec = (MemoryState.opaque(name=f"test-scan-hashed-{tmp_path.name}") if kind == "memory"
            else SqliteState.opaque(path=str(tmp_path / "s.db")))
    state = spec.open()
    state.multiUpdate(0, [["x" * 600]], [add(1)])
    assert is_hashed(encode_key(["x" * 600]))
    with pytest.raises(StateError, match=r"cannot list key '~h.*is longer than 512 bytes, so it is stored "
                                         r"hashed.*query such keys with multiGet\(\) / MapGet\(\)"):
        list(state.getTuples())
    assert state.multiGet([["x" * 600]]) == [1]
    if kind == "memory":
        MemoryState.drop(spec.name)


def test_a_sqlite_scan_lists_only_its_table(tmp_path):
    path = str(tmp_path / "s.db")
    SqliteState.opaque(path=path, table="counts").open().multiUpdate(0, [["cat"]], [add(1)])
    SqliteState.opaque(path=path, table="others").open().multiUpdate(0, [["dog"]], [add(2)])
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE unrelated (k TEXT, v BLOB)")
        db.execute("INSERT INTO unrelated VALUES ('eel', x'00')")
    assert list(SqliteState.opaque(path=path, table="counts").open().getTuples()) == [["cat", 1]]
    assert list(SqliteState.opaque(path=path, table="others").open().getTuples()) == [["dog", 2]]


def test_a_sqlite_scan_sees_each_key_once_while_keys_are_written(tmp_path):
    spec = SqliteState.nonTransactional(path=str(tmp_path / "s.db"))
    spec.open().multiPut(0, [[f"k{i:02d}"] for i in range(10)], list(range(10)))
    writer = spec.open()
    seen = []
    with spec.open_backing_map() as store:
        for key, _ in store.scanVersioned(batch_size=3):
            seen.append(key[0])
            others = [] if key == ["k09"] else [key]        # the key just seen, and one not seen yet
            writer.multiUpdate(1, [*others, ["k09"]], [*(add(1) for _ in others), add(100)])
    assert seen == [f"k{i:02d}" for i in range(10)]                  # once each, in key order
    assert listed(spec.open())[-1] == ["k09", 9 + 100 * 10]
