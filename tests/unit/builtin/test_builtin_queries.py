"""MapGet, SnapshotGet and TupleCollectionGet read a state once per partition and emit what they read."""

from __future__ import annotations

import uuid

import pytest

from trident_spark.builtin import MapGet, SnapshotGet, TupleCollectionGet
from trident_spark.fields import Fields, TridentTuple
from trident_spark.operation import TridentCollector
from trident_spark.state import GLOBAL_KEY, BatchState, MemoryState, ScanUnsupportedError, StateType
from trident_spark.state.base import VersionedBackingMap
from trident_spark.state.map import OpaqueMap


def words(*values, fields=("word",)):
    return [TridentTuple(list(v) if isinstance(v, tuple) else [v], Fields(*fields)) for v in values]


def run_query(query, state, tuples):
    out = TridentCollector()
    results = query.batchRetrieve(state, tuples)
    assert len(results) == len(tuples)
    for t, result in zip(tuples, results, strict=True):
        query.execute(t, result, out)
    return out.emitted


@pytest.fixture
def name():
    store = f"test-builtin-{uuid.uuid4().hex[:8]}"
    yield store
    MemoryState.drop(store)


def add(n):
    return lambda old: (old or 0) + n


# --- MapGet -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(StateType))
def test_map_get_returns_current_values_and_none_for_missing_keys(name, kind):
    state = MemoryState(name=name, state_type=kind).open()
    state.multiUpdate(0, [["cat"], ["dog"]], [add(2), add(1)])
    state.multiUpdate(1, [["cat"]], [add(5)])
    assert run_query(MapGet(), state, words("cat", "eel", "dog", "cat")) == [[7], [None], [1], [7]]


def test_map_get_sees_what_another_opening_wrote(name):
    MemoryState.opaque(name=name).open().multiPut(0, [["cat"]], [3])
    reader = MemoryState.opaque(name=name, cache_size=0).open()
    assert MapGet().batchRetrieve(reader, words("cat")) == [3]
    MemoryState.opaque(name=name).open().multiUpdate(1, [["cat"]], [add(1)])
    assert MapGet().batchRetrieve(reader, words("cat")) == [4]


def test_map_get_with_compound_keys(name):
    state = MemoryState.transactional(name=name).open()
    state.multiPut(0, [["cat", 1], ["cat", 2]], ["one", "two"])
    tuples = words(("cat", 2), ("cat", 1), ("cat", 3), fields=("word", "n"))
    assert run_query(MapGet(), state, tuples) == [["two"], ["one"], [None]]


def test_map_get_finds_1_true_and_1_0_under_one_key_as_a_python_dict_would(name):
    state = MemoryState.nonTransactional(name=name).open()
    state.multiPut(0, [[1], ["1"]], ["number one", "string one"])
    tuples = words(1, True, 1.0, "1", fields=("k",))
    assert MapGet().batchRetrieve(state, tuples) == ["number one"] * 3 + ["string one"]


class RecordingMap:
    def __init__(self, values):
        self.values = values
        self.reads = []

    def multiGet(self, keys):
        self.reads.append([list(k) for k in keys])
        return [self.values.get(repr(list(k))) for k in keys]


def test_map_get_reads_each_distinct_key_once_in_one_call():
    state = RecordingMap({"['cat']": 3, "['dog']": 1})
    assert MapGet().batchRetrieve(state, words("cat", "dog", "cat", "eel", "dog")) == [3, 1, 3, None, 1]
    assert state.reads == [[["cat"], ["dog"], ["eel"]]]


def test_map_get_passes_unhashable_keys_to_the_state():
    state = RecordingMap({"[['x']]": "listed"})
    assert MapGet().batchRetrieve(state, words(["x"], ["x"], fields=("k",))) == ["listed", "listed"]
    assert state.reads == [[[["x"]], [["x"]]]]


# --- SnapshotGet --------------------------------------------------------------------------------

def test_snapshot_get_reads_the_global_value_once_for_every_tuple(name):
    state = MemoryState.opaque(name=name).open()
    state.update(0, add(40))
    state.update(1, add(2))
    assert run_query(SnapshotGet(), state, words("q1", "q2", fields=("id",))) == [[42], [42]]


def test_snapshot_get_of_an_empty_state_is_none(name):
    assert SnapshotGet().batchRetrieve(MemoryState.opaque(name=name).open(), words("q")) == [None]


def test_snapshot_get_falls_back_to_the_global_key():
    state = RecordingMap({repr(list(GLOBAL_KEY)): 42})
    assert SnapshotGet().batchRetrieve(state, words("q1", "q2")) == [42, 42]
    assert state.reads == [[[]]]


def test_snapshot_get_without_tuples_reads_nothing():
    state = RecordingMap({})
    assert SnapshotGet().batchRetrieve(state, []) == []
    assert state.reads == []


# --- TupleCollectionGet -------------------------------------------------------------------------

class Collection:
    def __init__(self, stored):
        self.stored = stored
        self.reads = 0

    def getTuples(self):
        self.reads += 1
        return iter(self.stored)


def test_tuple_collection_get_emits_every_stored_tuple_per_input_tuple():
    state = Collection([("cat", 3), ("dog", 1)])
    emitted = run_query(TupleCollectionGet(), state, words("q1", "q2", fields=("id",)))
    assert emitted == [["cat", 3], ["dog", 1], ["cat", 3], ["dog", 1]]
    assert state.reads == 1


def test_tuple_collection_get_of_an_empty_collection_emits_nothing():
    assert run_query(TupleCollectionGet(), Collection([]), words("q")) == []
    assert TupleCollectionGet().batchRetrieve(Collection([]), []) == []


def test_tuple_collection_get_needs_get_tuples():
    class Values:
        def multiGet(self, keys):
            return [None] * len(keys)

    with pytest.raises(TypeError, match=r"TupleCollectionGet\(\) needs a state with getTuples\(\) "
                                        r"\(Trident's ITupleCollection\), as every map state .* has; .*"
                                        r"Query keys with MapGet\(\) instead"):
        TupleCollectionGet().batchRetrieve(Values(), words("q"))


@pytest.mark.parametrize("kind", list(StateType))
def test_tuple_collection_get_lists_a_grouped_map_state_of_every_kind(name, kind):
    counts = MemoryState(name=name, state_type=kind).open()
    counts.multiUpdate(0, [["cat", "uk"], ["dog", "us"]], [add(3), add(1)])
    counts.multiUpdate(1, [["cat", "uk"]], [add(2)])
    emitted = run_query(TupleCollectionGet(), BatchState(counts, txid=2), words("q1", "q2", fields=("id",)))
    assert emitted == [["cat", "uk", 5], ["dog", "us", 1]] * 2


def test_tuple_collection_get_of_an_ungrouped_state_emits_the_value_alone(name):
    total = MemoryState.transactional(name=name).open()
    total.update(0, add(42))
    assert run_query(TupleCollectionGet(), BatchState(total, txid=1), words("q")) == [[42]]


def test_tuple_collection_get_inside_a_batch_reads_what_map_get_reads(name):
    counts = MemoryState.opaque(name=name).open()
    counts.multiUpdate(0, [["cat"]], [add(2)])
    BatchState(counts, txid=1).multiUpdate([["cat"], ["dog"]], [add(1), add(5)])   # this batch's writes
    batch = BatchState(counts, txid=1)           # a stateQuery's view of the same batch
    assert run_query(TupleCollectionGet(), batch, words("q")) == [["cat", 2]]
    assert MapGet().batchRetrieve(batch, words("cat", "dog")) == [2, None]
    other_query = BatchState(counts, txid=1, reads_before_batch=False)
    assert run_query(TupleCollectionGet(), other_query, words("q")) == [["cat", 3], ["dog", 5]]


def test_tuple_collection_get_reads_the_state_once_per_partition(name):
    counts = MemoryState.opaque(name=name, max_multi_get_batch_size=2).open()
    counts.multiPut(0, [[w] for w in "abcde"], [1, 2, 3, 4, 5])
    counts.stats.reset()
    emitted = run_query(TupleCollectionGet(), counts, words("q1", "q2", "q3", fields=("id",)))
    assert emitted == [[w, n] for w, n in zip("abcde", range(1, 6), strict=True)] * 3
    assert counts.stats.keys_read == 5 and counts.stats.store_reads == 3   # pages of 2


def test_tuple_collection_get_on_a_store_that_cannot_scan_says_so(name):
    class NoScan(VersionedBackingMap):
        @property
        def address(self):
            return "custom://wc"

        def multiGetVersioned(self, keys):
            return [None] * len(keys)

        def multiPutIfVersion(self, keys, values, expected_versions):
            return [None] * len(keys)

    with pytest.raises(ScanUnsupportedError, match=r"custom://wc: NoScan cannot list its keys .* MapGet\(\)"):
        TupleCollectionGet().batchRetrieve(BatchState(OpaqueMap(NoScan()), txid=0), words("q"))
